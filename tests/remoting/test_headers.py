"""Typed custom headers: RocketMQ field names, required fields, Java-style parsing, V2 letters."""

from __future__ import annotations

import re

import pytest

import orbitmq.remoting.headers as headers_module
from orbitmq.errors import HeaderError
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.header_base import parse_field, parse_int, parse_long
from orbitmq.remoting.headers import (
    CommandHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetMaxOffsetRequestHeader,
    PullMessageRequestHeader,
    QueryMessageRequestHeader,
    RegisterBrokerRequestHeader,
    ResetOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    is_compact_send,
    parse_send_header,
    send_topic,
)

# The V2 header of the protocol reference's example (§3.1), as a Java 4.9.7 producer sends it.
JAVA_V2 = {
    "a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000", "h": "0",
    "i": "KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8000930391B6D35860A3F1C200001\x02WAIT\x01true\x02TAGS\x01TagA",
    "j": "0", "k": "false", "m": "false", "n": "broker-a",
}


def test_a_java_v2_send_header_reads_into_the_send_header_and_writes_back_unchanged() -> None:
    header = SendMessageRequestHeader.from_compact_fields(JAVA_V2)
    assert header.producer_group == "PG" and header.topic == "T" and header.default_topic == "TBW102"
    assert header.default_topic_queue_nums == 4 and header.born_timestamp == 1_700_000_000_000
    assert header.unit_mode is False and header.batch is False and header.bname == "broker-a"
    assert header.max_reconsume_times is None
    assert header.to_compact_fields() == JAVA_V2


def test_the_long_send_header_uses_rocketmq_field_names() -> None:
    fields = SendMessageRequestHeader.from_compact_fields(JAVA_V2).to_ext_fields()
    assert set(fields) == {
        "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
        "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch", "bname",
    }
    assert fields["bornTimestamp"] == "1700000000000" and fields["unitMode"] == "false"


def test_parse_send_header_reads_either_key_form() -> None:
    v2 = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, dict(JAVA_V2))
    v1 = RemotingCommand.request(RequestCode.SEND_MESSAGE, parse_send_header(v2).to_ext_fields())
    batch = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {**JAVA_V2, "m": "true"})
    assert parse_send_header(v1) == parse_send_header(v2)
    assert parse_send_header(batch).batch is True
    assert is_compact_send(v2.ext_fields) and not is_compact_send(v1.ext_fields)
    # The topic ACL checks is the one the broker reads, whatever the code says.
    assert send_topic(v2.ext_fields) == send_topic(v1.ext_fields) == "T"
    assert send_topic({"topic": "Real", "b": "Decoy"}) == "Real"


def test_a_v2_header_without_its_optional_fields_reads_them_as_defaults() -> None:
    minimal = {k: v for k, v in JAVA_V2.items() if k in "abcdefgh"}
    header = SendMessageRequestHeader.from_compact_fields(minimal)
    assert header.unit_mode is False and header.batch is False and header.properties is None
    lenient = SendMessageRequestHeader.from_compact_fields({"b": "T", "e": "1"})
    assert (lenient.sys_flag, lenient.born_timestamp, lenient.flag, lenient.default_topic_queue_nums) == (0, 0, 0, 4)


def test_a_missing_required_field_raises_header_error_naming_it() -> None:
    fields = dict(JAVA_V2)
    del fields["b"]
    with pytest.raises(HeaderError, match="<topic> is null"):
        SendMessageRequestHeader.from_compact_fields(fields)
    with pytest.raises(HeaderError, match="<consumerGroup> is null"):
        PullMessageRequestHeader.from_ext_fields({"topic": "T"})
    with pytest.raises(HeaderError):
        GetMaxOffsetRequestHeader.from_ext_fields(None)


@pytest.mark.parametrize(
    ("key", "bad", "remark"),
    [
        ("f", "2147483648", "the custom field <sysFlag> must be a 32-bit integer, got '2147483648'"),
        ("h", "-2147483649", "<flag> must be a 32-bit integer"),
        ("j", "1_0", "<reconsumeTimes> must be a 32-bit integer"),
        ("g", "9223372036854775808", "<bornTimestamp> must be a 64-bit integer"),
        ("e", "\u0663", "<queueId> must be a 32-bit integer"),
        ("d", " 2 ", "<defaultTopicQueueNums> must be a 32-bit integer"),
    ],
)
def test_out_of_range_or_malformed_send_numbers_are_refused_naming_the_field(key: str, bad: str, remark: str) -> None:
    with pytest.raises(HeaderError, match=re.escape(remark)):
        SendMessageRequestHeader.from_compact_fields({**JAVA_V2, key: bad})


def test_numbers_read_by_hand_follow_the_same_rules_and_the_declared_width() -> None:
    assert parse_int("+7", "queueId") == 7 and parse_int("-2147483648", "queueId") == -(2**31)
    assert parse_long("9223372036854775807", "offset") == 2**63 - 1
    assert parse_field("2147483648", "commitOffset") == 2**31  # a long field
    for bad in ("2147483648", "٣", "1_0", " 2", "", "+", "0x1"):
        with pytest.raises(HeaderError, match="sysFlag"):
            parse_field(bad, "sysFlag")  # an int field


@pytest.mark.parametrize("bad", ["", " 1", "1_0", "0x10", "1.5", "٣", "2147483648", "-2147483649"])
def test_a_malformed_or_out_of_range_int_raises_header_error(bad: str) -> None:
    with pytest.raises(HeaderError, match="queueId"):
        GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": bad})


def test_ints_and_longs_parse_like_java() -> None:
    assert GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "-1"}).queue_id == -1
    assert GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "+7"}).queue_id == 7
    pull = PullMessageRequestHeader.from_ext_fields({
        "consumerGroup": "CG", "topic": "T", "queueId": "2", "queueOffset": "9223372036854775807",
        "maxMsgNums": "32", "sysFlag": "3", "commitOffset": "0", "suspendTimeoutMillis": "15000",
        "subVersion": "1700000000000", "subscription": "*",
    })
    assert pull.queue_offset == 2**63 - 1 and pull.expression_type is None and pull.subscription == "*"
    with pytest.raises(HeaderError):
        PullMessageRequestHeader.from_ext_fields({**pull.to_ext_fields(), "queueOffset": "9223372036854775808"})


def test_booleans_parse_like_java_boolean_parse_boolean() -> None:
    base = {"topic": "T", "group": "G", "timestamp": "-1"}
    assert ResetOffsetRequestHeader.from_ext_fields({**base, "isForce": "TRUE"}).is_force is True
    assert ResetOffsetRequestHeader.from_ext_fields({**base, "isForce": "yes"}).is_force is False
    assert ResetOffsetRequestHeader(topic="T", group="G", timestamp=-1, is_force=True).to_ext_fields() == {
        **base, "isForce": "true",
    }


def test_optional_fields_are_left_out_while_unset_and_primitives_are_always_written() -> None:
    end = EndTransactionRequestHeader(
        producer_group="PG", tran_state_table_offset=3, commit_log_offset=4096, commit_or_rollback=8, msg_id="M"
    )
    assert end.to_ext_fields() == {
        "producerGroup": "PG", "tranStateTableOffset": "3", "commitLogOffset": "4096",
        "commitOrRollback": "8", "msgId": "M", "fromTransactionCheck": "false",
    }


def test_irregular_wire_names_are_kept() -> None:
    assert UnregisterClientRequestHeader(client_id="c1", producer_group="PG").to_ext_fields() == {
        "clientID": "c1", "producerGroup": "PG",
    }
    assert "bodyCrc32" in RegisterBrokerRequestHeader.wire_names()
    assert "_UNIQUE_KEY_QUERY" in QueryMessageRequestHeader.wire_names()
    response = SendMessageResponseHeader(msg_id="X", queue_id=0, queue_offset=0, msg_region="DefaultRegion", trace_on=True)
    assert response.to_ext_fields() == {
        "msgId": "X", "queueId": "0", "queueOffset": "0", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true",
    }


def test_create_topic_requires_its_order_flag_as_java_does() -> None:
    fields = CreateTopicRequestHeader(
        topic="T", default_topic="TBW102", read_queue_nums=4, write_queue_nums=4, perm=6,
        topic_filter_type="SINGLE_TAG", order=False,
    ).to_ext_fields()
    del fields["order"]
    with pytest.raises(HeaderError, match="<order>"):
        CreateTopicRequestHeader.from_ext_fields(fields)


def test_unknown_keys_are_ignored() -> None:
    header = GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "1", "lo": "x", "ns": "y"})
    assert header == GetMaxOffsetRequestHeader(topic="T", queue_id=1)


def all_header_classes() -> list[type[CommandHeader]]:
    return [
        value for value in vars(headers_module).values()
        if isinstance(value, type) and issubclass(value, CommandHeader) and value is not CommandHeader
    ]


@pytest.mark.parametrize("cls", all_header_classes(), ids=lambda c: c.__name__)
def test_every_header_round_trips_through_ext_fields(cls: type[CommandHeader]) -> None:
    samples = {"str": "v", "int": "-12", "long": "12345678901", "bool": "true"}
    fields = {}
    for name in cls.wire_names():
        kind = next(f.kind for f in _spec_of(cls) if f.wire == name)
        fields[name] = samples[kind]
    parsed = cls.from_ext_fields(fields)
    assert parsed.to_ext_fields() == fields
    assert cls.from_ext_fields(parsed.to_ext_fields()) == parsed


def _spec_of(cls: type[CommandHeader]):  # type: ignore[no-untyped-def]
    from orbitmq.remoting.header_base import _build_spec

    return _build_spec(cls)


def test_the_send_header_family_covers_every_send_code() -> None:
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE):
        cmd = RemotingCommand.request(code, SendMessageRequestHeader.from_compact_fields(JAVA_V2).to_ext_fields())
        assert isinstance(parse_send_header(cmd), SendMessageRequestHeader)
