"""TLS on the gRPC port, from the node's own `tls.*` settings (docs/tls.md, docs/grpc.md).

`tls.server.mode` decides, as on the remoting ports and as RocketMQ 5's proxy reads it for its gRPC
port: `disabled` serves plain HTTP/2, `enforcing` TLS only (grpcio's own TLS), `permissive` both on
one port. grpcio binds a port either secure or insecure, so in permissive mode `FirstByteFront`
listens on the public port, looks at each connection's first byte (0x16, a TLS handshake record,
or anything else, such as the `PRI * HTTP/2.0` preface) and relays the bytes untouched to one of
two loopback listeners of the same grpc server, one secure and one insecure. TLS is never
terminated in Python.

The certificate and key are `tls.server.certPath` / `keyPath` (`keyPassword` for an encrypted key),
or with `tls.test.mode.enable=true` and no certificate a throwaway self-signed one, like RocketMQ
5's `tlsTestModeEnable`. `tls.server.need.client.auth=require` (or `authClient=true`) makes clients
present a certificate verified against `tls.server.trustCertPath`; grpcio has no "verify if
presented", so `optional` does not ask for one on this port (RocketMQ's proxy never asks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import grpc

from orbitmq.remoting.tls import TLS_HANDSHAKE_BYTE, ClientAuth, TlsMode, TlsSettings, _read_bytes

log = logging.getLogger(__name__)

#: Seconds a connection to the permissive port has to send its first byte (as on the remoting ports).
FIRST_BYTE_TIMEOUT = 10.0


@dataclass(frozen=True)
class GrpcTls:
    """What the gRPC port serves: its mode, and grpcio's credentials unless the mode is disabled."""

    mode: TlsMode
    credentials: grpc.ServerCredentials | None = None


def grpc_tls(settings: TlsSettings | None) -> GrpcTls:
    """The gRPC port's TLS from the node's settings. Raises ConfigError (the same messages as the
    remoting ports) when a file cannot be loaded or the settings contradict each other."""
    if settings is None or settings.server_mode is TlsMode.DISABLED:
        return GrpcTls(TlsMode.DISABLED)
    settings.server_context()  # checks files, key password and client-auth settings with its messages
    chain, key = settings.server_pem()
    roots: bytes | None = None
    require = settings.server_client_auth() is ClientAuth.REQUIRE
    if require:
        roots = _read_bytes(settings.server_trust_cert_path, "tls.server.trustCertPath")
    credentials = grpc.ssl_server_credentials([(key, chain)], root_certificates=roots, require_client_auth=require)
    return GrpcTls(settings.server_mode, credentials)


class FirstByteFront:
    """The permissive port: each connection is relayed to `tls_target` when its first byte is 0x16,
    else to `plain_target` (both loopback listeners of the grpc server). Bytes pass untouched both
    ways, with flow control; either side closing closes the other. A connection that sends nothing
    within FIRST_BYTE_TIMEOUT, or whose target cannot be reached, is closed; nothing a client sends
    stops the port."""

    def __init__(self, host: str, port: int, tls_target: tuple[str, int], plain_target: tuple[str, int]) -> None:
        self.host = host
        self.port = port
        self.tls_target = tls_target
        self.plain_target = plain_target
        self.first_byte_timeout = FIRST_BYTE_TIMEOUT
        self._server: asyncio.Server | None = None
        self._links: set[_Inbound] = set()

    async def bind(self, *, any_port_if_busy: bool = False) -> int:
        """Bind the public port (a free one when it is in use and `any_port_if_busy`); serve from `start`."""
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(lambda: _Inbound(self), self.host, self.port, start_serving=False)
        except OSError:
            if not any_port_if_busy:
                raise
            self._server = await loop.create_server(lambda: _Inbound(self), self.host, 0, start_serving=False)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def start(self) -> None:
        assert self._server is not None
        await self._server.start_serving()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for link in list(self._links):
                link.abort()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


class _Inbound(asyncio.Protocol):
    """A client's connection to the public port; `_Outbound` is its relay to a grpc listener."""

    def __init__(self, front: FirstByteFront) -> None:
        self.front = front
        self.transport: asyncio.Transport | None = None
        self.outbound: asyncio.Transport | None = None
        self.pending = bytearray()  # bytes read before the listener connection is up
        self.chosen = False
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None
        self.ends = 0  # directions that have seen their end of data (2: both, close)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.front._links.add(self)
        self.timer = asyncio.get_running_loop().call_later(self.front.first_byte_timeout, self.abort)

    def data_received(self, data: bytes) -> None:
        if self.outbound is not None:
            self.outbound.write(data)
            return
        self.pending += data
        if self.chosen:
            return
        self.chosen = True
        assert self.transport is not None
        self.transport.pause_reading()
        target = self.front.tls_target if data[0] == TLS_HANDSHAKE_BYTE else self.front.plain_target
        self.task = asyncio.get_running_loop().create_task(self._connect(target))

    async def _connect(self, target: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        try:
            outbound, protocol = await loop.create_connection(lambda: _Outbound(self), *target)
        except OSError as exc:
            log.warning("gRPC port: cannot reach its listener %s:%d (%s)", *target, exc.strerror or exc)
            self.abort()
            return
        assert self.transport is not None
        if self.transport.is_closing():
            outbound.close()
            return
        if self.timer is not None:
            self.timer.cancel()
        self.outbound = outbound
        outbound.write(bytes(self.pending))
        self.pending = bytearray()
        # That write may have filled the relay's buffer (`_Outbound.pause_writing`, which left
        # the client paused): then the listener's `resume_writing` resumes the client, not this.
        if not protocol.full:
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        if self.outbound is None or not self.outbound.can_write_eof():
            return False
        self.outbound.write_eof()
        return self.direction_ended()  # the other direction stays open until it ends too

    def direction_ended(self) -> bool:
        """One direction is done (its EOF passed on); once both are, both connections close."""
        self.ends += 1
        if self.ends < 2:
            return True
        for transport in (self.transport, self.outbound):
            if transport is not None:
                transport.close()  # after writing what it holds
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.front._links.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.outbound is not None:
            self.outbound.close()  # after writing what it holds

    # flow control: the client takes no more for now, so stop reading from the listener
    def pause_writing(self) -> None:
        if self.outbound is not None:
            self.outbound.pause_reading()

    def resume_writing(self) -> None:
        if self.outbound is not None and not self.outbound.is_closing():
            self.outbound.resume_reading()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        if self.outbound is not None:
            self.outbound.abort()


class _Outbound(asyncio.Protocol):
    def __init__(self, inbound: _Inbound) -> None:
        self.inbound = inbound
        self.transport: asyncio.Transport | None = None
        self.full = False  # between pause_writing and resume_writing

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        client = self.inbound.transport
        if client is not None:
            client.write(data)

    def eof_received(self) -> bool:
        client = self.inbound.transport
        if client is None or client.is_closing() or not client.can_write_eof():
            return False
        client.write_eof()
        return self.inbound.direction_ended()

    def connection_lost(self, exc: Exception | None) -> None:
        client = self.inbound.transport
        if client is not None:
            client.close()

    # flow control: the listener takes no more for now, so stop reading from the client
    def pause_writing(self) -> None:
        self.full = True
        client = self.inbound.transport
        if client is not None:
            client.pause_reading()

    def resume_writing(self) -> None:
        self.full = False
        client = self.inbound.transport
        if client is not None and not client.is_closing():
            client.resume_reading()
