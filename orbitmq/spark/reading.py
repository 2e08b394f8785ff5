"""Reading one queue range into Arrow batches, inside a Spark task.

This is the task side of both the batch and the streaming reader: it opens
its own `Cluster` (a private loop and connections, closed when the range is
done), pulls [start, end) straight from the queue's master broker without
long polling, and yields RecordBatches of about `BATCH_ROWS` rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from orbitmq.client import otel
from orbitmq.common.pull import PullStatus
from orbitmq.errors import CorruptRecord
from orbitmq.spark.cluster import Cluster
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import SourceOptions
from orbitmq.spark.positions import DataLossError, QueueRange, first_offset_at
from orbitmq.spark.records import Columns, decode_into, store_timestamps, tag_filter

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: Rows per Arrow batch handed to Spark: its own default Arrow batch size.
BATCH_ROWS = 10_000
#: Pulls in flight per task. Enough to hide a round trip behind the broker's
#: work on the others, few enough not to flood a broker that serves many tasks.
WINDOW = 16


def read_range(options: SourceOptions, r: QueueRange, cluster: Cluster | None = None) -> Iterator[pa.RecordBatch]:
    """Yield the messages of `r` (filtered by the sub-expression) as Arrow batches, in offset order.

    Guarantees: every offset in [start, end) is either yielded, filtered out
    by the expression, or reported: offsets that no longer exist raise
    DataLossError with failOnDataLoss (else they are skipped with a warning),
    except below the min offset of a queue first seen mid-stream.
    """
    own = cluster is None
    c = Cluster(options.connection) if cluster is None else cluster
    tracer = otel.tracer() if otel.INSTALLED else None
    try:
        if tracer is None:
            yield from _pull_range(c, options, r)
        else:
            yield from _traced(tracer, options, r, _pull_range(c, options, r))
    finally:
        if own:
            c.close()


def _traced(tracer: Any, options: SourceOptions, r: QueueRange,
            batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A `receive <topic>` span over reading a range; the rows carry their messages' own context."""
    span = otel.start_task_span(tracer, "receive", r.queue.topic, options.pull_group, otel.SpanKind.CLIENT)
    span.set_attribute("messaging.destination.partition.id", r.queue.key)
    rows = 0
    try:
        for rb in batches:
            rows += rb.num_rows
            yield rb
    except Exception as exc:
        span.record_exception(exc)
        span.set_status(otel.StatusCode.ERROR, type(exc).__name__)
        raise
    finally:
        span.set_attribute("messaging.batch.message_count", rows)
        span.end()


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
    # Pulls go out WINDOW at a time, each covering `span` offsets (what one
    # pull returned last time: brokers cap a pull at a few dozen messages).
    # Each answer is used only for its own span, so a short answer (fewer
    # messages than the span, or a filter that scanned less) leaves a gap
    # that the next window starts with; the rest of that window is dropped.
    span = 0
    while offset < r.end:
        if span == 0:
            bases = [offset]
        else:
            bases = list(range(offset, min(r.end, offset + WINDOW * span), span))
        max_nums = min(options.pull_batch_size, r.end - offset) if span == 0 else span
        results = c.pull_many(r.queue, bases, max_nums, group=options.pull_group,
                              subscription=options.sub_expression, expression_type=options.expression_type)
        for base, res in zip(bases, results, strict=True):
            if base != offset:
                break  # the previous span came back short: fill the gap first
            limit = r.end if span == 0 else min(r.end, base + span)
            if res.status is PullStatus.FOUND:
                _, last = decode_into(cols, res.message_binary, end_offset=limit, accept_tag=accept, include_properties=include)
                reached = max(res.next_begin_offset, offset if last is None else last + 1)
                if reached <= offset:
                    raise CorruptRecord(f"pull at {offset} of {r.queue.topic}/{r.queue.key} did not advance")
                if span == 0:
                    span = max(1, reached - offset)
                offset = min(reached, limit)
            elif res.status is PullStatus.NO_MATCHED_MSG:
                if res.next_begin_offset <= offset:
                    raise CorruptRecord(f"broker did not advance past filtered offset {offset} of {r.queue.key}")
                offset = min(res.next_begin_offset, limit)
            elif res.status is PullStatus.OFFSET_ILLEGAL and offset < res.min_offset:
                if not r.from_earliest:
                    _lost(options, r, f"offsets {offset}..{res.min_offset - 1} were removed (min offset now "
                                      f"{res.min_offset})")
                offset = res.min_offset
                break
            else:
                # NO_NEW_MSG or past the max: the queue ends before what was planned,
                # so the planned tail no longer exists.
                _lost(options, r, f"queue ends at {res.max_offset}, before the planned end {r.end}")
                offset = r.end
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
        for found, store in store_timestamps(res.message_binary):
            if found == offset:
                return store
        return None

    hint = c.search_offset(q, ts_ms) if hi > lo else hi
    return first_offset_at(ts_ms, lo, hi, hint, store_time_at)
