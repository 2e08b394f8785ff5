"""The group commands against a group with a live consumer (OrbitMQ's PushConsumer in a thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from orbitmq.client.push_consumer import PushConsumer
from orbitmq.client.results import ConsumeResult
from orbitmq.common.message import MessageExt
from tests.admin.test_commands_on_dev import admin, create_topic, ok, table
from tests.support.dev import DevServer
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)

TOPIC = "AdminLive"
GROUP = "AdminLiveGroup"


class ConsumerThread:
    """A PushConsumer on its own event loop, so the CLI can run asyncio.run() in the test's thread."""

    def __init__(self, namesrv: str) -> None:
        self.bodies: list[str] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(namesrv,), daemon=True)

    def _run(self, namesrv: str) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main(namesrv))
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread by start()/stop()
            self._error = exc
            self._started.set()

    async def _main(self, namesrv: str) -> None:
        self._stop = asyncio.Event()
        consumer = PushConsumer(GROUP, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                persist_consumer_offset_interval_ms=200)
        consumer.subscribe(TOPIC, "*")

        def listen(msgs: list[MessageExt]) -> ConsumeResult:
            with self._lock:
                self.bodies.extend(m.body.decode() for m in msgs)
            return ConsumeResult.CONSUME_SUCCESS

        consumer.register_listener(listen)
        await consumer.start()
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            await consumer.shutdown()

    def start(self) -> None:
        self._thread.start()
        assert self._started.wait(20), "consumer did not start"
        if self._error is not None:
            raise self._error

    def count(self) -> int:
        with self._lock:
            return len(self.bodies)

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


@pytest.fixture
def live(dev: DevServer) -> Iterator[ConsumerThread]:
    create_topic(dev, TOPIC, 2)
    consumer = ConsumerThread(dev.namesrv)
    consumer.start()
    try:
        yield consumer
    finally:
        consumer.stop()


def progress(dev: DevServer) -> list[dict[str, str]]:
    return [r for r in table(ok(dev, "consumerProgress", "-g", GROUP)) if r["Topic"] == TOPIC]


def test_a_live_consumer_shows_in_consumer_connection_and_progress_and_replays_after_a_reset(
    dev: DevServer, live: ConsumerThread
) -> None:
    before = int(time.time() * 1000) - 1000
    for i in range(6):
        ok(dev, "sendMessage", "-t", TOPIC, "-p", f"live-{i}", "-b", dev.broker_name, "-i", str(i % 2))
    eventually(lambda: live.count() >= 6, timeout=20, message="the consumer did not get the 6 messages")

    connection = ok(dev, "consumerConnection", "-g", GROUP)
    clients = table(connection)
    assert len(clients) == 1 and clients[0]["Language"] == "PYTHON"
    assert "CONSUME_PASSIVELY" in connection and "CLUSTERING" in connection
    assert {"Topic": TOPIC, "SubExpression": "*"} in table(connection.split("\n\n")[1])

    # Offsets reach the broker with the consumer's periodic persist.
    eventually(lambda: [r["Diff"] for r in progress(dev)] == ["0", "0"], timeout=15)
    assert sorted(r["Consumer Offset"] for r in progress(dev)) == ["3", "3"]

    # With the consumer online the broker resets through it: it rewinds and consumes again.
    out = ok(dev, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", str(before))
    assert [r["offset"] for r in table(out)] == ["0", "0"]
    eventually(lambda: live.count() >= 12, timeout=20, message="the consumer did not replay after the reset")
    assert sorted(live.bodies) == sorted([f"live-{i}" for i in range(6)] * 2)
    assert admin(dev, "consumerProgress", "-g", GROUP)[0] == 0
