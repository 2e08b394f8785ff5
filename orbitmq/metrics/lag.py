"""Consumer lag per (group, topic, queue), as RocketMQ 5's ConsumerLagCalculator defines it.

For one queue: `max` is its max offset, `commit` the group's committed offset
(capped at max), `pull` where the group's last pull of it ended (commit when it
never pulled; between commit and max):

    lag_messages      = max - commit        lag_latency      = now - store time at commit
    inflight_messages = pull - commit       queueing_latency = now - store time at pull
    ready_messages    = max - pull

Latencies are 0 when there is nothing behind. Every figure is a dictionary
lookup and a consume queue read; store times are cached by (topic, queue,
offset), so a scrape reads the store only for queues whose offsets moved since
the previous one (the cache keeps only what the last scrape used).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

from orbitmq.common import names


class QueueLag(NamedTuple):
    group: str
    topic: str
    queue_id: int
    lag: int
    inflight: int
    ready: int
    lag_latency_ms: int
    queueing_latency_ms: int


class LagTable:
    """Reads lag from committed offsets, pull offsets and a store (see the module docstring)."""

    def __init__(
        self,
        max_offset: Callable[[str, int], int],
        store_time: Callable[[str, int, int], int],
    ) -> None:
        self._max_offset = max_offset
        self._store_time = store_time
        self._times: dict[tuple[str, int, int], int] = {}
        self._next_times: dict[tuple[str, int, int], int] = {}

    def _time(self, topic: str, queue_id: int, offset: int) -> int:
        key = (topic, queue_id, offset)
        found = self._times.get(key)
        if found is None:
            found = self._store_time(topic, queue_id, offset)
        self._next_times[key] = found
        return found

    def queues(
        self,
        committed: Iterator[tuple[str, str, Mapping[int, int]]],
        pulled: Mapping[tuple[str, str], Mapping[int, int]],
        now_ms: int,
    ) -> Iterator[QueueLag]:
        """One QueueLag per committed (topic, group, queue); retry topics are left out as
        RocketMQ does (their lag is the retries' business, not the backlog's)."""
        self._next_times = {}
        try:
            for topic, group, queues in committed:
                if topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
                    continue
                pulls = pulled.get((group, topic), {})
                for queue_id, offset in queues.items():
                    top = max(self._max_offset(topic, queue_id), 0)
                    commit = min(max(offset, 0), top)
                    pull = min(max(pulls.get(queue_id, commit), commit), top)
                    lag_ms = queue_ms = 0
                    if commit < top:
                        stored = self._time(topic, queue_id, commit)
                        lag_ms = max(now_ms - stored, 0) if stored > 0 else 0
                        if pull == commit:
                            queue_ms = lag_ms
                        elif pull < top:
                            stored = self._time(topic, queue_id, pull)
                            queue_ms = max(now_ms - stored, 0) if stored > 0 else 0
                    yield QueueLag(group, topic, queue_id, top - commit, pull - commit, top - pull, lag_ms, queue_ms)
        finally:
            self._times = self._next_times
