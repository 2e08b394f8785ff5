"""Subscription group configs (RocketMQ's SubscriptionGroupManager), as pure state.

Persisted by the broker as subscriptionGroup.json (`{"dataVersion":…,
"subscriptionGroupTable":{group: SubscriptionGroupConfig}}`, §7.5). A group
unknown to the table is created on first use when autoCreateSubscriptionGroup
is on; otherwise requests for it fail with SUBSCRIPTION_GROUP_NOT_EXIST.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.broker.dataversion import DataVersion


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """A consumer group's settings with RocketMQ's defaults (§4.13)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SubscriptionGroupConfig:
        """Read the JSON shape; missing fields take the defaults. Raises ValueError without a name."""
        name = obj.get("groupName")
        if not isinstance(name, str) or not name:
            raise ValueError("subscription group config has no groupName")

        def flag(key: str, default: bool) -> bool:
            value = obj.get(key, default)
            if isinstance(value, str):
                return value.lower() == "true"
            return bool(value)

        return cls(
            group_name=name,
            consume_enable=flag("consumeEnable", True),
            consume_from_min_enable=flag("consumeFromMinEnable", True),
            consume_broadcast_enable=flag("consumeBroadcastEnable", True),
            retry_queue_nums=int(obj.get("retryQueueNums", 1)),
            retry_max_times=int(obj.get("retryMaxTimes", 16)),
            broker_id=int(obj.get("brokerId", 0)),
            which_broker_when_consume_slowly=int(obj.get("whichBrokerWhenConsumeSlowly", 1)),
            notify_consumer_ids_changed_enable=flag("notifyConsumerIdsChangedEnable", True),
        )


class SubscriptionGroupTable:
    """Group name → SubscriptionGroupConfig, with auto-creation and a DataVersion."""

    def __init__(self, auto_create: bool, clock_ms: Callable[[], int] | None = None) -> None:
        self.auto_create = auto_create
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._groups: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion(self._clock_ms(), 0)

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self._groups.get(group)

    def find_or_create(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; created with defaults if auto-creation is on, else None."""
        config = self._groups.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group)
            self.put(config)
        return config

    def put(self, config: SubscriptionGroupConfig) -> bool:
        if self._groups.get(config.group_name) == config:
            return False
        self._groups[config.group_name] = config
        self.data_version = self.data_version.next(self._clock_ms())
        return True

    def delete(self, group: str) -> bool:
        if self._groups.pop(group, None) is None:
            return False
        self.data_version = self.data_version.next(self._clock_ms())
        return True

    def __iter__(self) -> Iterator[SubscriptionGroupConfig]:
        return iter(list(self._groups.values()))

    def __contains__(self, group: object) -> bool:
        return group in self._groups

    def to_json(self) -> dict[str, Any]:
        """SubscriptionGroupWrapper: subscriptionGroup.json and GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {name: cfg.to_json() for name, cfg in self._groups.items()},
        }

    def load_json(self, obj: Mapping[str, Any]) -> None:
        table = obj.get("subscriptionGroupTable") or {}
        self._groups = {}
        for name, raw in table.items():
            config = SubscriptionGroupConfig.from_json({"groupName": name, **raw})
            self._groups[config.group_name] = config
        self.data_version = DataVersion.from_json(obj.get("dataVersion"))
