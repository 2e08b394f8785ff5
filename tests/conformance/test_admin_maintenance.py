"""The maintenance requests of mqadmin as RocketMQ 4.9's tools send them and read the answers
(AdminBrokerProcessor; MQClientAPIImpl.cleanExpiredConsumeQueue, cleanUnusedTopic,
deleteExpiredCommitLog, queryConsumeQueue, queryCorrectionOffset, resumeCheckHalfMessage).
"""

from __future__ import annotations

import time

from tests.conformance.test_admin_tools import (
    SEND_MESSAGE_V2,
    UPDATE_AND_CREATE_TOPIC,
    UPDATE_CONSUMER_OFFSET,
)
from tests.conformance.wire import Conn, decode_records, encode_properties, fastjson_loads
from tests.support.dev import DevServer

CLEAN_EXPIRED_CONSUMEQUEUE = 306
QUERY_CORRECTION_OFFSET = 308
CLEAN_UNUSED_TOPIC = 316
QUERY_CONSUME_QUEUE = 321
RESUME_CHECK_HALF_MESSAGE = 323
DELETE_EXPIRED_COMMITLOG = 329
VIEW_MESSAGE_BY_ID = 33
GET_MAX_OFFSET = 30
SYSTEM_ERROR = 1
LONG_MAX = (1 << 63) - 1
TOPIC = "ConfMaint"


def send(conn: Conn, topic: str, body: bytes, sys_flag: int = 0, **props: str) -> dict[str, str]:
    properties = {"UNIQ_KEY": f"0A00000100{int(time.time_ns()):022X}", "WAIT": "true", **props}
    header = {"a": "PG_maint", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": str(sys_flag),
              "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(properties), "j": "0",
              "k": "false", "m": "false"}
    reply = conn.java(SEND_MESSAGE_V2, header, body)
    assert reply.code == 0, reply.remark
    return reply.ext


def make_topic(conn: Conn, topic: str) -> None:
    created = conn.java(UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
    assert created.code == 0, created.remark


def test_clean_and_delete_requests_answer_success_without_a_remark(dev: DevServer) -> None:
    """cleanExpiredCQ / cleanUnusedTopic / deleteExpiredCommitLog: RemotingCommand with code 0, remark null."""
    with Conn(dev.broker) as conn:
        make_topic(conn, TOPIC)
        send(conn, TOPIC, b"kept")
        for code in (CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC, DELETE_EXPIRED_COMMITLOG):
            reply = conn.java(code)
            assert (reply.code, reply.remark) == (0, None), code
        # A topic of the topic table keeps its queue.
        assert conn.java(GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"}).ext["offset"] == "1"


def test_query_consume_queue_answers_raw_units_and_rocketmq_remarks(dev: DevServer) -> None:
    """QueryConsumeQueueCommand: QueryConsumeQueueResponseBody with queueData, min/maxQueueIndex."""
    topic = TOPIC + "Cq"
    with Conn(dev.broker) as conn:
        make_topic(conn, topic)
        sent = [send(conn, topic, b"m%d" % i) for i in range(3)]
        reply = conn.java(QUERY_CONSUME_QUEUE, {"topic": topic, "queueId": "0", "index": "1", "count": "10",
                                                "consumerGroup": "CG_offline"})
        beyond = conn.java(QUERY_CONSUME_QUEUE, {"topic": topic, "queueId": "0", "index": "9", "count": "1"})
        missing = conn.java(QUERY_CONSUME_QUEUE, {"topic": topic, "queueId": "5", "index": "0", "count": "1"})
    assert reply.code == 0 and reply.remark is None
    body = fastjson_loads(reply.body)
    assert (body["minQueueIndex"], body["maxQueueIndex"]) == (0, 3)
    assert body["filterData"] == f"CG_offline@{topic} is not online!" and "subscriptionData" not in body
    phys = [int(s["msgId"][16:], 16) for s in sent]
    assert [u["physicOffset"] for u in body["queueData"]] == phys[1:]
    assert all(u["physicSize"] > 0 and isinstance(u["tagsCode"], int) and u["eval"] is False
               for u in body["queueData"])
    assert beyond.code == 0 and beyond.remark == f"Index 9 of 0@{topic} is not exist!"
    assert "queueData" not in fastjson_loads(beyond.body)
    assert (missing.code, missing.remark) == (SYSTEM_ERROR, f"5@{topic} is not exist!")


def test_query_correction_offset_takes_the_least_offset_and_marks_a_lagging_compare_group(dev: DevServer) -> None:
    """ConsumerOffsetManager.queryMinOffsetInAllGroup; a QueryCorrectionOffsetBody keyed by bare ints."""
    topic = TOPIC + "Corr"
    with Conn(dev.broker) as conn:
        make_topic(conn, topic)
        for _ in range(6):
            send(conn, topic, b"x")
        for group, offset in (("CG_a", "5"), ("CG_b", "3"), ("CG_cmp", "2")):
            assert conn.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": "0",
                                                      "commitOffset": offset}).code == 0
        lagging = conn.java(QUERY_CORRECTION_OFFSET, {"topic": topic, "compareGroup": "CG_cmp",
                                                      "filterGroups": "CG_cmp"})
        filtered = conn.java(QUERY_CORRECTION_OFFSET, {"topic": topic, "compareGroup": "CG_a",
                                                       "filterGroups": "CG_b,CG_cmp"})
        fresh = conn.java(QUERY_CORRECTION_OFFSET, {"topic": topic, "compareGroup": "CG_none",
                                                    "filterGroups": "CG_cmp"})
    assert b'"correctionOffsets":{0:' in lagging.body
    assert fastjson_loads(lagging.body)["correctionOffsets"] == {"0": LONG_MAX}
    assert fastjson_loads(filtered.body)["correctionOffsets"] == {"0": 5}
    assert fastjson_loads(fresh.body)["correctionOffsets"] == {"0": 3}


def test_resume_check_half_message_puts_it_back_with_no_check_counted(dev: DevServer) -> None:
    """AdminBrokerProcessor.resumeCheckHalfMessage: decodeMessageId, put to the half topic, queue 0."""
    topic = TOPIC + "Tx"
    half_topic = "RMQ_SYS_TRANS_HALF_TOPIC"
    with Conn(dev.broker) as conn:
        make_topic(conn, topic)
        half = send(conn, topic, b"half", sys_flag=4, TRAN_MSG="true", PGROUP="PG_maint")
        resumed = conn.java(RESUME_CHECK_HALF_MESSAGE, {"msgId": half["msgId"]})
        bad = conn.java(RESUME_CHECK_HALF_MESSAGE, {"msgId": "nothex"})
        end = int(conn.java(GET_MAX_OFFSET, {"topic": half_topic, "queueId": "0"}).ext["offset"])
        units = fastjson_loads(conn.java(QUERY_CONSUME_QUEUE, {
            "topic": half_topic, "queueId": "0", "index": "0", "count": str(end)}).body)["queueData"]
        records = [decode_records(conn.java(VIEW_MESSAGE_BY_ID, {"offset": str(u["physicOffset"])}).body)[0]
                   for u in units]
    assert (resumed.code, resumed.remark) == (0, None)
    copies = [r for r in records if r.body == b"half" and r.properties.get("TRANSACTION_CHECK_TIMES") == "0"]
    assert len(copies) == 1 and copies[0].properties["REAL_TOPIC"] == topic
    assert (bad.code, bad.remark) == (
        SYSTEM_ERROR, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.")
