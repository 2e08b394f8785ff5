"""The mqadmin commands RocketMQ 4.9 has and OrbitMQ lacked, against a real `orbitmq dev`:
their flags, their output lines (the Java command classes' printf formats) and their effects."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from orbitmq.admin.cli import admin_group
from tests.support.admin import admin, ok
from tests.support.dev import DevServer
from tests.support.procs import eventually, orbitmq_command

pytestmark = pytest.mark.timeout(60)

TOPIC = "RmqCmds"


@pytest.fixture(scope="module")
def topic(dev: DevServer) -> str:
    """A two-queue topic holding one TagA and one TagB message in queue 0."""
    ok(dev, "updateTopic", "-b", dev.broker, "-t", TOPIC, "-r", "2", "-w", "2")
    for body, tag in (("hello", "TagA"), ("world", "TagB")):
        ok(dev, "sendMessage", "-t", TOPIC, "-p", body, "-c", tag, "-b", dev.broker_name, "-i", "0")
    return TOPIC


def test_topic_cluster_list_prints_each_cluster_on_a_line(dev: DevServer, topic: str) -> None:
    """TopicClusterSubCommand: `%s%n` per cluster."""
    assert ok(dev, "topicClusterList", "-t", topic) == "DefaultCluster\n"
    assert json.loads(ok(dev, "topicClusterList", "-t", topic, "--json")) == ["DefaultCluster"]


def test_update_topic_perm_by_broker_then_by_cluster(dev: DevServer, topic: str) -> None:
    """UpdateTopicPermSubCommand: -b names a master; the same perm is refused; -c updates every master."""
    out = ok(dev, "updateTopicPerm", "-t", topic, "-p", "4", "-b", dev.broker, "-c", "NoSuchCluster")
    assert out.splitlines()[0] == f"update topic perm from 6 to 4 in {dev.broker} success."
    assert out.splitlines()[1].startswith(f"TopicConfig [topicName={topic}, readQueueNums=2")
    eventually(lambda: '"perm":4' in ok(dev, "topicRoute", "-t", topic).replace(" ", ""), timeout=10,
               message="the NameServer never saw the new perm")
    assert ok(dev, "updateTopicPerm", "-t", topic, "-p", "4", "-b", dev.broker) == "new perm equals to the old one!\n"
    assert ok(dev, "updateTopicPerm", "-t", topic, "-p", "6", "-b", "10.9.9.9:1") == (
        "updateTopicPerm error broker not exit or broker is not master!.\n")
    out = ok(dev, "updateTopicPerm", "-t", topic, "-p", "6", "-c", "DefaultCluster")
    assert out == f"update topic perm from 4 to 6 in {dev.broker} success.\n"
    assert admin(dev, "updateTopicPerm", "-t", topic, "-p", "5", "-b", dev.broker)[0] == 2


def test_update_order_conf_puts_gets_and_deletes_the_kv_entry(dev: DevServer) -> None:
    """UpdateOrderConfCommand: ORDER_TOPIC_CONFIG in the NameServer's KV table."""
    assert ok(dev, "updateOrderConf", "-t", "OrdT", "-m", "put", "-v", "broker-a:4") == (
        "update orderConf success. topic=[OrdT], orderConf=[broker-a:4]")
    assert ok(dev, "updateOrderConf", "-t", "OrdT", "-m", "get") == (
        "get orderConf success. topic=[OrdT], orderConf=[broker-a:4] ")
    assert ok(dev, "updateOrderConf", "-t", "OrdT", "-m", "delete") == "delete orderConf success. topic=[OrdT]"
    assert ok(dev, "updateOrderConf", "-t", "OrdT", "-m", "get") == (
        "get orderConf success. topic=[OrdT], orderConf=[null] ")
    assert admin(dev, "updateOrderConf", "-t", "OrdT", "-m", "put")[0] == 2


def test_allocate_mq_prints_the_averagely_allocation_as_json(dev: DevServer, topic: str) -> None:
    """AllocateMQSubCommand: RebalanceResult as fastjson's compact JSON (queues in the HashSet's order)."""
    out = ok(dev, "allocateMQ", "-t", topic, "-i", "c1,c2")
    doc = json.loads(out)
    assert list(doc) == ["result"] and list(doc["result"]) == ["c1", "c2"]
    mqs = [mq for ip in ("c1", "c2") for mq in doc["result"][ip]]
    assert [len(doc["result"][ip]) for ip in ("c1", "c2")] == [1, 1]
    assert sorted(mq["queueId"] for mq in mqs) == [0, 1]
    assert all(list(mq) == ["brokerName", "queueId", "topic"] for mq in mqs)
    assert " " not in out.strip()


def test_wipe_and_add_write_perm_report_the_topic_count_per_name_server(dev: DevServer, topic: str) -> None:
    out = ok(dev, "wipeWritePerm", "-b", dev.broker_name)
    m = re.fullmatch(rf"wipe write perm of broker\[{dev.broker_name}\] in name server\[{dev.namesrv}\] OK, (\d+)\n", out)
    assert m is not None and int(m.group(1)) > 0
    out = ok(dev, "addWritePerm", "-b", dev.broker_name)
    assert out == f"add write perm of broker[{dev.broker_name}] in name server[{dev.namesrv}] OK, {m.group(1)}\n"


def test_kv_and_name_server_config_commands(dev: DevServer) -> None:
    assert ok(dev, "updateKvConfig", "-s", "NS1", "-k", "k1", "-v", "v1") == (
        "create or update kv config to namespace success.\n")
    assert "[broker-a:7]" in ok(dev, "updateOrderConf", "-t", "K", "-m", "put", "-v", "broker-a:7")
    assert ok(dev, "deleteKvConfig", "-s", "NS1", "-k", "k1") == "delete kv config from namespace success.\n"
    out = ok(dev, "getNamesrvConfig")
    assert out.splitlines()[0] == f"============{dev.namesrv}============"
    assert re.search(r"^orderMessageEnable {32}=  (true|false)$", out, re.MULTILINE)
    assert ok(dev, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true") == (
        f"update name server config success![{dev.namesrv}]\norderMessageEnable : true\n")
    assert json.loads(ok(dev, "getNamesrvConfig", "--json"))[dev.namesrv]["orderMessageEnable"] == "true"


@pytest.mark.parametrize("command", ["cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog"])
def test_maintenance_commands_print_success_by_broker_and_by_cluster(dev: DevServer, command: str) -> None:
    """CleanExpiredCQSubCommand & co: `success` (no newline) when every broker answered SUCCESS."""
    assert ok(dev, command, "-b", dev.broker) == "success"
    assert ok(dev, command, "-c", "DefaultCluster") == "success"
    assert ok(dev, command) == "success"


def test_stats_all_and_broker_consume_stats_use_rocketmq_columns(dev: DevServer, topic: str) -> None:
    out = ok(dev, "statsAll", "-t", topic)
    head, row = out.splitlines()
    assert head.split() == ["#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour",
                            "#OutMsg24Hour"]
    assert row.startswith(topic.ljust(64)) and row.split()[-1] == "NO_CONSUMER" and row.split()[-2] == "2"
    rows = json.loads(ok(dev, "statsAll", "-t", topic, "--json"))
    assert rows == [dict(rows[0], topic=topic, inMsg24Hour=2, outMsg24Hour="NO_CONSUMER")]
    ok(dev, "consumeMessage", "-t", topic, "-g", "CG_stats")  # a pull creates the group
    out = ok(dev, "brokerConsumeStats", "-b", dev.broker)
    assert out.splitlines()[0].split() == ["#Topic", "#Group", "#Broker", "Name", "#QID", "#Broker", "Offset",
                                           "#Consumer", "Offset", "#Diff", "#LastTime"]
    assert re.search(r"\nDiff Total: \d+\n$", out)
    assert "totalDiff" in json.loads(ok(dev, "brokerConsumeStats", "-b", dev.broker, "--json"))


def test_send_probes_print_rt_and_results(dev: DevServer) -> None:
    out = ok(dev, "sendMsgStatus", "-b", dev.broker_name, "-c", "2", "-s", "20")
    lines = out.splitlines()
    assert len(lines) == 2 and all(re.fullmatch(
        r"rt=\d+ms, SendResult=SendResult \[sendStatus=SEND_OK, msgId=[0-9A-F]{32}, offsetMsgId=[0-9A-F]{32}, "
        rf"messageQueue=MessageQueue \[topic={dev.broker_name}, brokerName={dev.broker_name}, queueId=\d+\], "
        r"queueOffset=\d+\]", line) for line in lines)
    ok(dev, "updateTopic", "-b", dev.broker, "-t", "RmqCmdsRT", "-r", "2", "-w", "2")
    out = ok(dev, "checkMsgSendRT", "-t", "RmqCmdsRT", "-a", "3", "-s", "8")
    lines = out.splitlines()
    assert lines[0].split() == ["#Broker", "Name", "#QID", "#Send", "Result", "#RT"]
    assert [line.split()[:3] for line in lines[1:4]] == [
        [dev.broker_name, "0", "true"], [dev.broker_name, "1", "true"], [dev.broker_name, "0", "true"]]
    assert re.fullmatch(r"Avg RT: \d+\.\d\d", lines[4])
    out = ok(dev, "clusterRT", "-a", "2", "--rounds", "1")
    assert out.splitlines()[1].split()[:2] == ["DefaultCluster", dev.broker_name]
    assert out.splitlines()[1].split()[3:] == ["2", "0"]


def test_producer_commands_without_producers(dev: DevServer, topic: str) -> None:
    code, _, err = admin(dev, "producerConnection", "-g", "PG_none", "-t", topic)
    assert code == 1 and "not online" in err
    assert ok(dev, "producer", "-b", dev.broker, "--json").strip() in ("{}", "")


def test_print_msg_filters_by_tag_and_prints_message_ext(dev: DevServer, topic: str) -> None:
    """PrintMessageSubCommand: per queue a minOffset line, MSGID lines, a finishing line, dashes."""
    out = ok(dev, "printMsg", "-t", topic, "-s", "TagA")
    lines = out.splitlines()
    assert lines[0] == f"minOffset=0, maxOffset=2, MessageQueue [topic={topic}, brokerName={dev.broker_name}, queueId=0]"
    msgs = [line for line in lines if line.startswith("MSGID: ")]
    assert len(msgs) == 1 and msgs[0].endswith(" BODY: hello") and "MessageExt [brokerName=" in msgs[0]
    assert "body=[104, 101, 108, 108, 111]" in msgs[0]
    assert lines.count("--------------------------------------------------------") == 2
    no_body = ok(dev, "printMsg", "-t", topic, "-d", "false")
    assert no_body.count("BODY: NOT PRINT BODY") == 2
    assert [m["body"] for m in json.loads(ok(dev, "printMsg", "-t", topic, "--json"))] == ["hello", "world"]


def test_print_msg_by_queue_counts_tags(dev: DevServer, topic: str) -> None:
    out = ok(dev, "printMsgByQueue", "-t", topic, "-a", dev.broker_name, "-i", "0", "-f", "true")
    assert sorted(out.splitlines()) == [f"Tag: {'TagA':<30} Count: 1", f"Tag: {'TagB':<30} Count: 1"]
    out = ok(dev, "printMsgByQueue", "-t", topic, "-a", dev.broker_name, "-i", "0", "-p", "true", "-d", "true")
    assert [line.rsplit("BODY: ", 1)[1] for line in out.splitlines()] == ["hello", "world"]


def test_query_cq_prints_the_units(dev: DevServer, topic: str) -> None:
    out = ok(dev, "queryCq", "-t", topic, "-q", "0", "-i", "1", "-c", "5", "-g", "CG_offline")
    assert f"Filter data: \nCG_offline@{topic} is not online!\n" in out
    assert "Queue data: \nmax: 2, min: 0\n" in out
    assert re.search(r"idx: 1\nConsumeQueueData\{physicOffset=\d+, physicSize=\d+, tagsCode=-?\d+, "
                     r"extendDataJson='null', bitMap='null', eval=false, msg='null'\}\n", out)
    assert "idx: 2" not in out
    assert json.loads(ok(dev, "queryCq", "-t", topic, "-q", "0", "-i", "0", "--json"))["maxQueueIndex"] == 2


def group_with_retry_topic(dev: DevServer, group: str) -> None:
    """A subscription group and its %RETRY% topic (what a consumer's first heartbeat makes)."""
    ok(dev, "updateSubGroup", "-b", dev.broker, "-g", group)
    ok(dev, "updateTopic", "-b", dev.broker, "-t", f"%RETRY%{group}", "-r", "1", "-w", "1")
    eventually(lambda: admin(dev, "topicRoute", "-t", f"%RETRY%{group}")[0] == 0, timeout=15,
               message=f"no retry route for {group}")


def test_offset_commands_clone_reset_old_and_skip(dev: DevServer, topic: str) -> None:
    group_with_retry_topic(dev, "CG_src")
    out = ok(dev, "resetOffsetByTimeOld", "-g", "CG_src", "-t", topic, "-s", "0")
    assert out.startswith(f"rollback consumer offset by specified consumerGroup[CG_src], topic[{topic}], "
                          "force[true], timestamp(string)[0], timestamp(long)[0]\n")
    assert out.splitlines()[1].split() == ["#brokerName", "#queueId", "#brokerOffset", "#consumerOffset",
                                           "#timestampOffset", "#rollbackOffset"]
    rows = json.loads(ok(dev, "skipAccumulatedMessage", "-g", "CG_src", "-t", topic, "--json"))
    assert {r["queueId"]: r.get("offset", r.get("rollbackOffset")) for r in rows}[0] == 2
    out = ok(dev, "cloneGroupOffset", "-s", "CG_src", "-d", "CG_dst", "-t", topic)
    assert out == f"clone group offset success. srcGroup[CG_src], destGroup=[CG_dst], topic[{topic}]"
    progress = json.loads(ok(dev, "resetOffsetByTimeOld", "-g", "CG_dst", "-t", topic, "-s", "0", "-f", "false",
                             "--json"))
    assert {r["queueId"]: r["consumerOffset"] for r in progress}[0] == 2


def test_exports_write_rocketmq_json_files(dev: DevServer, topic: str, tmp_path: Path) -> None:
    out = ok(dev, "exportMetadata", "-c", "DefaultCluster", "-f", str(tmp_path))
    assert out == f"export {tmp_path}/metadata.json success\n"
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["topicConfigTable"][topic]["readQueueNums"] == 2
    assert "SCHEDULE_TOPIC_XXXX" not in meta["topicConfigTable"] and meta["exportTime"] > 0
    assert ok(dev, "exportMetadata", "-b", dev.broker, "-t", "-f", str(tmp_path)) == (
        f"export {tmp_path}/topic.json success")
    assert admin(dev, "exportMetadata", "-b", dev.broker, "-f", str(tmp_path))[0] == 2
    assert ok(dev, "exportConfigs", "-c", "DefaultCluster", "-f", str(tmp_path)) == (
        f"export {tmp_path}/configs.json success")
    configs = json.loads((tmp_path / "configs.json").read_text())
    assert configs["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1, "slaveBrokerSize": 0}
    assert configs["brokerConfigs"][dev.broker_name]["brokerName"] == dev.broker_name
    ok(dev, "exportMetrics", "-c", "DefaultCluster", "-f", str(tmp_path))
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics["evaluateReport"][dev.broker_name]) == {"runtimeEnv", "runtimeQuota", "runtimeVersion"}
    # fastjson prints the commands' HashMaps and Properties in Java's iteration order (these
    # orders are what java.util.HashMap and Hashtable, Java 8's Properties, gave for these keys).
    assert list(meta) == ["exportTime", "topicConfigTable", "subscriptionGroupTable"]
    assert list(configs) == ["clusterScale", "brokerConfigs"]
    assert list(configs["clusterScale"]) == ["namesrvSize", "slaveBrokerSize", "masterBrokerSize"]
    assert list(configs["brokerConfigs"][dev.broker_name]) == [
        "flushDiskType", "brokerName", "autoCreateTopicEnable", "brokerClusterName", "traceTopicEnable", "traceOn",
        "brokerRole", "messageDelayLevel", "fileReservedTime", "msgTraceTopicName", "useTLS", "filterServerNums",
        "brokerId", "slaveReadEnable", "autoCreateSubscriptionGroup", "maxMessageSize"]
    assert list(metrics) == ["totalData", "evaluateReport"]
    assert list(metrics["evaluateReport"][dev.broker_name]) == ["runtimeVersion", "runtimeQuota", "runtimeEnv"]


def test_start_monitoring_reports_undone_messages_per_group(dev: DevServer, topic: str) -> None:
    group_with_retry_topic(dev, "CG_mon")
    ok(dev, "resetOffsetByTimeOld", "-g", "CG_mon", "-t", topic, "-s", "0")
    out = ok(dev, "startMonitoring", "--rounds", "1")
    assert (f"[UNDONE_MSGS] UndoneMsgs [consumerGroup=CG_mon, topic={topic}, undoneMsgsTotal=2, "
            "undoneMsgsSingleMQ=2, undoneMsgsDelayTimeMills=") in out


def test_cluster_list_base_more_stats_and_interval(dev: DevServer) -> None:
    """ClusterListSubCommand: the base columns, -m's totals, -i printing again each interval."""
    lines = ok(dev, "clusterList").splitlines()
    assert lines[0] == ("#Cluster Name     #Broker Name            #BID  #Addr                  #Version         "
                        "       #InTPS(LOAD)       #OutTPS(LOAD) #PCWait(ms) #Hour #SPACE")
    assert lines[1].split()[:4] == ["DefaultCluster", dev.broker_name, "0", dev.broker]
    assert re.search(r" +\d+\.\d\d\(\d+,\d+ms\) +\d+\.\d\d\(\d+,\d+ms\) +\d+ +\d+\.\d\d +\d\.\d{4}$", lines[1])
    more = ok(dev, "clusterList", "-m").splitlines()
    assert more[0].split() == ["#Cluster", "Name", "#Broker", "Name", "#InTotalYest", "#OutTotalYest",
                               "#InTotalToday", "#OutTotalToday"]
    assert more[1].split()[:2] == ["DefaultCluster", dev.broker_name] and len(more[1].split()) == 6
    twice = ok(dev, "clusterList", "-m", "-i", "1", "--rounds", "2")
    assert twice.count("#InTotalYest") == 2
    (row,) = json.loads(ok(dev, "clusterList", "--json"))
    assert (row["clusterName"], row["brokerName"], row["brokerId"], row["addr"]) == (
        "DefaultCluster", dev.broker_name, 0, dev.broker)


def test_topic_list_cluster_model_lists_the_consuming_groups(dev: DevServer, topic: str) -> None:
    """TopicListSubCommand -c: a row per (cluster, topic, consumer group) from queryTopicConsumeByWho."""
    group_with_retry_topic(dev, "CG_list")
    ok(dev, "resetOffsetByTimeOld", "-g", "CG_list", "-t", topic, "-s", "0")
    out = ok(dev, "topicList", "-c")
    assert out.splitlines()[0] == f"{'#Cluster Name':<20}  {'#Topic':<48}  {'#Consumer Group':<48}"
    assert f"{'DefaultCluster':<20}  {topic:<64}  {'CG_list':<64}" in out.splitlines()
    assert not any(line.split()[1:2] == ["%RETRY%CG_list"] for line in out.splitlines())


def test_long_commands_draw_a_progress_bar_only_when_stdout_is_a_terminal(
        dev: DevServer, topic: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The bar goes to stderr, so piped output stays RocketMQ's lines."""
    plain = CliRunner().invoke(admin_group, ["printMsg", "-t", topic, "-n", dev.namesrv])
    assert plain.exit_code == 0 and plain.stderr == ""
    group_with_retry_topic(dev, "CG_bar_src")
    ok(dev, "resetOffsetByTimeOld", "-g", "CG_bar_src", "-t", topic, "-s", "0")
    monkeypatch.setattr("orbitmq.admin.jprint.stdout_is_terminal", lambda: True)
    for command in (["printMsg", "-t", topic], ["printMsgByQueue", "-t", topic, "-a", dev.broker_name, "-i", "0"],
                    ["cloneGroupOffset", "-s", "CG_bar_src", "-d", "CG_bar", "-t", topic],
                    ["exportMetadata", "-c", "DefaultCluster", "-f", str(tmp_path)],
                    ["exportConfigs", "-c", "DefaultCluster", "-f", str(tmp_path)]):
        drawn = CliRunner().invoke(admin_group, [*command, "-n", dev.namesrv])
        assert drawn.exit_code == 0, drawn.stderr
        bar = drawn.stderr.rsplit("\r", 1)[-1]
        assert re.fullmatch(rf"{command[0]} \[#{{30}}\] (\d+)/\1 100\.0%\n", bar), drawn.stderr
    # stdout is unchanged by the bar.
    assert CliRunner().invoke(admin_group, ["printMsg", "-t", topic, "-n", dev.namesrv]).stdout == plain.stdout


def test_a_real_terminal_gets_the_bar_and_a_pipe_does_not(dev: DevServer, topic: str) -> None:
    command = orbitmq_command("admin", "printMsg", "-t", topic, "-n", dev.namesrv)
    primary, secondary = pty.openpty()
    try:
        on_tty = subprocess.run(command, stdout=secondary, stderr=subprocess.PIPE, timeout=60, check=True)
    finally:
        os.close(secondary)
        os.close(primary)
    piped = subprocess.run(command, capture_output=True, timeout=60, check=True)
    assert re.search(rb"\rprintMsg \[#{30}\] (\d+)/\1 100\.0%\n$", on_tty.stderr)
    assert piped.stderr == b"" and b"minOffset=0" in piped.stdout


def test_older_commands_print_rocketmq_lines(dev: DevServer, topic: str) -> None:
    """topicStatus, brokerStatus, getBrokerConfig, sendMessage and queryMsgByKey in the Java classes' formats."""
    status = ok(dev, "topicStatus", "-t", topic).splitlines()
    assert status[0] == f"{'#Broker Name':<32}  {'#QID':<4}  {'#Min Offset':<20}  {'#Max Offset':<20}    #Last Updated"
    assert status[1].startswith(f"{dev.broker_name:<32}  {'0':<4}  {'0':<20}  {'2':<20}    ")
    broker = ok(dev, "brokerStatus", "-b", dev.broker).splitlines()
    assert f"{'brokerVersionDesc':<32}: V4_9_7" in broker
    config = ok(dev, "getBrokerConfig", "-b", dev.broker).splitlines()
    assert config[0] == f"============{dev.broker}============" and config[-1] == ""
    assert f"{'brokerName':<50}=  {dev.broker_name}" in config
    sent = ok(dev, "sendMessage", "-t", topic, "-p", "fmt", "-k", "fmtkey", "-b", dev.broker_name, "-i", "1")
    head, row = sent.splitlines()
    assert head.startswith(f"{'#Broker Name':<32}  {'#QID':<4}  {'#Send Result':<20}    #MsgId")
    assert row.startswith(f"{dev.broker_name:<32}  {'1':<4}  {'SEND_OK':<20}    ")
    eventually(lambda: admin(dev, "queryMsgByKey", "-t", topic, "-k", "fmtkey")[0] == 0, timeout=10)
    by_key = ok(dev, "queryMsgByKey", "-t", topic, "-k", "fmtkey").splitlines()
    assert by_key[0] == f"{'#Message ID':<50} #QID {'#Offset':>40}"
    assert by_key[1] == f"{row.split()[3]:<50} {1:>4} {0:>40}"


def test_get_consumer_config_prints_the_bean_fields(dev: DevServer) -> None:
    """GetConsumerConfigSubCommand: `=====cluster:broker=====` then `%-40s=  %s` per declared field."""
    policy = '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}}'
    out = ok(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_fmt", "-r", "7", "-o", "true", "-p", policy)
    assert "consumeMessageOrderly=true" in out
    shown = "GroupRetryPolicy{type=EXPONENTIAL, exponentialRetryPolicy=ExponentialRetryPolicy{initial=1000, " \
            "max=60000, multiplier=3}, customizedRetryPolicy=null}"
    assert f"groupRetryPolicy={shown}" in out
    lines = ok(dev, "getConsumerConfig", "-g", "CG_cfg_fmt").splitlines()
    assert lines[0] == f"=============================DefaultCluster:{dev.broker_name}============================="
    assert lines[1:] == [f"{k:<40}=  {v}" for k, v in (
        ("groupName", "CG_cfg_fmt"), ("consumeEnable", "true"), ("consumeFromMinEnable", "true"),
        ("consumeBroadcastEnable", "true"), ("consumeMessageOrderly", "true"), ("retryQueueNums", "1"),
        ("retryMaxTimes", "7"), ("groupRetryPolicy", shown), ("brokerId", "0"), ("whichBrokerWhenConsumeSlowly", "1"),
        ("notifyConsumerIdsChangedEnable", "true"))]


def test_update_sub_group_retry_policy_and_attribute_changes(dev: DevServer) -> None:
    """RocketMQ 5's updateSubGroup -p (groupRetryPolicy JSON) and --attributes (+name=value,-name changes applied
    to the group's current attributes); a malformed policy is refused before anything is sent."""
    custom = '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[2000,4000]}}'
    ok(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_policy", "-p", custom,
       "--attributes", "+orbitmq.expired.policy=DLQ")
    config = json.loads(ok(dev, "getConsumerConfig", "-g", "CG_cfg_policy", "--json"))
    (mine,) = config.values()
    assert mine["groupRetryPolicy"] == {"customizedRetryPolicy": {"next": [2000, 4000]}, "type": "CUSTOMIZED"}
    assert mine["attributes"] == {"orbitmq.expired.policy": "DLQ"}
    ok(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_policy", "-r", "3")  # no --attributes: kept
    (mine,) = json.loads(ok(dev, "getConsumerConfig", "-g", "CG_cfg_policy", "--json")).values()
    assert mine["attributes"] == {"orbitmq.expired.policy": "DLQ"} and mine["groupRetryPolicy"] == {"type": "CUSTOMIZED"}
    ok(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_policy", "--attributes", "-orbitmq.expired.policy")
    (mine,) = json.loads(ok(dev, "getConsumerConfig", "-g", "CG_cfg_policy", "--json")).values()
    assert "attributes" not in mine
    for bad in ('{"type":"LINEAR"}', '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[]}}', "{nope"):
        code, _, err = admin(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_policy", "-p", bad)
        assert code != 0 and "groupRetryPolicy" in err, err
    code, _, err = admin(dev, "updateSubGroup", "-b", dev.broker, "-g", "CG_cfg_policy", "--attributes", "a=1")
    assert code != 0 and "attribute format is wrong" in err, err
