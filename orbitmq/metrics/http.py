"""The `/metrics` endpoint: aiohttp on the server's own event loop.

    server = MetricsServer([BrokerMetrics(broker)], host, port)
    host, port = await server.start()     # port 0 resolved
    ...
    await server.close()

Serves `/metrics` and `/` in the Prometheus text format 0.0.4 (OpenMetrics
when the scraper's Accept asks for it, through prometheus_client), gzip when
asked (compressed off the loop), and `/-/healthy`, as RocketMQ 5's exporter
does. A scrape reads the server's state and renders it on the loop; the
collectors only read memory and consume queue entries (docs/metrics.md gives
the cost). No ACL: bind it to an interface only monitoring can reach.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from orbitmq.metrics.family import FamilyCollector, FamilySource, render_text

log = logging.getLogger("orbitmq.metrics")

TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def registry_of(sources: Sequence[FamilySource]) -> CollectorRegistry:
    """A prometheus_client registry over the sources (what OpenMetrics scrapes render)."""
    registry = CollectorRegistry(auto_describe=False)
    for source in sources:
        registry.register(FamilyCollector(source))
    return registry


def render(sources: Sequence[FamilySource]) -> bytes:
    """The text format 0.0.4 body of one scrape."""
    return render_text(family for source in sources for family in source())


class MetricsServer:
    def __init__(self, sources: Sequence[FamilySource], host: str, port: int) -> None:
        self.sources = list(sources)
        self.registry = registry_of(self.sources)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None

    async def _metrics(self, request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        try:
            if "application/openmetrics-text" in accept:
                body, content_type = openmetrics_latest(self.registry), OPENMETRICS_TYPE
            else:
                body, content_type = render(self.sources), TEXT_TYPE
        except Exception:  # a collector's defect must not take the endpoint (or the server) down
            log.exception("metrics scrape failed")
            return web.Response(status=500, text="metrics collection failed; see the server log\n")
        # Bodies past 64 KiB are compressed in an executor thread, off the server's loop.
        response = web.Response(body=body, headers={"Content-Type": content_type}, zlib_executor_size=65536)
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression()
        return response

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
        sockets = runner.addresses
        sock = sockets[0] if sockets else (self.host, self.port)
        self.address = (str(sock[0]), int(sock[1]))
        return self.address

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


async def serve_metrics(
    sources: Sequence[FamilySource], host: str, port: int, *, any_port_if_busy: bool = False
) -> MetricsServer:
    """Start a MetricsServer; with `any_port_if_busy`, a port in use gives way to a free one
    (`orbitmq dev`'s default port, so that several dev servers can run side by side)."""
    server = MetricsServer(sources, host, port)
    try:
        await server.start()
    except OSError as exc:
        if not (any_port_if_busy and port and exc.errno == errno.EADDRINUSE):
            raise
        log.warning("metrics port %s:%d is in use; serving metrics on a free port instead", host, port)
        server = MetricsServer(sources, host, 0)
        await server.start()
    return server
