"""What mqadmin and the Dashboard (DefaultMQAdminExt over MQClientAPIImpl, 4.9.x) send, and how they read it.

clusterList (GET_BROKER_CLUSTER_INFO + GET_BROKER_RUNTIME_INFO), updateTopic,
topicRoute, topicStatus (GET_TOPIC_STATS_INFO), consumerProgress
(GET_CONSUME_STATS after the %RETRY% route), consumerConnection,
queryMsgById (VIEW_MESSAGE_BY_ID at the address inside the id),
queryMsgByKey / queryMsgByUniqueKey (QUERY_MESSAGE), MQAdminImpl's offset and
time lookups, brokerConsumeStats, consume time spans, cloneGroupOffset, and the requests the broker relays to a client
(GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY).
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from tests.conformance.wire import (
    Conn,
    decode_records,
    encode_properties,
    fastjson_loads,
)
from tests.support.dev import DevServer
from tests.support.java_consumer import FakeJavaConsumer
from tests.support.procs import eventually

UPDATE_AND_CREATE_TOPIC = 17
GET_BROKER_RUNTIME_INFO = 28
SEARCH_OFFSET_BY_TIMESTAMP = 29
GET_MAX_OFFSET = 30
GET_MIN_OFFSET = 31
GET_EARLIEST_MSG_STORETIME = 32
VIEW_MESSAGE_BY_ID = 33
HEART_BEAT = 34
QUERY_MESSAGE = 12
PULL_MESSAGE = 11
UPDATE_CONSUMER_OFFSET = 15
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
GET_TOPIC_STATS_INFO = 202
GET_CONSUMER_CONNECTION_LIST = 203
GET_CONSUME_STATS = 208
QUERY_CONSUME_TIME_SPAN = 303
VIEW_BROKER_STATS_DATA = 315
CLONE_GROUP_OFFSET = 314
QUERY_CONSUMER_OFFSET = 14
GET_BROKER_CONSUME_STATS = 317
GET_CONSUMER_RUNNING_INFO = 307
CONSUME_MESSAGE_DIRECTLY = 309
SEND_MESSAGE_V2 = 310
QUERY_NOT_FOUND = 22

TOPIC = "ConfAdmin"
GROUP = "CG_admin"
CLIENT_ID = "127.0.0.1@5005#5"
LONG_MAX = str((1 << 63) - 1)


@pytest.fixture(scope="module")
def sent(dev: DevServer) -> Iterator[list[dict[str, str]]]:
    """updateTopic as mqadmin sends it, then three messages with keys; yields their send responses."""
    with Conn(dev.broker) as admin:
        created = admin.java(UPDATE_AND_CREATE_TOPIC, {
            "topic": TOPIC, "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        assert created.code == 0, created.remark
        out = []
        for i, key in enumerate(["order-1", "order-2 shared", "order-3 shared"]):
            props = {"UNIQ_KEY": f"0A0000010000{i:020X}", "KEYS": key, "TAGS": "T", "WAIT": "true"}
            header = {"a": "PG", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
                      "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0",
                      "k": "false", "m": "false"}
            reply = admin.java(SEND_MESSAGE_V2, header, f"body-{i}".encode())
            assert reply.code == 0, reply.remark
            out.append(dict(reply.ext, uniq=props["UNIQ_KEY"]))
    yield out


def test_cluster_list_reads_the_cluster_table_and_parses_every_runtime_figure(dev: DevServer) -> None:
    with Conn(dev.namesrv) as ns:
        raw = ns.java(GET_BROKER_CLUSTER_INFO).body
    # ClusterInfo is always written in fastjson's legacy form: bare numeric broker ids (§4.3).
    assert b'"brokerAddrs":{0:"' in raw
    info = fastjson_loads(raw)
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    addr = info["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"]
    assert addr == dev.broker
    with Conn(addr) as broker:
        table = fastjson_loads(broker.java(GET_BROKER_RUNTIME_INFO).body)["table"]
    # ClusterListSubCommand: Long.parseLong on the totals, split(" ")[0] of the TPS figures,
    # Long.valueOf(earliestMessageTimeStamp), Double.valueOf(commitLogDiskRatio), and prints the rest.
    for key in ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow",
                "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow",
                "earliestMessageTimeStamp"):
        int(table[key])
    float(table["putTps"].split(" ")[0])
    float(table["getTransferedTps"].split(" ")[0])
    float(table["commitLogDiskRatio"])
    for key in ("sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills",
                "pullThreadPoolQueueHeadWaitTimeMills", "pageCacheLockTimeMills"):
        int(table[key])
    assert table["brokerVersionDesc"] == "V4_9_7"


def test_topic_route_and_topic_status_read_the_created_topic(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.namesrv) as ns:
        route = fastjson_loads(ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}).body)
    assert route["queueDatas"] == [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 2,
                                    "topicSysFlag": 0, "writeQueueNums": 2}]
    with Conn(dev.broker) as broker:
        reply = broker.java(GET_TOPIC_STATS_INFO, {"topic": TOPIC})
    assert reply.code == 0
    # TopicStatsTable.offsetTable is keyed by MessageQueue objects.
    stats = object_keyed(reply.body, "offsetTable")
    assert {k["queueId"]: v["maxOffset"] for k, v in stats} == {0: 3, 1: 0}
    assert all(set(v) == {"minOffset", "maxOffset", "lastUpdateTimestamp"} for _, v in stats)


def test_consumer_progress_finds_the_retry_route_and_reads_object_keyed_stats(dev: DevServer) -> None:
    body = json.dumps({
        "clientID": CLIENT_ID, "producerDataSet": [],
        "consumerDataSet": [{"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                             "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
                             "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                                      "subString": "*", "subVersion": 1, "tagsSet": [],
                                                      "topic": TOPIC}]}],
    }).encode()
    with Conn(dev.broker) as client:
        assert client.java(HEART_BEAT, None, body).code == 0
        client.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0",
                                             "commitOffset": "2"})
        # An offset on a topic the online group does not subscribe to: left out, as RocketMQ does.
        client.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": "TBW102", "queueId": "0",
                                             "commitOffset": "0"})

        def retry_route_known() -> bool:
            # examineConsumeStats(group) starts from the route of %RETRY%<group>; the heartbeat
            # created that topic and the broker registers it right after (Java: before answering).
            with Conn(dev.namesrv) as ns:
                return ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": f"%RETRY%{GROUP}"}).code == 0
        eventually(retry_route_known, timeout=10, message="the retry topic reaches the name server")
        with Conn(dev.broker) as admin:
            stats = admin.java(GET_CONSUME_STATS, {"consumerGroup": GROUP})
            conns = admin.java(GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP})
    assert stats.code == 0
    doc = fastjson_loads_object_keys(stats.body)
    float(doc["consumeTps"])
    assert {k["topic"] for k, _ in doc["offsetTable"]} == {TOPIC}
    table = {k["queueId"]: v for k, v in doc["offsetTable"] if k["topic"] == TOPIC}
    assert table[0]["brokerOffset"] == 3 and table[0]["consumerOffset"] == 2
    assert table[0]["lastTimestamp"] > 0
    connection = fastjson_loads(conns.body)
    assert connection["connectionSet"][0]["clientId"] == CLIENT_ID
    assert connection["connectionSet"][0]["language"] == "JAVA"
    assert connection["messageModel"] == "CLUSTERING"
    assert connection["subscriptionTable"][TOPIC]["subString"] == "*"


def test_query_msg_by_id_goes_to_the_address_inside_the_id(dev: DevServer, sent: list[dict[str, str]]) -> None:
    msg_id = sent[1]["msgId"]
    raw = bytes.fromhex(msg_id)
    host = socket.inet_ntoa(raw[:4])
    (port,) = struct.unpack(">i", raw[4:8])
    (offset,) = struct.unpack(">q", raw[8:16])
    assert f"{host}:{port}" == dev.broker, "MessageDecoder.decodeMessageId must lead back to this broker"
    with Conn(f"{host}:{port}") as broker:
        reply = broker.java(VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        missing = broker.java(VIEW_MESSAGE_BY_ID, {"offset": str(1 << 40)})
    (record,) = decode_records(reply.body)
    assert record.msg_id == msg_id and record.body == b"body-1"
    assert missing.code != 0 and missing.remark


def test_query_by_key_and_by_unique_key_answer_the_index_headers(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as broker:
        by_key = broker.java(QUERY_MESSAGE, {"topic": TOPIC, "key": "shared", "maxNum": "32",
                                             "beginTimestamp": "0", "endTimestamp": LONG_MAX})
        # viewMessage(topic, uniqKey) asks with maxNum Integer.MAX_VALUE and the unique-key flag.
        by_uniq = broker.java(QUERY_MESSAGE, {"topic": TOPIC, "key": sent[2]["uniq"], "maxNum": "2147483647",
                                              "beginTimestamp": "0", "endTimestamp": LONG_MAX,
                                              "_UNIQUE_KEY_QUERY": "true"})
        none = broker.java(QUERY_MESSAGE, {"topic": TOPIC, "key": "absent", "maxNum": "32",
                                           "beginTimestamp": "0", "endTimestamp": LONG_MAX})
    for reply in (by_key, by_uniq):
        assert reply.code == 0, reply.remark
        int(reply.ext["indexLastUpdateTimestamp"])
        int(reply.ext["indexLastUpdatePhyoffset"])
    assert sorted(r.body for r in decode_records(by_key.body)) == [b"body-1", b"body-2"]
    assert [r.properties["UNIQ_KEY"] for r in decode_records(by_uniq.body)] == [sent[2]["uniq"]]
    assert none.code == QUERY_NOT_FOUND


def test_offset_and_time_lookups_answer_their_required_fields(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as broker:
        q = {"topic": TOPIC, "queueId": "0"}
        assert broker.java(GET_MAX_OFFSET, q).ext["offset"] == "3"
        assert broker.java(GET_MIN_OFFSET, q).ext["offset"] == "0"
        earliest = int(broker.java(GET_EARLIEST_MSG_STORETIME, q).ext["timestamp"])
        assert earliest > 0
        found = broker.java(SEARCH_OFFSET_BY_TIMESTAMP, dict(q, timestamp=str(earliest)))
        later = broker.java(SEARCH_OFFSET_BY_TIMESTAMP, dict(q, timestamp=str(earliest + 10**9)))
    assert found.ext["offset"] == "0"
    # 4.9.7's ConsumeQueue.getOffsetInQueueByTime answers the last message for a later time.
    assert later.ext["offset"] == "2"


def fake_java_client(addr: str, client_id: str) -> FakeJavaConsumer:
    """A consumer of CG_relay with no subscriptions."""
    heartbeat = {
        "clientID": client_id, "producerDataSet": [],
        "consumerDataSet": [{"groupName": "CG_relay", "consumeType": "CONSUME_PASSIVELY",
                             "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                             "unitMode": False, "subscriptionDataSet": []}],
    }
    running_info = json.dumps({"properties": {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
                               "subscriptionSet": [], "mqTable": {}, "statusTable": {}}).encode()
    return FakeJavaConsumer(addr, heartbeat, running_info, spent_ms=1)


def test_the_broker_relays_running_info_and_direct_consume_to_the_client(
        dev: DevServer, sent: list[dict[str, str]]) -> None:
    client = fake_java_client(dev.broker, "127.0.0.1@7007#7")
    try:
        with Conn(dev.broker) as admin:
            info = admin.java(GET_CONSUMER_RUNNING_INFO,
                              {"consumerGroup": "CG_relay", "clientId": "127.0.0.1@7007#7", "jstackEnable": "false"})
            direct = admin.java(CONSUME_MESSAGE_DIRECTLY,
                                {"consumerGroup": "CG_relay", "clientId": "127.0.0.1@7007#7",
                                 "msgId": sent[0]["msgId"]})
            offline = admin.java(GET_CONSUMER_RUNNING_INFO,
                                 {"consumerGroup": "CG_relay", "clientId": "nobody", "jstackEnable": "false"})
    finally:
        client.close()
    assert info.code == 0, info.remark
    assert fastjson_loads(info.body)["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert direct.code == 0, direct.remark
    assert fastjson_loads(direct.body)["remark"] == "body-0"
    relayed = {r.code: r for r in client.seen}
    assert relayed[GET_CONSUMER_RUNNING_INFO].ext["clientId"] == "127.0.0.1@7007#7"
    # ClientRemotingProcessor.consumeMessageDirectly reads brokerName, added by the broker.
    assert relayed[CONSUME_MESSAGE_DIRECTLY].ext["brokerName"] == "broker-a"
    assert offline.code != 0 and offline.remark


def object_keyed(body: bytes, field: str) -> list[tuple[dict, dict]]:
    return fastjson_loads_object_keys(body)[field]


def fastjson_loads_object_keys(body: bytes) -> dict:
    """A fastjson reading of a body whose maps may be keyed by objects (MessageQueue)."""
    text = body.decode()
    decoder = json.JSONDecoder()
    pos = 0

    def value() -> object:
        nonlocal pos
        skip()
        if text[pos] == "{":
            return obj()
        if text[pos] == "[":
            pos += 1
            items: list[object] = []
            skip()
            if text[pos] == "]":
                pos += 1
                return items
            while True:
                items.append(value())
                skip()
                pos += 1
                if text[pos - 1] == "]":
                    return items
        result, pos = decoder.raw_decode(text, pos)
        return result

    def obj() -> object:
        nonlocal pos
        pos += 1
        pairs: list[tuple[object, object]] = []
        skip()
        if text[pos] == "}":
            pos += 1
            return {}
        while True:
            skip()
            key = value()
            skip()
            assert text[pos] == ":"
            pos += 1
            pairs.append((key, value()))
            skip()
            pos += 1
            if text[pos - 1] == "}":
                break
        if all(isinstance(k, str) for k, _ in pairs):
            return dict(pairs)  # type: ignore[arg-type]
        return pairs

    def skip() -> None:
        nonlocal pos
        while text[pos] in " \t\r\n":
            pos += 1

    return value()  # type: ignore[return-value]


def test_broker_consume_stats_and_time_spans_read_as_the_admin_classes(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as admin:
        # A pull creates the subscription group (autoCreateSubscriptionGroup); brokerConsumeStats
        # walks the subscription groups, not the offset table.
        admin.java(PULL_MESSAGE, {"consumerGroup": "CG_span", "topic": TOPIC, "queueId": "0", "queueOffset": "0",
                                  "maxMsgNums": "1", "sysFlag": "4", "commitOffset": "0",
                                  "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
                                  "expressionType": "TAG"})
        admin.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG_span", "topic": TOPIC, "queueId": "0",
                                            "commitOffset": "1"})
        # mqadmin brokerConsumeStats: GetConsumeStatsInBrokerHeader.isOrder.
        listed = admin.java(GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
        spans = admin.java(QUERY_CONSUME_TIME_SPAN, {"topic": TOPIC, "group": "CG_span"})
        missing = admin.java(QUERY_CONSUME_TIME_SPAN, {"topic": "ConfNoSuchTopic", "group": "CG_span"})
    assert listed.code == 0, listed.remark
    doc = fastjson_loads_object_keys(listed.body)
    assert doc["brokerAddr"] == dev.broker and int(doc["totalDiff"]) >= 2
    groups = {group: stats for entry in doc["consumeStatsList"] for group, stats in entry.items()}
    (stats,) = groups["CG_span"]
    rows = {k["queueId"]: v for k, v in stats["offsetTable"]}
    assert rows[0] == {"brokerOffset": 3, "consumerOffset": 1, "lastTimestamp": rows[0]["lastTimestamp"]}
    assert rows[0]["lastTimestamp"] > 0
    assert spans.code == 0, spans.remark
    by_queue = {s["messageQueue"]["queueId"]: s for s in json.loads(spans.body)["consumeTimeSpanSet"]}
    first = by_queue[0]
    assert first["messageQueue"] == {"brokerName": "broker-a", "queueId": 0, "topic": TOPIC}
    assert 0 < first["minTimeStamp"] <= first["consumeTimeStamp"] <= first["maxTimeStamp"]
    assert first["delayTime"] >= 0
    assert missing.code != 0 and missing.remark


def test_stats_all_reads_topic_put_numbers_and_unknown_stats_are_refused(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as admin:
        # mqadmin statsAll / the Dashboard: viewBrokerStatsData(addr, TOPIC_PUT_NUMS, topic).
        puts = admin.java(VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": TOPIC})
        unknown = admin.java(VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "ConfNoSuch"})
    assert puts.code == 0, puts.remark
    data = fastjson_loads(puts.body)
    for window in ("statsMinute", "statsHour", "statsDay"):
        assert set(data[window]) == {"sum", "tps", "avgpt"}
        float(data[window]["tps"])
        float(data[window]["avgpt"])
    # StatsAllSubCommand.compute24HourSum takes statsDay.sum first.
    assert data["statsDay"]["sum"] == 3 and data["statsHour"]["sum"] == 3
    assert unknown.code != 0 and "not exist" in (unknown.remark or "")


def test_stats_all_reads_group_get_numbers_after_a_pull(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as conn:
        pulled = conn.java(PULL_MESSAGE, {"consumerGroup": "CG_stats", "topic": TOPIC, "queueId": "0",
                                          "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "4",
                                          "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
                                          "subVersion": "0", "expressionType": "TAG"})
        assert pulled.code == 0
        gets = conn.java(VIEW_BROKER_STATS_DATA, {"statsName": "GROUP_GET_NUMS", "statsKey": f"{TOPIC}@CG_stats"})
    assert gets.code == 0, gets.remark
    data = fastjson_loads(gets.body)
    assert data["statsMinute"]["sum"] == 3 and data["statsDay"]["sum"] == 3
    assert float(data["statsMinute"]["tps"]) > 0 and float(data["statsMinute"]["avgpt"]) == 3.0


def test_clone_group_offset_copies_the_committed_offsets(dev: DevServer, sent: list[dict[str, str]]) -> None:
    with Conn(dev.broker) as admin:
        admin.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG_src", "topic": TOPIC, "queueId": "0",
                                            "commitOffset": "2"})
        # mqadmin cloneGroupOffset -s CG_src -d CG_dest -t <topic> -o false
        cloned = admin.java(CLONE_GROUP_OFFSET, {"srcGroup": "CG_src", "destGroup": "CG_dest", "topic": TOPIC,
                                                 "offline": "false"})
        copied = admin.java(QUERY_CONSUMER_OFFSET, {"consumerGroup": "CG_dest", "topic": TOPIC, "queueId": "0"})
    assert cloned.code == 0, cloned.remark
    assert copied.code == 0 and copied.ext["offset"] == "2"
