"""TopicConfig: one topic's queues, permission and flags, as RocketMQ's TopicConfig has them.

One definition for the broker (its topic table and topics.json), the
NameServer (the topics a broker registers, §4.5/§4.6) and the admin tools
(`updateTopic`). Field order and defaults are RocketMQ's: 16 read and 16
write queues (TopicConfig.defaultReadQueueNums/defaultWriteQueueNums), perm
read+write, SINGLE_TAG, no sysflag, not ordered.

`attributes` are RocketMQ 5's topic attributes (``"attributes": {...}`` in
topics.json, ``+key=value`` in UPDATE_AND_CREATE_TOPIC's `attributes` field);
a 4.x topic has none and its JSON form carries no such member. The names
OrbitMQ knows are in `TOPIC_ATTRIBUTES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.jsonfields import JsonFieldError, get_bool, get_int, get_str, json_object
from orbitmq.common.names import PERM_INHERIT, PERM_READ, PERM_WRITE, perm_to_string

SINGLE_TAG = "SINGLE_TAG"
MULTI_TAG = "MULTI_TAG"

DEFAULT_READ_QUEUE_NUMS = 16
DEFAULT_WRITE_QUEUE_NUMS = 16

#: Seconds within which a second send with the same UNIQ_KEY answers the first (broker/dedup.py).
DUPLICATE_WINDOW_ATTRIBUTE = "duplicateDetectionWindowSeconds"
#: A topic's default message time-to-live in ms, 0 for none (broker/expiry.py).
TTL_ATTRIBUTE = "orbitmq.ttl.ms"
#: RocketMQ 5's message type of a topic: what RocketMQ 5 (gRPC) producers may send to it (orbitmq/proxy/).
#: Topics without it (made the 4.x way) accept every type.
MESSAGE_TYPE_ATTRIBUTE = "message.type"
MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")
#: Topic attributes OrbitMQ knows, each with what its value must be (checked by `check_attribute`).
TOPIC_ATTRIBUTES: dict[str, str] = {
    DUPLICATE_WINDOW_ATTRIBUTE: "a whole number of seconds, 0 to 604800",
    TTL_ATTRIBUTE: "a whole number of milliseconds, 0 (none) to 2**53",
    MESSAGE_TYPE_ATTRIBUTE: "one of " + ", ".join(MESSAGE_TYPES),
}


def check_attribute(name: str, value: str) -> str | None:
    """Why `name=value` is not a topic attribute OrbitMQ takes, or None when it is."""
    if name not in TOPIC_ATTRIBUTES:
        return f"unknown topic attribute {name!r} (known: {', '.join(sorted(TOPIC_ATTRIBUTES))})"
    if name == DUPLICATE_WINDOW_ATTRIBUTE and not (value.isdigit() and int(value) <= 604_800):
        return f"topic attribute {name}={value!r}: expected {TOPIC_ATTRIBUTES[name]}"
    if name == TTL_ATTRIBUTE and not (value.isdigit() and int(value) <= 2**53):
        return f"topic attribute {name}={value!r}: expected {TOPIC_ATTRIBUTES[name]}"
    if name == MESSAGE_TYPE_ATTRIBUTE and value.upper() not in MESSAGE_TYPES:
        return f"topic attribute {name}={value!r}: expected {TOPIC_ATTRIBUTES[name]}"
    return None


@dataclass(frozen=True, slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = DEFAULT_READ_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_WRITE_QUEUE_NUMS
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False
    #: RocketMQ 5's topic attributes (name, value), sorted; OrbitMQ reads `orbitmq.ttl.ms` (broker/expiry.py).
    #: (name, value) pairs sorted by name; a tuple so that the config stays hashable.
    attributes: tuple[tuple[str, str], ...] = ()

    def attribute(self, name: str) -> str | None:
        for key, value in self.attributes:
            if key == name:
                return value
        return None

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    @property
    def inheritable(self) -> bool:
        return bool(self.perm & PERM_INHERIT)

    def __str__(self) -> str:
        """TopicConfig.toString() of RocketMQ, which error remarks and mqadmin quote (perm as R/W/X letters)."""
        return (
            f"TopicConfig [topicName={self.topic_name}, readQueueNums={self.read_queue_nums}, "
            f"writeQueueNums={self.write_queue_nums}, perm={perm_to_string(self.perm)}, "
            f"topicFilterType={self.topic_filter_type}, topicSysFlag={self.topic_sys_flag}, "
            f"order={'true' if self.order else 'false'}]"
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], name: str | None = None) -> TopicConfig:
        """Read the bean; `name` (the map key it was stored under) stands in for a missing topicName.

        Missing fields take the defaults; a malformed one raises ValueError naming it.
        """
        obj = json_object(obj, f"topic config {name}" if name else "topic config")
        topic_name = obj.get("topicName") or name
        if not isinstance(topic_name, str) or not topic_name:
            raise JsonFieldError(f"topicName is not a string: {topic_name!r}")
        return cls(
            topic_name=topic_name,
            read_queue_nums=get_int(obj, "readQueueNums", DEFAULT_READ_QUEUE_NUMS),
            write_queue_nums=get_int(obj, "writeQueueNums", DEFAULT_WRITE_QUEUE_NUMS),
            perm=get_int(obj, "perm", PERM_READ | PERM_WRITE),
            topic_filter_type=get_str(obj, "topicFilterType", "") or SINGLE_TAG,
            topic_sys_flag=get_int(obj, "topicSysFlag", 0),
            order=get_bool(obj, "order", False),
            attributes=attributes_from_json(obj.get("attributes")),
        )


def attributes_from_json(raw: object) -> tuple[tuple[str, str], ...]:
    """Attributes as stored in JSON (an object of strings), sorted by name."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise JsonFieldError(f"attributes is not an object: {raw!r}")
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def merge_attributes(current: tuple[tuple[str, str], ...], spec: str) -> tuple[tuple[str, str], ...]:
    """`current` changed by an UPDATE_AND_CREATE_TOPIC `attributes` value ("+a=1,-b").

    Raises ValueError with the reason for a malformed item or an attribute `check_attribute` refuses.
    """
    merged = dict(current)
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        sign, body = item[0], item[1:]
        if sign == "+" and "=" in body:
            name, value = (s.strip() for s in body.split("=", 1))
            problem = check_attribute(name, value)
            if problem:
                raise ValueError(problem)
            merged[name] = value
        elif sign == "-" and body and "=" not in body:
            merged.pop(body.strip(), None)
        else:
            raise ValueError(f"topic attribute {item!r} is neither +name=value nor -name")
    return tuple(sorted(merged.items()))
