"""The sans-IO POP cores: extraInfo and handles, CK/ack bodies, the in-flight table, FIFO order info."""

from __future__ import annotations

import base64

import pytest

from orbitmq.broker.acl.permission import SUB
from orbitmq.broker.acl.resources import needed_resources
from orbitmq.broker.pop.order import OrderTable
from orbitmq.broker.pop.records import (
    AckRecord,
    CheckPoint,
    RecordError,
    bitset_to_bytes,
    parse_batch_ack_body,
)
from orbitmq.broker.pop.revive import InFlight
from orbitmq.common import extra_info as xi
from orbitmq.common import jsonbody
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand


def test_extra_info_and_receipt_handles_round_trip_in_rocketmqs_form() -> None:
    info = xi.parse_extra_info("120 1727000000000 60000 3 0 broker-a 2 125")
    assert (info.ck_offset, info.pop_time, info.invisible_time, info.revive_qid) == (120, 1727000000000, 60000, 3)
    assert (info.kind, info.broker_name, info.queue_id, info.offset) == (0, "broker-a", 2, 125)
    assert str(info) == "120 1727000000000 60000 3 0 broker-a 2 125"
    assert info.next_visible_time == 1727000060000
    handle = info.handle(4096)
    assert xi.parse_receipt_handle(handle) == (info, 4096)
    assert xi.parse_receipt_handle(str(info)) == (info, -1)
    assert xi.parse_extra_info("1 2 3 4 0 b 5").offset == -1  # the oldest 7-field form
    for bad in ("", "garbage", "1 2 3 4 7 b 5 6", "1 2 x 4 0 b 5 6", "1 2 3 4 0  5 6", "1 2 3 4 0 b 5 " + "9" * 40):
        with pytest.raises(xi.ExtraInfoError):
            xi.parse_extra_info(bad)


def test_topic_types_and_retry_topic_names() -> None:
    assert xi.topic_type("T") == 0
    assert xi.topic_type("%RETRY%G_T") == 1 and xi.pop_retry_topic("G", "T") == "%RETRY%G_T"
    assert xi.topic_type("%RETRY%G+T") == 2 and xi.pop_retry_topic("G", "T", v2=True) == "%RETRY%G+T"
    assert xi.real_topic(1, "T", "G") == "%RETRY%G_T" and xi.real_topic(0, "T", "G") == "T"


def test_response_summaries_parse_as_rocketmqs_client_keys_them() -> None:
    assert xi.parse_start_offset_info("0 1 10;1 0 3") == {"0@1": 10, "1@0": 3}
    assert xi.parse_msg_offset_info("0 1 10,12") == {"0@1": [10, 12]}
    entries = xi.order_count_entries(0, 2, [(7, 1), (8, 0)])
    assert entries == ["0 qo2%7 1", "0 qo2%8 0", "0 2 0"]
    assert xi.parse_order_count_info(";".join(entries)) == {"0@qo2%7": 1, "0@qo2%8": 0, "0@2": 0}


def test_checkpoint_and_ack_bodies_are_rocketmqs_json() -> None:
    ck = CheckPoint(topic="TopicA", group="GID_A", queue_id=3, start_offset=100, pop_time=1700000000000,
                    invisible_time=60000, revive_qid=0, broker_name="broker-a", deltas=[0, 5])
    assert ck.encode() == (
        b'{"bm":0,"bn":"broker-a","c":"GID_A","d":[0,5],"it":60000,"n":2,"pt":1700000000000,"q":3,'
        b'"reviveTime":1700000060000,"ro":0,"so":100,"t":"TopicA"}'
    )
    again = CheckPoint.from_json(jsonbody.loads(ck.encode()), 0)
    assert again.offsets() == [100, 105] and again.key == ck.key
    ack = AckRecord("TopicA", "GID_A", 3, 100, 1700000000000, "broker-a", [105])
    assert ack.encode() == b'{"ao":105,"bn":"broker-a","c":"GID_A","pt":1700000000000,"q":3,"so":100,"t":"TopicA"}'
    batch = AckRecord("TopicA", "GID_A", 3, 100, 1700000000000, "broker-a", [100, 105])
    assert jsonbody.loads(batch.encode())["aol"] == [100, 105] and batch.tag == "bAck"
    assert AckRecord.from_json(jsonbody.loads(batch.encode())).ack_offsets == [100, 105]
    long_names = {"ackOffset": 7, "startOffset": 1, "consumerGroup": "G", "topic": "T", "queueId": 0,
                  "popTime": 5, "brokerName": "b"}
    assert AckRecord.from_json(long_names).ack_offsets == [7]
    for bad in ({}, {"n": 40, "t": "T"}, [], {"d": ["x"], "n": 1}):
        with pytest.raises(RecordError):
            CheckPoint.from_json(bad, 0)


def test_batch_ack_bitsets_are_javas_bitset_bytes() -> None:
    assert base64.b64encode(bitset_to_bytes([0, 3, 9])) == b"CQI="
    body = b'{"acks":[{"b":"CQI=","c":"G","it":1,"pt":2,"q":0,"r":"1","rq":3,"so":100,"t":"T"}],"brokerName":"b"}'
    (entry,) = parse_batch_ack_body(body)
    assert entry.offsets == (100, 103, 109) and entry.retry == 1 and entry.revive_qid == 3
    for bad in (b"[", b"[]", b'{"acks":{}}', b'{"acks":[{"b":"@@","c":"G"}]}', b'{"acks":[1]}'):
        with pytest.raises(RecordError):
            parse_batch_ack_body(bad)


def test_the_inflight_table_acks_settles_and_keeps_the_revive_offset_at_the_oldest_open_ck() -> None:
    table = InFlight()
    a = CheckPoint("T", "G", 0, 10, 1000, 500, 2, "b", [0, 1], revive_offset=7)
    b = CheckPoint("T", "G", 1, 20, 1100, 500, 2, "b", [0], revive_offset=9)
    table.add(a)
    table.add(b)
    assert table.revive_offset(2, 12) == 7 and table.revive_offset(3, 4) == 4
    assert table.ack(a.key, [11]) and not table.ack(a.key, [11]) and not table.ack(a.key, [99])
    assert table.due(1499) == [] and table.due(1500) == [a]
    assert table.next_due() == 1600
    assert table.ack(a.key, [10])  # the last open message: settled and gone
    assert table.get(a.key) is None and table.revive_offset(2, 12) == 9
    table.settle(b)
    assert len(table) == 0 and table.revive_offset(2, 12) == 12 and table.next_due() is None


def test_fifo_order_info_blocks_counts_and_commits() -> None:
    orders = OrderTable()
    assert orders.update("T", "G", 0, 1000, 500, [10, 11], None, 1000) == [0, 0]
    assert orders.blocked_until("T", "G", 0, 1200, None) == 1500
    assert orders.ack("T", "G", 0, 11, 999, 1200) is None  # another batch's popTime: stale
    assert orders.ack("T", "G", 0, 11, 1000, 1200) == 10
    assert orders.change_invisible("T", "G", 0, 10, 1000, 3000, 1200)
    assert orders.blocked_until("T", "G", 0, 2000, None) == 3000
    assert orders.blocked_until("T", "G", 0, 3000, None) is None
    assert orders.acked_offsets("T", "G", 0) == {11}
    assert orders.update("T", "G", 0, 3000, 500, [10, 12], "a1", 3000) == [1, 0]
    assert orders.update("T", "G", 0, 3100, 500, [10, 12], "a1", 3100) == [1, 0]  # same attempt: not counted
    assert orders.blocked_until("T", "G", 0, 3200, "a1") is None
    saved = jsonbody.loads(jsonbody.dumps(orders.to_json()))
    loaded = OrderTable()
    loaded.load_json(saved)
    info = loaded.get("T", "G", 0)
    assert info is not None and info.offsets == [10, 12] and info.counts == {10: 1} and info.attempt_id == "a1"
    assert orders.ack("T", "G", 0, 10, 3100, 3200) == 12 and orders.ack("T", "G", 0, 12, 3100, 3200) == 13
    # A re-pop that read past an offset acked in the batch before keeps it acked (and undelivered).
    orders.update("T", "G", 1, 100, 50, [5, 6, 7], None, 100)
    orders.ack("T", "G", 1, 6, 100, 110)
    assert orders.update("T", "G", 1, 200, 50, [5, 6, 7], None, 200, frozenset({6})) == [1, 1]
    assert orders.acked_offsets("T", "G", 1) == {6}
    assert orders.ack("T", "G", 1, 5, 200, 210) == 7


def test_an_ack_on_a_pop_retry_topic_needs_sub_on_the_original_topic() -> None:
    fields = {"consumerGroup": "G", "topic": "%RETRY%G_T", "queueId": "0", "extraInfo": "x", "offset": "0"}
    needed = needed_resources(RemotingCommand.request(RequestCode.ACK_MESSAGE, fields))
    assert ("T", SUB) in needed and ("%RETRY%G", SUB) in needed
    other = dict(fields, topic="%RETRY%H_T")  # another group's retry topic is checked as named
    assert ("%RETRY%H_T", SUB) in needed_resources(RemotingCommand.request(RequestCode.ACK_MESSAGE, other))
