"""Reading one queue range into Arrow batches, inside a Spark task.

This is the task side of both the batch and the streaming reader: it opens
its own `Cluster` (a private loop and connections, closed when the range is
done), pulls [start, end) straight from the queue's master broker without
long polling, and yields RecordBatches of about `BATCH_ROWS` rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from orbitmq.errors import CorruptRecord
from orbitmq.spark.cluster import Cluster, PullStatus
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import SourceOptions
from orbitmq.spark.positions import DataLossError, QueueRange, first_offset_at
from orbitmq.spark.records import Columns, decode_into, store_timestamps, tag_filter

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: Rows per Arrow batch handed to Spark: its own default Arrow batch size.
BATCH_ROWS = 10_000


def read_range(options: SourceOptions, r: QueueRange, cluster: Cluster | None = None) -> Iterator[pa.RecordBatch]:
    """Yield the messages of `r` (filtered by the sub-expression) as Arrow batches, in offset order.

    Guarantees: every offset in [start, end) is either yielded, filtered out
    by the expression, or reported: offsets that no longer exist raise
    DataLossError with failOnDataLoss (else they are skipped with a warning),
    except below the min offset of a queue first seen mid-stream.
    """
    own = cluster is None
    c = Cluster(options.connection) if cluster is None else cluster
    try:
        yield from _pull_range(c, options, r)
    finally:
        if own:
            c.close()


def _lost(options: SourceOptions, r: QueueRange, what: str) -> None:
    message = f"{r.queue.topic}/{r.queue.key}: {what}"
    if options.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip lost offsets")
    log.warning("%s; skipping (failOnDataLoss=false)", message)


def _pull_range(c: Cluster, options: SourceOptions, r: QueueRange) -> Iterator[pa.RecordBatch]:
    accept = tag_filter(options.sub_expression) if options.expression_type == "TAG" else None
    include = options.include_properties
    cols = Columns()
    offset = r.start
    while offset < r.end:
        res = c.pull(r.queue, offset, min(options.pull_batch_size, r.end - offset), group=options.pull_group,
                     subscription=options.sub_expression, expression_type=options.expression_type)
        if res.status is PullStatus.FOUND:
            _seen, last = decode_into(cols, res.body, end_offset=r.end, accept_tag=accept, include_properties=include)
            if last is None:
                if res.next_offset <= offset:
                    raise CorruptRecord(f"pull at {offset} of {r.queue.topic}/{r.queue.key} found no records")
                last = res.next_offset - 1
            offset = max(last + 1, res.next_offset)
        elif res.status is PullStatus.NO_MATCHED_MSG:
            if res.next_offset <= offset:
                raise CorruptRecord(f"broker did not advance past filtered offset {offset} of {r.queue.key}")
            offset = res.next_offset
        elif res.status is PullStatus.OFFSET_ILLEGAL and offset < res.min_offset:
            if not r.from_earliest:
                _lost(options, r, f"offsets {offset}..{res.min_offset - 1} were removed (min offset now "
                                  f"{res.min_offset})")
            offset = res.min_offset
        else:
            # NO_NEW_MSG or past the max: the queue ends before what was planned,
            # so the planned tail no longer exists.
            _lost(options, r, f"queue ends at {res.max_offset}, before the planned end {r.end}")
            break
        if len(cols) >= BATCH_ROWS:
            yield cols.to_record_batch(r.queue.broker_name, include)
            cols = Columns()
    if len(cols):
        yield cols.to_record_batch(r.queue.broker_name, include)


def offset_for_time(c: Cluster, options: SourceOptions, q: QueueRef, ts_ms: int, lo: int, hi: int) -> int:
    """The first offset of a queue in [lo, hi) whose store time is >= ts_ms (hi if none), exactly."""

    def store_time_at(offset: int) -> int | None:
        res = c.pull(q, offset, 1, group=options.pull_group)
        if res.status is not PullStatus.FOUND:
            return None
        for found, store in store_timestamps(res.body):
            if found == offset:
                return store
        return None

    hint = c.search_offset(q, ts_ms) if hi > lo else hi
    return first_offset_at(ts_ms, lo, hi, hint, store_time_at)
