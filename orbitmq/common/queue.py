"""MessageQueue: one queue of one topic on one broker, as clients name it.

Ordering is RocketMQ's `MessageQueue.compareTo` (topic, then broker name, then
queue id); rebalance sorts queues this way so that every member of a group,
Java or Python, sees the same list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True, slots=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        """The fastjson form used in lock bodies and object-keyed maps."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MessageQueue:
        return cls(str(obj["topic"]), str(obj["brokerName"]), int(obj["queueId"]))

    def java_str(self) -> str:
        """Java's `MessageQueue.toString()`, the key ConsistentHash allocation hashes."""
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"
