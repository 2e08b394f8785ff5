"""TopicConfig: one topic's queues, permission and flags, as RocketMQ's TopicConfig has them.

One definition for the broker (its topic table and topics.json), the
NameServer (the topics a broker registers, §4.5/§4.6) and the admin tools
(`updateTopic`). Field order and defaults are RocketMQ's: 16 read and 16
write queues (TopicConfig.defaultReadQueueNums/defaultWriteQueueNums), perm
read+write, SINGLE_TAG, no sysflag, not ordered.
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
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise JsonFieldError(f"attributes is not an object: {raw!r}")
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))
