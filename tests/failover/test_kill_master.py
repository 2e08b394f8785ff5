"""A broker group of three replicas coordinated through etcd: SIGKILL the master while a
producer sends with SYNC_MASTER; a replica of the in-sync set takes over, the producer goes
on through the new route, and every acknowledged message is on the new master."""

from __future__ import annotations

import asyncio
import time

import pytest

from orbitmq.client import (
    ConsumeResult,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PullStatus,
    PushConsumer,
    SendStatus,
)
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic
from tests.support.failover import FailoverGroup
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(150)

TOPIC = "FailoverKillTopic"


async def _in_sync(group: FailoverGroup, size: int) -> bool:
    state = (await asyncio.to_thread(group.state)).state
    return state is not None and len(state.sss) == size


async def test_killed_master_is_replaced_and_nothing_acknowledged_is_lost(
    group: FailoverGroup, client: RemotingClient
) -> None:
    first = await asyncio.to_thread(group.wait_master)
    for replica in group.replicas:  # the topic exists on every replica before the first send
        await create_topic(client, replica.addr, TOPIC, queues=4)
    await until(lambda: _in_sync(group, 3), timeout=30)

    acked: dict[bytes, str] = {}
    failures: list[str] = []
    stop = asyncio.Event()
    counter = iter(range(1_000_000))

    async def send_loop(producer: Producer) -> None:
        while not stop.is_set():
            body = b"m-%d" % next(counter)
            try:
                result = await producer.send(Message(TOPIC, body))
            except Exception as exc:  # noqa: BLE001 - a failed send is allowed; only acks count
                failures.append(type(exc).__name__)
                await asyncio.sleep(0.05)
                continue
            if result.status is SendStatus.SEND_OK:
                acked[body] = result.message_queue.broker_name + "@" + str(result.queue_offset)

    consumed: set[bytes] = set()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        consumed.update(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    async def all_consumed() -> bool:
        return set(acked) <= consumed

    # Route polls stay at their 30 s default: the producer and the push consumer look a route up
    # again as soon as a broker fails them, so they reach the new master well before the next poll.
    push = PushConsumer("FailoverPush", namesrv_addr=group.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    push.subscribe(TOPIC, "*")
    push.register_listener(listener)
    await push.start()
    try:
        async with Producer("FailoverProducer", namesrv_addr=group.namesrv) as producer:
            senders = [asyncio.ensure_future(send_loop(producer)) for _ in range(4)]
            try:
                await until(lambda: _count(acked, 100), timeout=30)
                before = len(acked)
                killed_at = time.monotonic()
                first.kill()
                new = await asyncio.to_thread(group.wait_master, first, 30.0)
                took = time.monotonic() - killed_at
                # Four senders have at most four sends in flight at the kill: ten more acks come from the
                # new master, found well before the 30 s route poll; then traffic goes on there.
                await until(lambda: _count(acked, before + 10), timeout=25)
                await until(lambda: _count(acked, before + 100), timeout=60)
            finally:
                stop.set()
                await asyncio.gather(*senders)
        await until(all_consumed, timeout=60)  # the push consumer went on from the new master
    finally:
        await push.shutdown()
    assert new is not first
    snap = await asyncio.to_thread(group.state)
    assert snap.state is not None and snap.state.master_epoch >= 2 and snap.master is not None
    print(f"failover: new master {new.name} after {took:.2f}s; {len(acked)} acked, {len(failures)} failed sends")
    assert took < 30

    stored: list[bytes] = []
    async with PullConsumer("FailoverCheck", namesrv_addr=group.namesrv, poll_name_server_interval_ms=500) as consumer:
        queues = await consumer.fetch_subscribe_message_queues(TOPIC)
        for mq in queues:
            offset = 0
            while True:
                result = await consumer.pull(mq, "*", offset, 32, timeout=5.0)
                if result.status is not PullStatus.FOUND:
                    break
                stored.extend(m.body for m in result.messages)
                offset = result.next_begin_offset
    missing = set(acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    sent = {b"m-%d" % i for i in range(next(counter))}
    assert set(stored) <= sent


async def _count(acked: dict[bytes, str], at_least: int) -> bool:
    return len(acked) >= at_least
