"""Connected producers per group (RocketMQ's ProducerManager), as pure state.

Kept so that transaction checks (a later issue) can reach a live connection
of a producer group, and for GET_PRODUCER_CONNECTION_LIST. Connections
expire like consumer ones: on close, on unregister, or without a heartbeat
for the expiry time. The clock is passed in.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from typing import Any

from orbitmq.broker.consumers import ClientChannel


class ProducerRegistry:
    def __init__(self, channel_expired_ms: int = 120_000) -> None:
        self.channel_expired_ms = channel_expired_ms
        self._groups: dict[str, dict[int, ClientChannel]] = {}

    def register(self, group: str, client: ClientChannel) -> None:
        self._groups.setdefault(group, {})[client.channel.id] = client

    def unregister(self, group: str, channel_id: int) -> bool:
        channels = self._groups.get(group)
        if channels is None or channels.pop(channel_id, None) is None:
            return False
        if not channels:
            del self._groups[group]
        return True

    def channel_closed(self, channel_id: int) -> None:
        for group in list(self._groups):
            self.unregister(group, channel_id)

    def scan_expired(self, now_ms: int) -> list[tuple[str, ClientChannel]]:
        dropped: list[tuple[str, ClientChannel]] = []
        for group, channels in list(self._groups.items()):
            for key, client in list(channels.items()):
                if now_ms - client.last_update_ms > self.channel_expired_ms:
                    dropped.append((group, client))
                    self.unregister(group, key)
        return dropped

    def channels(self, group: str) -> list[ClientChannel]:
        return list(self._groups.get(group, {}).values())

    def groups(self) -> list[str]:
        return list(self._groups)

    def find_by_client_id(self, client_id: str) -> ClientChannel | None:
        """Any live connection of the client (request-reply routing)."""
        for channels in self._groups.values():
            for client in channels.values():
                if client.client_id == client_id:
                    return client
        return None

    def connection_json(self, group: str) -> dict[str, Any]:
        """ProducerConnection (§4.10)."""
        return {"connectionSet": [c.connection_json() for c in self.channels(group)]}

    def table_json(self) -> dict[str, Any]:
        """ProducerTableInfo (GET_ALL_PRODUCER_INFO): every group's connections; `remoteIP`
        is written as Java's InetSocketAddress.toString() writes it, "/ip:port"."""
        return {
            "data": {
                group: [
                    {
                        "clientId": c.client_id,
                        "language": c.language,
                        "lastUpdateTimestamp": c.last_update_ms,
                        "remoteIP": f"/{c.channel.addr}",
                        "version": c.version,
                    }
                    for c in channels.values()
                ]
                for group, channels in self._groups.items()
            }
        }
