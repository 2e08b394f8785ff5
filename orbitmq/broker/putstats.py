"""Put statistics of one topic over the last minute, hour and day, read from the store.

VIEW_BROKER_STATS_DATA (mqadmin statsAll, the Dashboard's collect task) asks
for `TOPIC_PUT_NUMS`: how many messages a topic received in each window and
at what rate. RocketMQ keeps sampled counters for this; OrbitMQ counts the
messages themselves instead: the consume queue entries whose store time falls
inside the window, found by time lookup per queue. That is exact for messages
still kept and needs no state, but it cannot tell batches from single sends,
so the average per put (`avgpt`) is one message whenever anything was put.
"""

from __future__ import annotations

from typing import Any

from orbitmq.store.api import MessageStore

#: BrokerStatsData's windows: statsMinute, statsHour, statsDay, in milliseconds.
WINDOWS_MS = (("statsMinute", 60_000), ("statsHour", 3_600_000), ("statsDay", 86_400_000))


def first_offset_since(store: MessageStore, topic: str, queue_id: int, since_ms: int) -> int:
    """The queue offset of the first message stored at or after `since_ms`
    (the max offset when there is none)."""
    low = max(store.get_min_offset_in_queue(topic, queue_id), 0)
    high = max(store.get_max_offset_in_queue(topic, queue_id), 0)
    if low >= high:
        return high
    # The time lookup answers the entry nearest to `since_ms`, one either side of the boundary.
    offset = min(max(store.get_offset_in_queue_by_time(topic, queue_id, since_ms), low), high)
    if offset > low and store.get_message_store_timestamp(topic, queue_id, offset - 1) >= since_ms:
        offset -= 1
    if offset < high and store.get_message_store_timestamp(topic, queue_id, offset) < since_ms:
        offset += 1
    return offset


def topic_put_stats(store: MessageStore, topic: str, queues: int, now_ms: int) -> dict[str, Any]:
    """BrokerStatsData for TOPIC_PUT_NUMS: per window `sum` (messages), `tps` and `avgpt`."""
    tops = [max(store.get_max_offset_in_queue(topic, q), 0) for q in range(queues)]
    out: dict[str, Any] = {}
    for name, window in WINDOWS_MS:
        count = sum(top - first_offset_since(store, topic, q, now_ms - window) for q, top in enumerate(tops))
        out[name] = {"avgpt": 1.0 if count else 0.0, "sum": count, "tps": count * 1000.0 / window}
    return out
