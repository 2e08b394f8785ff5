"""The NameServer: route table + KV table + handlers behind a RemotingServer.

    ns = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0))
    host, port = await ns.start()
    ...
    await ns.close()

Ownership: the route table, the KV table and the live config belong to the
event loop that called `start()`; handlers, the disconnect callback and the
scan task all run there, so none of them needs a lock. Only the KV file write
runs in a worker thread, on a snapshot taken on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType
from typing import Self

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.resources import rule_for
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.handlers import NamesrvHandlers, RequestGate
from orbitmq.namesrv.kvconfig import KVConfig, KVConfigFile
from orbitmq.namesrv.routes import RouteTable
from orbitmq.remoting.budget import MemoryBudget
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import Peer, RemotingServer

log = logging.getLogger("orbitmq.namesrv")


class NameServer:
    """A RocketMQ-compatible name server.

    Guarantees: `start()` returns once the socket is bound (port 0 resolved)
    and the KV table is loaded; a broker's routes disappear as soon as the
    connection it last registered over closes, or when it stays silent longer
    than `broker_channel_expired_time_ms` (checked every
    `scan_not_active_broker_interval_ms`); a successful PUT/DELETE_KV_CONFIG
    answer means kvConfig.json holds the change. `close()` stops accepting,
    closes connections, stops the scan and waits for KV writes in progress.
    """

    def __init__(self, config: NamesrvConfig) -> None:
        self._config = config
        self.routes = RouteTable(default_expiry_ms=config.broker_channel_expired_time_ms)
        self.kv = KVConfig()
        self._kv_file = KVConfigFile(config.kv_config_path)
        self._kv_lock = asyncio.Lock()
        self._server: RemotingServer | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._acl: AclValidator | None = None
        self._acl_task: asyncio.Task[None] | None = None

    @property
    def config(self) -> NamesrvConfig:
        """The live configuration (UPDATE_NAMESRV_CONFIG replaces it)."""
        return self._config

    def _set_config(self, config: NamesrvConfig) -> None:
        self._config = config
        self.routes.default_expiry_ms = config.broker_channel_expired_time_ms

    async def start(self) -> tuple[str, int]:
        """Load kvConfig.json, bind, start the broker scan; returns the bound (host, port)."""
        if self._server is not None:
            raise RuntimeError("NameServer already started")
        self.kv = await asyncio.to_thread(self._kv_file.load)
        handlers = NamesrvHandlers(self.routes, self.kv, self._persist_kv, lambda: self._config, self._set_config)
        server = RemotingServer(
            self._config.listen_host, self._config.listen_port, max_frame_length=self._config.max_frame_length,
            tls=self._config.tls.server_tls(),
            memory_budget=MemoryBudget(self._config.remoting_memory_budget),
            backlog=self._config.server_socket_backlog,
        )
        handlers.register_on(server, self._acl_gate())
        server.on_disconnect(self._on_disconnect)
        host, port = await server.start()
        self._server = server
        self._scan_task = asyncio.create_task(self._scan_loop(), name="namesrv-scan-not-active-broker")
        if self._acl is not None:
            self._acl_task = asyncio.create_task(self._acl.watch(), name="namesrv-acl-reload")
        log.info("namesrv started on %s:%d, kv config %s", host, port, self._config.kv_config_path)
        return host, port

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); only valid after `start()`."""
        if self._server is None:
            raise RuntimeError("NameServer not started")
        return self._server.address

    async def close(self) -> None:
        """Stop accepting and scanning, close connections, finish KV writes. Safe to call twice."""
        if self._acl_task is not None:
            self._acl_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._acl_task
            self._acl_task = None
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
            self._scan_task = None
        if self._server is not None:
            await self._server.close()
            self._server = None
        # A write that a handler started finishes before we return.
        async with self._kv_lock:
            pass

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- internals ------------------------------------------------------------------

    def _acl_gate(self) -> RequestGate | None:
        """With aclEnable: writes need a signed request of an admin account (the rule table of
        the plain ACL shared with the broker, broker/acl/resources.py); reads stay open."""
        if not self._config.acl_enable:
            return None
        acl = AclValidator(self._config.acl_file)
        try:
            acl.load()
        except AclError as exc:
            raise ConfigError(f"aclEnable=true but {exc}") from None
        self._acl = acl

        def gate(request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
            if not rule_for(request.code).admin:
                return None
            try:
                acl.check(request, peer.host)
            except AclError as exc:
                log.warning("refused request code %d from %s: %s", request.code, peer.addr, exc)
                return request.response(exc.code, str(exc))
            return None

        return gate

    async def _persist_kv(self) -> None:
        # Writes are serialized; each writes the table as it is when its turn comes,
        # so the last write always holds every change answered before it.
        async with self._kv_lock:
            data = self.kv.to_json()
            await asyncio.to_thread(self._kv_file.write, data)

    def _on_disconnect(self, peer: Peer) -> None:
        for addr in self.routes.on_connection_closed(peer.id):
            log.info("broker %s removed: its connection %s closed", addr, peer.addr)

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.scan_not_active_broker_interval_ms / 1000)
            try:
                self._scan_once()
            except Exception:
                # A bug here must not end the scanning for the life of the server.
                log.exception("scan for silent brokers failed")

    def _scan_once(self) -> None:
        expired = self.routes.scan_not_active_brokers()
        if not expired:
            return
        by_id = {p.id: p for p in self._server.peers} if self._server else {}
        for addr, connection_id in expired:
            log.warning("broker %s removed: silent for more than %d ms", addr, self.routes.default_expiry_ms)
            # Close its connection as RocketMQ does; a live broker reconnects and re-registers.
            peer = by_id.get(connection_id) if connection_id is not None else None
            if peer is not None:
                peer.close()
