"""Signature version 2: RocketMQ 4.x's signature is malleable and replayable; version 2 is neither."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.signature import ReplayGuard
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.client import Message, Producer, SendStatus
from orbitmq.client.acl import AclCredentials, sign_request
from orbitmq.common.signing import canonical_v2
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from tests.acl.conftest import AclCluster, start_acl_dev
from tests.acl.test_acl_admin import mqadmin

ACL_YML = textwrap.dedent("""\
    accounts:
      - accessKey: legacyKey01
        secretKey: legacySecret1
        admin: true
      - accessKey: strictKey01
        secretKey: strictSecret1
        admin: true
        signatureVersion: 2
    """)
LEGACY = AclCredentials("legacyKey01", "legacySecret1")
LEGACY_V2 = AclCredentials("legacyKey01", "legacySecret1", signature_version=2)
STRICT = AclCredentials("strictKey01", "strictSecret1")
STRICT_V2 = AclCredentials("strictKey01", "strictSecret1", signature_version=2)


def validator(tmp_path: Path, text: str = ACL_YML, now_ms: list[int] | None = None) -> AclValidator:
    path = tmp_path / "plain_acl.yml"
    path.write_text(text)
    clock = now_ms if now_ms is not None else []
    v = AclValidator(str(path), clock_ms=(lambda: clock[0]) if clock else None)
    v.load()
    return v


def accepted(v: AclValidator, cmd: RemotingCommand) -> bool:
    try:
        v.check(cmd, "127.0.0.1")
    except AclError:
        return False
    return True


def forgeries(signed: RemotingCommand) -> list[RemotingCommand]:
    """The same signature on other requests: bytes moved from a field into the body, an added
    empty field, another request code."""
    fields = dict(signed.ext_fields or {})
    body = signed.body_bytes()
    last = max(k for k in fields if k != "Signature")  # its value is signed right before the body
    moved = {**fields, last: fields[last][:-1]}
    return [
        RemotingCommand.request(signed.code, moved, fields[last][-1:].encode() + body),
        RemotingCommand.request(signed.code, {**fields, "zz": ""}, body),
        RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE, fields, body),
    ]


def send_request(creds: AclCredentials) -> RemotingCommand:
    return sign_request(RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "Tab", "tags": "x"}, b"cd"), creds)


def test_a_rocketmq_4_signature_still_verifies_on_altered_requests(tmp_path: Path) -> None:
    v = validator(tmp_path)
    signed = send_request(LEGACY)
    assert accepted(v, signed)
    for forged in forgeries(signed):
        assert accepted(v, forged), forged.ext_fields  # the weakness version 2 removes


def test_a_version_2_signature_verifies_only_the_request_it_signed(tmp_path: Path) -> None:
    v = validator(tmp_path)
    for forged in forgeries(send_request(LEGACY_V2)):
        with pytest.raises(AclError, match="Check signature failed"):
            v.check(forged, "127.0.0.1")
    assert accepted(v, send_request(LEGACY_V2))


def test_the_canonical_form_tells_names_values_and_body_apart() -> None:
    forms = {
        canonical_v2(10, {"a": "bc"}, b""), canonical_v2(10, {"ab": "c"}, b""), canonical_v2(10, {"a": "b"}, b"c"),
        canonical_v2(10, {"a": "bc", "d": ""}, b""), canonical_v2(11, {"a": "bc"}, b""),
    }
    assert len(forms) == 5


def test_a_replayed_version_2_request_is_refused(tmp_path: Path) -> None:
    v = validator(tmp_path)
    signed = send_request(LEGACY_V2)
    v.check(signed, "127.0.0.1")
    with pytest.raises(AclError, match="replay") as refused:
        v.check(signed, "127.0.0.1")
    assert refused.value.code == ResponseCode.NO_PERMISSION
    # Signing again (what a client's retry does) makes a new nonce and passes.
    v.check(sign_request(signed, LEGACY_V2), "127.0.0.1")


def test_a_version_2_request_outside_the_time_window_is_refused(tmp_path: Path) -> None:
    signed = send_request(LEGACY_V2)
    stamp = int((signed.ext_fields or {})["SignatureTimestamp"])
    v = validator(tmp_path, "signatureSkewMillis: 1000\n" + ACL_YML, now_ms=[stamp + 1001])
    with pytest.raises(AclError, match="away from the server's clock"):
        v.check(signed, "127.0.0.1")


def test_an_account_or_the_file_may_refuse_rocketmq_4_signatures(tmp_path: Path) -> None:
    v = validator(tmp_path)
    with pytest.raises(AclError, match="must sign with SignatureVersion 2"):
        v.check(send_request(STRICT), "127.0.0.1")
    assert accepted(v, send_request(STRICT_V2))
    assert accepted(v, send_request(LEGACY))
    strict_file = validator(tmp_path, "allowLegacySignature: false\n" + ACL_YML)
    assert not accepted(strict_file, send_request(LEGACY))
    assert accepted(strict_file, send_request(LEGACY_V2))


def test_the_replay_cache_is_bounded_and_never_forgets_into_a_replay() -> None:
    guard = ReplayGuard(window_ms=60_000, max_entries=3)
    for i in range(10):
        assert guard.admit("ak", str(1000 + i), f"n{i}", now_ms=1010) is None
        assert len(guard) <= 3
    # n0..n6 were dropped: their timestamps are at or under the floor, so they cannot come back.
    assert guard.admit("ak", "1000", "n0", now_ms=1010) is not None
    assert guard.admit("ak", "1009", "n9", now_ms=1010) is not None
    assert guard.admit("ak", "1009", "fresh", now_ms=1010) is None
    # Old entries leave once the window passed.
    assert guard.admit("ak", "100000", "later", now_ms=100_000) is None
    assert len(guard) == 1


async def test_a_producer_signing_with_version_2_sends_to_an_account_that_requires_it(tmp_path: Path) -> None:
    cluster: AclCluster = start_acl_dev(tmp_path, ACL_YML)
    try:
        async with Producer("StrictProducers", namesrv_addr=cluster.namesrv, access_key=STRICT.access_key,
                            secret_key=STRICT.secret_key, signature_version=2) as producer:
            result = await producer.send(Message("StrictTopic", b"signed twice as well"))
        assert result.status is SendStatus.SEND_OK
        async with Producer("StrictProducers", namesrv_addr=cluster.namesrv, access_key=STRICT.access_key,
                            secret_key=STRICT.secret_key, retry_times_when_send_failed=0) as legacy:
            with pytest.raises(Exception, match="SignatureVersion 2"):
                await legacy.send(Message("StrictTopic", b"4.x signature"))
        v1 = mqadmin(cluster, "clusterAclConfigVersion", "-b", cluster.broker, creds=STRICT)
        assert v1.returncode == 1 and "SignatureVersion 2" in v1.stderr
        v2 = mqadmin(cluster, "--signatureVersion", "2", "clusterAclConfigVersion", "-b", cluster.broker, creds=STRICT)
        assert v2.returncode == 0, v2.stderr
    finally:
        cluster.process.stop()
