"""Pull and lite-pull consumers, long polling and the blocking facade (against `orbitmq dev`)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from orbitmq.client import LitePullConsumer, Message, Producer, PullConsumer, PullStatus
from orbitmq.client import sync as blocking
from orbitmq.client.results import ConsumeResult
from orbitmq.errors import OrbitMQError, QueryNotFound
from tests.client.helpers import create_topic
from tests.support.dev import InProcessDev, inprocess_dev
from tests.support.procs import eventually
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)


async def test_pull_consumer_reads_from_offsets_it_stores(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        for i in range(5):
            await producer.send(Message(topic, f"p{i}".encode(), tags="A" if i % 2 else "B"))
    async with PullConsumer(cg, namesrv_addr=namesrv) as consumer:
        [mq] = await consumer.fetch_subscribe_message_queues(topic)
        result = await consumer.pull(mq, "*", 0, 3)
        assert result.status is PullStatus.FOUND
        assert [m.body for m in result.messages] == [b"p0", b"p1", b"p2"]
        await consumer.update_consume_offset(mq, result.next_begin_offset)
        tagged = await consumer.pull(mq, "A", result.next_begin_offset, 32)
        assert [m.body for m in tagged.messages] == [b"p3"]
        empty = await consumer.pull(mq, "*", 5, 32)
        assert empty.status is PullStatus.NO_NEW_MSG
        moved = await consumer.pull(mq, "*", 100, 32)
        # Past the end: the broker names a legal offset (the queue's min when it starts at 0, as Java's does).
        assert moved.status is PullStatus.OFFSET_ILLEGAL
        assert moved.next_begin_offset in (moved.min_offset, moved.max_offset)
    async with PullConsumer(cg, namesrv_addr=namesrv) as again:
        assert await again.fetch_consume_offset(mq) == 3


async def test_a_waiting_long_poll_returns_the_new_message(tmp_path: Path, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    # The servers run in this loop, so the test can see the pull wait at the broker before it sends.
    async with inprocess_dev(tmp_path) as dev, Producer(pg, namesrv_addr=dev.namesrv) as producer, \
            PullConsumer(cg, namesrv_addr=dev.namesrv) as consumer:
        await create_topic(producer, topic, queues=1)
        [mq] = await consumer.fetch_subscribe_message_queues(topic)
        waiting = asyncio.ensure_future(consumer.pull_block_if_not_found(mq, "*", 0, 32, suspend_ms=30_000))
        await until(lambda: _parked(dev))
        assert not waiting.done()
        await producer.send(Message(topic, b"wake"))
        # The test's own timeout (60 s) is far below the hold time (30 s) plus slack; FOUND proves the wake-up.
        result = await asyncio.wait_for(waiting, 20)
        assert result.status is PullStatus.FOUND and result.messages[0].body == b"wake"


async def _parked(dev: InProcessDev) -> bool:
    return len(dev.broker_server.waiters) == 1


async def test_lite_pull_consumer_polls_commits_and_seeks(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        for i in range(10):
            await producer.send(Message(topic, f"l{i}".encode()))
    consumer = LitePullConsumer(cg, namesrv_addr=namesrv, auto_commit=False,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    await consumer.start()
    try:
        got: list[bytes] = []
        while len(got) < 10:
            batch = await consumer.poll(timeout=10)
            assert batch, "poll timed out"
            got.extend(m.body for m in batch)
        assert got == [f"l{i}".encode() for i in range(10)]
        [mq] = list(consumer.assignment())
        await consumer.commit_sync()
        assert await consumer.committed(mq) == 10
        await consumer.seek(mq, 7)
        again = await consumer.poll(timeout=10)
        assert [m.body for m in again][:1] == [b"l7"]
    finally:
        await consumer.shutdown()


async def test_lite_pull_consumer_with_assigned_queues(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        results = [await producer.send(Message(topic, f"a{i}".encode())) for i in range(6)]
    target = results[0].message_queue
    expected = [f"a{i}".encode() for i, r in enumerate(results) if r.message_queue == target]
    consumer = LitePullConsumer(cg, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.assign([target])
    await consumer.start()
    try:
        got: list[bytes] = []
        while len(got) < len(expected):
            batch = await consumer.poll(timeout=10)
            assert batch
            got.extend(m.body for m in batch)
        assert got == expected
    finally:
        await consumer.shutdown()


def test_blocking_facade_sends_and_consumes_from_plain_threads(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    received: list[bytes] = []
    lock = threading.Lock()

    def listener(msgs: list) -> ConsumeResult:  # type: ignore[type-arg]
        with lock:
            received.extend(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    producer = blocking.Producer(pg, namesrv_addr=namesrv)
    producer.start()
    try:
        producer.create_topic("TBW102", topic, 2)
        eventually(lambda: _routed(producer, topic), timeout=20)
        consumer = blocking.PushConsumer(cg, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        consumer.start()
        try:
            for i in range(5):
                producer.send(Message(topic, f"b{i}".encode()))
            producer.send_async(Message(topic, b"b5")).result(10)
            eventually(lambda: len(set(received)) == 6, timeout=20)
        finally:
            consumer.shutdown()
    finally:
        producer.shutdown()
    assert set(received) == {f"b{i}".encode() for i in range(6)}


def _routed(producer: blocking.Producer, topic: str) -> bool:
    try:
        return bool(producer.fetch_publish_message_queues(topic))
    except OrbitMQError:
        return False


async def test_lite_pull_auto_commit_stores_polled_offsets(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        for i in range(4):
            await producer.send(Message(topic, f"c{i}".encode()))
    consumer = LitePullConsumer(cg, namesrv_addr=namesrv, auto_commit_interval_ms=100,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    await consumer.start()
    try:
        got = 0
        while got < 4:
            batch = await consumer.poll(timeout=10)
            assert batch
            got += len(batch)
        [mq] = list(consumer.assignment())

        async def stored() -> bool:
            # The commit rides on a poll once the interval passed; it is oneway, so ask the broker until
            # it landed (straight, not through the consumer's offset store, which a read would overwrite).
            await consumer.poll(timeout=0.05)
            try:
                return await consumer.broker_offsets.query_consumer_offset(cg, mq) == 4
            except QueryNotFound:
                return False

        await until(stored)
        assert await consumer.committed(mq) == 4
    finally:
        await consumer.shutdown()
