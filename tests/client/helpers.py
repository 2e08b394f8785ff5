"""Small async helpers for end-to-end client tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from orbitmq.client import ConsumeResult, MessageExt, Producer
from orbitmq.errors import OrbitMQError


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
    """Create `topic` and wait until the NameServer serves its route."""
    # The broker registers with the NameServer just after it starts listening; retry until it has.
    await retry_until_ok(lambda: producer.create_topic("TBW102", topic, queues))

    async def routed() -> None:
        route = await producer.instance.update_route(topic)
        if route is None or not route.queue_datas:
            raise OrbitMQError(f"no route yet for {topic}")

    await retry_until_ok(routed)


class Collector:
    """A listener that records what it receives and answers CONSUME_SUCCESS."""

    def __init__(self) -> None:
        self.msgs: list[MessageExt] = []

    def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        self.msgs.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    def bodies(self) -> set[bytes]:
        return {m.body for m in self.msgs}
