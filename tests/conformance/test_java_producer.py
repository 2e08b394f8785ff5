"""What the Java client 4.9.x producer sends, replayed byte for byte, and our answers read its way.

MQClientInstance.updateTopicRouteInfoFromNameServer, sendHeartbeatToAllBroker
and DefaultMQProducerImpl.sendKernelImpl (SEND_MESSAGE_V2, header letters a-m)
with MQClientAPIImpl.processSendResponse.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.conformance.wire import Conn, decode_records, encode_properties, fastjson_loads
from tests.support.dev import DevServer
from tests.support.procs import eventually

GET_ROUTEINFO_BY_TOPIC = 105
HEART_BEAT = 34
SEND_MESSAGE_V2 = 310
PULL_MESSAGE = 11
TOPIC_NOT_EXIST = 17
GET_ALL_PRODUCER_INFO = 328
PERM_WRITE = 2
PERM_READ = 4


def publish_queues(route: dict[str, Any]) -> list[tuple[str, int]]:
    """MQClientInstance.topicRouteData2TopicPublishInfo without orderTopicConf: writable master queues."""
    masters = {bd["brokerName"]: bd["brokerAddrs"] for bd in route["brokerDatas"]}
    out: list[tuple[str, int]] = []
    for qd in sorted(route["queueDatas"], key=lambda q: q["brokerName"]):
        if not qd["perm"] & PERM_WRITE:
            continue
        addrs = masters.get(qd["brokerName"])
        if addrs is None or "0" not in addrs:
            continue
        out.extend((qd["brokerName"], i) for i in range(qd["writeQueueNums"]))
    return out


def v2_header(topic: str, queue_id: int, props: dict[str, str], **over: str) -> dict[str, str]:
    """SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2 from sendKernelImpl's header."""
    header = {
        "a": "PG_conformance", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0", "k": "false",
        "m": "false",
    }
    header.update(over)
    return header


def test_a_java_route_lookup_gets_standard_json_with_a_reachable_master(dev: DevServer) -> None:
    with Conn(dev.namesrv) as ns:
        reply = ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert reply.code == 0 and reply.flag & 1
    # version 407 >= 401: quoted keys, so even a strict JSON parser reads it (§4.2).
    assert b'"brokerAddrs":{"0":"' in reply.body
    route = json.loads(reply.body)
    assert set(route) >= {"queueDatas", "brokerDatas", "filterServerTable"}
    qd = route["queueDatas"][0]
    assert set(qd) >= {"brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag"}
    assert route["brokerDatas"][0]["brokerAddrs"]["0"] == dev.broker
    with Conn(route["brokerDatas"][0]["brokerAddrs"]["0"]) as broker:
        body = json.dumps({"clientID": "127.0.0.1@reach", "producerDataSet": [{"groupName": "PG"}],
                           "consumerDataSet": []}).encode()
        assert broker.java(HEART_BEAT, None, body).code == 0


def test_an_unknown_topic_is_topic_not_exist_and_tbw102_lets_the_producer_send_to_it(dev: DevServer) -> None:
    topic = "ConfAutoCreated"
    with Conn(dev.namesrv) as ns:
        missing = ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        assert missing.code == TOPIC_NOT_EXIST and missing.body == b""
        default = ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    route = fastjson_loads(default.body)
    # getDefaultTopicRouteInfoFromNameServer then caps each queue count at defaultTopicQueueNums (4).
    for qd in route["queueDatas"]:
        qd["readQueueNums"] = qd["writeQueueNums"] = min(4, qd["readQueueNums"])
    queues = publish_queues(route)
    assert queues, "TBW102 must offer writable master queues for auto-creation"
    broker_name, queue_id = queues[-1]
    with Conn(dev.broker) as broker:
        reply = broker.java(SEND_MESSAGE_V2, v2_header(topic, queue_id, {"UNIQ_KEY": "AC01", "WAIT": "true"}),
                            b"auto")
    assert reply.code == 0, reply.remark
    assert reply.ext["queueId"] == str(queue_id)

    def route_known() -> bool:
        with Conn(dev.namesrv) as ns:
            return ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code == 0
    eventually(route_known, timeout=10, message="an auto-created topic reaches the name server")
    with Conn(dev.namesrv) as ns:
        created = fastjson_loads(ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).body)
    assert (broker_name, queue_id) in publish_queues(created)


def test_a_heartbeat_response_carries_the_broker_version_sql92_needs(dev: DevServer) -> None:
    body = {
        "clientID": "127.0.0.1@4242#1700000000000",
        "consumerDataSet": [],
        "producerDataSet": [{"groupName": "PG_conformance"}, {"groupName": "CLIENT_INNER_PRODUCER"}],
    }
    with Conn(dev.broker) as broker:
        reply = broker.java(HEART_BEAT, None, json.dumps(body).encode())
        assert reply.code == 0
        # mqadmin producer: GET_ALL_PRODUCER_INFO answers ProducerTableInfo.
        table = broker.java(GET_ALL_PRODUCER_INFO, {"brokerAddr": dev.broker})
    # brokerVersionTable records response.getVersion(); SQL92 pulls need >= V4_1_0 (232).
    assert reply.version >= 232
    assert reply.language in ("JAVA", "PYTHON")
    assert table.code == 0, table.remark
    (info,) = fastjson_loads(table.body)["data"]["PG_conformance"]
    assert info["clientId"] == body["clientID"] and info["language"] == "JAVA" and info["version"] == 407
    assert info["remoteIP"].startswith("/127.0.0.1:") and int(info["lastUpdateTimestamp"]) > 0


def test_a_v2_send_answers_every_field_processSendResponse_reads(dev: DevServer) -> None:
    props = {"UNIQ_KEY": "7F00000100002A9F000000000001", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2"}
    with Conn(dev.broker) as broker:
        reply = broker.java(SEND_MESSAGE_V2, v2_header("TBW102", 0, props, b="ConfSendV2"), b"payload")
    assert reply.code == 0, reply.remark
    # SendMessageResponseHeader: msgId, queueId, queueOffset are @CFNotNull.
    msg_id, queue_id, queue_offset = reply.ext["msgId"], int(reply.ext["queueId"]), int(reply.ext["queueOffset"])
    assert queue_id == 0 and queue_offset == 0
    assert len(msg_id) == 32 and int(msg_id, 16) >= 0
    assert reply.ext["MSG_REGION"] == "DefaultRegion"
    assert reply.ext["TRACE_ON"] == "true"
    with Conn(dev.broker) as broker:
        pulled = broker.java(PULL_MESSAGE, {
            "consumerGroup": "CG_v2", "topic": "ConfSendV2", "queueId": "0", "queueOffset": "0",
            "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "*", "subVersion": "0", "expressionType": "TAG"})
    (record,) = decode_records(pulled.body)
    # The offset message id is store host + commit log offset, the same the send response gave.
    assert record.msg_id == msg_id
    assert record.properties["UNIQ_KEY"] == props["UNIQ_KEY"]
    assert record.properties["TAGS"] == "TagA" and record.properties["KEYS"] == "k1 k2"
    assert record.body == b"payload" and record.queue_offset == queue_offset


def test_a_send_with_the_binary_rocketmq_header_is_answered_in_the_binary_header(dev: DevServer) -> None:
    # The Java benchmark tools run with -Drocketmq.serialize.type=ROCKETMQ.
    with Conn(dev.broker) as broker, Conn(dev.namesrv) as ns:
        heartbeat = json.dumps({"clientID": "127.0.0.1@bin", "producerDataSet": [{"groupName": "PG"}],
                                "consumerDataSet": []}).encode()
        beat = broker.binary(HEART_BEAT, None, heartbeat)
        reply = broker.binary(SEND_MESSAGE_V2, v2_header("TBW102", 1, {"UNIQ_KEY": "BIN1"}, b="ConfSendBin"),
                              b"binary body")
        route = ns.binary(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
        # An empty value is written with length 0 (e.g. an empty subscription string).
        pulled = broker.binary(PULL_MESSAGE, {
            "consumerGroup": "CG_bin", "topic": "ConfSendBin", "queueId": "1", "queueOffset": "0",
            "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "", "subVersion": "0", "expressionType": "TAG"})
    assert beat.serialize_type == 1 and beat.code == 0 and beat.version >= 232
    assert pulled.serialize_type == 1 and pulled.code == 0, pulled.remark
    assert int(pulled.ext["nextBeginOffset"]) == 1
    assert [r.body for r in decode_records(pulled.body)] == [b"binary body"]
    assert reply.serialize_type == 1 and reply.code == 0, reply.remark
    assert reply.flag & 1
    assert set(reply.ext) >= {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}
    assert int(reply.ext["queueId"]) == 1
    assert route.serialize_type == 1 and route.code == 0
    assert fastjson_loads(route.body)["brokerDatas"][0]["brokerAddrs"]["0"] == dev.broker


def test_a_send_missing_a_required_header_field_is_refused_with_a_remark(dev: DevServer) -> None:
    header = v2_header("ConfBad", 0, {"UNIQ_KEY": "X"})
    del header["b"]
    with Conn(dev.broker) as broker:
        reply = broker.java(SEND_MESSAGE_V2, header, b"x")
        # The connection stays usable after a refused request.
        ok = broker.java(SEND_MESSAGE_V2, v2_header("ConfBad", 0, {"UNIQ_KEY": "Y"}), b"y")
    assert reply.code != 0 and reply.remark and "topic" in reply.remark
    assert ok.code == 0


def test_a_send_to_a_queue_the_topic_lacks_is_refused_with_javas_topic_config_text(dev: DevServer) -> None:
    with Conn(dev.broker) as broker:
        assert broker.java(SEND_MESSAGE_V2, v2_header("ConfQueues", 0, {"UNIQ_KEY": "Q0"}), b"q").code == 0
        reply = broker.java(SEND_MESSAGE_V2, v2_header("ConfQueues", 99, {"UNIQ_KEY": "Q1"}), b"q")
    assert reply.code == 1 and reply.remark is not None
    assert "request queueId[99] is illegal, TopicConfig [topicName=ConfQueues, readQueueNums=4" in reply.remark
    assert "perm=RW-" in reply.remark
