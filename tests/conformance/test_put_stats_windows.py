"""VIEW_BROKER_STATS_DATA's windows. TOPIC_PUT_NUMS counts exactly the messages stored inside
them, whichever neighbour the store's nearest-time lookup answers (4.9.7's getOffsetInQueueByTime
picks the closer one); GROUP_GET_NUMS counts pulled messages against sampled baselines."""

from __future__ import annotations

from typing import Any, cast

import pytest

from orbitmq.broker.putstats import first_offset_since, topic_put_stats
from orbitmq.broker.stats import BrokerStats
from orbitmq.store.api import MessageStore


class QueueTimes:
    """One queue whose messages were stored at the given times; min offset `low`."""

    def __init__(self, times: list[int], low: int = 0) -> None:
        self.times = times
        self.low = low

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return self.low

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self.times)

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        return self.times[offset] if self.low <= offset < len(self.times) else -1

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        kept = range(self.low, len(self.times))
        return min(kept, key=lambda o: (abs(self.times[o] - timestamp), o)) if kept else 0


def store(times: list[int], low: int = 0) -> MessageStore:
    return cast(MessageStore, QueueTimes(times, low))


@pytest.mark.parametrize(
    ("since", "expected"),
    [(0, 0), (100, 0), (101, 1), (149, 1), (151, 1), (200, 1), (299, 2), (400, 3), (401, 4), (10_000, 4)],
)
def test_the_first_offset_since_a_time_is_the_first_message_at_or_after_it(since: int, expected: int) -> None:
    assert first_offset_since(store([100, 200, 300, 400]), "T", 0, since) == expected


def test_messages_already_deleted_are_not_counted() -> None:
    assert first_offset_since(store([100, 200, 300, 400], low=2), "T", 0, 0) == 2


def test_an_empty_queue_counts_nothing() -> None:
    stats: dict[str, Any] = topic_put_stats(store([]), "T", 1, 1_000_000)
    assert stats["statsDay"] == {"avgpt": 0.0, "sum": 0, "tps": 0.0}


def test_each_window_counts_the_messages_stored_inside_it() -> None:
    now = 100_000_000
    times = [now - 90_000_000, now - 3_000_000, now - 50_000, now - 10]
    stats = topic_put_stats(store(times), "T", 1, now)
    assert [stats[w]["sum"] for w in ("statsMinute", "statsHour", "statsDay")] == [2, 3, 3]
    assert stats["statsMinute"]["tps"] == pytest.approx(2 / 60)


def test_group_get_windows_count_the_pulls_inside_each_window() -> None:
    now = [1_000_000]
    stats = BrokerStats(lambda: now[0])
    assert stats.group_get_windows("G", "T") is None  # never pulled: no stats item
    stats.record_get("G", "T", 10)
    now[0] += 30_000
    stats.sample()
    stats.record_get("G", "T", 4)
    stats.record_get("G", "T", 2)
    windows = stats.group_get_windows("G", "T")
    assert windows is not None
    assert windows["statsDay"]["sum"] == 16 and windows["statsDay"]["avgpt"] == pytest.approx(16 / 3)
    # Two minutes on, with samples on the way: the minute window holds only what came since.
    for _ in range(12):
        now[0] += 10_000
        stats.sample()
    stats.record_get("G", "T", 6)
    windows = stats.group_get_windows("G", "T")
    assert windows is not None
    assert windows["statsMinute"]["sum"] == 6 and windows["statsHour"]["sum"] == 22
    assert 6 * 1000 / 70_000 <= windows["statsMinute"]["tps"] <= 6 * 1000 / 60_000
