"""A broker group of three replicas coordinated through etcd: SIGKILL the master while a
producer sends with SYNC_MASTER; a replica of the in-sync set takes over, the producer goes
on through the new route, and every acknowledged message is on the new master."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

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
                # The master of now: on a loaded machine a missed renewal may have moved the role
                # since the start, and killing a slave would test nothing.
                first = await asyncio.to_thread(group.wait_master)
                before = len(acked)
                killed_at = time.monotonic()
                first.kill()
                new = await asyncio.to_thread(group.wait_master, first, 30.0)
                took = time.monotonic() - killed_at
                # Four senders have at most four sends in flight at the kill: ten more acks come from the
                # new master, found well before the 30 s route poll; then traffic goes on there.
                await _until_or_report(group, lambda: _count(acked, before + 10), 45, "acks from the new master")
                await _until_or_report(group, lambda: _count(acked, before + 100), 60, "traffic on the new master")
            finally:
                stop.set()
                await asyncio.gather(*senders)
        # The push consumer went on from the new master.
        await _until_or_report(group, all_consumed, 60,
                               lambda: f"every acked message consumed ({len(set(acked) - consumed)} missing)")
    finally:
        await push.shutdown()
    assert new is not first
    snap = await asyncio.to_thread(group.state)
    assert snap.state is not None and snap.state.master_epoch >= 2 and snap.master is not None
    print(f"failover: new master {new.name} after {took:.2f}s; {len(acked)} acked, {len(failures)} failed sends")

    stored: set[bytes] = set()
    async with PullConsumer("FailoverCheck", namesrv_addr=group.namesrv, poll_name_server_interval_ms=500) as consumer:

        async def read_all() -> bool:
            """One pass over every queue of the route; True once every acknowledged message was
            read. A pass cut short (the route still naming the dead master, a slave behind) is
            tried again: the wait is for the state, not for a moment."""
            try:
                for mq in await consumer.fetch_subscribe_message_queues(TOPIC):
                    offset = 0
                    while True:
                        result = await consumer.pull(mq, "*", offset, 32, timeout=5.0)
                        if result.status is not PullStatus.FOUND:
                            break
                        stored.update(m.body for m in result.messages)
                        offset = result.next_begin_offset
            except Exception:  # noqa: BLE001 - a gone broker in a stale route: the next pass
                return False
            return set(acked) <= stored

        try:
            await until(read_all, timeout=40)
        except AssertionError:
            pass  # reported below with what is missing
    missing = set(acked) - stored
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    sent = {b"m-%d" % i for i in range(next(counter))}
    assert stored <= sent


async def _count(acked: dict[bytes, str], at_least: int) -> bool:
    return len(acked) >= at_least


async def _until_or_report(group: FailoverGroup, check: Callable[[], Awaitable[bool]], timeout: float,
                           what: str | Callable[[], str]) -> None:
    """`until`, failing with what the group looked like (etcd state, each replica's last output)."""
    try:
        await until(check, timeout=timeout)
    except AssertionError:
        snap = await asyncio.to_thread(group.state)
        tails = "\n".join(f"===== {r.name}\n{r.output[-3000:]}" for r in group.replicas)
        described = what() if callable(what) else what
        raise AssertionError(f"{described}: not within {timeout}s; etcd state {snap.state}, master {snap.master}"
                             f"\n{tails}") from None
