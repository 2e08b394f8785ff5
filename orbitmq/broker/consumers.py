"""Connected consumers per group (RocketMQ's ConsumerManager), as pure state.

A HEART_BEAT registers the client's connection and its subscriptions under
each consumer group it lists. Membership changes (a new connection, an
unregister, a closed connection, a connection silent for the expiry time)
are returned to the caller, which sends NOTIFY_CONSUMER_IDS_CHANGED to the
group's members; this module never does I/O. The clock is passed in.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class Channel(Protocol):
    """The part of a remoting Peer the registries need."""

    @property
    def id(self) -> int: ...

    @property
    def addr(self) -> str: ...


@dataclass(slots=True)
class ClientChannel:
    """One client connection as heartbeats describe it."""

    channel: Any
    client_id: str
    language: str
    version: int
    last_update_ms: int

    def connection_json(self) -> dict[str, Any]:
        """The Connection shape of §4.10."""
        return {
            "clientAddr": self.channel.addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }


@dataclass(frozen=True, slots=True)
class Subscription:
    """A consumer's subscription to one topic (SubscriptionData, §4.7)."""

    topic: str
    sub_string: str = "*"
    tags_set: tuple[str, ...] = ()
    code_set: frozenset[int] = frozenset()
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    @property
    def matches_all(self) -> bool:
        return self.sub_string in ("*", "") or not self.code_set and not self.tags_set

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Subscription:
        codes = frozenset(_to_int32(c) for c in obj.get("codeSet") or ())
        return cls(
            topic=str(obj["topic"]),
            sub_string=str(obj.get("subString") or "*"),
            tags_set=tuple(str(t) for t in obj.get("tagsSet") or ()),
            code_set=codes,
            sub_version=int(obj.get("subVersion") or 0),
            expression_type=str(obj.get("expressionType") or "TAG"),
            class_filter_mode=bool(obj.get("classFilterMode", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }


def _to_int32(value: Any) -> int:
    """Tag codes compared as signed 32-bit ints, whatever width the client wrote."""
    v = int(value) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


@dataclass(slots=True)
class ConsumerGroupInfo:
    group_name: str
    consume_type: str
    message_model: str
    consume_from_where: str
    channels: dict[int, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]

    def connection_json(self) -> dict[str, Any]:
        """ConsumerConnection (§4.10)."""
        return {
            "connectionSet": [c.connection_json() for c in self.channels.values()],
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "messageModel": self.message_model,
            "subscriptionTable": {t: s.to_json() for t, s in self.subscriptions.items()},
        }


class ConsumerRegistry:
    """Consumer groups and their live connections."""

    def __init__(self, channel_expired_ms: int = 120_000) -> None:
        self.channel_expired_ms = channel_expired_ms
        self._groups: dict[str, ConsumerGroupInfo] = {}

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self._groups.get(group)

    def groups(self) -> list[str]:
        return list(self._groups)

    def subscription(self, group: str, topic: str) -> Subscription | None:
        info = self._groups.get(group)
        return info.subscriptions.get(topic) if info else None

    def groups_subscribing(self, topic: str) -> list[str]:
        return [g for g, info in self._groups.items() if topic in info.subscriptions]

    def register(
        self,
        group: str,
        client: ClientChannel,
        *,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: Iterable[Subscription],
    ) -> bool:
        """Record a heartbeat. Returns True when the group's membership changed."""
        info = self._groups.get(group)
        if info is None:
            info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
            self._groups[group] = info
        info.consume_type = consume_type
        info.message_model = message_model
        info.consume_from_where = consume_from_where
        key = client.channel.id
        old = info.channels.get(key)
        changed = old is None or old.client_id != client.client_id
        info.channels[key] = client
        # A heartbeat carries the whole subscription set: replace, but keep
        # an existing entry whose version is newer (a late heartbeat must not
        # roll a subscription back).
        fresh: dict[str, Subscription] = {}
        for sub in subscriptions:
            current = info.subscriptions.get(sub.topic)
            fresh[sub.topic] = current if current and current.sub_version > sub.sub_version else sub
        info.subscriptions = fresh
        return changed

    def unregister(self, group: str, channel_id: int) -> bool:
        """Remove one connection from a group. Returns True when it was a member."""
        info = self._groups.get(group)
        if info is None or info.channels.pop(channel_id, None) is None:
            return False
        if not info.channels:
            del self._groups[group]
        return True

    def channel_closed(self, channel_id: int) -> list[str]:
        """Drop a closed connection everywhere; the groups whose membership changed."""
        return [g for g in list(self._groups) if self.unregister(g, channel_id)]

    def scan_expired(self, now_ms: int) -> list[tuple[str, ClientChannel]]:
        """Drop connections without a heartbeat for the expiry time; what was dropped."""
        dropped: list[tuple[str, ClientChannel]] = []
        for group, info in list(self._groups.items()):
            for key, client in list(info.channels.items()):
                if now_ms - client.last_update_ms > self.channel_expired_ms:
                    dropped.append((group, client))
                    self.unregister(group, key)
        return dropped

    def find_channel(self, group: str, client_id: str) -> ClientChannel | None:
        info = self._groups.get(group)
        if info is None:
            return None
        for client in info.channels.values():
            if client.client_id == client_id:
                return client
        return None

    def is_alive(self, group: str, client_id: str) -> bool:
        return self.find_channel(group, client_id) is not None
