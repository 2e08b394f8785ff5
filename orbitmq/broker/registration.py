"""Registration with the NameServers: REGISTER_BROKER at start, every 30 s and on topic
changes; UNREGISTER_BROKER at a clean shutdown.

The body is RegisterBrokerBody in its uncompressed JSON form (§4.6) with the
masked CRC32 of the body in the `bodyCrc32` header. Every NameServer gets
the same request concurrently; one that is down only logs a warning (the
next round tries again). `Registrar` owns its periodic task.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from typing import Any

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.topics import TopicTable
from orbitmq.common import jsonbody
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.errors import RemotingError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient

log = logging.getLogger("orbitmq.broker")


def register_body(topics: TopicTable, broker_permission: int) -> bytes:
    """RegisterBrokerBody JSON; topics carry the broker's perm when it is not read-write."""
    wrapper: dict[str, Any] = topics.to_json()
    if broker_permission & (PERM_READ | PERM_WRITE) != PERM_READ | PERM_WRITE:
        for config in wrapper["topicConfigTable"].values():
            config["perm"] = broker_permission
    return jsonbody.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})


class Registrar:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        client: RemotingClient,
        broker_addr: Callable[[], str],
        ha_server_addr: Callable[[], str] | None = None,
        on_registered: Callable[[str, str], None] | None = None,
    ) -> None:
        self.live = live
        self.topics = topics
        self.client = client
        self.broker_addr = broker_addr
        #: The HA address advertised (brokerIP2:haPort, the port actually bound).
        self.ha_server_addr = ha_server_addr
        #: Called with the (masterAddr, haServerAddr) a NameServer answers a slave with.
        self.on_registered = on_registered
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def _header(self) -> dict[str, str]:
        config = self.live.value
        return {
            "brokerName": config.broker_name,
            "brokerAddr": self.broker_addr(),
            "clusterName": config.broker_cluster_name,
            "brokerId": str(config.broker_id),
        }

    async def register_all(self) -> int:
        """Register with every NameServer at once; how many accepted."""
        config = self.live.value
        if not config.namesrv_addrs:
            return 0
        body = register_body(self.topics, config.broker_permission)
        fields = self._header()
        fields.update(
            {
                "haServerAddr": (
                    self.ha_server_addr()
                    if self.ha_server_addr is not None
                    else f"{self.broker_addr().rpartition(':')[0]}:{config.listen_port + 1}"
                ),
                "compressed": "false",
                "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
            }
        )
        timeout = config.register_broker_timeout_mills / 1000
        results = await asyncio.gather(
            *(
                self.client.invoke(addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(fields), body), timeout)
                for addr in config.namesrv_addrs
            ),
            return_exceptions=True,
        )
        accepted = 0
        for addr, result in zip(config.namesrv_addrs, results):
            if isinstance(result, RemotingCommand) and result.code == ResponseCode.SUCCESS:
                accepted += 1
                master_addr = result.field("masterAddr")
                if self.on_registered is not None and master_addr:
                    self.on_registered(master_addr, result.field("haServerAddr") or "")
            elif isinstance(result, RemotingCommand):
                log.warning("NameServer %s refused registration: %s %s", addr, result.code, result.remark)
            elif isinstance(result, (RemotingError, OSError)):
                log.warning("registering with NameServer %s failed: %s", addr, result)
            elif isinstance(result, BaseException):
                raise result
        return accepted

    async def unregister_all(self) -> None:
        config = self.live.value
        timeout = min(config.register_broker_timeout_mills / 1000, 3.0)
        results = await asyncio.gather(
            *(
                self.client.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, self._header()), timeout)
                for addr in config.namesrv_addrs
            ),
            return_exceptions=True,
        )
        for addr, result in zip(config.namesrv_addrs, results):
            if isinstance(result, BaseException):
                log.warning("unregistering from NameServer %s failed: %s", addr, result)

    def topics_changed(self) -> None:
        """Register again soon (coalesced with other changes in the same moment)."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            period = min(max(self.live.value.register_name_server_period, 10_000), 60_000) / 1000
            try:
                await asyncio.wait_for(self._wake.wait(), period)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.register_all()
            except Exception:  # one failed round must not end registration for good
                log.exception("registration round failed")

    async def start(self) -> None:
        await self.register_all()
        self._task = asyncio.ensure_future(self._loop())

    async def close(self, unregister: bool = True) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if unregister:
            await self.unregister_all()
