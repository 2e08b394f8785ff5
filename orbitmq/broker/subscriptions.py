"""Subscription group configs (RocketMQ's SubscriptionGroupManager), as pure state.

Persisted by the broker as subscriptionGroup.json (`{"dataVersion":…,
"subscriptionGroupTable":{group: SubscriptionGroupConfig}}`, §7.5). A group
unknown to the table is created on first use when autoCreateSubscriptionGroup
is on; otherwise requests for it fail with SUBSCRIPTION_GROUP_NOT_EXIST.

Owned by the broker's event loop; not thread-safe. `SubscriptionGroupConfig` itself is
`orbitmq.common.subscription_group` (re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from orbitmq.common.dataversion import DataVersion
from orbitmq.common.subscription_group import SubscriptionGroupConfig


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


__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupTable"]
