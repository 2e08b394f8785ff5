"""plain_acl.yml rules without a server: address patterns, permission words, loading and edits."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.broker.acl import plain_config
from orbitmq.broker.acl.addresses import compile_address
from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import ANY, DENY, PUB, SUB, allows, parse_perm
from orbitmq.broker.acl.plain_config import AccountUpdate
from orbitmq.broker.acl.resources import needed_resources
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.remoting.command import RemotingCommand
from tests.acl.conftest import PLAIN_ACL


@pytest.mark.parametrize(("pattern", "inside", "outside"), [
    ("*", ["1.2.3.4", "127.0.0.1"], []),
    ("192.168.0.*", ["192.168.0.7"], ["192.168.1.7", "::1"]),
    ("192.168.*", ["192.168.200.1"], ["192.169.0.1"]),
    ("192.168.1.1-10", ["192.168.1.1", "192.168.1.10"], ["192.168.1.11", "192.168.2.5"]),
    ("192.168.0.{1,2,3}", ["192.168.0.2"], ["192.168.0.4"]),
    ("10.0.0.1,10.0.0.2", ["10.0.0.2"], ["10.0.0.3"]),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
    ("", [], ["127.0.0.1"]),
])
def test_white_address_patterns_match_as_rocketmq_reads_them(pattern: str, inside: list[str], outside: list[str]) -> None:
    match = compile_address(pattern)
    assert all(match(a) for a in inside)
    assert not any(match(a) for a in outside)


@pytest.mark.parametrize("pattern", ["192.168.0.300", "1.2.3.4.5", "abc", "10.0.0.{a,b}", "10.0.0.5-1"])
def test_a_malformed_white_address_is_refused(pattern: str) -> None:
    with pytest.raises(AclError):
        compile_address(pattern)


def test_permission_words_and_checks() -> None:
    assert parse_perm("PUB|SUB") == parse_perm("SUB|PUB") == PUB | SUB
    assert parse_perm("READ") == parse_perm(None) == DENY
    assert allows(PUB, PUB | SUB) and allows(SUB, SUB) and not allows(SUB, PUB)
    assert not allows(PUB, DENY) and allows(ANY, SUB) and not allows(ANY, DENY)


def write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "plain_acl.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_loading_refuses_short_keys_duplicates_and_bad_perms(tmp_path: Path) -> None:
    good = {"accessKey": "RocketMQ", "secretKey": "12345678"}
    for accounts, text in [
        ([{"accessKey": "short", "secretKey": "12345678"}], "longer than 6"),
        ([good, good], "defined twice"),
        ([{**good, "topicPerms": ["t=READ"]}], "permission"),
        ([{**good, "groupPerms": ["g"]}], "Res=Perm"),
        ([{**good, "whiteRemoteAddress": "nope"}], "whiteRemoteAddress"),
    ]:
        with pytest.raises(AclError, match=text):
            plain_config.load_file(write(tmp_path, {"accounts": accounts}))
    with pytest.raises(AclError, match="cannot read"):
        plain_config.load_file(str(tmp_path / "missing.yml"))


def test_groups_are_keyed_by_their_retry_topic_and_defaults_are_deny(tmp_path: Path) -> None:
    acl = plain_config.load_file(write(tmp_path, {"accounts": [
        {"accessKey": "RocketMQ", "secretKey": "12345678", "topicPerms": ["a=PUB"], "groupPerms": ["g=SUB"]},
    ]}))
    account = acl.accounts["RocketMQ"]
    assert account.perms == {"a": PUB, "%RETRY%g": SUB}
    assert account.default_topic_perm == DENY and account.default_group_perm == DENY and not account.admin


def test_edits_bump_the_version_and_a_refused_edit_leaves_the_file_alone(tmp_path: Path) -> None:
    path = write(tmp_path, {"accounts": [{"accessKey": "RocketMQ", "secretKey": "12345678"}]})
    acl = plain_config.load_file(path)
    acl = plain_config.update_account(path, acl, AccountUpdate("another01", "secret0001", topic_perms=["t=SUB"]))
    assert acl.counter == 1 and set(acl.accounts) == {"RocketMQ", "another01"}
    acl = plain_config.update_account(path, acl, AccountUpdate("RocketMQ", admin=True))
    assert acl.counter == 2 and acl.accounts["RocketMQ"].admin and acl.accounts["RocketMQ"].secret_key == "12345678"
    before = Path(path).read_text()
    with pytest.raises(AclError):
        plain_config.update_account(path, acl, AccountUpdate("third0001", None))  # a new account needs a secret
    with pytest.raises(AclError):
        plain_config.update_account(path, acl, AccountUpdate("RocketMQ", topic_perms=["x=ALL"]))
    with pytest.raises(AclError):
        plain_config.delete_account(path, acl, "nobody000")
    with pytest.raises(AclError):
        plain_config.set_global_white(path, acl, ["1.2.3"])
    assert Path(path).read_text() == before
    acl = plain_config.set_global_white(path, plain_config.delete_account(path, acl, "another01"), ["10.0.0.*"])
    reloaded = plain_config.load_file(path)
    assert set(reloaded.accounts) == {"RocketMQ"} and reloaded.global_white_addrs == ("10.0.0.*",)
    assert reloaded.counter == 4 == acl.counter


@settings(max_examples=300, deadline=None)
@given(
    code=st.sampled_from([10, 11, 12, 14, 15, 34, 35, 36, 38, 310, 320, 324, 325, 17, 25, 50, 215, 9999]),
    fields=st.dictionaries(st.sampled_from(["topic", "b", "a", "group", "consumerGroup", "AccessKey", "Signature",
                                            "_UNIQUE_KEY_QUERY", "x"]), st.text(max_size=12), max_size=6),
    body=st.one_of(st.none(), st.binary(max_size=64), st.sampled_from([
        b'{"consumerDataSet":[1,{"groupName":null}]}', b'{"consumerDataSet":5}', b"[1]", b"null",
        b'{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":7}]}',
        b'{"consumerDataSet":[{"groupName":{"x":1},"subscriptionDataSet":[{"topic":[1]},"t"]}]}',
    ])),
    host=st.sampled_from(["127.0.0.1", "10.0.0.1", "::1", ""]),
)
def test_the_validator_answers_any_request_with_a_pass_or_an_acl_error(
    tmp_path_factory: pytest.TempPathFactory, code: int, fields: dict[str, str], body: bytes | None, host: str
) -> None:
    validator = _fuzz_validator(str(tmp_path_factory.getbasetemp()))
    request = RemotingCommand.request(code, dict(fields), body)
    try:  # what a request touches is read before its signature matters: it must not crash either
        assert all(isinstance(name, str) and perm in (PUB, SUB) for name, perm in needed_resources(request))
    except AclError:
        pass
    try:
        validator.check(request, host)
    except AclError:
        return
    # Whatever passed carried a valid signature of a known account: random fields never do.
    raise AssertionError(f"passed: {code} {fields} {body!r}")



@functools.cache
def _fuzz_validator(root: str) -> AclValidator:
    path = Path(root) / "fuzz_plain_acl.yml"
    path.write_text(PLAIN_ACL)
    validator = AclValidator(str(path))
    validator.load()
    return validator
