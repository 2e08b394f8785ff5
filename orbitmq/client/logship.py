"""A `logging.Handler` that ships log records to an OrbitMQ or RocketMQ topic.

The Python counterpart of RocketMQ's log4j and logback appenders, built so that
logging never blocks or breaks the application:

* `emit()` formats the record and appends it to a bounded in-memory buffer;
  it never waits for the network. When the buffer is full the record is
  dropped and counted (`dropped`), and the count is reported once in a while
  through the handler's own fallback logger (never through itself).
* A background thread owns an asyncio loop and a producer. It drains the
  buffer in batches (one batch send per turn, as many records as are
  waiting, up to `batch_size`) and retries a failed batch a few times before
  counting it as dropped.
* `flush()` waits until everything buffered so far was sent (or dropped), up
  to a timeout; `close()` flushes, stops the thread and shuts the producer
  down. `logging.shutdown()` calls both at interpreter exit.

Each message carries the formatted record as its body, the handler's `tag`
as its tag (as RocketMQ's log4j/logback appenders take one; without a `tag`
option, the record's level name), the logger name as its key, and properties `logger`, `level`,
`process`, `thread` and `created` (ms since the epoch).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

_fallback = logging.getLogger(__name__)


class BatchSender(Protocol):
    """What the handler needs of a producer: start, send a list, shut down."""

    async def start(self) -> Any: ...

    async def send(self, messages: Any) -> Any: ...

    async def shutdown(self) -> Any: ...


def _default_producer(namesrv_addr: str, group: str) -> BatchSender:
    from orbitmq.client.producer import Producer

    producer: BatchSender = Producer(group, namesrv_addr=namesrv_addr)
    return producer


class TopicLogHandler(logging.Handler):
    """Ship log records to `topic` without blocking the caller.

    `producer_factory` builds the producer inside the handler's own thread
    (asyncio objects belong to one loop); by default it is OrbitMQ's
    `Producer(group, namesrv_addr=...)`. `tag` is the tag every message
    carries, like the `tag` setting of RocketMQ's log appenders; when it is
    None each message is tagged with its record's level name.
    """

    def __init__(
        self,
        topic: str,
        *,
        namesrv_addr: str = "127.0.0.1:9876",
        group: str = "orbitmq-log-producer",
        tag: str | None = None,
        level: int = logging.NOTSET,
        capacity: int = 10_000,
        batch_size: int = 256,
        send_retries: int = 2,
        report_drops_every_s: float = 60.0,
        producer_factory: Callable[[], BatchSender] | None = None,
    ) -> None:
        super().__init__(level)
        if capacity <= 0 or batch_size <= 0:
            raise ValueError("capacity and batch_size must be positive")
        if tag is not None and (not tag or "|" in tag):
            raise ValueError("tag must be a non-empty tag without '|'")
        self.topic = topic
        self.tag = tag
        self.capacity = capacity
        self.batch_size = batch_size
        self.send_retries = send_retries
        self.report_drops_every_s = report_drops_every_s
        self._factory = producer_factory or (lambda: _default_producer(namesrv_addr, group))
        # Owned by the caller threads (append) and the shipping thread (popleft), under _cond.
        self._buffer: collections.deque[logging.LogRecord] = collections.deque()
        self._cond = threading.Condition()
        self._enqueued = 0
        self._finished = 0  # records sent or dropped after being buffered
        self.sent = 0
        self.dropped = 0
        self._reported_drops = 0
        self._last_report = time.monotonic()
        self._closing = False
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"orbitmq-logship-{topic}", daemon=True)
        self._thread.start()

    # --- caller side ---------------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        with self._cond:
            if self._closing or len(self._buffer) >= self.capacity:
                self.dropped += 1
                self._maybe_report_drops()
                return
            # Format now, in the caller's thread: args may change after the call returns.
            try:
                record.msg = self.format(record)
                record.args = None
                record.exc_info = None
                record.exc_text = None
            except Exception:  # noqa: BLE001 - logging.Handler's contract: report, never raise
                self.handleError(record)
                return
            self._buffer.append(record)
            self._enqueued += 1
            self._cond.notify()

    def flush(self, timeout: float = 10.0) -> None:  # type: ignore[override]
        """Wait until every record buffered before this call was sent or dropped."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._enqueued
            while self._finished < target and self._thread.is_alive():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._cond.wait(remaining)

    def close(self) -> None:
        if not self._closing:
            self.flush()
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join(10.0)
            self._maybe_report_drops(force=True)
        super().close()

    def _maybe_report_drops(self, force: bool = False) -> None:
        now = time.monotonic()
        new = self.dropped - self._reported_drops
        if new and (force or now - self._last_report >= self.report_drops_every_s):
            self._reported_drops = self.dropped
            self._last_report = now
            _fallback.warning("log shipping to topic %s dropped %d records (%d in all)", self.topic, new, self.dropped)

    # --- shipping thread -----------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._ship())

    def _take_batch(self) -> list[logging.LogRecord] | None:
        """Block until records are waiting (or closing); None means stop."""
        with self._cond:
            while not self._buffer and not self._closing:
                self._cond.wait(0.5)
            if not self._buffer:
                return None
            n = min(self.batch_size, len(self._buffer))
            return [self._buffer.popleft() for _ in range(n)]

    def _finish(self, count: int, sent: bool) -> None:
        with self._cond:
            self._finished += count
            if sent:
                self.sent += count
            else:
                self.dropped += count
            self._cond.notify_all()

    async def _ship(self) -> None:
        try:
            producer = self._factory()
            await producer.start()
        except Exception as exc:  # noqa: BLE001 - a handler must never take the application down
            self._start_error = exc
            _fallback.error("log shipping to topic %s could not start: %s", self.topic, exc)
            with self._cond:
                self._closing = True
                dropped = len(self._buffer)
                self._buffer.clear()
            self._finish(dropped, sent=False)
            return
        try:
            while True:
                batch = await asyncio.to_thread(self._take_batch)
                if batch is None:
                    break
                ok = await self._send(producer, batch)
                self._finish(len(batch), sent=ok)
        finally:
            await producer.shutdown()

    async def _send(self, producer: BatchSender, batch: list[logging.LogRecord]) -> bool:
        messages = [self._to_message(r) for r in batch]
        for attempt in range(self.send_retries + 1):
            try:
                await producer.send(messages)
                return True
            except Exception as exc:  # noqa: BLE001 - any send failure is retried, then counted
                if attempt == self.send_retries:
                    _fallback.warning("log shipping to topic %s failed: %s", self.topic, exc)
                    return False
                await asyncio.sleep(0.2 * (attempt + 1))
        return False

    def _to_message(self, record: logging.LogRecord) -> Any:
        from orbitmq.client.message import Message

        return Message(
            self.topic,
            str(record.msg).encode("utf-8", "replace"),
            tags=self.tag if self.tag is not None else record.levelname,
            keys=[record.name.replace(" ", "_")],
            properties={
                "logger": record.name,
                "level": record.levelname,
                "process": str(record.process),
                "thread": str(record.threadName),
                "created": str(int(record.created * 1000)),
            },
        )
