"""What the client puts on the wire and reads from it matches RocketMQ's forms (no sockets)."""

from __future__ import annotations

import zlib

from orbitmq.client.message import Message
from orbitmq.client.message_selector import subscription_data
from orbitmq.client.offset_reset import parse_reset_body
from orbitmq.client.producer import Producer
from orbitmq.client.queue import MessageQueue
from orbitmq.client.routes import TopicRouteData, publish_queues, subscribe_queues
from orbitmq.common.message import Message as CommonMessage
from orbitmq.common.properties import decode_properties

LEGACY_ROUTE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"},{"brokerAddrs":{1:"192.168.0.4:10911"},"brokerName":"broker-b",'
    b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b","perm":6,'
    b'"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2},{"brokerName":"broker-a","perm":4,'
    b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)


def test_legacy_route_with_bare_numeric_keys_is_read() -> None:
    route = TopicRouteData.parse(LEGACY_ROUTE)
    assert route.broker("broker-a") is not None
    assert route.broker("broker-a").broker_addrs == {0: "192.168.0.1:10911", 1: "192.168.0.2:10911"}  # type: ignore[union-attr]


def test_publish_queues_need_write_permission_and_a_master() -> None:
    route = TopicRouteData.parse(LEGACY_ROUTE)
    # broker-a is read-only, broker-b has no master: nothing to write to.
    assert publish_queues("T", route).queues == []
    # Reading needs only the read permission; slaves serve reads too.
    assert subscribe_queues("T", route) == (
        {MessageQueue("T", "broker-a", i) for i in range(4)} | {MessageQueue("T", "broker-b", i) for i in range(2)})


def test_order_topic_conf_alone_defines_publish_queues() -> None:
    route = TopicRouteData((), (), "broker-a:2;broker-b:1")
    assert publish_queues("T", route).queues == [
        MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1), MessageQueue("T", "broker-b", 0)]


def test_subscription_data_matches_the_heartbeat_example() -> None:
    sd = subscription_data("T", "TagA || TagB", sub_version=1700000000000)
    assert sd.to_json_dict() == {
        "classFilterMode": False, "codeSet": [2598919, 2598920], "expressionType": "TAG",
        "subString": "TagA || TagB", "subVersion": 1700000000000, "tagsSet": ["TagA", "TagB"], "topic": "T",
    }
    assert subscription_data("T", " * ").is_all
    assert sd.matches_tag("TagB") and not sd.matches_tag("TagC") and not sd.matches_tag(None)


def test_single_send_uses_the_compact_v2_header() -> None:
    producer = Producer("PG")
    msg = Message("T", b"hello", tags="TagA", keys=["k1", "k2"], properties={"a": "1"})
    msg.unique_key = "C0A8000930391B6D35860A3F1C200001"
    code, fields, body, msg_id = producer._request(False, [msg], MessageQueue("T", "broker-a", 3))
    assert code == 310
    assert body == b"hello" and msg_id == msg.unique_key
    assert {k: fields[k] for k in "abcdefhjkmn"} == {
        "a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "h": "0", "j": "0", "k": "false",
        "m": "false", "n": "broker-a",
    }
    assert decode_properties(fields["i"]) == {
        "TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true", "a": "1", "UNIQ_KEY": msg.unique_key}


def test_bodies_of_4_kib_and_more_are_zlib_compressed_with_sysflag_bit_0() -> None:
    producer = Producer("PG")
    body = b"abcd" * 1024
    msg = Message("T", body)
    _, fields, wire, _ = producer._request(False, [msg], MessageQueue("T", "b", 0))
    assert fields["f"] == "1"
    assert isinstance(wire, bytes) and zlib.decompress(wire) == body
    assert msg.body == body  # the caller's message is left alone
    _, small, _, _ = producer._request(False, [Message("T", b"x" * 4095)], MessageQueue("T", "b", 0))
    assert small["f"] == "0"


def test_batches_use_send_batch_message_with_only_wait_in_the_header() -> None:
    producer = Producer("PG")
    msgs: list[CommonMessage] = [Message("T", b"1"), Message("T", b"2")]
    for i, m in enumerate(msgs):
        m.unique_key = f"ID{i}"
    code, fields, _, msg_id = producer._request(True, msgs, MessageQueue("T", "b", 0))
    assert code == 320 and fields["m"] == "true" and fields["f"] == "0"
    assert fields["i"] == "WAIT\x01true"
    assert msg_id == "ID0,ID1"


def test_retry_topic_sends_carry_reconsume_counts_in_the_header() -> None:
    producer = Producer("PG")
    msg = Message("%RETRY%CG", b"x")
    msg.properties.update({"RECONSUME_TIME": "2", "MAX_RECONSUME_TIMES": "16"})
    _, fields, _, _ = producer._request(False, [msg], MessageQueue("%RETRY%CG", "b", 0))
    assert fields["j"] == "2" and fields["l"] == "16"
    assert "RECONSUME_TIME" not in decode_properties(fields["i"])


def test_reset_offset_bodies_are_read_in_both_forms() -> None:
    mq = MessageQueue("T", "broker-a", 0)
    assert parse_reset_body(b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:42}}') == {mq: 42}
    assert parse_reset_body(
        b'{"offsetTable":[{"brokerName":"broker-a","offset":7,"queueId":0,"topic":"T"}]}') == {mq: 7}
