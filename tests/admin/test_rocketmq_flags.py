"""Flags of RocketMQ 4.9's mqadmin on commands OrbitMQ already had: consumerProgress -s (and no -g),
consumeMessage -s/-e, queryMsgByUniqueKey -g -d, resetOffsetByTime -c, and RocketMQ's output lines."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.conformance.wire import Conn
from tests.support.admin import admin, ok
from tests.support.dev import DevServer
from tests.support.java_consumer import FakeJavaConsumer
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)

TOPIC = "FlagsT"
GROUP = "CG_flags"
CLIENT_ID = "10.1.2.3@4242#1"
HEART_BEAT = 34
UPDATE_CONSUMER_OFFSET = 15
GET_CONSUMER_RUNNING_INFO = 307
CONSUME_MESSAGE_DIRECTLY = 309
RESET_CONSUMER_CLIENT_OFFSET = 220


class FakeConsumer(FakeJavaConsumer):
    """A Java push consumer of GROUP subscribed to TOPIC, with queue 0 of TOPIC in its mqTable."""

    def __init__(self, addr: str) -> None:
        heartbeat = {
            "clientID": CLIENT_ID, "producerDataSet": [],
            "consumerDataSet": [{"groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                                 "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
                                 "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [],
                                                          "expressionType": "TAG", "subString": "*", "subVersion": 1,
                                                          "tagsSet": [], "topic": TOPIC}]}],
        }
        mq = json.dumps({"brokerName": "broker-a", "queueId": 0, "topic": TOPIC})
        running_info = ('{"properties":{},"subscriptionSet":[],"statusTable":{},"mqTable":{' + mq +
                        ':{"commitOffset":0}}}').encode()
        super().__init__(addr, heartbeat, running_info, spent_ms=3)


@pytest.fixture(scope="module")
def sent(dev: DevServer) -> Iterator[list[str]]:
    """Three messages in queue 0 of TOPIC a little apart in time; yields their UNIQ_KEYs."""
    ok(dev, "updateTopic", "-b", dev.broker, "-t", TOPIC, "-r", "1", "-w", "1")
    keys = []
    for i in range(3):
        out = ok(dev, "sendMessage", "-t", TOPIC, "-p", f"m{i}", "-b", dev.broker_name, "-i", "0")
        keys.append(out.splitlines()[1].split()[3])  # #Broker Name #QID #Send Result #MsgId ...
        time.sleep(0.02)  # distinct store times, so a time range can split them
    yield keys


@pytest.fixture(scope="module")
def consumer(dev: DevServer, sent: list[str]) -> Iterator[FakeConsumer]:
    fake = FakeConsumer(dev.broker)
    eventually(lambda: admin(dev, "topicRoute", "-t", f"%RETRY%{GROUP}")[0] == 0, timeout=15,
               message="the heartbeat's retry topic never reached the NameServer")
    with Conn(dev.broker) as other:  # the fake's own socket is read by its thread
        assert other.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0",
                                                   "commitOffset": "1"}).code == 0
    yield fake
    fake.close()


def test_consumer_progress_prints_rocketmq_columns_and_client_ips(dev: DevServer, consumer: FakeConsumer) -> None:
    """ConsumerProgressSubCommand: -s true adds #Client IP from each client's mqTable."""
    out = ok(dev, "consumerProgress", "-g", GROUP)
    lines = out.splitlines()
    assert lines[0].split() == ["#Topic", "#Broker", "Name", "#QID", "#Broker", "Offset", "#Consumer", "Offset",
                                "#Diff", "#LastTime"]
    assert lines[1].split()[:6] == [TOPIC, dev.broker_name, "0", "3", "1", "2"]
    assert lines[-3] == "" and lines[-2].startswith("Consume TPS: ") and lines[-1] == "Diff Total: 2"
    shown = ok(dev, "consumerProgress", "-g", GROUP, "-s", "true").splitlines()
    assert "#Client IP" in shown[0]
    assert shown[1].split()[:7] == [TOPIC, dev.broker_name, "0", "3", "1", "10.1.2.3", "2"]
    (row,) = json.loads(ok(dev, "consumerProgress", "-g", GROUP, "-s", "true", "--json"))["queues"]
    assert row["clientIP"] == "10.1.2.3" and row["diff"] == 2


def test_consumer_progress_without_a_group_lists_every_group(dev: DevServer, consumer: FakeConsumer) -> None:
    out = ok(dev, "consumerProgress")
    lines = out.splitlines()
    assert lines[0].split() == ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff", "Total"]
    row = next(line.split() for line in lines[1:] if line.split()[0] == GROUP)
    assert row == [GROUP, "1", "V4_9_7", "PUSH", "CLUSTERING", "0", "2"]


def test_consume_message_reads_a_time_range(dev: DevServer, sent: list[str]) -> None:
    """ConsumeMessageCommand -s/-e: from the message stored at -s to before the one stored at -e."""
    rows = json.loads(ok(dev, "printMsg", "-t", TOPIC, "--json"))
    assert [r["body"] for r in rows] == ["m0", "m1", "m2"]
    everything = ok(dev, "consumeMessage", "-t", TOPIC, "-s", "0")
    assert "Consumed 3 message(s)." in everything
    future = str(int(time.time() * 1000) + 3_600_000)
    code, _, err = admin(dev, "consumeMessage", "-t", TOPIC, "-s", future)
    assert code == 2 and "Please set the beginTimestamp before now!" in err
    code, _, err = admin(dev, "consumeMessage", "-t", TOPIC, "-s", "5", "-e", "4")
    assert code == 2 and "less than or equal to the endTimestamp" in err
    # -e: RocketMQ stops at the offset searchOffset gives for the end time (exclusive).
    assert "Consumed 2 message(s)." in ok(dev, "consumeMessage", "-t", TOPIC, "-e", str(int(time.time() * 1000)))


def test_query_by_unique_key_with_group_and_client_consumes_directly(
        dev: DevServer, sent: list[str], consumer: FakeConsumer) -> None:
    """QueryMsgByUniqueKeySubCommand -g -d: consumeMessageDirectly; prints ConsumeMessageDirectlyResult."""
    out = ok(dev, "queryMsgByUniqueKey", "-i", sent[2], "-t", TOPIC, "-g", GROUP, "-d", CLIENT_ID)
    assert out == ("ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS, "
                   "remark=m2, spentTimeMills=3]")


def test_reset_offset_by_time_c_resets_cpp_clients_in_their_form(dev: DevServer, consumer: FakeConsumer) -> None:
    """ResetOffsetByTimeCommand -c: the request says LanguageCode.CPP; the push is ResetOffsetBodyForC."""
    out = ok(dev, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "now", "-c")
    lines = out.splitlines()
    assert lines[0] == (f"rollback consumer offset by specified group[{GROUP}], topic[{TOPIC}], force[true], "
                        "timestamp(string)[now], timestamp(long)[-1]")
    assert lines[1].split() == ["#brokerName", "#queueId", "#offset"]
    assert lines[2].split() == [dev.broker_name, "0", "3"]
    eventually(lambda: any(r.code == RESET_CONSUMER_CLIENT_OFFSET for r in consumer.seen), timeout=10,
               message="no reset pushed to the consumer")
    push = next(r for r in consumer.seen if r.code == RESET_CONSUMER_CLIENT_OFFSET)
    assert json.loads(push.body) == {"offsetTable": [{"brokerName": dev.broker_name, "queueId": 0, "topic": TOPIC,
                                                      "offset": 3}]}


@pytest.mark.parametrize("args", [
    ("updateTopic", "-t", "FlagsBWins"),
    ("updateSubGroup", "-g", "CG_bwins"),
    ("deleteSubGroup", "-g", "CG_bwins_none"),
    ("brokerStatus",),
    ("getBrokerConfig",),
    ("updateBrokerConfig", "-k", "defaultTopicQueueNums", "-v", "4"),
    ("cleanUnusedTopic",),
])
def test_b_wins_over_c_as_in_rocketmq(dev: DevServer, args: tuple[str, ...]) -> None:
    """RocketMQ's commands test hasOption('b') before hasOption('c'): a bad -c beside a good -b is ignored."""
    ok(dev, *args, "-b", dev.broker, "-c", "NoSuchCluster")
    if args[0] != "cleanUnusedTopic":  # which, like RocketMQ's, cleans every cluster without either
        code, _, err = admin(dev, *args)
        assert code == 2 and "-b brokerAddr or -c clusterName" in err


def test_consumer_connection_and_status_take_b(dev: DevServer, consumer: FakeConsumer) -> None:
    """ConsumerConnectionSubCommand / ConsumerStatusSubCommand -b: ask that broker."""
    out = ok(dev, "consumerConnection", "-g", GROUP, "-b", dev.broker)
    assert out.splitlines()[1].split()[:3] == [CLIENT_ID, out.splitlines()[1].split()[1], "JAVA"]
    assert "\nBelow is subscription:\n" in out and f"{TOPIC:<20} *" in out.splitlines()
    code, _, err = admin(dev, "consumerConnection", "-g", GROUP, "-b", "127.0.0.1:1", "--timeout", "2")
    assert code == 1 and err.startswith("error: ")
    assert json.loads(ok(dev, "consumerStatus", "-g", GROUP, "-b", dev.broker, "--json"))[0]["ClientId"] == CLIENT_ID


def test_topic_route_list_and_update_topic_unit_flags(dev: DevServer) -> None:
    """TopicRouteSubCommand -l; UpdateTopicSubCommand -u/-s build the topic's sys flag."""
    out = ok(dev, "updateTopic", "-b", dev.broker, "-t", "FlagsUnit", "-r", "2", "-w", "3", "-u", "true", "-s", "true")
    assert "topicSysFlag=3" in out
    eventually(lambda: admin(dev, "topicRoute", "-t", "FlagsUnit")[0] == 0, timeout=15)
    assert json.loads(ok(dev, "topicRoute", "-t", "FlagsUnit", "--json"))["queueDatas"][0]["topicSysFlag"] == 3
    assert f'\t\t\t"brokerAddrs":{{0:"{dev.broker}"\n\t\t\t}},\n' in ok(dev, "topicRoute", "-t", "FlagsUnit")
    lines = ok(dev, "topicRoute", "-t", "FlagsUnit", "-l").splitlines()
    fmt = "%-45s %-32s %-50s %-10s %-11s %-5s"
    assert lines[0] == fmt % ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
    assert lines[1] == fmt % ("DefaultCluster", dev.broker_name, f"{{0={dev.broker}}}", 2, 3, 6)
    assert lines[2] == "-" * 158
    assert lines[3] == fmt % ("Total:", 1, "", 2, 3, "")


def test_query_msg_by_id_consumes_directly_and_resends(
        dev: DevServer, sent: list[str], consumer: FakeConsumer) -> None:
    """QueryMsgByIdSubCommand -g -d (pushMsg) and -s true (sendMsg: a copy to the same topic)."""
    rows = json.loads(ok(dev, "printMsg", "-t", TOPIC, "--json"))
    first = ok(dev, "queryMsgByUniqueKey", "-i", sent[0], "-t", TOPIC)
    offset_id = next(line.split(":", 1)[1].strip() for line in first.splitlines() if "Offset" in line and "ID" in line)
    out = ok(dev, "queryMsgById", "-i", offset_id, "-g", GROUP, "-d", CLIENT_ID)
    assert out.endswith("consumeResult=CR_SUCCESS, remark=m0, spentTimeMills=3]")
    resent = ok(dev, "queryMsgById", "-i", offset_id, "-s", "true")
    assert resent.startswith(f"prepare resend msg. originalMsgId={offset_id}SendResult [sendStatus=SEND_OK, ")
    again = json.loads(ok(dev, "printMsg", "-t", TOPIC, "--json"))
    assert len(again) == len(rows) + 1 and again[-1]["body"] == "m0" and again[-1]["msgId"] != sent[0]
    assert ok(dev, "queryMsgById", "-i", offset_id, "-s", "false") == ""


def test_send_message_m_traces_the_send(dev: DevServer) -> None:
    """SendMessageCommand -m true: the producer has message trace on; queryMsgTraceById finds the Pub record."""
    ok(dev, "updateTopic", "-b", dev.broker, "-t", "FlagsTrace", "-r", "1", "-w", "1")
    out = ok(dev, "sendMessage", "-t", "FlagsTrace", "-p", "traced", "-k", "tk1", "-m", "true")
    _head, row = out.splitlines()
    assert row.split()[2] == "SEND_OK"
    msg_id = row.split()[3]
    eventually(lambda: admin(dev, "queryMsgTraceById", "-i", msg_id)[0] == 0, timeout=20,
               message="no trace record for the send")
    (pub,) = json.loads(ok(dev, "queryMsgTraceById", "-i", msg_id, "--json"))
    assert (pub["type"], pub["group"], pub["success"]) == ("Pub", "TOOLS_PRODUCER", True)
