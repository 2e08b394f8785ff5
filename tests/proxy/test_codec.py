"""The gRPC front's sans-IO conversions: receipt handles, transaction ids, message checks and mapping."""

from __future__ import annotations

import hashlib

import pytest

from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.sysflag import TRANSACTION_PREPARED_TYPE
from orbitmq.proxy import codec
from orbitmq.proxy.clients import parse_authorization
from orbitmq.proxy.codec import GrpcStatusError, ReceiptHandle, TransactionRef
from orbitmq.proxy.pb import definition_pb2 as pb


def test_receipt_handles_round_trip_and_name_the_real_topic() -> None:
    h = ReceiptHandle(120, 1727000000000, 60000, 3, 1, "broker-a", 2, 125, 9999)
    assert h.encode() == "120 1727000000000 60000 3 1 broker-a 2 125 9999"
    assert ReceiptHandle.decode(h.encode()) == h
    assert h.extra_info == "120 1727000000000 60000 3 1 broker-a 2 125"
    assert h.next_visible_time == 1727000060000
    assert h.real_topic("T", "G") == "%RETRY%G_T"
    assert ReceiptHandle.decode(h.extra_info).commit_log_offset == -1


@pytest.mark.parametrize("text", ["", "x", "1 2 3", "a b c d e f g h i", "1 2 3 4 9 b 0 0 0", "1 2 3 4 0  0 0 0",
                                  "1 2 3 4 0 b -1 0 0", "1 2 3 4 0 b 0 0 0 0"])
def test_forged_receipt_handles_are_refused(text: str) -> None:
    with pytest.raises(GrpcStatusError) as err:
        ReceiptHandle.decode(text)
    assert err.value.code == pb.INVALID_RECEIPT_HANDLE


def test_transaction_ids() -> None:
    ref = TransactionRef("broker-a", 731, 4, "T1")
    assert TransactionRef.decode(ref.encode()) == ref
    for bad in ("", "x", "1:2", "a:b:c:d", "1:2::g"):
        with pytest.raises(GrpcStatusError) as err:
            TransactionRef.decode(bad)
        assert err.value.code == pb.INVALID_TRANSACTION_ID


def _msg(**sp: object) -> pb.Message:
    m = pb.Message(body=b"hello")
    m.topic.name = "T"
    m.system_properties.message_id = "ID1"
    m.system_properties.message_type = pb.NORMAL
    for k, v in sp.items():
        setattr(m.system_properties, k, v)
    return m


def test_a_normal_message_becomes_remoting_properties() -> None:
    m = _msg(tag="TA")
    m.system_properties.keys.extend(["k1", "k2"])
    m.user_properties["color"] = "blue"
    out = codec.to_remoting(m, max_body_size=100, max_delay_ms=1000, now_ms=0)
    assert out.properties[mc.TAGS] == "TA" and out.properties[mc.KEYS] == "k1 k2"
    assert out.properties[mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] == "ID1" and out.properties["color"] == "blue"
    assert out.sys_flag == 0 and out.body == b"hello"


def test_typed_messages() -> None:
    fifo = codec.to_remoting(_msg(message_type=pb.FIFO, message_group="g"), max_body_size=100, max_delay_ms=1000)
    assert fifo.properties[codec.SHARDING_KEY] == "g" and fifo.message_group == "g"
    tx = codec.to_remoting(_msg(message_type=pb.TRANSACTION), max_body_size=100, max_delay_ms=1000)
    assert tx.sys_flag == TRANSACTION_PREPARED_TYPE and tx.properties[mc.TRANSACTION_PREPARED] == "true"
    delay = _msg(message_type=pb.DELAY)
    delay.system_properties.delivery_timestamp.seconds = 10
    out = codec.to_remoting(delay, max_body_size=100, max_delay_ms=60_000, now_ms=5_000)
    assert out.properties[mc.TIMER_DELIVER_MS] == "10000"
    with pytest.raises(GrpcStatusError) as err:
        codec.to_remoting(delay, max_body_size=100, max_delay_ms=1_000, now_ms=5_000)
    assert err.value.code == pb.ILLEGAL_DELIVERY_TIME
    with pytest.raises(GrpcStatusError) as err:
        codec.to_remoting(_msg(message_type=pb.NORMAL, message_group="g"), max_body_size=100, max_delay_ms=1)
    assert err.value.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    with pytest.raises(GrpcStatusError) as err:
        codec.to_remoting(_msg(), max_body_size=2, max_delay_ms=1)
    assert err.value.code == pb.MESSAGE_BODY_TOO_LARGE


def test_a_stored_message_as_a_5x_client_reads_it() -> None:
    msg = MessageExt(topic="T", body=b"payload", properties={
        mc.TAGS: "TA", mc.KEYS: "a b", mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1", "color": "red",
        codec.SHARDING_KEY: "g1", mc.WAIT_STORE_MSG_OK: "true"})
    msg.reconsume_times = 2
    msg.queue_id, msg.queue_offset = 3, 42
    out = codec.to_grpc(msg, receipt_handle="H", invisible_ms=30_000)
    sp = out.system_properties
    assert (sp.tag, list(sp.keys), sp.message_id) == ("TA", ["a", "b"], "U1")
    assert dict(out.user_properties) == {"color": "red"}
    assert sp.body_digest.type == pb.MD5 and sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert sp.body_encoding == pb.IDENTITY and sp.message_type == pb.FIFO and sp.message_group == "g1"
    assert sp.delivery_attempt == 3 and sp.receipt_handle == "H" and sp.queue_offset == 42
    assert sp.invisible_duration.seconds == 30


def test_message_type_attribute() -> None:
    assert codec.accepted_types(None) == codec.ALL_TYPES
    assert codec.accepted_types("fifo") == (pb.FIFO,)
    assert codec.accepted_types("MIXED") == codec.ALL_TYPES


def test_authorization_header() -> None:
    text = "MQv2-HMAC-SHA1 Credential=ak1, SignedHeaders=x-mq-date-time, Signature=abc123"
    assert parse_authorization(text) == ("ak1", "abc123")
    assert parse_authorization("MQv2-HMAC-SHA1 Credential=, SignedHeaders=x, Signature=") == ("", "")
    assert parse_authorization("Basic xyz") == ("", "")
