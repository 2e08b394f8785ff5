"""Options of the `orbitmq` Spark format, parsed once into frozen dataclasses.

Spark hands a data source its options as a case-insensitive dict whose keys
arrive lower-cased (`namesrvAddr` becomes `namesrvaddr`), so every key here
is matched without regard to case. Unknown keys raise `ConfigError` instead of
being dropped: a mistyped `maxOffsetPerTrigger` must not silently read
everything. Parsing runs on the driver before any task starts, so a bad
option fails the query up front with a message naming the option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from orbitmq.client.config import tls_settings
from orbitmq.errors import ConfigError
from orbitmq.remoting.tls import CLIENT_TLS_KEYS, TlsSettings
from orbitmq.spark import offsets as offsets_mod
from orbitmq.spark.offsets import EARLIEST, LATEST, Offsets

# RocketMQ's topic rule (protocol reference 3.9): these characters, at most 127 of them.
_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]{1,127}$")
_GROUP = re.compile(r"^[%|a-zA-Z0-9_-]{1,255}$")

#: RocketMQ's client-side tls.* keys are connection options too; any of them turns TLS on
#: (unless tls.enable=false). Files they name must exist on the driver and on every executor.
CONNECTION_KEYS = ("namesrvAddr", "accessKey", "secretKey", "requestTimeoutMs", *sorted(CLIENT_TLS_KEYS))
SOURCE_KEYS = (
    "topic", "subExpression", "expressionType", "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "includeProperties", "maxOffsetsPerTrigger",
    "failOnDataLoss", "consumerGroup", "pullBatchSize", "maxRecordsPerPartition", "pushFilters",
)
SINK_KEYS = ("topic", "producerGroup", "batchSize", "sendTimeoutMs", "sendRetries")

#: Options Spark itself puts among a source's or sink's options (lower-cased).
_SPARK_KEYS = frozenset(("checkpointlocation", "path"))

#: Default group name for pull requests; the broker needs one but the source
#: keeps no state in it (positions live in Spark's checkpoint).
DEFAULT_PULL_GROUP = "ORBITMQ_SPARK_READER"
DEFAULT_PRODUCER_GROUP = "ORBITMQ_SPARK_WRITER"


@dataclass(frozen=True)
class TimestampPosition:
    """The first offset whose store time is at or after `timestamp_ms`, per queue."""

    timestamp_ms: int


#: Where a read starts or ends: "earliest", "latest", per-queue offsets
#: (values may be EARLIEST/LATEST), or a store timestamp.
Position = Literal["earliest", "latest"] | Offsets | TimestampPosition


@dataclass(frozen=True)
class ConnectionOptions:
    """How to reach the cluster. Credentials sign every request (RocketMQ plain ACL)."""

    namesrv_addr: str
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    request_timeout_s: float = 10.0  # generous: a worker may reach a busy broker
    tls: TlsSettings | None = None


@dataclass(frozen=True)
class SourceOptions:
    connection: ConnectionOptions
    topics: tuple[str, ...]
    sub_expression: str = "*"
    expression_type: Literal["TAG", "SQL92"] = "TAG"
    starting: Position | None = None  # None: the mode's default (earliest batch, latest stream)
    ending: Position | None = None
    include_properties: bool = True
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    consumer_group: str | None = None
    # 1,024 per pull: the broker caps a pull by its own limits anyway, and
    # larger requests mean fewer round trips on a backlog.
    pull_batch_size: int = 1024
    max_records_per_partition: int | None = None
    push_filters: bool = False

    @property
    def pull_group(self) -> str:
        return self.consumer_group or DEFAULT_PULL_GROUP


@dataclass(frozen=True)
class SinkOptions:
    connection: ConnectionOptions
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    # Messages per SEND_BATCH_MESSAGE; a batch is also cut at 1 MiB of bodies
    # to stay well under the broker's 4 MiB message limit.
    batch_size: int = 256
    send_timeout_s: float = 10.0
    send_retries: int = 2


class _Opts:
    """A case-insensitive view over the raw options that remembers what was used."""

    def __init__(self, raw: Mapping[str, str], allowed: tuple[str, ...]) -> None:
        self._raw = {k.lower(): v for k, v in raw.items() if k.lower() not in _SPARK_KEYS}
        self._names = {k.lower(): k for k in allowed}
        unknown = sorted(k for k in self._raw if k not in self._names)
        if unknown:
            raise ConfigError(
                f"unknown option(s) {', '.join(unknown)} for the orbitmq format; "
                f"known: {', '.join(sorted(allowed))}"
            )

    def get(self, name: str) -> str | None:
        value = self._raw.get(name.lower())
        return None if value is None or value == "" else value

    def int(self, name: str, default: int | None, *, minimum: int) -> int | None:
        text = self.get(name)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"option {name} must be an integer, got {text!r}") from None
        if value < minimum:
            raise ConfigError(f"option {name} must be at least {minimum}, got {value}")
        return value

    def bool(self, name: str, default: bool) -> bool:
        text = self.get(name)
        if text is None:
            return default
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigError(f"option {name} must be true or false, got {text!r}")


def _connection(opts: _Opts) -> ConnectionOptions:
    addr = opts.get("namesrvAddr")
    if addr is None:
        raise ConfigError("option namesrvAddr is required (host:port of a NameServer, ';' between several)")
    for one in addr.split(";"):
        host, sep, port = one.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"option namesrvAddr: {one!r} is not host:port")
    access, secret = opts.get("accessKey"), opts.get("secretKey")
    if (access is None) != (secret is None):
        raise ConfigError("options accessKey and secretKey must be given together")
    timeout_ms = opts.int("requestTimeoutMs", 10_000, minimum=1)
    assert timeout_ms is not None
    tls_props = {key: value for key in sorted(CLIENT_TLS_KEYS) if (value := opts.get(key)) is not None}
    tls = tls_settings(tls_props) if tls_props else None
    if tls is not None:
        tls.client_context()  # unreadable files fail the query up front, naming the key
    return ConnectionOptions(addr, access, secret, timeout_ms / 1000.0, tls)


def _topic(name: str, what: str) -> str:
    if not _TOPIC.match(name):
        raise ConfigError(f"{what}: {name!r} is not a valid topic name (^[%|a-zA-Z0-9_-]+$, at most 127 chars)")
    return name


def _position(opts: _Opts, offsets_key: str, ts_key: str) -> Position | None:
    ts = opts.int(ts_key, None, minimum=0)
    text = opts.get(offsets_key)
    if ts is not None:
        if text is not None:
            raise ConfigError(f"options {offsets_key} and {ts_key} cannot be used together")
        return TimestampPosition(ts)
    if text is None:
        return None
    if text.strip().lower() in ("earliest", "latest"):
        return "earliest" if text.strip().lower() == "earliest" else "latest"
    return offsets_mod.parse_json(text, allow_special=True, what=f"option {offsets_key}")


def parse_source_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Parse and check reader options; `streaming` selects the mode's rules and defaults."""
    opts = _Opts(raw, CONNECTION_KEYS + SOURCE_KEYS)
    topic_text = opts.get("topic")
    if topic_text is None:
        raise ConfigError("option topic is required (one topic or a comma-separated list)")
    topics = tuple(dict.fromkeys(_topic(t.strip(), "option topic") for t in topic_text.split(",")))
    expression_type = (opts.get("expressionType") or "TAG").upper()
    if expression_type not in ("TAG", "SQL92"):
        raise ConfigError(f"option expressionType must be TAG or SQL92, got {expression_type!r}")
    starting = _position(opts, "startingOffsets", "startingTimestamp")
    ending = _position(opts, "endingOffsets", "endingTimestamp")
    _check_positions(starting, ending, topics, streaming)
    group = opts.get("consumerGroup")
    if group is not None and not _GROUP.match(group):
        raise ConfigError(f"option consumerGroup: {group!r} is not a valid group name")
    max_per_trigger = opts.int("maxOffsetsPerTrigger", None, minimum=1)
    if max_per_trigger is not None and not streaming:
        raise ConfigError("option maxOffsetsPerTrigger applies to streaming reads only")
    pull_batch = opts.int("pullBatchSize", 1024, minimum=1)
    assert pull_batch is not None
    return SourceOptions(
        connection=_connection(opts),
        topics=topics,
        sub_expression=(opts.get("subExpression") or "*").strip(),
        expression_type="SQL92" if expression_type == "SQL92" else "TAG",
        starting=starting,
        ending=ending,
        include_properties=opts.bool("includeProperties", True),
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=opts.bool("failOnDataLoss", True),
        consumer_group=group,
        pull_batch_size=min(pull_batch, 32_768),
        max_records_per_partition=opts.int("maxRecordsPerPartition", None, minimum=1),
        push_filters=_push_filters(opts, streaming),
    )


def _push_filters(opts: _Opts, streaming: bool) -> bool:
    push = opts.bool("pushFilters", False)
    if push and streaming:
        raise ConfigError("option pushFilters applies to batch reads only (Spark pushes no filters to streams)")
    return push


def _check_positions(starting: Position | None, ending: Position | None, topics: tuple[str, ...],
                     streaming: bool) -> None:
    for pos, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if isinstance(pos, dict):
            stray = sorted({q.topic for q in pos} - set(topics))
            if stray:
                raise ConfigError(f"option {name} names topic(s) {', '.join(stray)} not in option topic")
    if streaming and ending is not None:
        raise ConfigError("endingOffsets / endingTimestamp apply to batch reads only")
    if streaming:
        return
    # As in Spark's Kafka source: a batch read from "latest" would always be
    # empty, and an end at "earliest" likewise, so both are refused.
    if starting == "latest" or (isinstance(starting, dict) and LATEST in starting.values()):
        raise ConfigError("startingOffsets 'latest' (or -1) is not allowed for batch reads")
    if ending == "earliest" or (isinstance(ending, dict) and EARLIEST in ending.values()):
        raise ConfigError("endingOffsets 'earliest' (or -2) is not allowed for batch reads")


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    """Parse and check writer options."""
    opts = _Opts(raw, CONNECTION_KEYS + SINK_KEYS)
    topic = opts.get("topic")
    group = opts.get("producerGroup") or DEFAULT_PRODUCER_GROUP
    if not _GROUP.match(group):
        raise ConfigError(f"option producerGroup: {group!r} is not a valid group name")
    batch = opts.int("batchSize", 256, minimum=1)
    timeout_ms = opts.int("sendTimeoutMs", 10_000, minimum=1)
    retries = opts.int("sendRetries", 2, minimum=0)
    assert batch is not None and timeout_ms is not None and retries is not None
    return SinkOptions(
        connection=_connection(opts),
        topic=None if topic is None else _topic(topic.strip(), "option topic"),
        producer_group=group,
        batch_size=min(batch, 4096),
        send_timeout_s=timeout_ms / 1000.0,
        send_retries=retries,
    )
