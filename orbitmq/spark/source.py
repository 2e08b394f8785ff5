"""The `orbitmq` Spark data source: batch and micro-batch streaming readers.

Process model (Spark's Python data source API, pyspark >= 4.2): planning
(`partitions`, `latestOffset`, ...) runs in a driver-side Python process, and
`read()` runs in task processes on a pickled copy of the reader. Each task
reads one queue range with its own connections (see reading.py); the
streaming reader keeps one `Cluster` in its long-lived planner process and
never pickles it.

Streaming positions live only in Spark's checkpoint, as the offsets JSON of
offsets.py. With `consumerGroup` set, `commit(end)` also reports the position
to the brokers so OrbitMQ's tools show the pipeline's lag; Spark calls
`commit` one micro-batch late and not for the last batch before a stop, so
that report trails the checkpoint by a batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    In,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from orbitmq.errors import ConfigError, NoRouteError, OrbitMQError
from orbitmq.spark import offsets as offsets_mod
from orbitmq.spark.cluster import Cluster
from orbitmq.spark.offsets import EARLIEST, LATEST, Offsets, QueueRef
from orbitmq.spark.options import SourceOptions, parse_sink_options, parse_source_options
from orbitmq.spark.positions import Bounds, QueueRange, next_end, plan_ranges, resolve
from orbitmq.spark.reading import offset_for_time, read_range
from orbitmq.spark.schema import spark_schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from orbitmq.spark.sink import BatchWriter, StreamWriter

log = logging.getLogger(__name__)

FORMAT = "orbitmq"
BOUNDS_ATTEMPTS = 3
BOUNDS_RETRY_S = 0.5


class RangePartition(InputPartition):
    """One Spark task's work: a QueueRange (picklable)."""

    def __init__(self, value: QueueRange) -> None:
        super().__init__(value)


class OrbitMQDataSource(DataSource):
    """`spark.read/readStream/write/writeStream.format("orbitmq")`. Options: see the package docs."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        include = str(self.options.get("includeProperties", self.options.get("includeproperties", "true")))
        return spark_schema(include.lower() != "false")

    def reader(self, schema: StructType) -> BatchReader:
        options = parse_source_options(self.options, streaming=False)
        _check_read_schema(schema, options)
        # Spark refuses to plan with a reader that has pushFilters unless
        # spark.sql.python.filterPushdown.enabled is set, so it is opt-in.
        return PushdownBatchReader(options) if options.push_filters else BatchReader(options)

    def streamReader(self, schema: StructType) -> StreamReader:
        options = parse_source_options(self.options, streaming=True)
        _check_read_schema(schema, options)
        return StreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> BatchWriter:
        from orbitmq.spark.sink import BatchWriter

        if overwrite:
            raise ConfigError("a topic cannot be overwritten: write with .mode('append')")
        return BatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> StreamWriter:
        from orbitmq.spark.sink import StreamWriter

        # Complete output mode arrives as overwrite=True; a topic cannot be
        # truncated, so each trigger appends the full result (documented).
        return StreamWriter(parse_sink_options(self.options), schema)


def _check_read_schema(schema: StructType, options: SourceOptions) -> None:
    # The API has no column pruning: read() always yields every column, so a
    # user schema must be exactly ours (Spark would fail later, less clearly).
    expected = spark_schema(options.include_properties)
    got = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    want = [(f.name, f.dataType.simpleString()) for f in expected.fields]
    if got != want:
        raise ConfigError(f"the orbitmq source's schema is fixed: {expected.simpleString()}; got "
                          f"{schema.simpleString()} (select columns after load() instead)")


def _queues_and_bounds(c: Cluster, topics: Sequence[str], *, missing_ok: bool) -> tuple[list[QueueRef], Bounds]:
    queues: list[QueueRef] = []
    for topic in topics:
        try:
            queues += c.route(topic, refresh=True).read_queues
        except NoRouteError:
            if not missing_ok:
                raise
            log.info("topic %s does not exist yet; it is picked up once created", topic)
    return queues, {q: (c.min_offset(q), c.max_offset(q)) for q in queues}


def _time_lookup(c: Cluster, options: SourceOptions, bounds: Bounds) -> Any:
    return lambda q, ts: offset_for_time(c, options, q, ts, *bounds[q])


class BatchReader(DataSourceReader):
    """Reads fixed ranges, one task per queue (or per `maxRecordsPerPartition` chunk)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        o = self.options
        with Cluster(o.connection) as c:
            queues, bounds = _queues_and_bounds(c, o.topics, missing_ok=False)
            lookup = _time_lookup(c, o, bounds)
            start = resolve(o.starting or "earliest", queues, bounds, default_missing=EARLIEST, time_lookup=lookup)
            end = resolve(o.ending or "latest", queues, bounds, default_missing=LATEST, time_lookup=lookup)
        # An explicit end past what exists is read up to what exists.
        end = {q: min(off, bounds[q][1]) for q, off in end.items()}
        return [RangePartition(r) for r in plan_ranges(start, end, o.max_records_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # Spark's stand-in when partitions() is empty
            return iter(())
        return read_range(self.options, partition.value)


#: Columns whose equality and IN filters select whole queues, so they can prune tasks exactly.
_QUEUE_COLUMNS = {"topic": lambda q: q.topic, "brokerName": lambda q: q.broker_name, "queueId": lambda q: q.queue_id}


class PushdownBatchReader(BatchReader):
    """A batch reader that plans only the queues that `topic`/`brokerName`/`queueId` filters allow.

    Selected by the option pushFilters=true; Spark also needs
    spark.sql.python.filterPushdown.enabled=true. Filters it does not handle
    are returned to Spark, which applies them to the rows.
    """

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self.allowed: dict[str, frozenset[Any]] = {}

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        rest: list[Filter] = []  # a list, not a generator: the pruning must happen now
        for f in filters:
            if isinstance(f, EqualTo):
                values = frozenset((f.value,))
            elif isinstance(f, In):
                values = frozenset(f.value)
            else:
                rest.append(f)
                continue
            column = f.attribute[0] if len(f.attribute) == 1 else ""
            if column not in _QUEUE_COLUMNS:
                rest.append(f)
                continue
            self.allowed[column] = self.allowed.get(column, values) & values
        return rest

    def partitions(self) -> list[InputPartition]:
        return [p for p in super().partitions()
                if all(_QUEUE_COLUMNS[c](p.value.queue) in vs for c, vs in self.allowed.items())]


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader with per-queue offsets in the checkpoint.

    Admission control: `maxOffsetsPerTrigger` becomes Spark's `ReadMaxRows`
    limit and is split across queues in proportion to their backlog. It
    counts offsets, not rows: messages filtered out by the sub-expression
    still use up the limit.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._cluster: Cluster | None = None  # planner-process state, never pickled
        self._target: Offsets | None = None  # Trigger.AvailableNow cap
        self._latest: Offsets = {}

    def __getstate__(self) -> dict[str, Any]:
        # Tasks get a pickled copy of the reader; connections stay behind.
        return {"options": self.options, "_cluster": None, "_target": None, "_latest": {}}

    def _c(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(self.options.connection)
        return self._cluster

    def _bounds(self) -> Bounds:
        # A failure here fails the whole query, so retriable errors (a broker
        # restarting, a dropped connection) get a few attempts on a fresh
        # connection first, as Spark's Kafka source retries offset fetches.
        for attempt in range(BOUNDS_ATTEMPTS):
            try:
                _, bounds = _queues_and_bounds(self._c(), self.options.topics, missing_ok=True)
                break
            except OrbitMQError as exc:
                self._drop_cluster()
                if not exc.retriable or attempt == BOUNDS_ATTEMPTS - 1:
                    raise
                log.warning("reading queue offsets failed (%s); retrying", exc)
                time.sleep(BOUNDS_RETRY_S)
        self._latest = {q: hi for q, (_, hi) in bounds.items()}
        return bounds

    def _drop_cluster(self) -> None:
        if self._cluster is not None:
            try:
                self._cluster.close()
            finally:
                self._cluster = None

    def initialOffset(self) -> dict[str, Any]:
        o = self.options
        bounds = self._bounds()
        lookup = _time_lookup(self._c(), o, bounds)
        start = resolve(o.starting or "latest", list(bounds), bounds, default_missing=EARLIEST, time_lookup=lookup)
        return offsets_mod.to_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_mod.from_json_dict(start, what="checkpoint offsets")
        bounds = dict(self._bounds())
        if self._target is not None:
            # AvailableNow: never read past what existed when the trigger was prepared.
            bounds = {q: (lo, min(hi, self._target.get(q, lo))) for q, (lo, hi) in bounds.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = next_end(begin, bounds, fail_on_data_loss=self.options.fail_on_data_loss, limit=max_rows)
        return offsets_mod.to_json_dict(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_mod.to_json_dict(self._latest) if self._latest else None

    def prepareForTriggerAvailableNow(self) -> None:
        self._bounds()
        self._target = dict(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = offsets_mod.from_json_dict(start, what="checkpoint offsets")
        stop = offsets_mod.from_json_dict(end, what="checkpoint offsets")
        return [RangePartition(r) for r in plan_ranges(begin, stop, self.options.max_records_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return iter(())
        return read_range(self.options, partition.value)

    def commit(self, end: dict[str, Any]) -> None:
        group = self.options.consumer_group
        if group is None:
            return
        # Advisory only (see the module docs): a failed report is logged, not raised.
        try:
            c = self._c()
            for q, off in offsets_mod.from_json_dict(end, what="committed offsets").items():
                c.update_consumer_offset(group, q, off)
        except OrbitMQError as exc:
            log.warning("could not report offsets of group %s to the brokers: %s", group, exc)
            self._drop_cluster()

    def stop(self) -> None:
        self._drop_cluster()
