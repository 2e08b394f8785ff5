"""Latency-based broker fault avoidance for producers (RocketMQ's MQFaultStrategy).

After each send the producer reports how long the broker took. A slow or
failed broker is marked "not available" for a while, taken from two tables:
a latency at or above `LATENCY_MAX_MS[i]` buys `NOT_AVAILABLE_MS[i]` of
avoidance; a failure counts as a 30 s latency. Queue choice then skips
unavailable brokers while any other broker is left.

Pure state: the clock is passed in (milliseconds) so tests need no sleeping.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from orbitmq.client.queue import MessageQueue

LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: The latency charged to a broker when a send to it failed outright ("isolation").
ISOLATION_LATENCY_MS = 30000


def not_available_duration(latency_ms: int) -> int:
    """How long a broker that answered in `latency_ms` is avoided."""
    for limit, duration in zip(reversed(LATENCY_MAX_MS), reversed(NOT_AVAILABLE_MS)):
        if latency_ms >= limit:
            return duration
    return 0


@dataclass
class FaultItem:
    name: str
    latency_ms: int
    available_from_ms: int

    def is_available(self, now_ms: int) -> bool:
        return now_ms >= self.available_from_ms


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class LatencyFaultTolerance:
    """Which brokers are currently avoided, and which is the least bad one."""

    clock_ms: Callable[[], int] = _now_ms
    items: dict[str, FaultItem] = field(default_factory=dict)
    _worst_index: int = 0

    def update(self, name: str, latency_ms: int, not_available_ms: int) -> None:
        self.items[name] = FaultItem(name, latency_ms, self.clock_ms() + not_available_ms)

    def is_available(self, name: str) -> bool:
        item = self.items.get(name)
        return item is None or item.is_available(self.clock_ms())

    def remove(self, name: str) -> None:
        self.items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker among the better half of the avoided ones (Java's pickOneAtLeast).

        Items sort available first, then by lower latency, then by earlier end of
        avoidance; the pick rotates through the better half.
        """
        if not self.items:
            return None
        now = self.clock_ms()
        ordered = list(self.items.values())
        random.shuffle(ordered)
        ordered.sort(key=lambda it: (not it.is_available(now), it.latency_ms, it.available_from_ms))
        half = len(ordered) // 2
        if half <= 0:
            return ordered[0].name
        self._worst_index += 1
        return ordered[self._worst_index % half].name


class QueueRoundRobin:
    """A per-topic counter that walks the publish queues (Java's sendWhichQueue)."""

    def __init__(self, start: int | None = None) -> None:
        # Java seeds it randomly so that producers started together spread out.
        self._next = random.randrange(1 << 16) if start is None else start

    def next(self) -> int:
        self._next = (self._next + 1) & 0x7FFFFFFF
        return self._next


class FaultStrategy:
    """Chooses the queue for each send attempt and records each attempt's latency."""

    def __init__(self, enabled: bool = False, tolerance: LatencyFaultTolerance | None = None) -> None:
        self.enabled = enabled
        self.tolerance = tolerance or LatencyFaultTolerance()

    def record(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        """Report one attempt; `isolation` means it failed and the broker is to be avoided."""
        if self.enabled:
            duration = not_available_duration(ISOLATION_LATENCY_MS if isolation else latency_ms)
            self.tolerance.update(broker_name, latency_ms, duration)

    def select(
        self, queues: Sequence[MessageQueue], counter: QueueRoundRobin, last_broker: str | None
    ) -> MessageQueue:
        """One queue of `queues` (non-empty) for the next attempt.

        Without fault avoidance: round-robin, skipping the broker of the previous
        failed attempt when another broker exists. With it: round-robin over
        available brokers; if none is, the least bad broker.
        """
        n = len(queues)
        if self.enabled:
            for _ in range(n):
                mq = queues[counter.next() % n]
                if self.tolerance.is_available(mq.broker_name):
                    return mq
            least_bad = self.tolerance.pick_one_at_least()
            if least_bad is not None:
                own = [mq for mq in queues if mq.broker_name == least_bad]
                if own:
                    return own[counter.next() % len(own)]
                # The broker no longer serves this topic; forget it.
                self.tolerance.remove(least_bad)
            return queues[counter.next() % n]
        if last_broker is not None:
            for _ in range(n):
                mq = queues[counter.next() % n]
                if mq.broker_name != last_broker:
                    return mq
        return queues[counter.next() % n]
