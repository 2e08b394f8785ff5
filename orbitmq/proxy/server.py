"""The gRPC front's server: `GrpcProxy` (a grpc.aio server around `MessagingService`) and the
`orbitmq proxy` command (RocketMQ 5's cluster-mode proxy: brokers found through the NameServer).

The same class runs in-process in a broker (`enableGrpcProxy=true`, port `grpcServerPort`) and in
`orbitmq dev` (port 8081 unless told otherwise); it prints one `proxy listening on HOST:PORT` line.
Its port speaks TLS as `tls.server.mode` says (orbitmq/proxy/tls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click
import grpc

from orbitmq.proxy.backend import Backend
from orbitmq.proxy.clients import ProxyAuth
from orbitmq.proxy.handlers import generic_handler
from orbitmq.proxy.service import MessagingService
from orbitmq.proxy.tls import FIRST_BYTE_TIMEOUT, FirstByteFront, GrpcTls
from orbitmq.remoting.local import LocalDispatch
from orbitmq.remoting.tls import TlsMode

if TYPE_CHECKING:
    from orbitmq.broker.acl.plain_config import PlainAcl

log = logging.getLogger(__name__)

DEFAULT_GRPC_PORT = 8081
#: Seconds between scans for silent clients, and for auto-renewed messages falling due.
EXPIRY_SCAN_SECONDS = 10.0
RENEW_SCAN_SECONDS = 5.0
#: Largest gRPC message accepted (a 4 MiB body plus properties and framing).
MAX_GRPC_MESSAGE = 8 * 1024 * 1024


class GrpcProxy:
    def __init__(
        self,
        namesrv_addrs: list[str],
        host: str = "127.0.0.1",
        port: int = DEFAULT_GRPC_PORT,
        *,
        advertised_host: str | None = None,
        acl: Callable[[], PlainAcl] | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        max_delay_ms: int = 86_400_000,
        give_way: bool = False,
        ssl_context: Any = None,
        tls: GrpcTls | None = None,
        local: LocalDispatch | None = None,
    ) -> None:
        self.give_way = give_way
        self.renew_scan_seconds = RENEW_SCAN_SECONDS
        self.host = host
        self.port = port
        self.advertised_host = advertised_host
        # TLS to brokers and NameServers; `local`: the broker this front runs in (served in-process).
        self.backend = Backend(namesrv_addrs, ssl_context=ssl_context, local=local)
        self.auth = ProxyAuth(acl)
        self.max_body_size = max_body_size
        self.max_delay_ms = max_delay_ms
        self.tls = tls or GrpcTls(TlsMode.DISABLED)
        self.service: MessagingService | None = None
        self._server: grpc.aio.Server | None = None
        self._front: FirstByteFront | None = None
        self._expiry: asyncio.Task[None] | None = None

    async def start(self) -> tuple[str, int]:
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 0),
            # A connection that does not finish its TLS (or HTTP/2) handshake in time is closed.
            ("grpc.server_handshake_timeout_ms", int(FIRST_BYTE_TIMEOUT * 1000)),
        ])
        if self.tls.mode is TlsMode.PERMISSIVE:
            bound = await self._start_front(server)
        else:
            bound = self._add_port(server, self.host, self.port)
            if bound == 0 and self.give_way:
                bound = self._add_port(server, self.host, 0)
            if bound == 0:
                raise OSError(f"cannot listen on {self.host}:{self.port}")
        advertised = self.advertised_host or (self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1")
        self.service = MessagingService(self.backend, (advertised, bound), auth=self.auth,
                                        max_body_size=self.max_body_size, max_delay_ms=self.max_delay_ms)
        server.add_generic_rpc_handlers((generic_handler(self.service),))
        await server.start()
        self._server = server
        if self._front is not None:
            await self._front.start()
        log.info("gRPC port %s:%d: tls.server.mode %s", self.host, bound, self.tls.mode.value)
        self.port = bound
        self._expiry = asyncio.get_running_loop().create_task(self._expire_loop())
        return self.host, bound

    def _add_port(self, server: grpc.aio.Server, host: str, port: int, *, secure: bool | None = None) -> int:
        """Bind `host:port` secure (enforcing) or insecure (disabled); the port bound, or 0."""
        if secure is None:
            secure = self.tls.mode is TlsMode.ENFORCING
        try:
            if secure:
                assert self.tls.credentials is not None
                return server.add_secure_port(f"{host}:{port}", self.tls.credentials)
            return server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            return 0

    async def _start_front(self, server: grpc.aio.Server) -> int:
        """Permissive: the grpc server on two loopback ports, the public port relayed to them."""
        loopback = "::1" if ":" in self.host and self.host != "::" else "127.0.0.1"
        secure = self._add_port(server, loopback, 0, secure=True)
        plain = self._add_port(server, loopback, 0, secure=False)
        if not (secure and plain):
            raise OSError(f"cannot listen on {loopback} for the gRPC port's TLS and plain listeners")
        self._front = FirstByteFront(self.host, self.port, (loopback, secure), (loopback, plain))
        return await self._front.bind(any_port_if_busy=self.give_way)

    async def _expire_loop(self) -> None:
        """Renew auto-renewed messages due soon (every renew_scan_seconds); forget silent clients."""
        last_expiry = time.monotonic()
        while True:
            await asyncio.sleep(self.renew_scan_seconds)
            if self.service is None:
                continue
            try:
                await self.service.renew_due()
                if time.monotonic() - last_expiry >= EXPIRY_SCAN_SECONDS:
                    last_expiry = time.monotonic()
                    gone = await self.service.clients.expire()
                    for key in [k for k in self.service.renewals if k[0] in gone]:
                        self.service.renewals.pop(key, None)
            except Exception:
                log.exception("the proxy's renewal and expiry scan failed")

    async def close(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._expiry
        if self.service is not None:
            await self.service.clients.close()
        if self._front is not None:
            await self._front.close()
        if self._server is not None:
            await self._server.stop(grace=1.0)
        await self.backend.close()


class ProxyThread:
    """A `GrpcProxy` on a thread of its own with a plain asyncio loop, for a process whose loop is uvloop's.

    grpc.aio serves unary calls about twice as fast on asyncio's own loop as on uvloop (measured with
    bench.grpc), and a thread of its own keeps its work apart from the broker's loop. With a
    `LocalDispatch` the proxy's requests to that broker are handed to the broker's loop in-process
    (local mode); heartbeats, and requests to other brokers, go over remoting.
    `start`/`close` are awaited on the caller's loop.
    """

    def __init__(self, proxy: GrpcProxy) -> None:
        self.proxy = proxy
        self.loop = asyncio.SelectorEventLoop()  # not the policy's (uvloop when installed)
        self._thread = threading.Thread(target=self.loop.run_forever, name="grpc-proxy", daemon=True)

    async def start(self) -> tuple[str, int]:
        self._thread.start()
        try:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop))
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._thread.is_alive():
            try:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.proxy.close(), self.loop))
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                await asyncio.to_thread(self._thread.join, 10)
        if not self.loop.is_running():
            self.loop.close()


def acl_loader(path: str) -> Callable[[], PlainAcl]:
    """The ACL file's accounts, re-read when the file changes."""
    import os

    from orbitmq.broker.acl.plain_config import load_file

    state: dict[str, object] = {"mtime": None, "acl": None}

    def get() -> PlainAcl:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = None
        if state["acl"] is None or mtime != state["mtime"]:
            state["acl"] = load_file(path)
            state["mtime"] = mtime
        acl = state["acl"]
        assert acl is not None
        return acl  # type: ignore[return-value]

    get()
    return get


async def serve_proxy(proxy: GrpcProxy) -> None:
    from orbitmq.broker.cli import announce, stop_signals

    async with stop_signals() as stop:
        try:
            host, port = await proxy.start()
        except OSError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            announce(f"proxy listening on {host}:{port}")
            await stop.wait()
        finally:
            await proxy.close()


@click.command("proxy", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-n", "--namesrv", "namesrv", required=True, metavar="HOST:PORT[;HOST:PORT]", help="NameServer address(es).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=DEFAULT_GRPC_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--advertise", metavar="HOST", help="Host put in routes (default: --host, or 127.0.0.1).")
@click.option("--acl-config", metavar="FILE", help="plain_acl.yml: check request signatures against its accounts.")
@click.option("--tls", "use_tls", is_flag=True, help="Reach the NameServers and brokers with TLS (tls.enable=true).")
@click.option("--tlsConfigFile", "tls_config_file", metavar="FILE",
              help="Properties file of tls.* settings: tls.client.* for those connections (implies --tls), "
              "tls.server.* for the gRPC port.")
@click.option("-D", "defines", multiple=True, metavar="KEY=VALUE",
              help="A tls.* setting, e.g. -D tls.server.mode=permissive (the gRPC port's TLS: disabled, "
              "permissive or enforcing) -D tls.test.mode.enable=true (a throwaway certificate).")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def proxy_command(namesrv: str, host: str, port: int, advertise: str | None, acl_config: str | None,
                  use_tls: bool, tls_config_file: str | None, defines: tuple[str, ...], verbose: bool) -> None:
    """Serve RocketMQ 5 gRPC clients (apache.rocketmq.v2) in front of the brokers of a NameServer."""
    from orbitmq.admin.cli import define_properties
    from orbitmq.broker.cli import setup_logging
    from orbitmq.errors import OrbitMQError
    from orbitmq.proxy.tls import grpc_tls
    from orbitmq.remoting.loop import run
    from orbitmq.remoting.tls import TlsSettings

    setup_logging(verbose)
    addrs = [a.strip() for a in namesrv.split(";") if a.strip()]
    try:
        acl = acl_loader(acl_config) if acl_config else None
    except OrbitMQError as exc:
        raise click.UsageError(f"--acl-config: {exc}") from None
    props = define_properties(defines)
    if tls_config_file:
        props["tls.config.file"] = tls_config_file
    if use_tls or tls_config_file:
        props.setdefault("tls.enable", "true")
    try:
        tls = TlsSettings.from_properties(props) if props else None
        ssl_context = tls.client_context() if tls is not None else None
        server_tls = grpc_tls(tls)
    except OrbitMQError as exc:
        raise click.UsageError(f"TLS options: {exc}") from None
    proxy = GrpcProxy(addrs, host, port, advertised_host=advertise, acl=acl,
                      ssl_context=ssl_context, tls=server_tls)
    # asyncio's own loop: grpc.aio is about twice as fast on it as on uvloop (ProxyThread).
    run(serve_proxy(proxy), use_uvloop=False)
