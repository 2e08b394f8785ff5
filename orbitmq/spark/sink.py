"""The `orbitmq` Spark sink: batch and streaming writers.

Input columns: `body` (BINARY or STRING, required), `topic` (STRING, required
unless the `topic` option is set; the option wins), and optional `keys`,
`tags`, `properties` (MAP<STRING,STRING>) and `shardingKey`. Rows with the
same shardingKey go to the same queue (Java's `abs(hashCode) % queues`, so
Java producers agree) in the order the Spark partition holds them; other
rows are spread over the writable queues in whole batches.

Delivery is at-least-once. Each task sends its rows in SEND_BATCH_MESSAGE
requests, synchronously, and returns only when every batch was stored; a
failed send (after `sendRetries` retries) fails the task, and Spark retries
the task or the micro-batch, which may send some rows again. Every message
carries the properties SPARK_BATCH_ID (the micro-batch id, or a job id for a
batch write), SPARK_PARTITION_ID and SPARK_SEQ (the row's index within the
partition), and SPARK_QUERY_ID for streams: together they identify a row, so
a consumer can drop duplicates. SPARK_* entries of a `properties` column
(say, copied from a topic another Spark job wrote) are replaced by this
write's own.

Exactly-once with the broker's duplicate window (broker/dedup.py; on in
`orbitmq dev`): each row's UNIQ_KEY is derived from those same values
(`row_ids`), so a retried task or a replayed micro-batch sends the ids its
first run sent, and the broker answers them instead of storing them again.
That needs the replay to hold the same rows in the same partitions in the
same order (a replayable source such as `orbitmq`'s, deterministic
transformations) and to come within the topic's window. Derived ids are 32
hex digits like a client's but carry no send time.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from orbitmq.client import otel
from orbitmq.client.batch import ITEM_HEAD, ITEM_OVERHEAD, PROPS_LEN
from orbitmq.common import properties as mc
from orbitmq.common.hashing import java_string_hash
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.errors import BrokerError, ConfigError, MessageValidationError, OrbitMQError, RemotingError
from orbitmq.spark.cluster import Cluster
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import SinkOptions
from orbitmq.spark.schema import SINK_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

QUERY_ID = "SPARK_QUERY_ID"
BATCH_ID = "SPARK_BATCH_ID"
PARTITION_ID = "SPARK_PARTITION_ID"
SEQ = "SPARK_SEQ"
MAX_BATCH_BODY_BYTES = 1 << 20
_OWN_PROPERTIES = frozenset((QUERY_ID, BATCH_ID, PARTITION_ID, SEQ))


@dataclass
class SinkCommit(WriterCommitMessage):
    partition_id: int
    attempt: int
    rows: int


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Fail on the driver, before any task, when the columns cannot be written."""
    fields = {f.name: f.dataType.simpleString().replace(" ", "") for f in schema.fields}
    unknown = sorted(set(fields) - set(SINK_COLUMNS))
    if unknown:
        raise ConfigError(f"the orbitmq sink does not know column(s) {', '.join(unknown)}; "
                          f"it writes {', '.join(SINK_COLUMNS)}")
    if "body" not in fields:
        raise ConfigError("the orbitmq sink needs a body column (binary or string)")
    if "topic" not in fields and options.topic is None:
        raise ConfigError("the orbitmq sink needs a topic column or the topic option")
    for name, kind in fields.items():
        if kind not in SINK_COLUMNS[name]:
            raise ConfigError(f"column {name} has type {kind}; the orbitmq sink accepts {' or '.join(SINK_COLUMNS[name])}")


class QueueBatcher:
    """Collects encoded batch items per queue and sends each queue's items in order, in batches.

    `send(queue, items)` must store the items in order or raise. A queue's
    batch is sent when it reaches `batch_size` items or MAX_BATCH_BODY_BYTES,
    and by `flush()`. Queues are keys of any hashable kind chosen by the caller.
    """

    def __init__(self, send: Callable[[Hashable, list[bytes]], None], batch_size: int) -> None:
        self._send = send
        self._batch_size = batch_size
        self._pending: dict[Hashable, list[bytes]] = {}
        self._bytes: dict[Hashable, int] = {}
        self.sent = 0

    def add(self, q: Hashable, item: bytes) -> None:
        batch = self._pending.get(q)
        if batch is None:
            batch = self._pending[q] = []
        batch.append(item)
        size = self._bytes.get(q, 0) + len(item)
        self._bytes[q] = size
        if len(batch) >= self._batch_size or size >= MAX_BATCH_BODY_BYTES:
            self._flush(q)

    def _flush(self, q: Hashable) -> None:
        batch = self._pending.pop(q, None)
        self._bytes.pop(q, None)
        if batch:
            self._send(q, batch)
            self.sent += len(batch)

    def flush(self) -> None:
        for q in list(self._pending):
            self._flush(q)


class _Router:
    """Picks the queue of each row: by sharding key, else whole batches round-robin.

    Returns (topic, index into the topic's writable queues), cheap to hash.
    """

    def __init__(self, cluster: Cluster, batch_size: int, start: int) -> None:
        self._cluster = cluster
        self._batch_size = batch_size
        self._start = start
        self._queues: dict[str, tuple[QueueRef, ...]] = {}
        self._rr: dict[str, int] = {}

    def queues(self, topic: str) -> tuple[QueueRef, ...]:
        qs = self._queues.get(topic)
        if qs is None:
            qs = self._cluster.route(topic).write_queues
            if not qs:
                raise MessageValidationError(f"topic {topic} has no writable queue")
            self._queues[topic] = qs
        return qs

    def pick(self, topic: str, sharding_key: str | None) -> tuple[str, int]:
        qs = self.queues(topic)
        if sharding_key is not None:
            # Java's SelectMessageQueueByHash over the same sorted queue list, as
            # client.selector.hash_selector computes it.
            return topic, abs(java_string_hash(sharding_key)) % len(qs)
        n = self._rr.get(topic, 0)
        self._rr[topic] = n + 1
        return topic, (self._start + n // self._batch_size) % len(qs)


def _column(rb: pa.RecordBatch, name: str) -> list[object] | None:
    idx = rb.schema.get_field_index(name)
    return None if idx < 0 else rb.column(idx).to_pylist()


def _user_properties(pairs: list[tuple[str, str | None]], row: int) -> str:
    out = []
    for name, value in pairs:
        if value is None or name in _OWN_PROPERTIES:
            continue  # the sink sets its own SPARK_* properties for this write
        if not name or not value:
            raise MessageValidationError(f"row {row}: property names and values must be non-empty ({name!r})")
        if name in mc.RESERVED_NAMES:
            raise MessageValidationError(f"row {row}: property {name} is reserved")
        if "\x01" in name or "\x02" in name or "\x01" in value or "\x02" in value:
            raise MessageValidationError(f"row {row}: property {name!r} contains a separator character")
        out.append(f"\x02{name}\x01{value}")
    return "".join(out)


def _item(body: bytes, props: bytes) -> bytes:
    """One SEND_BATCH_MESSAGE item (protocol reference 5.8); flag 0."""
    if len(props) > mc.MAX_PROPERTIES_BYTES:
        raise MessageValidationError(f"message properties exceed {mc.MAX_PROPERTIES_BYTES} bytes")
    return b"".join((ITEM_HEAD.pack(ITEM_OVERHEAD + len(body) + len(props), 0, 0, 0, len(body)), body,
                     PROPS_LEN.pack(len(props)), props))


def row_ids(tags: dict[str, str], partition: int) -> Callable[[int], str]:
    """seq -> the UNIQ_KEY of the partition's row `seq`: the same on every run of this (query,) batch
    and partition. 20 hex digits of a digest of query id, batch id and partition, then the row's
    index in 12; fresh client ids when there is no batch id."""
    if not tags.get(BATCH_ID):
        ids = UniqueIdGenerator()
        return lambda seq: ids.next()
    identity = f"{tags.get(QUERY_ID, '')}\x00{tags[BATCH_ID]}\x00{partition}".encode()
    prefix = hashlib.blake2b(identity, digest_size=10).hexdigest().upper()
    return lambda seq: f"{prefix}{seq & 0xFFFFFFFFFFFF:012X}"


def write_rows(options: SinkOptions, batches: Iterator[pa.RecordBatch], *, tags: dict[str, str]) -> int:
    """Send every row of `batches`; returns the number sent. Raises if any row could not be stored."""
    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    row_id = row_ids(tags, partition)
    # Properties every row of this task shares, encoded once.
    shared = "".join(f"\x02{k}\x01{v}" for k, v in {**tags, PARTITION_ID: str(partition)}.items())
    seq = 0
    with Cluster(options.connection) as cluster, _task_spans(options.producer_group) as tracing:
        router = _Router(cluster, options.batch_size, partition)

        def send(key: Hashable, items: list[bytes]) -> None:
            assert isinstance(key, tuple)
            topic: str = key[0]
            index: int = key[1]
            for attempt in range(options.send_retries + 1):
                q = router.queues(topic)[index]
                try:
                    cluster.send_encoded(q, items, options.producer_group, options.send_timeout_s)
                    return
                except (RemotingError, BrokerError) as exc:
                    if not exc.retriable or attempt == options.send_retries:
                        raise
                    log.warning("send of %d messages to %s/%s failed (%s); retrying", len(items), q.topic, q.key, exc)
                    cluster.route(q.topic, refresh=True)

        batcher = QueueBatcher(send, options.batch_size)
        for rb in batches:
            n = rb.num_rows
            bodies = _column(rb, "body") or [None] * n
            topics = _column(rb, "topic") or [None] * n
            keys = _column(rb, "keys") or [None] * n
            tag_col = _column(rb, "tags") or [None] * n
            props = _column(rb, "properties") or [None] * n
            shard = _column(rb, "shardingKey") or [None] * n
            for i in range(n):
                topic = options.topic or topics[i]
                if not isinstance(topic, str) or not topic:
                    raise MessageValidationError(f"row {seq} of partition {partition} has no topic")
                body = bodies[i]
                if isinstance(body, str):
                    body = body.encode("utf-8")
                if not isinstance(body, bytes) or not body:
                    raise MessageValidationError(f"row {seq} of partition {partition} has an empty or null body")
                text = f"UNIQ_KEY\x01{row_id(seq)}{shared}\x02SPARK_SEQ\x01{seq}"
                if keys[i]:
                    text += f"\x02KEYS\x01{keys[i]}"
                if tag_col[i]:
                    text += f"\x02TAGS\x01{tag_col[i]}"
                if props[i]:
                    text += _user_properties(props[i], seq)  # type: ignore[arg-type]
                if tracing is not None and not _has_context(props[i]):  # type: ignore[arg-type]
                    text += tracing.properties(topic)
                seq += 1
                batcher.add(router.pick(topic, shard[i]), _item(body, text.encode("utf-8")))  # type: ignore[arg-type]
        batcher.flush()
        return batcher.sent


def _has_context(pairs: list[tuple[str, str | None]] | None) -> bool:
    return any(name == otel.TRACEPARENT and value for name, value in pairs or ())


class _TaskSpans:
    """OpenTelemetry in one sink task: a `send <topic>` span per topic, the parent of the rows that
    carry no context of their own (a row with a `traceparent` property continues its own trace)."""

    def __init__(self, tracer: Any, group: str) -> None:
        self._tracer = tracer
        self._group = group
        self._spans: dict[str, tuple[Any, str]] = {}
        self._counts: dict[str, int] = {}

    def properties(self, topic: str) -> str:
        """The encoded trace context properties of `topic`'s span."""
        entry = self._spans.get(topic)
        if entry is None:
            span = otel.start_task_span(self._tracer, "send", topic, self._group, otel.SpanKind.PRODUCER)
            text = "".join(f"\x02{k}\x01{v}" for k, v in otel.context_properties(span).items())
            entry = self._spans[topic] = (span, text)
        self._counts[topic] = self._counts.get(topic, 0) + 1
        return entry[1]

    def end(self, error: BaseException | None) -> None:
        for topic, (span, _) in self._spans.items():
            span.set_attribute("messaging.batch.message_count", self._counts[topic])
            if error is not None:
                span.record_exception(error)
                span.set_status(otel.StatusCode.ERROR, type(error).__name__)
            span.end()


@contextlib.contextmanager
def _task_spans(group: str) -> Iterator[_TaskSpans | None]:
    tracer = otel.tracer() if otel.INSTALLED else None
    if tracer is None:
        yield None
        return
    spans = _TaskSpans(tracer, group)
    try:
        yield spans
    except BaseException as exc:
        spans.end(exc)
        raise
    spans.end(None)


def _context() -> tuple[int, int]:
    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0)


class BatchWriter(DataSourceArrowWriter):
    """`df.write.format("orbitmq").mode("append")`: at-least-once, one job id per save()."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, options)
        self.options = options
        # Made on the driver at planning time, so every task and commit() see the same id.
        self.job_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        partition, attempt = _context()
        rows = write_rows(self.options, iterator, tags={BATCH_ID: self.job_id})
        return SinkCommit(partition, attempt, rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, SinkCommit))
        log.info("orbitmq write %s: %d rows from %d tasks", self.job_id, rows, len(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        done = sum(m.rows for m in messages if isinstance(m, SinkCommit))
        log.warning("orbitmq write %s aborted; %d rows were already stored (at-least-once)", self.job_id, done)


class StreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("orbitmq")`: a replayed micro-batch is sent again with the same ids (exactly-once
    with a duplicate window on the topic, at-least-once without)."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        ctx = TaskContext.get()
        tags: dict[str, str] = {}
        if ctx is not None:
            # The API passes no batch id to write(); Spark sets it as a task property.
            for prop, name in (("streaming.sql.batchId", BATCH_ID), ("sql.streaming.queryId", QUERY_ID)):
                value = ctx.getLocalProperty(prop)
                if value:
                    tags[name] = value
        partition, attempt = _context()
        try:
            rows = write_rows(self.options, iterator, tags=tags)
        except OrbitMQError:
            log.warning("orbitmq stream write of batch %s partition %d failed", tags.get(BATCH_ID), partition)
            raise
        return SinkCommit(partition, attempt, rows)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, SinkCommit))
        log.info("orbitmq stream batch %d: %d rows", batchId, rows)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("orbitmq stream batch %d aborted; Spark will run it again (at-least-once)", batchId)
