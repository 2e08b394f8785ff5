"""Positions in a set of queues, as Spark keeps them in its checkpoint.

The JSON shape is the same in the checkpoint and in the `startingOffsets` /
`endingOffsets` options, so an `endOffset` copied from a query's progress can
be pasted into `startingOffsets`::

    {"orders": {"broker-a:0": 1200, "broker-a:1": 1187}}

Keys are strings because Spark round-trips offsets through JSON (integer keys
would come back as strings). A queue key is `<brokerName>:<queueId>`, parsed
with `rsplit(":", 1)` so broker names may contain colons. In option JSON the
values -2 and -1 mean "earliest" and "latest", as in Spark's Kafka source.
This shape is a compatibility contract: later releases must still read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from orbitmq.errors import ConfigError

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True, order=True, slots=True)
class QueueRef:
    """One queue of one topic on one broker group, ordered as RocketMQ orders queues."""

    topic: str
    broker_name: str
    queue_id: int

    @property
    def key(self) -> str:
        return f"{self.broker_name}:{self.queue_id}"

    @classmethod
    def parse(cls, topic: str, key: str) -> QueueRef:
        broker, sep, qid = key.rpartition(":")
        if not sep or not broker or not qid.lstrip("-").isdigit():
            raise ConfigError(f"queue key {key!r} of topic {topic!r} is not '<brokerName>:<queueId>'")
        queue_id = int(qid)
        if queue_id < 0:
            raise ConfigError(f"queue key {key!r} of topic {topic!r} has a negative queue id")
        return cls(topic, broker, queue_id)


#: A position per queue: the next offset to read (exclusive end of what was read).
Offsets = dict[QueueRef, int]


def to_json_dict(offsets: Mapping[QueueRef, int]) -> dict[str, dict[str, int]]:
    """The checkpoint form: topics and queue keys sorted, so equal positions give equal JSON."""
    out: dict[str, dict[str, int]] = {}
    for q in sorted(offsets):
        out.setdefault(q.topic, {})[q.key] = int(offsets[q])
    return out


def from_json_dict(obj: object, *, allow_special: bool = False, what: str = "offsets") -> Offsets:
    """Parse the JSON-dict form; `allow_special` admits -2 (earliest) and -1 (latest)."""
    if not isinstance(obj, dict):
        raise ConfigError(f"{what} must be a JSON object of topic -> {{'broker:queueId': offset}}")
    out: Offsets = {}
    for topic, queues in obj.items():
        if not isinstance(topic, str) or not topic:
            raise ConfigError(f"{what}: topic names must be non-empty strings")
        if not isinstance(queues, dict):
            raise ConfigError(f"{what}: topic {topic!r} must map to an object of 'broker:queueId' -> offset")
        for key, value in queues.items():
            q = QueueRef.parse(topic, str(key))
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{what}: offset of {topic}/{key} must be an integer, got {value!r}")
            floor = EARLIEST if allow_special else 0
            if value < floor:
                raise ConfigError(f"{what}: offset of {topic}/{key} is {value}, below {floor}")
            out[q] = value
    return out


def parse_json(text: str, *, allow_special: bool = True, what: str = "offsets") -> Offsets:
    """Parse an offsets option given as JSON text."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{what} is neither 'earliest', 'latest' nor valid JSON: {exc}") from None
    return from_json_dict(obj, allow_special=allow_special, what=what)


def split_limit(start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], limit: int) -> Offsets:
    """Cap the total of `end - start` over all queues at `limit`, in proportion to each backlog.

    Queues get `floor(limit * backlog / total)` and the remainder goes to the
    largest fractions (ties by queue order), so the result never exceeds the
    limit, never moves a queue past its `end`, and is deterministic. Every
    queue of `end` must be in `start`.
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    backlog = {q: max(0, end[q] - start[q]) for q in end}
    total = sum(backlog.values())
    if total <= limit:
        return dict(end)
    shares: dict[QueueRef, int] = {}
    remainders: list[tuple[int, QueueRef]] = []
    for q in sorted(backlog):
        whole, frac = divmod(limit * backlog[q], total)
        shares[q] = whole
        remainders.append((-frac, q))
    leftover = limit - sum(shares.values())
    for _, q in sorted(remainders)[:leftover]:
        shares[q] += 1
    return {q: start[q] + shares[q] for q in end}
