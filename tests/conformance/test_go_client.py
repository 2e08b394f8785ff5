"""What rocketmq-client-go v2 sends (language "GO", version 317, ext fields as strings, `"remark":""`), and
how it reads our answers: jsoniter into int16/int32 header fields and a map[string]string of ext fields,
routes through gjson with its own brokerAddrs splitting, send and pull responses through strconv.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.conformance.wire import (
    Conn,
    decode_records,
    encode_batch,
    encode_properties,
    fastjson_loads,
    go_broker_addrs,
)
from tests.support.dev import DevServer
from tests.support.procs import eventually

SEND_MESSAGE = 10
PULL_MESSAGE = 11
QUERY_CONSUMER_OFFSET = 14
UPDATE_CONSUMER_OFFSET = 15
HEART_BEAT = 34
GET_CONSUMER_LIST_BY_GROUP = 38
LOCK_BATCH_MQ = 41
GET_ROUTEINFO_BY_TOPIC = 105
GET_CONSUMER_CONNECTION_LIST = 203
SEND_BATCH_MESSAGE = 320
UPDATE_AND_CREATE_TOPIC = 17
GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
DELETE_TOPIC_IN_BROKER = 215
DELETE_TOPIC_IN_NAMESRV = 216

TOPIC = "ConfGo"
GROUP = "CG_go"
CLIENT_ID = "127.0.0.1@31337@1700000000000000000"


def go_hash(tag: str) -> str:
    """utils.HashString: Java's String.hashCode, which Go puts in codeSet as a string."""
    h = 0
    for ch in tag:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return str(h - (1 << 32) if h >= 1 << 31 else h)


def go_send_header(queue_id: int, props: dict[str, str]) -> dict[str, str]:
    """SendMessageRequestHeader.Encode (code 10), every number a decimal string."""
    return {
        "producerGroup": "PG_go", "topic": TOPIC, "queueId": str(queue_id), "sysFlag": "0",
        "bornTimestamp": str(int(time.time() * 1000)), "flag": "0", "reconsumeTimes": "0", "unitMode": "false",
        "maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
        "properties": encode_properties(props), "bname": "broker-a",
    }


@pytest.fixture(scope="module")
def go(dev: DevServer) -> Iterator[Conn]:
    """A Go client's broker connection that heartbeated a push consumer with a tag subscription."""
    conn = Conn(dev.broker)
    sub = {"classFilterMode": False, "topic": TOPIC, "subString": "red || blue", "tagsSet": ["blue", "red"],
           "codeSet": sorted([go_hash("red"), go_hash("blue")]), "subVersion": time.time_ns(),
           "expressionType": "TAG"}
    body = json.dumps({
        "clientID": CLIENT_ID, "producerDataSet": [{"groupName": "PG_go"}],
        "consumerDataSet": [{"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                             "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [sub],
                             "unitMode": False}],
    }, separators=(",", ":")).encode()
    reply = conn.go(HEART_BEAT, None, body)
    assert reply.code == 0, reply.remark
    # AddBrokerVersion(brokerName, addr, int32(response.Version)).
    assert 0 < reply.version < 1 << 15
    try:
        yield conn
    finally:
        conn.close()


def test_a_go_route_lookup_parses_with_gjson_and_its_broker_addrs_split(dev: DevServer) -> None:
    with Conn(dev.namesrv) as ns:
        reply = ns.go(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert reply.code == 0 and reply.body
    # Version 317 < 401: the legacy form with bare broker ids, which Go's splitting expects (§4.2).
    assert b'"brokerAddrs":{0:"' in reply.body
    route = fastjson_loads(reply.body)
    assert all(isinstance(q["perm"], int) and isinstance(q["writeQueueNums"], int) for q in route["queueDatas"])
    assert go_broker_addrs(reply.body) == [{0: dev.broker}]
    with Conn(dev.namesrv) as ns:
        missing = ns.go(GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfGoNoSuchTopic"})
    assert missing.code == 17  # ResTopicNotExist -> ErrTopicNotExist, then the TBW102 fallback


def test_a_go_send_with_full_field_names_answers_what_ProcessSendResponse_reads(go: Conn) -> None:
    reply = go.go(SEND_MESSAGE, go_send_header(1, {"UNIQ_KEY": "GO0001", "TAGS": "red", "KEYS": "g1"}), b"go-1")
    assert reply.code == 0, reply.remark
    assert int(reply.ext["queueId"]) == 1 and int(reply.ext["queueOffset"]) >= 0
    assert len(reply.ext["msgId"]) == 32
    assert reply.ext["MSG_REGION"] == "DefaultRegion"
    # Go turns trace on only when TRACE_ON is present and not "false".
    assert reply.ext["TRACE_ON"] not in ("", "false")
    assert reply.remark in (None, "")


def test_a_go_batch_is_sent_with_the_v2_letters_and_each_message_is_stored(go: Conn) -> None:
    body = encode_batch([(b"go-b1", {"UNIQ_KEY": "GOB1", "TAGS": "blue"}),
                         (b"go-b2", {"UNIQ_KEY": "GOB2", "TAGS": "green"})])
    header = {"a": "PG_go", "b": TOPIC, "c": "TBW102", "d": "4", "e": "1", "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false", "l": "0", "m": "true",
              "n": "broker-a"}
    reply = go.go(SEND_BATCH_MESSAGE, header, body)
    assert reply.code == 0, reply.remark
    assert len(reply.ext["msgId"].split(",")) == 2


def test_a_go_pull_with_suspend_and_subscription_returns_only_the_subscribed_tags(go: Conn) -> None:
    header = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "1", "queueOffset": "0", "maxMsgNums": "32",
              "sysFlag": str(2 | 4), "commitOffset": "0", "suspendTimeoutMillis": "20000",
              "subscription": "red || blue", "subVersion": "0", "expressionType": "TAG", "bname": "broker-a"}
    reply = go.go(PULL_MESSAGE, header)
    assert reply.code == 0, reply.remark
    for key in ("maxOffset", "minOffset", "nextBeginOffset", "suggestWhichBrokerId"):
        int(reply.ext[key])
    records = decode_records(reply.body)
    assert [(r.body, r.properties["TAGS"]) for r in records] == [(b"go-1", "red"), (b"go-b1", "blue")]
    assert int(reply.ext["nextBeginOffset"]) == 3


def test_a_go_consumer_reads_group_members_offsets_and_locks(dev: DevServer, go: Conn) -> None:
    members = go.go(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP})
    assert json.loads(members.body) == {"consumerIdList": [CLIENT_ID]}
    first = go.go(QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "1",
                                          "bname": "broker-a"})
    assert first.code == 0 and first.ext["offset"] == "0"
    go.go(UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "1", "commitOffset": "2",
                                   "bname": "broker-a"})
    again = go.go(QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "1",
                                          "bname": "broker-a"})
    assert again.ext["offset"] == "2"
    mq = {"topic": TOPIC, "brokerName": "broker-a", "queueId": 1}
    lock = go.go(LOCK_BATCH_MQ, None, json.dumps({"consumerGroup": GROUP, "clientId": CLIENT_ID,
                                                  "mqSet": [mq]}).encode())
    assert json.loads(lock.body)["lockOKMQSet"] == [{"brokerName": "broker-a", "queueId": 1, "topic": TOPIC}]
    with Conn(dev.broker) as admin:
        conns = fastjson_loads(admin.java(GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP}).body)
    (connection,) = conns["connectionSet"]
    assert connection["language"] == "GO" and connection["version"] == 317


def go_typed(value: object, kind: type) -> None:
    """encoding/json refuses a JSON value of the wrong type for the Go field."""
    assert isinstance(value, kind) and not (kind is int and isinstance(value, bool)), f"{value!r} is not {kind}"


def test_the_go_admin_creates_lists_and_deletes_a_topic_with_strictly_typed_bodies(dev: DevServer, go: Conn) -> None:
    create = {"topic": "ConfGoAdmin", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8",
              "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
    assert go.go(UPDATE_AND_CREATE_TOPIC, create).code == 0
    groups = go.go(GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    wrapper = json.loads(groups.body)
    go_typed(wrapper["dataVersion"]["timestamp"], int)
    go_typed(wrapper["dataVersion"]["counter"], int)
    assert wrapper["dataVersion"]["counter"] < 1 << 31  # Go's Counter is int32
    config = wrapper["subscriptionGroupTable"][GROUP]
    for key in ("consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable", "notifyConsumerIdsChangedEnable"):
        go_typed(config[key], bool)
    for key in ("retryMaxTimes", "retryQueueNums", "brokerId", "whichBrokerWhenConsumeSlowly"):
        go_typed(config[key], int)

    def listed() -> bool:
        with Conn(dev.namesrv) as ns:
            return "ConfGoAdmin" in json.loads(ns.go(GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)["topicList"]
    eventually(listed, timeout=10, message="the created topic is listed by the name server")
    assert go.go(DELETE_TOPIC_IN_BROKER, {"topic": "ConfGoAdmin"}).code == 0
    with Conn(dev.namesrv) as ns:
        assert ns.go(DELETE_TOPIC_IN_NAMESRV, {"topic": "ConfGoAdmin"}).code == 0
        assert ns.go(GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfGoAdmin"}).code == 17
