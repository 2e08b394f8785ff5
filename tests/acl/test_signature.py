"""The request signature: the protocol's test vector, client and broker agree, _UNIQUE_KEY_QUERY leniency."""

from __future__ import annotations

from orbitmq.broker.acl import signature as broker_signature
from orbitmq.client.acl import AclCredentials, sign_request, signature
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand


def test_the_client_signature_matches_the_protocol_test_vector() -> None:
    cmd = sign_request(RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "T"}), AclCredentials("ak", "sk"))
    assert cmd.ext_fields == {"topic": "T", "AccessKey": "ak", "Signature": "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="}
    assert signature({"topic": "T", "AccessKey": "ak"}, b"", "sk") == "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="


def test_the_broker_accepts_what_the_client_signs_including_the_body_and_token() -> None:
    creds = AclCredentials("ak", "sk", security_token="tok")
    cmd = sign_request(RemotingCommand.request(RequestCode.HEART_BEAT, {"b": "2", "a": "1"}, [b"ab", b"cd"]), creds)
    fields = dict(cmd.ext_fields or {})
    assert fields["SecurityToken"] == "tok"
    assert broker_signature.matches(fields, b"abcd", "sk", fields["Signature"])
    assert not broker_signature.matches(fields, b"abce", "sk", fields["Signature"])
    assert not broker_signature.matches(fields, b"abcd", "other", fields["Signature"])


def test_signing_twice_gives_the_same_signature() -> None:
    cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"})
    first = dict(sign_request(cmd, AclCredentials("ak", "sk")).ext_fields or {})
    assert sign_request(cmd, AclCredentials("ak", "sk")).ext_fields == first


def test_unique_key_query_may_or_may_not_be_part_of_the_signed_content() -> None:
    creds = AclCredentials("ak", "sk")
    before = sign_request(RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": "T"}), creds)
    fields = {**(before.ext_fields or {}), "_UNIQUE_KEY_QUERY": "true"}
    assert broker_signature.matches(fields, b"", "sk", fields["Signature"])
    after = sign_request(RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": "T", "_UNIQUE_KEY_QUERY": "true"}),
                         creds)
    fields = dict(after.ext_fields or {})
    assert broker_signature.matches(fields, b"", "sk", fields["Signature"])


def test_a_non_ascii_signature_is_refused_without_an_error() -> None:
    assert not broker_signature.matches({"AccessKey": "ak"}, b"", "sk", "sig\u00e9\u2603")
