"""Turning read options into concrete queue offsets, and ranges into Spark partitions.

Everything here is pure: the caller passes the queues, their offset bounds
and (for timestamps) a lookup function, so the rules can be tested without
a cluster. `source.py` feeds it from `cluster.Cluster`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from orbitmq.errors import ClientError
from orbitmq.spark.offsets import EARLIEST, LATEST, Offsets, QueueRef, split_limit
from orbitmq.spark.options import Position, TimestampPosition

log = logging.getLogger(__name__)

#: (min offset, max offset) of a queue; max is the next offset to be written.
Bounds = Mapping[QueueRef, tuple[int, int]]


class DataLossError(ClientError):
    """Offsets the query still needed are gone (retention, a deleted topic or queue)."""


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets [start, end) of one queue: what one Spark task reads.

    `from_earliest` marks a queue first seen after the query started: its
    start is 0, and data already removed before the queue was seen is not a
    loss, so the reader moves to the queue's min offset silently.
    """

    queue: QueueRef
    start: int
    end: int
    from_earliest: bool = False


def first_offset_at(ts_ms: int, lo: int, hi: int, hint: int, store_time_at: Callable[[int], int | None]) -> int:
    """The first offset in [lo, hi) whose store time is >= `ts_ms`, or `hi` if none is.

    Store times are non-decreasing along a queue, so this is a binary search;
    the broker's own search-by-time answer (`hint`, the nearest entry) is
    tried first and usually settles it in two lookups. `store_time_at`
    returns None for an offset that can no longer be read; such an offset
    counts as before `ts_ms` (it was written earlier than what remains).
    """

    def before(offset: int) -> bool:
        t = store_time_at(offset)
        return t is None or t < ts_ms

    if lo >= hi:
        return hi
    if lo < hint < hi and before(hint - 1) and not before(hint):
        return hint
    left, right = lo, hi  # invariant: everything below left is before ts; right is at or after (or hi)
    while left < right:
        mid = (left + right) // 2
        if before(mid):
            left = mid + 1
        else:
            right = mid
    return left


def resolve(
    position: Position,
    queues: Sequence[QueueRef],
    bounds: Bounds,
    *,
    default_missing: int,
    time_lookup: Callable[[QueueRef, int], int] | None = None,
) -> Offsets:
    """Concrete offsets for every queue in `queues`.

    "earliest"/"latest" and the JSON values -2/-1 map to a queue's min/max
    offset. Queues a JSON map does not name get `default_missing`
    (EARLIEST or LATEST). A timestamp maps through `time_lookup`.
    """
    out: Offsets = {}
    for q in queues:
        lo, hi = bounds[q]
        if position == "earliest":
            out[q] = lo
        elif position == "latest":
            out[q] = hi
        elif isinstance(position, TimestampPosition):
            if time_lookup is None:
                raise ValueError("a timestamp position needs a time lookup")
            out[q] = time_lookup(q, position.timestamp_ms)
        else:
            value = position.get(q, default_missing)
            out[q] = lo if value == EARLIEST else hi if value == LATEST else value
    return out


def plan_ranges(start: Mapping[QueueRef, int], end: Mapping[QueueRef, int],
                max_records: int | None = None) -> list[QueueRange]:
    """One range per queue with something to read, split into chunks of at most `max_records`.

    Queues of `end` missing from `start` start at 0 with `from_earliest` (see QueueRange).
    """
    ranges: list[QueueRange] = []
    for q in sorted(end):
        fresh = q not in start
        lo, hi = start.get(q, 0), end[q]
        step = max_records or max(hi - lo, 1)
        while lo < hi:
            ranges.append(QueueRange(q, lo, min(hi, lo + step), fresh))
            lo += step
    return ranges


def next_end(
    start: Mapping[QueueRef, int],
    bounds: Bounds,
    *,
    fail_on_data_loss: bool,
    limit: int | None = None,
) -> Offsets:
    """The end of the next micro-batch: every known queue up to its max, capped by `limit`.

    `bounds` holds the queues that exist now. A queue of `start` that is gone,
    or whose max fell below the start (the queue was recreated), is data loss:
    an error with `fail_on_data_loss`, else a warning and the queue resumes
    from what exists. New queues start from their min offset. The end of a
    queue never goes below its start.
    """
    gone = sorted(q for q in start if q not in bounds)
    if gone:
        what = ", ".join(f"{q.topic}/{q.key}" for q in gone)
        if fail_on_data_loss:
            raise DataLossError(f"queues {what} disappeared (topic or queue deleted); "
                                "set failOnDataLoss=false to skip them")
        log.warning("queues %s disappeared; dropping them from the stream", what)
    begin: Offsets = {}
    end: Offsets = {}
    for q, (lo, hi) in bounds.items():
        s = start.get(q, lo)
        if hi < s:
            if fail_on_data_loss:
                raise DataLossError(f"queue {q.topic}/{q.key} now ends at {hi}, before the stream's "
                                    f"position {s}; set failOnDataLoss=false to continue from {hi}")
            log.warning("queue %s/%s ends at %d before position %d; continuing from there", q.topic, q.key, hi, s)
            s = hi
        begin[q] = s
        end[q] = hi
    if limit is not None:
        end = split_limit(begin, end, limit)
    return end
