"""SubscriptionGroupConfig: a consumer group's settings on a broker (§4.13), with RocketMQ's defaults.

One definition for the broker (its group table and subscriptionGroup.json)
and the admin tools (`updateSubGroup`, `getConsumerConfig`). Field order is
RocketMQ 5's; `consumeMessageOrderly` and `groupRetryPolicy` are RocketMQ 5's fields (4.x tools
and clients ignore them; a 4.x body without them takes their defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.jsonfields import JsonFieldError, get_bool, get_int, get_name, json_object
from orbitmq.common.retry_policy import DEFAULT_GROUP_RETRY_POLICY, GroupRetryPolicy
from orbitmq.common.topic_config import attributes_from_json

INT32_MAX = 2**31 - 1

#: Broker id of a master (consumers read from it unless told otherwise).
MASTER_ID = 0


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    #: RocketMQ 5: the group consumes in order (FIFO). The gRPC front tells its clients so
    #: (Settings `subscription.fifo`), assigns them every queue and pops with `order`.
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    #: RocketMQ 5: the delays before a failed message comes back (Settings backoff of RocketMQ 5 consumers).
    group_retry_policy: GroupRetryPolicy = DEFAULT_GROUP_RETRY_POLICY
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    #: RocketMQ 5's group attributes (name, value), sorted; OrbitMQ reads `orbitmq.expired.policy`.
    attributes: tuple[tuple[str, str], ...] = ()

    @property
    def max_delivery_attempts(self) -> int:
        """RocketMQ 5's consumer max attempts: retryMaxTimes + 1 (the first delivery and its retries),
        at most the largest int32 (the Settings field's type; retryMaxTimes may be that largest already)."""
        return min(self.retry_max_times + 1, INT32_MAX)

    def attribute(self, name: str) -> str | None:
        return dict(self.attributes).get(name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "consumeMessageOrderly": self.consume_message_orderly,
            "groupName": self.group_name,
            "groupRetryPolicy": self.group_retry_policy.to_json(),
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SubscriptionGroupConfig:
        """Read the bean; missing fields take the defaults. Raises ValueError without a name or for a bad field."""
        obj = json_object(obj, "subscription group config")
        return cls(
            group_name=get_name(obj, "groupName", "subscription group config"),
            consume_enable=get_bool(obj, "consumeEnable", True),
            consume_from_min_enable=get_bool(obj, "consumeFromMinEnable", True),
            consume_broadcast_enable=get_bool(obj, "consumeBroadcastEnable", True),
            consume_message_orderly=get_bool(obj, "consumeMessageOrderly", False),
            retry_queue_nums=get_int(obj, "retryQueueNums", 1),
            retry_max_times=get_int(obj, "retryMaxTimes", 16),
            group_retry_policy=GroupRetryPolicy.from_json(obj.get("groupRetryPolicy")),
            broker_id=get_int(obj, "brokerId", MASTER_ID),
            which_broker_when_consume_slowly=get_int(obj, "whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=get_bool(obj, "notifyConsumerIdsChangedEnable", True),
            attributes=attributes_from_json(obj.get("attributes")),
        )


def alter_attributes(current: tuple[tuple[str, str], ...], requested: object) -> tuple[tuple[str, str], ...]:
    """A group's attributes after an UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body's `attributes`.

    RocketMQ 5's mqadmin (`updateSubGroup --attributes +a=1,-b`) sends changes: `{"+a": "1", "-b": ""}`,
    applied to the group's current attributes; a body without attributes keeps them. A map of plain
    names (a listed or exported group sent back) replaces them. Raises ValueError for a malformed map.
    """
    if requested is None:
        return current
    changes = attributes_from_json(requested)
    if not changes:
        return current
    signed = [name[:1] in ("+", "-") for name, _ in changes]
    if not any(signed):
        return changes
    if not all(signed):
        raise JsonFieldError("attributes mix changes (+name, -name) with plain names")
    merged = dict(current)
    for name, value in changes:
        key = name[1:].strip()
        if not key:
            raise JsonFieldError(f"attribute change {name!r} names no attribute")
        if name[0] == "+":
            merged[key] = value
        else:
            merged.pop(key, None)
    return tuple(sorted(merged.items()))
