"""The `/metrics` endpoint: aiohttp on the server's own event loop.

    server = MetricsServer(registry, host, port)
    host, port = await server.start()     # port 0 resolved
    ...
    await server.close()

Serves `/metrics` and `/` (Prometheus text format 0.0.4, or OpenMetrics when
the scraper asks for it in Accept) and `/-/healthy`, as RocketMQ 5's exporter
does. A scrape renders the registry on the loop: collectors only read memory
and consume queue entries (docs/metrics.md gives the cost). No ACL: bind it to
an interface only monitoring can reach.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from orbitmq.metrics.broker import BrokerCollector
from orbitmq.metrics.namesrv import NamesrvCollector

if TYPE_CHECKING:
    from orbitmq.broker.server import Broker
    from orbitmq.namesrv.server import NameServer

log = logging.getLogger("orbitmq.metrics")


def broker_registry(broker: Broker, registry: CollectorRegistry | None = None) -> CollectorRegistry:
    registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    return registry


def namesrv_registry(namesrv: NameServer, registry: CollectorRegistry | None = None) -> CollectorRegistry:
    registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
    registry.register(NamesrvCollector(namesrv))
    return registry


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        try:
            body = encoder(self.registry)
        except Exception:  # a collector's defect must not take the endpoint (or the loop) down
            log.exception("metrics scrape failed")
            return web.Response(status=500, text="metrics collection failed; see the server log\n")
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthy(self, request: web.Request) -> web.Response:
        return web.Response(text="OK\n")

    async def start(self) -> tuple[str, int]:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._metrics)
        app.router.add_get("/-/healthy", self._healthy)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        sock = sockets[0].getsockname() if sockets else (self.host, self.port)
        self.address = (str(sock[0]), int(sock[1]))
        return self.address

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


async def serve_metrics(registry: CollectorRegistry, host: str, port: int, *, any_port_if_busy: bool = False) -> MetricsServer:
    """Start a MetricsServer; with `any_port_if_busy`, a port in use gives way to a free one
    (`orbitmq dev`'s default port, so that several dev servers can run side by side)."""
    server = MetricsServer(registry, host, port)
    try:
        await server.start()
    except OSError as exc:
        if not (any_port_if_busy and port and exc.errno == errno.EADDRINUSE):
            raise
        log.warning("metrics port %s:%d is in use; serving metrics on a free port instead", host, port)
        server = MetricsServer(registry, host, 0)
        await server.start()
    return server
