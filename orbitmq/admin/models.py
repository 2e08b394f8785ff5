"""What the admin API returns: routes, cluster tables, queue statistics, configs.

Each type is built from the fastjson body RocketMQ peers send (protocol
reference §4) by one `from_json` function. Everything is immutable and sorted
the way mqadmin prints it. The value types every side shares (routes, cluster
info, topic and subscription group configs, consume stats, pull results) are
`orbitmq.common`'s, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.client.queue import MessageQueue
from orbitmq.common.consume_stats import ConsumeStats, OffsetWrapper
from orbitmq.common.names import perm_to_string
from orbitmq.common.pull import PullResult, PullStatus
from orbitmq.common.route import BrokerData, ClusterInfo, QueueData, TopicRouteData
from orbitmq.common.subscription_group import SubscriptionGroupConfig
from orbitmq.common.topic_config import TopicConfig

#: RocketMQ's `PermName.perm2String`: `RW-`, `R--`, `RWX` (X = inherit).
perm_text = perm_to_string


@dataclass(frozen=True, slots=True)
class QueueStat:
    """One queue of TopicStatsTable (§4.11)."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True, slots=True)
class Connection:
    """One client connection of a consumer group (ConsumerConnection.connectionSet, §4.10)."""

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST: who is online in a group and what it subscribes to."""

    connections: tuple[Connection, ...]
    #: topic -> subscription expression
    subscriptions: Mapping[str, str]
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ConsumerConnection:
        conns = sorted(
            (
                Connection(str(c.get("clientId", "")), str(c.get("clientAddr", "")), str(c.get("language", "")),
                           int(c.get("version", 0)))
                for c in obj.get("connectionSet") or []
            ),
            key=lambda c: c.client_id,
        )
        subs = {str(t): str((d or {}).get("subString", "")) for t, d in (obj.get("subscriptionTable") or {}).items()}
        return cls(
            tuple(conns), dict(sorted(subs.items())), str(obj.get("consumeType") or ""),
            str(obj.get("messageModel") or ""), str(obj.get("consumeFromWhere") or ""),
        )


__all__ = [
    "BrokerData",
    "ClusterInfo",
    "Connection",
    "ConsumeStats",
    "ConsumerConnection",
    "OffsetWrapper",
    "PullResult",
    "PullStatus",
    "QueueData",
    "QueueStat",
    "SubscriptionGroupConfig",
    "TopicConfig",
    "TopicRouteData",
    "perm_text",
]
