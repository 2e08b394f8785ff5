"""Small async helpers for end-to-end client tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from orbitmq.client import ConsumeResult, LitePullConsumer, MessageExt, Producer, PushConsumer
from orbitmq.client.offset_store import ReadOffsetType
from orbitmq.errors import OrbitMQError
from tests.support.waiting import until


async def wait_until(predicate: Callable[[], bool], timeout: float = 20.0, message: str = "") -> None:
    """Poll `predicate` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(message or f"condition not met within {timeout}s")
        await asyncio.sleep(0.05)


async def retry_until_ok(action: Callable[[], Awaitable[object]], timeout: float = 20.0) -> None:
    """Repeat `action` until it stops raising OrbitMQError (routes appear shortly after creation)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await action()
            return
        except OrbitMQError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def create_topic(producer: Producer, topic: str, queues: int = 4) -> None:
    """Create `topic` and give the producer its route (and so its brokers, which its heartbeats reach).

    The broker registers a new topic with the NameServer before answering,
    so the route is there at once: nothing to wait for.
    """
    await producer.create_topic("TBW102", topic, queues)
    assert await producer.instance.update_route(topic) is not None, f"no route for {topic} after creating it"


async def consumed_everything(consumer: PushConsumer | LitePullConsumer, timeout: float = 20.0) -> None:
    """Wait until `consumer` finished every message stored in the queues it holds.

    Each queue's consumed offset (as the consumer keeps it in memory) must
    reach the queue's max offset (a lite-pull consumer's moves as batches
    are polled). After that nothing stored so far can still
    arrive, so a test may assert what did not come (a duplicate, a filtered
    message) without waiting for a guessed time.
    """
    async def done() -> bool:
        queues = list(consumer.rebalancer.process_queues)
        if not queues:
            return False
        for mq in queues:
            consumed = await consumer.offset_store.read_offset(mq, ReadOffsetType.MEMORY)
            if consumed < await consumer.lookups.max_offset(mq):
                return False
        return True

    await until(done, timeout=timeout)


class Collector:
    """A listener that records what it receives and answers CONSUME_SUCCESS."""

    def __init__(self) -> None:
        self.msgs: list[MessageExt] = []

    def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        self.msgs.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    def bodies(self) -> set[bytes]:
        return {m.body for m in self.msgs}
