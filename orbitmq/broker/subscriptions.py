"""Subscription group configs (RocketMQ's SubscriptionGroupManager), as pure state.

Persisted by the broker as subscriptionGroup.json (`{"dataVersion":…,
"subscriptionGroupTable":{group: SubscriptionGroupConfig}}`, §7.5). A group
unknown to the table is created on first use when autoCreateSubscriptionGroup
is on; otherwise requests for it fail with SUBSCRIPTION_GROUP_NOT_EXIST.

Owned by the broker's event loop; not thread-safe. `SubscriptionGroupConfig` itself is
`orbitmq.common.subscription_group` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orbitmq.broker.config_table import ConfigTable
from orbitmq.common.subscription_group import SubscriptionGroupConfig


class SubscriptionGroupTable(ConfigTable[SubscriptionGroupConfig]):
    """Group name → SubscriptionGroupConfig, with auto-creation and a DataVersion (SubscriptionGroupWrapper)."""

    json_table = "subscriptionGroupTable"

    def __init__(self, auto_create: bool, clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(clock_ms)
        self.auto_create = auto_create

    def name_of(self, config: SubscriptionGroupConfig) -> str:
        return config.group_name

    def read(self, name: str, raw: Mapping[str, Any]) -> SubscriptionGroupConfig:
        return SubscriptionGroupConfig.from_json({"groupName": name, **raw})

    def find_or_create(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; created with defaults if auto-creation is on, else None."""
        config = self.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group)
            self.put(config)
        return config


__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupTable"]
