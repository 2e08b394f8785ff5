"""A broker in this process on 127.0.0.1:0 with a temp store, driven by raw remoting requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
from pathlib import Path

import pytest

from orbitmq.broker.acl.permission import PUB
from orbitmq.broker.acl.resources import needed_resources
from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common import jsonbody
from orbitmq.common.message import Message, MessageExtBatch
from orbitmq.common.msgid import create_offset_msg_id, parse_offset_msg_id
from orbitmq.common.record import encode_batch
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from orbitmq.store.api import MessageStore, PutMessageResult
from tests.broker.helpers import (
    FLAG_COMMIT,
    FLAG_SUBSCRIPTION,
    FLAG_SUSPEND,
    create_topic,
    heartbeat_body,
    props,
    pull,
    records,
    request,
    send_v1,
    send_v2,
)
from tests.support.dev import broker_config
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)


async def parked(broker: Broker, n: int) -> bool:
    """True once `n` long polls are waiting at `broker` for a message."""
    return len(broker.waiters) == n


async def queued(broker: Broker) -> bool:
    """True once a send waits for a slot at `broker`'s send gate."""
    return broker.send_gate.waiting > 0


def make_config(tmp_path: Path, **extra: str) -> BrokerConfig:
    return broker_config(tmp_path, **{"flushConsumerOffsetInterval": "200", **extra})




async def test_every_send_mode_stores_bodies_and_properties_that_pull_back_exactly(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    p1 = props(TAGS="TagA", KEYS="k1 k2", WAIT="true", color="red")
    r1 = await send_v1(client, addr, "T", b"first body", p1)
    r2 = await send_v2(client, addr, "T", b"\x00\x01 second", props(TAGS="TagB", UNIQ_KEY="ABC123"))
    batch = encode_batch(
        [Message("T", b"b1", properties={"TAGS": "TagA", "UNIQ_KEY": "U1"}),
         Message("T", b"b2", properties={"TAGS": "TagB", "UNIQ_KEY": "U2", "size": "L"})]
    )
    r3 = await send_v2(client, addr, "T", batch, props(WAIT="true"), code=RequestCode.SEND_BATCH_MESSAGE)
    for r in (r1, r2, r3):
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.field("MSG_REGION") == "DefaultRegion"
        assert r.field("TRACE_ON") == "true"
    assert [r.field("queueOffset") for r in (r1, r2, r3)] == ["0", "1", "2"]
    assert len(r3.field("msgId", "").split(",")) == 2

    response = await pull(client, addr, "T", "CG", 0)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert response.remark == "FOUND"
    assert isinstance(response.body, (bytes, memoryview, list))
    msgs = records(response)
    assert [m.body for m in msgs] == [b"first body", b"\x00\x01 second", b"b1", b"b2"]
    assert [m.queue_offset for m in msgs] == [0, 1, 2, 3]
    first, second, b1, b2 = msgs
    assert first.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "color": "red", "CLUSTER": "DefaultCluster"}
    assert second.properties["UNIQ_KEY"] == "ABC123"
    assert second.flag == 7
    assert b2.properties["size"] == "L" and b2.properties["CLUSTER"] == "DefaultCluster"
    assert b1.properties["UNIQ_KEY"] == "U1"
    assert first.store_host == addr
    assert first.born_host.startswith("127.0.0.1:")
    assert r1.field("msgId") == create_offset_msg_id(addr, first.commit_log_offset)
    assert r3.field("msgId") == ",".join(m.offset_msg_id for m in (b1, b2))
    assert response.field("nextBeginOffset") == "4"
    assert response.field("maxOffset") == "4"


async def test_a_tag_subscription_filters_on_the_broker(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    for tag in ("TagA", "TagB", "TagA"):
        await send_v2(client, addr, "T", tag.encode(), props(TAGS=tag))
    response = await pull(client, addr, "T", "CG", 0, subscription="TagA")
    assert [m.body for m in records(response)] == [b"TagA", b"TagA"]


async def test_a_waiting_long_poll_is_answered_when_a_message_arrives(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    waiting = asyncio.ensure_future(
        pull(client, addr, "T", "CG", 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_ms=30_000, timeout=40)
    )
    await until(lambda: parked(broker, 1))  # the pull waits at the broker: the send below must wake it
    assert not waiting.done()
    sent = await send_v2(client, addr, "T", b"wake up")
    assert sent.code == ResponseCode.SUCCESS
    # The hold is 30 s; the answer must come from the dispatch, long before that.
    response = await asyncio.wait_for(waiting, 10)
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in records(response)] == [b"wake up"]


async def test_a_long_poll_that_times_out_answers_pull_not_found_once(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    response = await pull(client, addr, "T", "CG", 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_ms=200)
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert response.remark in ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE")


async def test_pull_statuses_map_to_rocketmq_codes(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    await send_v2(client, addr, "T", b"x")
    at_end = await pull(client, addr, "T", "CG", 1)
    assert (at_end.code, at_end.remark, at_end.field("nextBeginOffset")) == (
        ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", "1")
    beyond = await pull(client, addr, "T", "CG", 5)
    # RocketMQ corrects an overflowing offset to the min offset while the queue still starts at 0.
    assert (beyond.code, beyond.remark, beyond.field("nextBeginOffset")) == (
        ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", "0")
    filtered = await pull(client, addr, "T", "CG", 0, subscription="Nope")
    assert filtered.code == ResponseCode.PULL_RETRY_IMMEDIATELY


async def test_the_commit_offset_flag_stores_the_consumers_offset(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    await pull(client, addr, "T", "CG", 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT, commit_offset=3)
    q = await request(client, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": "0"})
    assert q.field("offset") == "3"


async def test_bad_input_gets_rocketmq_codes_with_a_remark(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    illegal = await send_v2(client, addr, "bad/topic", b"x")
    assert illegal.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (illegal.remark or "")
    forbidden = await send_v2(client, addr, "SCHEDULE_TOPIC_XXXX", b"x")
    assert forbidden.code == ResponseCode.NO_PERMISSION
    assert forbidden.remark == "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."
    await create_topic(client, addr, "ReadOnly", perm=4)
    read_only = await send_v2(client, addr, "ReadOnly", b"x")
    assert read_only.code == ResponseCode.NO_PERMISSION and "ReadOnly" in (read_only.remark or "")
    big = await send_v2(client, addr, "T", b"x" * (broker.config.store.max_message_size + 1))
    assert big.code == ResponseCode.MESSAGE_ILLEGAL and big.remark
    bad_queue = await send_v2(client, addr, "T", b"x", queue_id=99)
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[99] is illegal" in (bad_queue.remark or "")
    missing = await request(client, addr, RequestCode.PULL_MESSAGE, {"topic": "T"})
    assert missing.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in (missing.remark or "")


async def test_auto_created_topics_inherit_from_tbw102(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    r = await send_v2(client, addr, "Fresh", b"x", queue_id=-1)
    assert r.code == ResponseCode.SUCCESS, r.remark
    config = broker.topics.get("Fresh")
    assert config is not None and (config.write_queue_nums, config.perm) == (4, 6)


async def test_with_auto_creation_off_unknown_topics_and_groups_are_refused(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path, autoCreateTopicEnable="false", autoCreateSubscriptionGroup="false")
    async with Broker(config) as b:
        addr = b.broker_addr
        r = await send_v2(client, addr, "Nowhere", b"x")
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and "Nowhere" in (r.remark or "")
        await create_topic(client, addr, "T")
        p = await pull(client, addr, "T", "UnknownGroup", 0)
        assert p.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST and "UnknownGroup" in (p.remark or "")
        await create_topic(client, addr, "%RETRY%UnknownGroup")
        retry = await send_v2(client, addr, "%RETRY%UnknownGroup", b"x")
        assert retry.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


async def test_consumer_offsets_survive_a_restart(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path)
    async with Broker(config) as b:
        await create_topic(client, b.broker_addr, "T")
        fields = {"consumerGroup": "CG", "topic": "T", "queueId": "2", "commitOffset": "42"}
        r = await request(client, b.broker_addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        assert r.code == ResponseCode.SUCCESS
    saved = (tmp_path / "store" / "config" / "consumerOffset.json").read_text()
    assert jsonbody.loads(saved)["offsetTable"]["T@CG"] == {2: 42}
    async with Broker(config) as b:
        q = await request(
            client, b.broker_addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": "2"}
        )
        assert q.code == ResponseCode.SUCCESS and q.field("offset") == "42"


async def test_sends_that_waited_too_long_are_refused_as_system_busy(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path, waitTimeMillsInSendQueue="50")) as b:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(b.send_gate.max_in_flight):  # take every slot so the send has to wait
                await held.enter_async_context(b.send_gate)
            waiting = asyncio.ensure_future(send_v2(client, b.broker_addr, "T", b"x"))
            await until(lambda: queued(b))  # the send waits at the gate ...
            await asyncio.sleep(0.1)  # ... longer than waitTimeMillsInSendQueue (the time is what is tested)
        r = await waiting
        assert r.code == ResponseCode.SYSTEM_BUSY and (r.remark or "").startswith("[TIMEOUT_CLEAN_QUEUE]")
        again = await send_v2(client, b.broker_addr, "T", b"x")
        assert again.code == ResponseCode.SUCCESS


async def test_heartbeats_register_consumers_and_notify_members_when_one_joins(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    notified: asyncio.Queue[str] = asyncio.Queue()

    async def on_notify(cmd: RemotingCommand, peer: object) -> None:
        notified.put_nowait(cmd.field("consumerGroup") or "")

    client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    r = await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    assert r.code == ResponseCode.SUCCESS and r.version == 407
    assert broker.topics.get("%RETRY%CG") is not None
    async with RemotingClient() as other:
        await request(other, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c2", "CG", "T"))
        assert await asyncio.wait_for(notified.get(), 5) == "CG"
        listed = await request(client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG"})
        assert sorted(jsonbody.loads(listed.body_bytes())["consumerIdList"]) == ["c1", "c2"]
    # The other client's connection closed: it leaves the group at once.
    assert await asyncio.wait_for(notified.get(), 5) == "CG"
    listed = await request(client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG"})
    assert jsonbody.loads(listed.body_bytes())["consumerIdList"] == ["c1"]
    conns = await request(client, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "CG"})
    assert jsonbody.loads(conns.body_bytes())["connectionSet"][0]["clientId"] == "c1"
    none = await request(client, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "Nobody"})
    assert none.code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_queue_locks_are_exclusive_between_clients(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    mq = {"topic": "T", "brokerName": "broker-a", "queueId": 0}
    await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    body = {"consumerGroup": "CG", "clientId": "c1", "mqSet": [mq]}
    first = await request(client, addr, RequestCode.LOCK_BATCH_MQ, body=body)
    assert jsonbody.loads(first.body_bytes())["lockOKMQSet"] == [mq]
    async with RemotingClient() as other:
        await request(other, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c2", "CG", "T"))
        second = await request(other, addr, RequestCode.LOCK_BATCH_MQ, body={**body, "clientId": "c2"})
        assert jsonbody.loads(second.body_bytes())["lockOKMQSet"] == []
        await request(client, addr, RequestCode.UNLOCK_BATCH_MQ, body=body)
        third = await request(other, addr, RequestCode.LOCK_BATCH_MQ, body={**body, "clientId": "c2"})
        assert jsonbody.loads(third.body_bytes())["lockOKMQSet"] == [mq]


async def test_offsets_times_and_lookups_answer_from_the_store(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    sent = [await send_v2(client, addr, "T", f"m{i}".encode(), props(KEYS=f"key{i}", UNIQ_KEY=f"U{i}")) for i in range(3)]
    q = {"topic": "T", "queueId": "0"}
    assert (await request(client, addr, RequestCode.GET_MAX_OFFSET, q)).field("offset") == "3"
    assert (await request(client, addr, RequestCode.GET_MIN_OFFSET, q)).field("offset") == "0"
    earliest = await request(client, addr, RequestCode.GET_EARLIEST_MSG_STORETIME, q)
    assert int(earliest.field("timestamp") or 0) > 0
    search = await request(client, addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": "0"})
    assert search.field("offset") == "0"
    found = await request(
        client, addr, RequestCode.QUERY_MESSAGE,
        {"topic": "T", "key": "key1", "maxNum": "10", "beginTimestamp": "0", "endTimestamp": str(2**62)},
    )
    assert found.code == ResponseCode.SUCCESS
    assert [m.body for m in records(found)] == [b"m1"]
    by_uniq = await request(
        client, addr, RequestCode.QUERY_MESSAGE,
        {"topic": "T", "key": "U2", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": str(2**62),
         "_UNIQUE_KEY_QUERY": "true"},
    )
    assert [m.body for m in records(by_uniq)] == [b"m2"]
    nothing = await request(
        client, addr, RequestCode.QUERY_MESSAGE,
        {"topic": "T", "key": "absent", "maxNum": "10", "beginTimestamp": "0", "endTimestamp": str(2**62)},
    )
    assert nothing.code == ResponseCode.QUERY_NOT_FOUND
    offset = records(found)[0].commit_log_offset
    view = await request(client, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
    assert [m.body for m in records(view)] == [b"m1"]
    assert records(view)[0].offset_msg_id == sent[1].field("msgId")
    gone = await request(client, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(10**9)})
    assert gone.code == ResponseCode.SYSTEM_ERROR


async def test_admin_requests_answer_in_rocketmq_shapes(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=2)
    await send_v2(client, addr, "T", b"x")
    await request(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                  {"consumerGroup": "CG", "topic": "T", "queueId": "0", "commitOffset": "1"})
    runtime = jsonbody.loads((await request(client, addr, RequestCode.GET_BROKER_RUNTIME_INFO)).body_bytes())["table"]
    assert runtime["msgPutTotalTodayNow"] == "1" and runtime["brokerVersion"] == "407"
    assert int(runtime["commitLogMaxOffset"]) > 0
    stats = (await request(client, addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "T"})).body_bytes()
    table = jsonbody.loads(stats)["offsetTable"]
    assert table.get_by({"brokerName": "broker-a", "queueId": 0, "topic": "T"})["maxOffset"] == 1
    consume = jsonbody.loads(
        (await request(client, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "CG", "topic": "T"})).body_bytes()
    )
    entry = consume["offsetTable"].get_by({"brokerName": "broker-a", "queueId": 0, "topic": "T"})
    assert (entry["brokerOffset"], entry["consumerOffset"]) == (1, 1)
    all_topics = jsonbody.loads((await request(client, addr, RequestCode.GET_ALL_TOPIC_CONFIG)).body_bytes())
    assert all_topics["topicConfigTable"]["T"]["readQueueNums"] == 2
    names = jsonbody.loads((await request(client, addr, RequestCode.GET_TOPIC_NAME_LIST)).body_bytes())
    assert "T" in names["topicList"]
    offsets = jsonbody.loads((await request(client, addr, RequestCode.GET_ALL_CONSUMER_OFFSET)).body_bytes())
    assert offsets["offsetTable"]["T@CG"] == {0: 1}
    deleted = await request(client, addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"})
    assert deleted.code == ResponseCode.SUCCESS and broker.topics.get("T") is None


async def test_broker_config_reads_and_updates_as_properties_text(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    got = await request(client, addr, RequestCode.GET_BROKER_CONFIG)
    assert "brokerName=broker-a" in got.body_bytes().decode()
    ok = await request(client, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"autoCreateTopicEnable=false\n")
    assert ok.code == ResponseCode.SUCCESS and broker.config.auto_create_topic_enable is False
    bad = await request(client, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"noSuchKey=1\n")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "noSuchKey" in (bad.remark or "")


async def test_reset_offset_moves_committed_offsets_and_tells_the_consumers(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=1)
    for i in range(3):
        await send_v2(client, addr, "T", f"m{i}".encode())
    pushed: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def on_reset(cmd: RemotingCommand, peer: object) -> None:
        pushed.put_nowait(cmd)

    client.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    await request(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                  {"consumerGroup": "CG", "topic": "T", "queueId": "0", "commitOffset": "3"})
    r = await request(client, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                      {"topic": "T", "group": "CG", "timestamp": "0", "isForce": "true"})
    assert r.code == ResponseCode.SUCCESS, r.remark
    expected_key = {"brokerName": "broker-a", "queueId": 0, "topic": "T"}
    assert jsonbody.loads(r.body_bytes())["offsetTable"].get_by(expected_key) == 0
    push = await asyncio.wait_for(pushed.get(), 5)
    assert push.field("group") == "CG"
    assert jsonbody.loads(push.body_bytes())["offsetTable"].get_by(expected_key) == 0
    assert broker.offsets.query("CG", "T", 0) == 0
    missing = await request(client, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                            {"topic": "Nope", "group": "CG", "timestamp": "0", "isForce": "true"})
    assert missing.code == ResponseCode.SYSTEM_ERROR and "no topic" in (missing.remark or "")


async def test_broker_registers_with_the_nameserver_and_the_route_carries_its_real_port(
    tmp_path: Path, client: RemotingClient
) -> None:
    from orbitmq.namesrv.config import NamesrvConfig
    from orbitmq.namesrv.server import NameServer

    ns = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0,
                                  kv_config_path=str(tmp_path / "kv.json")))
    ns_host, ns_port = await ns.start()
    try:
        config = make_config(tmp_path, namesrvAddr=f"{ns_host}:{ns_port}")
        async with Broker(config) as b:
            route = await request(client, f"{ns_host}:{ns_port}", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
            assert route.code == ResponseCode.SUCCESS, route.remark
            data = jsonbody.loads(route.body_bytes())
            addrs = jsonbody.int_keys(data["brokerDatas"][0]["brokerAddrs"])
            assert addrs == {0: b.broker_addr}
            assert not b.broker_addr.endswith(":0")
            for n in range(5):
                # The broker registers a new topic before it answers UPDATE_AND_CREATE_TOPIC (as
                # RocketMQ does), so its route is there the moment the creation returns; no waiting.
                await create_topic(client, b.broker_addr, f"LateTopic{n}")
                r = await request(client, f"{ns_host}:{ns_port}", RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                  {"topic": f"LateTopic{n}"})
                assert r.code == ResponseCode.SUCCESS, r.remark
        gone = await request(client, f"{ns_host}:{ns_port}", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
        assert gone.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await ns.close()


async def test_metadata_files_are_written_in_rocketmq_shapes(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path)
    async with Broker(config) as b:
        await create_topic(client, b.broker_addr, "T")
        await request(client, b.broker_addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    config_dir = tmp_path / "store" / "config"
    topics = jsonbody.loads((config_dir / "topics.json").read_text())
    assert topics["topicConfigTable"]["T"]["writeQueueNums"] == 4
    assert topics["dataVersion"]["counter"] > 0
    groups = jsonbody.loads((config_dir / "subscriptionGroup.json").read_text())
    assert groups["subscriptionGroupTable"]["CG"]["retryMaxTimes"] == 16
    assert os.path.exists(config_dir / "consumerOffset.json")


async def test_a_sql92_subscription_filters_on_message_properties(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T")
    for size in ("3", "10", "7"):
        await send_v2(client, addr, "T", size.encode(), props(size=size))
    response = await pull(client, addr, "T", "CG", 0, subscription="size > 5", expression_type="SQL92")
    assert [m.body for m in records(response)] == [b"10", b"7"]
    broken = await pull(client, addr, "T", "CG", 0, subscription="size >", expression_type="SQL92")
    assert broken.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_sends_to_a_retry_topic_go_to_the_dead_letter_queue_when_retries_are_used_up(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    retry = await send_v2(client, addr, "%RETRY%CG", b"again", props(RETRY_TOPIC="T"), j="1", l="3")
    assert retry.code == ResponseCode.SUCCESS, retry.remark
    assert [m.body for m in records(await pull(client, addr, "%RETRY%CG", "CG", 0))] == [b"again"]
    dead = await send_v2(client, addr, "%RETRY%CG", b"dead", props(RETRY_TOPIC="T"), j="3", l="3")
    assert dead.code == ResponseCode.SUCCESS, dead.remark
    assert broker.topics.get("%DLQ%CG") is not None
    dlq = records(await pull(client, addr, "%DLQ%CG", "CG", 0))
    assert [(m.body, m.reconsume_times) for m in dlq] == [(b"dead", 3)]
    new_group = await send_v2(client, addr, "%RETRY%NewGroup", b"x")
    assert new_group.code == ResponseCode.SUCCESS and broker.groups.get("NewGroup") is not None


async def test_sends_get_the_stores_refusal_while_the_disk_is_over_the_warning_ratio(
    tmp_path: Path, client: RemotingClient
) -> None:
    from orbitmq.store.store import DefaultMessageStore

    usage = {"ratio": 0.5}
    config = make_config(tmp_path, cleanResourceInterval="50")
    broker = Broker(config, store_factory=lambda c: DefaultMessageStore(c, disk_usage=lambda path: usage["ratio"]))
    async with broker as b:
        assert (await send_v2(client, b.broker_addr, "T", b"ok")).code == ResponseCode.SUCCESS
        usage["ratio"] = 0.97
        for _ in range(100):
            refused = await send_v2(client, b.broker_addr, "T", b"x")
            if refused.code != ResponseCode.SUCCESS:
                break
            await asyncio.sleep(0.05)
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "disk" in (refused.remark or "")
        usage["ratio"] = 0.5
        for _ in range(100):
            again = await send_v2(client, b.broker_addr, "T", b"y")
            if again.code == ResponseCode.SUCCESS:
                break
            await asyncio.sleep(0.05)
        assert again.code == ResponseCode.SUCCESS


async def test_a_clean_shutdown_answers_waiting_long_polls_instead_of_dropping_them(
    tmp_path: Path, client: RemotingClient
) -> None:
    b = Broker(make_config(tmp_path))
    await b.start()
    try:
        await create_topic(client, b.broker_addr, "T")
        waiting = asyncio.ensure_future(
            pull(client, b.broker_addr, "T", "CG", 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
                 suspend_ms=30_000, timeout=40)
        )
        await until(lambda: parked(b, 1))  # waiting at the broker when the shutdown begins
    finally:
        await asyncio.wait_for(b.close(), 10)
    response = await asyncio.wait_for(waiting, 5)
    assert response.code == ResponseCode.PULL_NOT_FOUND


async def test_check_client_config_accepts_tags_and_valid_sql92_and_refuses_broken_sql92(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr

    async def check(kind: str, expression: str) -> RemotingCommand:
        body = {"clientId": "c1", "group": "CG",
                "subscriptionData": {"topic": "T", "subString": expression, "expressionType": kind}}
        return await request(client, addr, RequestCode.CHECK_CLIENT_CONFIG, body=body)

    assert (await check("TAG", "TagA || TagB")).code == ResponseCode.SUCCESS
    assert (await check("SQL92", "a > 1 AND b = 'x'")).code == ResponseCode.SUCCESS
    broken = await check("SQL92", "a >")
    assert broken.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and broken.remark


async def test_silent_consumers_expire_and_queue_locks_lapse_on_the_brokers_clock(
    tmp_path: Path, client: RemotingClient
) -> None:
    now = {"ms": 1_700_000_000_000}
    config = make_config(tmp_path, channelScanIntervalMills="50")
    async with Broker(config, clock_ms=lambda: now["ms"]) as b:
        addr = b.broker_addr
        mq = {"topic": "T", "brokerName": "broker-a", "queueId": 0}
        async with RemotingClient() as other:
            await request(other, addr, RequestCode.HEART_BEAT, body=heartbeat_body("silent", "CG", "T"))
            held = await request(other, addr, RequestCode.LOCK_BATCH_MQ,
                                 body={"consumerGroup": "CG", "clientId": "silent", "mqSet": [mq]})
            assert jsonbody.loads(held.body_bytes())["lockOKMQSet"] == [mq]
            now["ms"] += 30_000
            await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("alive", "CG", "T"))
            refused = await request(client, addr, RequestCode.LOCK_BATCH_MQ,
                                    body={"consumerGroup": "CG", "clientId": "alive", "mqSet": [mq]})
            assert jsonbody.loads(refused.body_bytes())["lockOKMQSet"] == []
            # 121 s after its last heartbeat the silent client is dropped by the periodic scan ...
            now["ms"] += 91_000
            await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("alive", "CG", "T"))
            for _ in range(100):
                info = b.consumers.get("CG")
                if info is not None and info.client_ids() == ["alive"]:
                    break
                await asyncio.sleep(0.05)
            assert b.consumers.get("CG").client_ids() == ["alive"]  # type: ignore[union-attr]
            # ... and its lock, unrenewed for more than 60 s, goes to the live client.
            granted = await request(client, addr, RequestCode.LOCK_BATCH_MQ,
                                    body={"consumerGroup": "CG", "clientId": "alive", "mqSet": [mq]})
            assert jsonbody.loads(granted.body_bytes())["lockOKMQSet"] == [mq]


async def test_running_info_requests_are_forwarded_to_the_consumer_and_answered_back(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr

    async def running_info(cmd: RemotingCommand, peer: object) -> RemotingCommand:
        return cmd.response(body=b'{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"}}')

    client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
    await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", "CG", "T"))
    async with RemotingClient() as admin:
        fields = {"consumerGroup": "CG", "clientId": "c1", "jstackEnable": "false"}
        answer = await request(admin, addr, RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
        assert answer.code == ResponseCode.SUCCESS
        assert jsonbody.loads(answer.body_bytes())["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        offline = await request(admin, addr, RequestCode.GET_CONSUMER_RUNNING_INFO, {**fields, "clientId": "gone"})
        assert offline.code == ResponseCode.SYSTEM_ERROR and "not online" in (offline.remark or "")


async def test_subscription_groups_are_created_listed_and_deleted_by_admin_requests(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    config = {"groupName": "AdminGroup", "retryMaxTimes": 5, "consumeBroadcastEnable": False}
    created = await request(client, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config)
    assert created.code == ResponseCode.SUCCESS
    listed = jsonbody.loads((await request(client, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body_bytes())
    group = listed["subscriptionGroupTable"]["AdminGroup"]
    assert (group["retryMaxTimes"], group["consumeBroadcastEnable"], group["retryQueueNums"]) == (5, False, 1)
    bad = await request(client, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body={"groupName": "a/b"})
    assert bad.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (bad.remark or "")
    deleted = await request(client, addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                            {"groupName": "AdminGroup", "removeOffset": "true"})
    assert deleted.code == ResponseCode.SUCCESS and broker.groups.get("AdminGroup") is None
    who = await request(client, addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "T"})
    assert jsonbody.loads(who.body_bytes()) == {"groupList": []}


async def test_requests_in_the_binary_rocketmq_header_format_are_answered_in_kind(
    broker: Broker, client: RemotingClient
) -> None:
    from orbitmq.remoting.command import SerializeType

    addr = broker.broker_addr
    fields = {"a": "PG", "b": "Bin", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000",
              "h": "0", "i": props(TAGS="TagA"), "j": "0", "k": "false", "m": "false"}
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, b"binary header body")
    cmd.serialize_type = SerializeType.ROCKETMQ
    sent = await client.invoke(addr, cmd)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert sent.serialize_type == SerializeType.ROCKETMQ
    assert sent.field("queueOffset") == "0" and sent.field("msgId")
    got = await pull(client, addr, "Bin", "CG", 0)
    assert [m.body for m in records(got)] == [b"binary header body"]


async def test_producers_are_listed_by_group_until_they_unregister(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    body = {"clientID": "p1", "producerDataSet": [{"groupName": "PG"}], "consumerDataSet": []}
    await request(client, addr, RequestCode.HEART_BEAT, body=body)
    listed = await request(client, addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"})
    connection = jsonbody.loads(listed.body_bytes())["connectionSet"][0]
    assert (connection["clientId"], connection["language"], connection["version"]) == ("p1", "PYTHON", 407)
    bye = await request(client, addr, RequestCode.UNREGISTER_CLIENT, {"clientID": "p1", "producerGroup": "PG"})
    assert bye.code == ResponseCode.SUCCESS
    gone = await request(client, addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"})
    assert gone.code == ResponseCode.SYSTEM_ERROR


# --- hostile numbers in send headers and hostile batch bodies -----------------------------------


def _store(broker: Broker) -> MessageStore:
    assert broker.store is not None
    return broker.store


def _commitlog_tail(tmp_path: Path, start: int, length: int = 512) -> bytes:
    first = min((tmp_path / "store" / "commitlog").iterdir())  # offset 0 on: the tests stay in it
    with first.open("rb") as f:
        f.seek(start)
        return f.read(length)


@pytest.mark.parametrize(
    ("field", "value", "remark"),
    [
        ("f", str(2**31), "the custom field <sysFlag> must be a 32-bit integer, got '2147483648'"),
        ("h", str(2**31), "the custom field <flag> must be a 32-bit integer, got '2147483648'"),
        ("j", str(2**31), "the custom field <reconsumeTimes> must be a 32-bit integer, got '2147483648'"),
        ("g", str(2**63), "the custom field <bornTimestamp> must be a 64-bit integer, got '9223372036854775808'"),
        ("e", "\u0663", "the custom field <queueId> must be a 32-bit integer, got '\u0663'"),
        ("f", "1_0", "the custom field <sysFlag> must be a 32-bit integer, got '1_0'"),
        ("h", " 2 ", "the custom field <flag> must be a 32-bit integer, got ' 2 '"),
    ],
)
async def test_out_of_range_send_numbers_get_a_clean_error_and_leave_the_commitlog_untouched(
    broker: Broker, client: RemotingClient, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    field: str, value: str, remark: str,
) -> None:
    addr = broker.broker_addr
    first = await send_v2(client, addr, "T", b"before")
    assert first.code == ResponseCode.SUCCESS, first.remark
    store = _store(broker)
    end = store.get_max_phy_offset()
    with caplog.at_level(logging.DEBUG):
        bad = await send_v2(client, addr, "T", b"hostile", **{field: value})
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text
    assert store.get_max_phy_offset() == end
    assert _commitlog_tail(tmp_path, end) == bytes(512)  # nothing written past the end either
    good = await send_v2(client, addr, "T", b"after")
    assert good.code == ResponseCode.SUCCESS, good.remark
    assert parse_offset_msg_id(good.field("msgId") or "")[1] == end  # stored right where the log ended


async def test_the_long_header_form_is_checked_by_the_same_rules(broker: Broker, client: RemotingClient) -> None:
    bad = await send_v1(client, broker.broker_addr, "T", b"x", bornTimestamp=str(2**63))
    assert bad.code == ResponseCode.SYSTEM_ERROR
    assert bad.remark == "the custom field <bornTimestamp> must be a 64-bit integer, got '9223372036854775808'"
    ok = await send_v1(client, broker.broker_addr, "T", b"x", bornTimestamp=str(2**63 - 1), sysFlag="-0")
    assert ok.code == ResponseCode.SUCCESS, ok.remark


async def test_a_batch_of_190000_empty_items_is_refused_before_any_item_is_parsed(
    broker: Broker, client: RemotingClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(broker)
    reached: list[MessageExtBatch] = []
    real_put = store.put_messages

    async def spy(batch: MessageExtBatch) -> PutMessageResult:
        reached.append(batch)
        return await real_put(batch)

    monkeypatch.setattr(store, "put_messages", spy)
    empty_item = struct.pack(">iiiiih", 22, 0, 0, 0, 0, 0)  # TOTALSIZE 22, no body, no properties
    body = empty_item * 190_000
    assert len(body) <= broker.config.store.max_message_size
    response = await send_v2(client, broker.broker_addr, "T", body, code=RequestCode.SEND_BATCH_MESSAGE)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert "the batch holds more than" in (response.remark or "") and "messages" in (response.remark or "")
    assert reached == []
    few = await send_v2(client, broker.broker_addr, "T", empty_item * 3, code=RequestCode.SEND_BATCH_MESSAGE)
    assert few.code == ResponseCode.SUCCESS, few.remark
    assert len(reached) == 1


async def test_a_batch_that_asks_for_a_malformed_delay_is_refused_with_a_remark(
    broker: Broker, client: RemotingClient
) -> None:
    item = struct.pack(">iiiiih", 22, 0, 0, 0, 0, 0)
    response = await send_v2(client, broker.broker_addr, "T", item, properties="DELAY\x01x1",
                             code=RequestCode.SEND_BATCH_MESSAGE)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert response.remark == "the property DELAY must be a 32-bit integer, got 'x1'"


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_MESSAGE])
def test_acl_checks_the_topic_the_send_handler_reads_whatever_the_code(code: int) -> None:
    # The broker takes the long form whenever `topic` is present, so that is the topic to check.
    long_form = RemotingCommand.request(code, {"topic": "Guarded", "b": "Open", "queueId": "0"})
    assert needed_resources(long_form) == [("Guarded", PUB)]
    letters = RemotingCommand.request(code, {"b": "Guarded", "e": "0"})
    assert needed_resources(letters) == [("Guarded", PUB)]


async def test_properties_too_long_to_store_are_refused_once_by_the_store(broker: Broker, client: RemotingClient) -> None:
    store = _store(broker)
    end = store.get_max_phy_offset()
    long_props = props(KEYS="k" * 40_000)
    response = await send_v2(client, broker.broker_addr, "T", b"x", properties=long_props)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    assert "at most 32767" in (response.remark or "") and store.get_max_phy_offset() == end
