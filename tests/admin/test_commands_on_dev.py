"""The admin commands against a real `orbitmq dev`: their output and their effects."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.client.queue import MessageQueue
from tests.support.admin import admin, ok
from tests.support.dev import DevServer
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


def table(text: str) -> list[dict[str, str]]:
    """Rows of the first `#`-headed table in `text`, cells cut at the header columns."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#"))
    header = lines[start]
    cols = [i for i, ch in enumerate(header) if ch == "#"]
    names = [header[a:b].strip().lstrip("#") for a, b in zip(cols, cols[1:] + [len(header) + 1000])]
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(cols, cols[1:] + [len(line) + 1000])]
        rows.append(dict(zip(names, cells)))
    return rows


def cluster_of(dev: DevServer) -> str:
    return table(ok(dev, "clusterList"))[0]["Cluster Name"]


def create_topic(dev: DevServer, topic: str, queues: int) -> None:
    ok(dev, "updateTopic", "-b", dev.broker_addr, "-t", topic, "-r", str(queues), "-w", str(queues))
    eventually(lambda: admin(dev, "topicRoute", "-t", topic)[0] == 0, timeout=15,
               message=f"{topic} never appeared in the NameServer's routes")


def test_cluster_list_shows_the_dev_broker_with_address_and_version(dev: DevServer) -> None:
    rows = table(ok(dev, "clusterList"))
    assert len(rows) == 1
    row = rows[0]
    assert (row["Broker Name"], row["BID"], row["Addr"]) == (dev.broker_name, "0", dev.broker_addr)
    assert row["Version"] not in ("", "-")


def test_broker_status_prints_the_brokers_runtime_figures(dev: DevServer) -> None:
    out = ok(dev, "brokerStatus", "-b", dev.broker_addr)
    pairs = dict(line.split(": ", 1) for line in out.splitlines())
    assert {k.strip() for k in pairs} >= {"brokerVersionDesc", "putTps"}


def test_update_topic_on_a_cluster_creates_a_topic_the_namesrv_routes(dev: DevServer) -> None:
    cluster = cluster_of(dev)
    out = ok(dev, "updateTopic", "-c", cluster, "-t", "AdminRouted", "-r", "4", "-w", "4")
    assert f"create topic to {dev.broker_addr} success." in out
    eventually(lambda: admin(dev, "topicRoute", "-t", "AdminRouted")[0] == 0, timeout=15)
    route = json.loads(ok(dev, "topicRoute", "-t", "AdminRouted", "--json"))
    assert route["queueDatas"] == [
        {"brokerName": dev.broker_name, "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    ]
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": dev.broker_addr}
    assert "AdminRouted" in ok(dev, "topicList").split()
    assert {"Cluster Name": cluster, "Topic": "AdminRouted", "Consumer Group": ""} in table(ok(dev, "topicList", "-c"))
    assert {"clusterName": cluster, "topic": "AdminRouted", "consumerGroup": ""} in json.loads(
        ok(dev, "topicList", "-c", "--json"))


def test_a_sent_message_is_found_by_offset_id_unique_key_key_and_queue_offset(dev: DevServer) -> None:
    create_topic(dev, "AdminFind", 2)
    out = ok(dev, "sendMessage", "-t", "AdminFind", "-p", "hello admin", "-k", "order-1 order-2",
             "-c", "TagA", "-b", dev.broker_name, "-i", "1")
    sent = table(out)[0]
    assert (sent["Broker Name"], sent["QID"], sent["Send Result"]) == (dev.broker_name, "1", "SEND_OK")
    offset_id, unique_id, queue_offset = sent["Offset MsgId"], sent["MsgId"], sent["Queue Offset"]

    by_offset_id = ok(dev, "queryMsgById", "-i", offset_id)
    assert "hello admin" in by_offset_id and "[TagA]" in by_offset_id and "[order-1 order-2]" in by_offset_id

    # The index is written after the append; give the dispatcher a moment.
    eventually(lambda: admin(dev, "queryMsgById", "-i", unique_id, "-t", "AdminFind")[0] == 0, timeout=10)
    assert "hello admin" in ok(dev, "queryMsgById", "-i", unique_id, "-t", "AdminFind")

    by_key = table(ok(dev, "queryMsgByKey", "-t", "AdminFind", "-k", "order-2"))
    assert [(r["Message ID"], r["QID"]) for r in by_key] == [(unique_id, "1")]
    by_key_json = json.loads(ok(dev, "queryMsgByKey", "-t", "AdminFind", "-k", "order-2", "--json"))
    assert [r["Offset ID"] for r in by_key_json] == [offset_id]

    by_offset = ok(dev, "queryMsgByOffset", "-t", "AdminFind", "-b", dev.broker_name, "-i", "1",
                   "-o", queue_offset)
    assert "hello admin" in by_offset and offset_id in by_offset

    status = {r["QID"]: r for r in table(ok(dev, "topicStatus", "-t", "AdminFind"))}
    assert status["1"]["Max Offset"] == str(int(queue_offset) + 1)
    assert status["1"]["Last Updated"] != "-"

    consumed = ok(dev, "consumeMessage", "-t", "AdminFind", "-b", dev.broker_name, "-i", "1")
    assert [r["Body"] for r in table(consumed)] == ["hello admin"]


def test_consumer_progress_follows_consumption_and_reset_offset_moves_the_committed_offset(
    dev: DevServer,
) -> None:
    create_topic(dev, "AdminProgress", 1)
    ok(dev, "updateSubGroup", "-b", dev.broker_addr, "-g", "AdminGroup")
    before_sends = int(time.time() * 1000) - 1000
    for i in range(5):
        ok(dev, "sendMessage", "-t", "AdminProgress", "-p", f"m{i}", "-b", dev.broker_name, "-i", "0")

    queue = MessageQueue("AdminProgress", dev.broker_name, 0)

    async def consume_all() -> None:
        # What a consumer does on the wire: pull, then commit the next offset.
        async with AdminClient([dev.namesrv]) as client:
            result = await client.pull(dev.broker_addr, queue, 0, 32, group="AdminGroup")
            assert len(result.messages) == 5
            await client.update_consumer_offset(dev.broker_addr, "AdminGroup", queue, result.next_begin_offset)

    asyncio.run(consume_all())
    out = ok(dev, "consumerProgress", "-g", "AdminGroup")
    row = next(r for r in table(out) if r["Topic"] == "AdminProgress")
    assert (row["Broker Offset"], row["Consumer Offset"], row["Diff"]) == ("5", "5", "0")

    reset = table(ok(dev, "resetOffsetByTime", "-g", "AdminGroup", "-t", "AdminProgress",
                     "-s", str(before_sends)))
    assert reset == [{"brokerName": dev.broker_name, "queueId": "0", "offset": "0"}]

    async def committed() -> int | None:
        async with AdminClient([dev.namesrv]) as client:
            return await client.query_consumer_offset(dev.broker_addr, "AdminGroup", queue)

    assert asyncio.run(committed()) == 0
    row = next(r for r in table(ok(dev, "consumerProgress", "-g", "AdminGroup")) if r["Topic"] == "AdminProgress")
    assert (row["Consumer Offset"], row["Diff"]) == ("0", "5")


def test_delete_topic_removes_it_from_the_broker_and_the_namesrv(dev: DevServer) -> None:
    create_topic(dev, "AdminDoomed", 1)
    out = ok(dev, "deleteTopic", "-c", cluster_of(dev), "-t", "AdminDoomed")
    assert "success" in out
    code, _, err = admin(dev, "topicRoute", "-t", "AdminDoomed")
    assert code == 1 and "CODE: 17" in err
    assert "AdminDoomed" not in ok(dev, "topicList").split()


def test_refusals_exit_1_with_the_rocketmq_code_and_remark(dev: DevServer) -> None:
    code, out, err = admin(dev, "topicStatus", "-t", "NoSuchTopicHere")
    assert (code, out) == (1, "")
    assert err.startswith("error: CODE: 17 DESC: ")

    create_topic(dev, "AdminEmpty", 1)
    code, _, err = admin(dev, "queryMsgByOffset", "-t", "AdminEmpty", "-b", dev.broker_name, "-i", "0", "-o", "3")
    assert code == 1 and "no message at offset 3" in err


def test_consume_message_pulls_every_queue_from_its_start_up_to_the_count(dev: DevServer) -> None:
    create_topic(dev, "AdminPullAll", 3)
    for q in range(3):
        for i in range(2):
            ok(dev, "sendMessage", "-t", "AdminPullAll", "-p", f"q{q}-m{i}", "-c", f"T{q}", "-b", dev.broker_name,
               "-i", str(q))
    rows = table(ok(dev, "consumeMessage", "-t", "AdminPullAll"))
    assert sorted(r["Body"] for r in rows) == sorted(f"q{q}-m{i}" for q in range(3) for i in range(2))
    assert {r["Tags"] for r in rows if r["QID"] == "2"} == {"T2"}
    limited = ok(dev, "consumeMessage", "-t", "AdminPullAll", "-c", "4")
    assert len(table(limited)) == 4 and "Consumed 4 message(s)." in limited
    from_offset = table(ok(dev, "consumeMessage", "-t", "AdminPullAll", "-b", dev.broker_name, "-i", "1", "-o", "1"))
    assert [r["Body"] for r in from_offset] == ["q1-m1"]


def test_an_ordered_topic_on_a_cluster_records_its_queue_layout_with_the_namesrv(dev: DevServer) -> None:
    cluster = cluster_of(dev)
    out = ok(dev, "updateTopic", "-c", cluster, "-t", "AdminOrdered", "-r", "2", "-w", "2", "-o", "true")
    assert f"orderConf=[{dev.broker_name}:2]" in out and "order=true" in out


def test_broker_status_for_a_cluster_prefixes_each_line_with_the_broker_address(dev: DevServer) -> None:
    out = ok(dev, "brokerStatus", "-c", cluster_of(dev))
    assert out.splitlines() and all(line.startswith(dev.broker_addr + " ") for line in out.splitlines())


def test_a_unique_key_that_is_not_an_offset_id_needs_a_topic_and_is_found_with_one(dev: DevServer) -> None:
    create_topic(dev, "AdminUniq", 1)
    unique_id = table(ok(dev, "sendMessage", "-t", "AdminUniq", "-p", "by uniq", "-b", dev.broker_name))[0]["MsgId"]
    code, _, err = admin(dev, "queryMsgById", "-i", unique_id)
    assert code == 2 and "-t topic" in err
    eventually(lambda: admin(dev, "queryMsgById", "-i", unique_id, "-t", "AdminUniq")[0] == 0, timeout=10)
    assert "by uniq" in ok(dev, "queryMsgById", "-i", unique_id, "-t", "AdminUniq")
    assert "by uniq" in ok(dev, "queryMsgByUniqueKey", "-i", unique_id.lower(), "-t", "AdminUniq")
    code, _, err = admin(dev, "queryMsgByUniqueKey", "-i", "0" * 32, "-t", "AdminUniq")
    assert code == 1 and "not found" in err


def test_update_sub_group_settings_show_in_get_consumer_config_until_delete_sub_group(dev: DevServer) -> None:
    cluster = cluster_of(dev)
    ok(dev, "updateSubGroup", "-c", cluster, "-g", "AdminSettings", "-q", "3", "-r", "5", "-s", "false")
    config = {
        k.strip(): v.strip() for k, v in
        (line.split("=  ") for line in ok(dev, "getConsumerConfig", "-g", "AdminSettings").splitlines()[1:])
    }
    assert (config["retryQueueNums"], config["retryMaxTimes"], config["consumeEnable"]) == ("3", "5", "false")
    assert "success" in ok(dev, "deleteSubGroup", "-c", cluster, "-g", "AdminSettings")
    code, _, err = admin(dev, "getConsumerConfig", "-g", "AdminSettings")
    assert code == 1 and "AdminSettings" in err


def test_update_broker_config_changes_what_get_broker_config_reports(dev: DevServer) -> None:
    def setting(name: str) -> str:
        lines = ok(dev, "getBrokerConfig", "-b", dev.broker_addr).splitlines()
        return next(line.split("=", 1)[1].strip() for line in lines if line.split("=")[0].strip() == name)

    assert setting("brokerName") == dev.broker_name
    ok(dev, "updateBrokerConfig", "-b", dev.broker_addr, "-k", "defaultTopicQueueNums", "-v", "5")
    assert setting("defaultTopicQueueNums") == "5"
    code, _, err = admin(dev, "updateBrokerConfig", "-b", dev.broker_addr, "-k", "longPollingEnable", "-v", "maybe")
    assert code == 1 and err.startswith("error: CODE: 1 ")


def test_consumer_connection_of_a_group_with_no_client_online_fails_with_code_206(dev: DevServer) -> None:
    code, out, err = admin(dev, "consumerConnection", "-g", "AdminNobodyHome")
    assert (code, out) == (1, "") and "CODE: 206" in err
