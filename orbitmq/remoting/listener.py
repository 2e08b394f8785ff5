"""Listening sockets with or without TLS: plain, TLS only, or both on one port.

    server = await listen(protocol_factory, "0.0.0.0", 10911, tls=settings.server_tls())

With no TLS (`tls.server.mode=disabled`) or TLS only (`enforcing`) this is
asyncio's own `create_server`; in `enforcing` mode a client that does not
complete a TLS handshake never reaches the protocol. In `permissive` mode one
port serves both, as RocketMQ's TlsModeHandler does: each accepted connection
is left unread until its first byte arrives, that byte is peeked (not taken),
and a TLS handshake record (0x16) gets a TLS transport while anything else
(a RocketMQ frame starts with its 4-byte length, whose first byte is 0 for any
frame under 16 MiB) gets a plain one.

Every listener here is an `asyncio.AbstractServer`-like object: `sockets`,
`close()`, `wait_closed()`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Protocol

from orbitmq.remoting.tls import TLS_HANDSHAKE_BYTE, ServerTls

log = logging.getLogger("orbitmq.remoting")

#: Seconds a new connection may take to send its first byte (permissive mode) and to finish
#: the TLS handshake. asyncio's own handshake default is 60 s; a client on a loopback or a LAN
#: needs milliseconds, and a connection that holds a handshake open costs a socket meanwhile.
HANDSHAKE_TIMEOUT_S = 10.0


class Listener(Protocol):
    @property
    def sockets(self) -> tuple[socket.socket, ...] | list[socket.socket]: ...
    def close(self) -> None: ...
    async def wait_closed(self) -> None: ...


ProtocolFactory = Callable[[], asyncio.BaseProtocol]


async def listen(
    protocol_factory: ProtocolFactory,
    host: str,
    port: int,
    *,
    tls: ServerTls | None = None,
    backlog: int = 1024,
    handshake_timeout: float = HANDSHAKE_TIMEOUT_S,
) -> Listener:
    """Bind `host:port` (0: any port) and serve connections with `protocol_factory`."""
    loop = asyncio.get_running_loop()
    if tls is None:
        return await loop.create_server(protocol_factory, host, port, backlog=backlog, reuse_address=True)
    if not tls.permissive:
        return await loop.create_server(
            protocol_factory, host, port, backlog=backlog, reuse_address=True,
            ssl=tls.context, ssl_handshake_timeout=handshake_timeout,
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=backlog)
    sock.setblocking(False)
    server = SniffingServer(loop, sock, protocol_factory, tls.context, handshake_timeout)
    server.start()
    return server


class SniffingServer:
    """Accepts on `sock`; each connection's first byte picks TLS or plain (module docstring).

    Owns its accept task and the tasks of connections still being sniffed or
    handshaking; `close()` stops accepting and cancels those. Connections
    handed to the protocol belong to it, as with asyncio's servers.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: ProtocolFactory,
        context: ssl.SSLContext,
        handshake_timeout: float,
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._factory = protocol_factory
        self._context = context
        self._timeout = handshake_timeout
        self._accepting: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def sockets(self) -> list[socket.socket]:
        return [] if self._closed else [self._sock]

    def start(self) -> None:
        self._accepting = self._loop.create_task(self._accept())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._accepting is not None:
            self._accepting.cancel()
        for task in self._pending:
            task.cancel()
        self._sock.close()

    async def wait_closed(self) -> None:
        tasks = [t for t in (self._accepting, *self._pending) if t is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = await self._loop.sock_accept(self._sock)
            except OSError as exc:
                if self._closed:
                    return
                # Out of descriptors or a connection reset before accept: as asyncio's own
                # accept loop, log and go on after a short pause rather than stop listening.
                log.warning("accept on %s failed: %s", self._sock.getsockname(), exc)
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            task = self._loop.create_task(self._sniff(conn))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _sniff(self, conn: socket.socket) -> None:
        try:
            async with asyncio.timeout(self._timeout):
                first = await self._peek(conn)
            if not first:
                conn.close()
                return
            context = self._context if first[0] == TLS_HANDSHAKE_BYTE else None
            await self._loop.connect_accepted_socket(
                self._factory, conn, ssl=context, ssl_handshake_timeout=self._timeout if context else None
            )
        except asyncio.CancelledError:
            conn.close()
            raise
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            log.debug("connection dropped before it was served: %s", exc)
            conn.close()

    async def _peek(self, conn: socket.socket) -> bytes:
        """The connection's first byte, left in the socket for the transport to read (b"": closed)."""
        fd = conn.fileno()
        while True:
            ready: asyncio.Future[None] = self._loop.create_future()

            def on_readable(ready: asyncio.Future[None] = ready) -> None:
                if not ready.done():
                    ready.set_result(None)

            self._loop.add_reader(fd, on_readable)
            try:
                await ready
            finally:
                self._loop.remove_reader(fd)
            try:
                return conn.recv(1, socket.MSG_PEEK)
            except BlockingIOError:  # woken without data after all: wait again
                continue
