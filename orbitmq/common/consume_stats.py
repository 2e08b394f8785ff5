"""ConsumeStats: a group's progress per queue on one broker (GET_CONSUME_STATS, §4.11).

One definition for the broker, which answers it (also inside
GET_BROKER_CONSUME_STATS's ConsumeStatsList), and the admin tools, which
read it (`consumerProgress`, offset resets). `offsetTable` is a map keyed by
MessageQueue objects, which fastjson writes with object keys; `to_json`
returns it as a `jsonbody.ObjectKeyMap` for `jsonbody.dumps_legacy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.jsonbody import ObjectKeyMap, object_key_items
from orbitmq.common.jsonfields import JsonFieldError, get_float, get_int, json_object
from orbitmq.common.queue import MessageQueue


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    """One queue: the broker's max offset, the group's committed offset and the store time before it."""

    broker_offset: int
    consumer_offset: int
    last_timestamp: int = 0

    @property
    def diff(self) -> int:
        """Messages not yet consumed (never negative)."""
        return max(0, self.broker_offset - self.consumer_offset)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> OffsetWrapper:
        obj = json_object(obj, "offsetWrapper")
        return cls(get_int(obj, "brokerOffset", 0), get_int(obj, "consumerOffset", 0), get_int(obj, "lastTimestamp", 0))


@dataclass(frozen=True, slots=True)
class ConsumeStats:
    offset_table: Mapping[MessageQueue, OffsetWrapper]
    consume_tps: float = 0.0

    @property
    def diff_total(self) -> int:
        return sum(w.diff for w in self.offset_table.values())

    def to_json(self) -> dict[str, Any]:
        table = ObjectKeyMap((mq.to_json(), w.to_json()) for mq, w in self.offset_table.items())
        return {"consumeTps": self.consume_tps, "offsetTable": table}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ConsumeStats:
        """Read the bean (object keys in fastjson's form or as JSON text); queues come back sorted."""
        obj = json_object(obj, "consumeStats")
        raw = obj.get("offsetTable")
        if raw is not None and not isinstance(raw, (ObjectKeyMap, Mapping)):
            raise JsonFieldError(f"offsetTable is not a map: {type(raw).__name__}")
        table: dict[MessageQueue, OffsetWrapper] = {}
        for key, value in object_key_items(raw):
            try:
                mq = MessageQueue.from_json(key)
            except (KeyError, TypeError, ValueError):
                raise JsonFieldError(f"offsetTable key {key!r} is not a MessageQueue") from None
            table[mq] = OffsetWrapper.from_json(value)
        return cls(dict(sorted(table.items())), get_float(obj, "consumeTps", 0.0))
