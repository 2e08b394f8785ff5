"""What the Java client 4.9.x push consumer sends, replayed, and our answers read its way.

Heartbeat with a ConsumerData, RebalanceImpl (GET_CONSUMER_LIST_BY_GROUP,
LOCK/UNLOCK_BATCH_MQ, QUERY_CONSUMER_OFFSET for computePullFromWhere),
PullAPIWrapper.pullKernelImpl + processPullResult (MessageDecoder.decodes with
checkCRCOnConsume), RemoteBrokerOffsetStore (oneway UPDATE_CONSUMER_OFFSET),
ConsumeMessageConcurrentlyService.sendMessageBack (CONSUMER_SEND_MSG_BACK) and
ClientRemotingProcessor's NOTIFY_CONSUMER_IDS_CHANGED.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator

import pytest

from tests.conformance.wire import Conn, decode_records, encode_properties, fastjson_loads
from tests.support.dev import DevServer

HEART_BEAT = 34
SEND_MESSAGE_V2 = 310
PULL_MESSAGE = 11
QUERY_CONSUMER_OFFSET = 14
UPDATE_CONSUMER_OFFSET = 15
CONSUMER_SEND_MSG_BACK = 36
GET_CONSUMER_LIST_BY_GROUP = 38
NOTIFY_CONSUMER_IDS_CHANGED = 40
LOCK_BATCH_MQ = 41
UNLOCK_BATCH_MQ = 42
GET_MAX_OFFSET = 30
PULL_NOT_FOUND = 19
PULL_RETRY_IMMEDIATELY = 20
PULL_OFFSET_MOVED = 21
SUBSCRIPTION_PARSE_FAILED = 23
SUBSCRIPTION_NOT_EXIST = 24
SUBSCRIPTION_NOT_LATEST = 25
UNREGISTER_CLIENT = 35
CHECK_CLIENT_CONFIG = 46

TOPIC = "ConfConsume"
GROUP = "CG_conformance"
# PullSysFlag.buildSysFlag(commitOffset, suspend, subscription, classFilter, litePull)
FLAG_COMMIT, FLAG_SUSPEND, FLAG_SUBSCRIPTION, FLAG_LITE_PULL = 1, 2, 4, 16


def java_hash(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def heartbeat(client_id: str, sub: str = "TagA || TagB") -> bytes:
    tags = [t.strip() for t in sub.split("||")] if sub != "*" else []
    return json.dumps({
        "clientID": client_id,
        "consumerDataSet": [{
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
            "groupName": GROUP, "messageModel": "CLUSTERING", "unitMode": False,
            "subscriptionDataSet": [
                {"classFilterMode": False, "codeSet": [java_hash(t) for t in tags], "expressionType": "TAG",
                 "subString": sub, "subVersion": 1700000000000, "tagsSet": tags, "topic": TOPIC},
                {"classFilterMode": False, "codeSet": [], "expressionType": "TAG", "subString": "*",
                 "subVersion": 1700000000001, "tagsSet": [], "topic": f"%RETRY%{GROUP}"},
            ],
        }],
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
    }).encode()


def pull_header(queue_id: int, offset: int, flags: int, sub: str = "TagA || TagB", **over: str) -> dict[str, str]:
    header = {
        "consumerGroup": GROUP, "topic": TOPIC, "queueId": str(queue_id), "queueOffset": str(offset),
        "maxMsgNums": "32", "sysFlag": str(flags), "commitOffset": "0", "suspendTimeoutMillis": "0",
        "subscription": sub, "subVersion": "1700000000000", "expressionType": "TAG",
    }
    header.update(over)
    return header


def send(conn: Conn, body: bytes, props: dict[str, str], queue_id: int = 0, sys_flag: int = 0) -> dict[str, str]:
    header = {"a": "PG", "b": TOPIC, "c": "TBW102", "d": "4", "e": str(queue_id), "f": str(sys_flag),
              "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0",
              "k": "false", "m": "false"}
    reply = conn.java(SEND_MESSAGE_V2, header, body)
    assert reply.code == 0, reply.remark
    return reply.ext


@pytest.fixture(scope="module")
def consumer(dev: DevServer) -> Iterator[Conn]:
    """A consumer connection that heartbeated its group, and four messages in queue 0."""
    with Conn(dev.broker) as producer:
        send(producer, b"a1", {"UNIQ_KEY": "C0", "TAGS": "TagA", "WAIT": "true"})
        send(producer, b"c1", {"UNIQ_KEY": "C1", "TAGS": "TagC", "WAIT": "true"})
        # 4.9.7's tryToCompressMessage: zlib body, sysFlag COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE.
        send(producer, zlib.compress(b"b1" * 3000), {"UNIQ_KEY": "C2", "TAGS": "TagB"}, sys_flag=1 | 0x300)
        send(producer, b"a2", {"UNIQ_KEY": "C3", "TAGS": "TagA"})
    conn = Conn(dev.broker)
    assert conn.java(HEART_BEAT, None, heartbeat("127.0.0.1@1001#1")).code == 0
    try:
        yield conn
    finally:
        conn.close()


def test_the_group_lists_the_heartbeating_client(consumer: Conn) -> None:
    reply = consumer.java(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP})
    assert reply.code == 0, reply.remark
    assert fastjson_loads(reply.body)["consumerIdList"] == ["127.0.0.1@1001#1"]


def test_a_new_group_starts_at_offset_zero_while_the_first_message_is_kept(consumer: Conn) -> None:
    reply = consumer.java(QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"})
    # SUCCESS with offset 0 (not QUERY_NOT_FOUND): computePullFromWhere then starts at 0, not at the max.
    assert reply.code == 0, reply.remark
    assert int(reply.ext["offset"]) == 0


def test_a_tag_filtered_pull_returns_records_the_message_decoder_accepts(consumer: Conn) -> None:
    reply = consumer.java(PULL_MESSAGE, pull_header(0, 0, FLAG_SUSPEND | FLAG_SUBSCRIPTION))
    assert reply.code == 0, reply.remark
    # PullMessageResponseHeader: all four are @CFNotNull Long.
    ext = {k: int(reply.ext[k]) for k in ("suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset")}
    assert ext["suggestWhichBrokerId"] == 0 and ext["minOffset"] == 0 and ext["maxOffset"] == 4
    assert ext["nextBeginOffset"] == 4
    records = decode_records(reply.body, check_crc=True)
    assert [r.properties["TAGS"] for r in records] == ["TagA", "TagB", "TagA"]
    assert [r.queue_offset for r in records] == [0, 2, 3]
    assert records[1].sys_flag & 0x301 == 0x301 and records[1].body == b"b1" * 3000
    assert all(r.topic == TOPIC and r.store_timestamp >= r.born_timestamp for r in records)


def test_a_pull_at_the_end_is_pull_not_found_and_beyond_it_offset_moved(consumer: Conn) -> None:
    at_end = consumer.java(PULL_MESSAGE, pull_header(0, 4, FLAG_SUBSCRIPTION))
    assert at_end.code == PULL_NOT_FOUND and at_end.body == b""
    assert int(at_end.ext["nextBeginOffset"]) == 4
    beyond = consumer.java(PULL_MESSAGE, pull_header(0, 400, FLAG_SUBSCRIPTION))
    # processPullResult: OFFSET_ILLEGAL, and the consumer moves to nextBeginOffset.
    assert beyond.code == PULL_OFFSET_MOVED
    assert int(beyond.ext["nextBeginOffset"]) in (0, 4)
    assert int(beyond.ext["maxOffset"]) == 4


def test_a_oneway_offset_update_is_what_the_next_query_returns(consumer: Conn) -> None:
    consumer.java_oneway(UPDATE_CONSUMER_OFFSET,
                         {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "commitOffset": "3"})
    reply = consumer.java(QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"})
    assert reply.code == 0 and reply.ext["offset"] == "3"
    # A pull with the commit flag also stores commitOffset.
    consumer.java(PULL_MESSAGE, pull_header(0, 3, FLAG_COMMIT | FLAG_SUBSCRIPTION, commitOffset="4"))
    reply = consumer.java(QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"})
    assert reply.ext["offset"] == "4"


def test_lock_batch_answers_the_locked_queues_and_a_second_client_is_refused(dev: DevServer, consumer: Conn) -> None:
    mq = {"brokerName": "broker-a", "queueId": 1, "topic": TOPIC}
    body = json.dumps({"clientId": "127.0.0.1@1001#1", "consumerGroup": GROUP, "mqSet": [mq]}).encode()
    reply = consumer.java(LOCK_BATCH_MQ, None, body)
    assert reply.code == 0
    assert fastjson_loads(reply.body)["lockOKMQSet"] == [mq]
    with Conn(dev.broker) as other:
        body2 = json.dumps({"clientId": "127.0.0.1@2002#2", "consumerGroup": GROUP, "mqSet": [mq]}).encode()
        refused = other.java(LOCK_BATCH_MQ, None, body2)
    assert refused.code == 0 and fastjson_loads(refused.body)["lockOKMQSet"] == []
    unlock = consumer.java(UNLOCK_BATCH_MQ, None, body)
    assert unlock.code == 0


def test_send_back_is_accepted_with_the_header_the_java_consumer_builds(consumer: Conn) -> None:
    pulled = decode_records(consumer.java(PULL_MESSAGE, pull_header(0, 0, FLAG_SUBSCRIPTION, sub="*")).body)
    first = pulled[0]
    reply = consumer.java(CONSUMER_SEND_MSG_BACK, {
        "offset": str(first.commit_log_offset), "group": GROUP, "delayLevel": "0",
        "originMsgId": first.properties["UNIQ_KEY"], "originTopic": TOPIC, "unitMode": "false",
        "maxReconsumeTimes": "16"})
    assert reply.code == 0, reply.remark
    # Delay level 0 from the client means 3 + reconsumeTimes on the broker: schedule queue 2.
    delayed = consumer.java(PULL_MESSAGE, {
        "consumerGroup": "CG_inspect", "topic": "SCHEDULE_TOPIC_XXXX", "queueId": "2", "queueOffset": "0",
        "maxMsgNums": "1", "sysFlag": str(FLAG_SUBSCRIPTION), "commitOffset": "0", "suspendTimeoutMillis": "0",
        "subscription": "*", "subVersion": "0", "expressionType": "TAG"})
    assert delayed.code == 0, delayed.remark
    (copy,) = decode_records(delayed.body)
    # What the consumer gets back from %RETRY%: resetRetryAndNamespace restores the topic from
    # RETRY_TOPIC; ORIGIN_MESSAGE_ID, the unique key and the body survive; reconsumeTimes counts up.
    assert copy.properties["REAL_TOPIC"] == f"%RETRY%{GROUP}" and copy.properties["REAL_QID"] == "0"
    assert copy.properties["DELAY"] == "3"
    assert copy.properties["RETRY_TOPIC"] == TOPIC
    assert copy.properties["ORIGIN_MESSAGE_ID"] in (first.msg_id, first.properties["UNIQ_KEY"])
    assert copy.properties["UNIQ_KEY"] == first.properties["UNIQ_KEY"]
    assert copy.reconsume_times == first.reconsume_times + 1 and copy.body == first.body


def test_the_default_java_pull_relies_on_the_heartbeat_subscription(consumer: Conn) -> None:
    # postSubscriptionWhenPull=false: no subscription flag and no expression, only the subVersion.
    header = pull_header(0, 0, FLAG_SUSPEND)
    del header["subscription"]
    reply = consumer.java(PULL_MESSAGE, header)
    assert reply.code == 0, reply.remark
    assert [r.properties["TAGS"] for r in decode_records(reply.body)] == ["TagA", "TagB", "TagA"]
    newer = consumer.java(PULL_MESSAGE, dict(header, subVersion="1800000000000"))
    assert newer.code == SUBSCRIPTION_NOT_LATEST
    unknown = consumer.java(PULL_MESSAGE, dict(header, consumerGroup="CG_never_heartbeated"))
    assert unknown.code == SUBSCRIPTION_NOT_EXIST and unknown.remark


def test_a_oneway_unlock_gets_no_response_and_the_connection_stays_in_step(consumer: Conn) -> None:
    body = json.dumps({"clientId": "127.0.0.1@1001#1", "consumerGroup": GROUP,
                       "mqSet": [{"brokerName": "broker-a", "queueId": 3, "topic": TOPIC}]}).encode()
    consumer.unsolicited.clear()
    consumer.java_oneway(UNLOCK_BATCH_MQ, None, body)
    reply = consumer.java(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP})
    assert reply.code == 0
    assert not [r for r in consumer.unsolicited if r.flag & 1], "a oneway request was answered"


def test_an_sql92_subscription_is_checked_then_filters_pulls(dev: DevServer) -> None:
    sub = {"classFilterMode": False, "codeSet": [], "expressionType": "SQL92", "subString": "n > 1",
           "subVersion": 1700000000000, "tagsSet": [], "topic": "ConfSql"}
    with Conn(dev.broker) as conn:
        for n in range(4):
            props = {"UNIQ_KEY": f"S{n}", "n": str(n)}
            header = {"a": "PG", "b": "ConfSql", "c": "TBW102", "d": "4", "e": "0", "f": "0",
                      "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0",
                      "k": "false", "m": "false"}
            assert conn.java(SEND_MESSAGE_V2, header, b"s").code == 0
        # DefaultMQPushConsumerImpl.checkClientInBroker before start.
        check = {"clientId": "127.0.0.1@4004#4", "group": "CG_sql", "subscriptionData": sub}
        assert conn.java(CHECK_CLIENT_CONFIG, None, json.dumps(check).encode()).code == 0
        bad = dict(check, subscriptionData=dict(sub, subString="n >"))
        refused = conn.java(CHECK_CLIENT_CONFIG, None, json.dumps(bad).encode())
        assert refused.code == SUBSCRIPTION_PARSE_FAILED and refused.remark
        body = json.dumps({"clientID": "127.0.0.1@4004#4", "producerDataSet": [], "consumerDataSet": [{
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
            "groupName": "CG_sql", "messageModel": "CLUSTERING", "unitMode": False,
            "subscriptionDataSet": [sub]}]}).encode()
        assert conn.java(HEART_BEAT, None, body).code == 0
        reply = conn.java(PULL_MESSAGE, {
            "consumerGroup": "CG_sql", "topic": "ConfSql", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
            "sysFlag": str(FLAG_SUSPEND | FLAG_SUBSCRIPTION), "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "n > 1", "subVersion": "1700000000000", "expressionType": "SQL92"})
    assert reply.code == 0, reply.remark
    assert [r.properties["n"] for r in decode_records(reply.body)] == ["2", "3"]


def test_unregister_client_removes_it_from_its_group(dev: DevServer) -> None:
    with Conn(dev.broker) as conn:
        assert conn.java(HEART_BEAT, None, heartbeat("127.0.0.1@6006#6").replace(
            GROUP.encode(), b"CG_leaving")).code == 0
        # MQClientAPIImpl.unregisterClient on shutdown: clientID, producerGroup, consumerGroup.
        gone = conn.java(UNREGISTER_CLIENT, {"clientID": "127.0.0.1@6006#6", "consumerGroup": "CG_leaving"})
        assert gone.code == 0
        after = conn.java(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG_leaving"})
    assert after.code != 0 or fastjson_loads(after.body)["consumerIdList"] == []


def test_a_second_member_makes_the_broker_notify_the_first(dev: DevServer, consumer: Conn) -> None:
    consumer.unsolicited.clear()  # the first member may have been told of itself
    with Conn(dev.broker) as second:
        assert second.java(HEART_BEAT, None, heartbeat("127.0.0.1@3003#3")).code == 0
        consumer.sock.settimeout(5)
        notice = consumer.read()
    assert notice.code == NOTIFY_CONSUMER_IDS_CHANGED
    assert notice.flag & 1 == 0, "a request from the broker, not a response"
    assert notice.ext["consumerGroup"] == GROUP


def test_a_pull_whose_messages_all_miss_the_filter_is_retry_immediately_past_them(consumer: Conn) -> None:
    reply = consumer.java(PULL_MESSAGE, pull_header(0, 0, FLAG_SUSPEND | FLAG_SUBSCRIPTION, sub="TagZ",
                                                     suspendTimeoutMillis="15000"))
    # NO_MATCHED_MSG: the consumer pulls again at once from nextBeginOffset (no long poll).
    assert reply.code == PULL_RETRY_IMMEDIATELY and reply.body == b""
    assert int(reply.ext["nextBeginOffset"]) == 4


def test_a_lite_pull_consumer_pull_is_served_like_any_other(dev: DevServer) -> None:
    # DefaultLitePullConsumer sets the lite-pull bit (1 << 4); the broker reads the others only.
    with Conn(dev.broker) as lite:
        reply = lite.java(PULL_MESSAGE, pull_header(0, 0, FLAG_SUBSCRIPTION | FLAG_LITE_PULL, sub="*",
                                                    consumerGroup="CG_lite"))
    assert reply.code == 0, reply.remark
    assert len(decode_records(reply.body)) == 4
