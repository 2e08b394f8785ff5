"""Push consumers: clustering, broadcasting, restarts, start positions, retries (against `orbitmq dev`)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer
from orbitmq.errors import BrokerError, QueryNotFound
from tests.client.helpers import Collector, consumed_everything, create_topic, wait_until

pytestmark = pytest.mark.timeout(90)


def consumer(namesrv: str, group: str, topic: str, listener: object, name: str, **options: object) -> PushConsumer:
    c = PushConsumer(group, namesrv_addr=namesrv, instance_name=name, **options)  # type: ignore[arg-type]
    c.subscribe(topic, "*")
    c.register_listener(listener)  # type: ignore[arg-type]
    return c


async def send_many(producer: Producer, topic: str, start: int, count: int) -> None:
    for i in range(start, start + count):
        await producer.send(Message(topic, f"msg-{i}".encode()))


async def test_clustering_delivers_each_message_to_exactly_one_member(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=4)
        a, b = Collector(), Collector()
        first = consumer(namesrv, cg, topic, a, "member-a", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        second = consumer(namesrv, cg, topic, b, "member-b", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        await first.start()
        await second.start()
        try:
            # Both members hold their final share (two queues each) before anything is sent; while the
            # first one has not yet given up the queues the second took, both would read them.
            def owned(c: PushConsumer) -> int:
                return sum(1 for mq in c.rebalancer.process_queues if mq.topic == topic)

            await wait_until(lambda: owned(first) == 2 and owned(second) == 2)
            await send_many(producer, topic, 0, 40)
            await wait_until(lambda: len(a.msgs) + len(b.msgs) >= 40)
            await consumed_everything(first)  # then a duplicate would have come already
            await consumed_everything(second)
        finally:
            await first.shutdown()
            await second.shutdown()
    counts = Counter(m.body for m in a.msgs + b.msgs)
    assert set(counts) == {f"msg-{i}".encode() for i in range(40)}
    assert max(counts.values()) == 1
    assert a.msgs and b.msgs


async def test_broadcasting_delivers_each_message_to_every_member(
    namesrv: str, names: tuple[str, str, str], tmp_path: Path
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        collectors = [Collector(), Collector()]
        members = [
            consumer(namesrv, cg, topic, c, f"bc-{i}", message_model="BROADCASTING",
                     consume_from_where="CONSUME_FROM_FIRST_OFFSET", offsets_dir=str(tmp_path))
            for i, c in enumerate(collectors)
        ]
        for m in members:
            await m.start()
        try:
            await send_many(producer, topic, 0, 20)
            for c in collectors:
                await wait_until(lambda c=c: len(c.bodies()) == 20)  # type: ignore[misc]
        finally:
            for m in members:
                await m.shutdown()
    for c in collectors:
        assert c.bodies() == {f"msg-{i}".encode() for i in range(20)}
    assert list(tmp_path.rglob("offsets.json"))


async def test_a_restarted_consumer_resumes_from_its_committed_offset(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        await send_many(producer, topic, 0, 10)
        before = Collector()
        c1 = consumer(namesrv, cg, topic, before, "restart-1", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        await c1.start()
        await wait_until(lambda: len(before.bodies()) == 10)
        await c1.shutdown()

        await send_many(producer, topic, 10, 10)
        after = Collector()
        c2 = consumer(namesrv, cg, topic, after, "restart-2", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        await c2.start()
        try:
            await wait_until(lambda: len(after.bodies()) >= 10)
            await consumed_everything(c2)
        finally:
            await c2.shutdown()
    assert after.bodies() == {f"msg-{i}".encode() for i in range(10, 20)}


@pytest.mark.parametrize("model", ["CLUSTERING", "BROADCASTING"])
@pytest.mark.parametrize("where", ["CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"])
async def test_consume_from_where_decides_where_a_new_group_starts(
    namesrv: str, names: tuple[str, str, str], where: str, model: str, tmp_path: Path
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        await send_many(producer, topic, 0, 6)
        # consumeTimestamp has one-second resolution and the broker picks the entry stored closest to
        # it, so put the timestamp on a whole second just before the second set, well after the first.
        await asyncio.sleep(1.1)
        boundary = int(time.time()) + 1
        await asyncio.sleep(boundary - time.time() + 0.01)
        middle = time.strftime("%Y%m%d%H%M%S", time.localtime(boundary))
        await send_many(producer, topic, 6, 6)
        # RocketMQ's broker answers "offset 0" instead of "none stored" for a new group while the
        # queue's first message is still in memory; a LAST_OFFSET consumer then starts at 0 (as Java's
        # does). Ask the broker what it will say, to know which start is right.
        mqs = sorted(await producer.instance.subscribe_queues(topic))
        addr = producer.instance.master_addr(mqs[0].broker_name)
        assert addr is not None
        try:
            await producer.instance.api.query_consumer_offset(addr, cg, mqs[0])
            broker_says_zero = model == "CLUSTERING"  # broadcasting never asks the broker
        except QueryNotFound:
            broker_says_zero = False
        got = Collector()
        c = consumer(namesrv, cg, topic, got, "where", consume_from_where=where, consume_timestamp=middle,
                     message_model=model, offsets_dir=str(tmp_path))
        await c.start()
        try:
            await wait_until(lambda: bool(c.rebalancer.process_queues))
            await send_many(producer, topic, 12, 4)
            await wait_until(lambda: {f"msg-{i}".encode() for i in range(12, 16)} <= got.bodies())
            await consumed_everything(c)
        finally:
            await c.shutdown()
    last_start = 0 if broker_says_zero else 12
    expected_start = {"CONSUME_FROM_FIRST_OFFSET": 0, "CONSUME_FROM_LAST_OFFSET": last_start,
                      "CONSUME_FROM_TIMESTAMP": 0 if broker_says_zero else 6}
    assert got.bodies() == {f"msg-{i}".encode() for i in range(expected_start[where], 16)}


async def test_a_message_the_listener_rejects_is_delivered_again(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    attempts: Counter[bytes] = Counter()
    redelivered: list[MessageExt] = []

    def flaky(msgs: list[MessageExt]) -> ConsumeResult:
        for m in msgs:
            attempts[m.body] += 1
            if attempts[m.body] > 1:
                redelivered.append(m)
        if any(attempts[m.body] == 1 for m in msgs):
            return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        c = consumer(namesrv, cg, topic, flaky, "flaky", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        await c.start()
        try:
            await send_many(producer, topic, 0, 3)
            await wait_until(lambda: len(attempts) == 3 and min(attempts.values()) >= 2, timeout=40)
        finally:
            await c.shutdown()
    assert set(attempts) == {b"msg-0", b"msg-1", b"msg-2"}
    # Whether the broker took the message back (retry topic) or the client kept it, the application
    # sees the original topic and a reconsume count.
    assert all(m.topic == topic and m.reconsume_times >= 1 for m in redelivered)


async def test_an_async_listener_and_a_tag_filter_work_together(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        c = PushConsumer(cg, namesrv_addr=namesrv, instance_name="tags",
                         consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        c.subscribe(topic, "TagA || TagC")
        c.register_listener(listener)
        await c.start()
        try:
            for i, tag in enumerate(["TagA", "TagB", "TagC", "TagA", "TagD"]):
                await producer.send(Message(topic, f"t{i}".encode(), tags=tag))
            await wait_until(lambda: len(got) >= 3)
            await consumed_everything(c)
        finally:
            await c.shutdown()
    assert sorted(m.body for m in got) == [b"t0", b"t2", b"t3"]


async def test_shutdown_takes_the_consumer_out_of_its_group(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        c = consumer(namesrv, cg, topic, Collector(), "leaver")
        await c.start()
        client_id = c.instance.client_id
        addr = producer.instance.master_addr(min(await producer.instance.subscribe_queues(topic)).broker_name)
        assert addr is not None
        assert client_id in await producer.instance.api.get_consumer_id_list(addr, cg)
        await c.shutdown()
        try:
            remaining = await producer.instance.api.get_consumer_id_list(addr, cg)
        except BrokerError:
            remaining = []  # the broker answers an error when the group has no member left
        assert client_id not in remaining


async def test_a_consumer_started_before_its_topic_exists_consumes_once_it_appears(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    collector = Collector()
    c = consumer(namesrv, cg, topic, collector, "early", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                 rebalance_interval_ms=500)
    await c.start()
    try:
        async with Producer(pg, namesrv_addr=namesrv) as producer:
            await create_topic(producer, topic, queues=2)
            await send_many(producer, topic, 0, 5)
            await wait_until(lambda: len(collector.bodies()) == 5, timeout=20)
    finally:
        await c.shutdown()
