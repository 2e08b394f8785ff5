"""The asyncio remoting server and client.

Both sides speak through `Connection` (connection.py): requests in either
direction, each incoming request handled in its own task, responses matched
by opaque, outgoing frames coalesced per loop turn.

    server = RemotingServer(host="127.0.0.1", port=0)
    server.register(RequestCode.PULL_MESSAGE, handler)
    host, port = await server.start()

    client = RemotingClient()
    response = await client.invoke(f"{host}:{port}", cmd, timeout=3.0)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from orbitmq.errors import ConnectError, RequestTimeout
from orbitmq.remoting.budget import MemoryBudget
from orbitmq.remoting.codec import DEFAULT_MAX_FRAME_LENGTH
from orbitmq.remoting.command import RPC_ONEWAY, RemotingCommand
from orbitmq.remoting.connection import Connection, Handler, Peer, Route
from orbitmq.remoting.hooks import RPCHook
from orbitmq.remoting.listener import HANDSHAKE_TIMEOUT_S, Listener, listen
from orbitmq.remoting.tls import ServerTls

if TYPE_CHECKING:
    from orbitmq.remoting.local import LocalChannel

__all__ = ["Handler", "Peer", "RemotingClient", "RemotingServer", "split_addr"]

log = logging.getLogger("orbitmq.remoting")

DisconnectCallback = Callable[[Peer], "Awaitable[None] | None"]

#: Handler tasks one connection may have running before we stop reading from it.
DEFAULT_MAX_INFLIGHT = 4096
#: RocketMQ's serverChannelMaxIdleTimeSeconds: a connection with no reads or writes this
#: long (and nothing in flight) is closed. Clients heartbeat every 30 s, so live ones stay.
DEFAULT_IDLE_TIMEOUT = 120.0


def split_addr(addr: str) -> tuple[str, int]:
    """`"host:port"` -> (host, port); raises `ConnectError` for anything else."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConnectError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


class RemotingServer:
    """Accepts connections and dispatches requests to handlers by request code.

    Guarantees: a request that waits does so in its own task (a long poll
    never blocks its connection); an unknown code is answered REQUEST_CODE_NOT_SUPPORTED
    (remark `" request type <code> not supported"`) unless a default handler is
    registered; a oneway request is never answered; a handler's exception
    becomes an answer in one place (`Connection._failure`): a `BrokerError`
    its code and remark, anything unexpected SYSTEM_ERROR with a generic
    remark and one logged traceback; a bad
    frame closes only its own connection; a connection idle for `idle_timeout`
    seconds (None: never) is closed, as RocketMQ does. Responses go out with
    the request's opaque and serialization type. With `tls` the port speaks
    TLS, only or next to plain connections (`tls.server.mode`, listener.py).
    Unfinished frames and output stalled by peers that do not read stay within
    `memory_budget` (budget.py; several servers may share one), and a
    connection whose peer does not read its answers reads no more requests
    until it does.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        max_inflight_per_connection: int = DEFAULT_MAX_INFLIGHT,
        backlog: int = 1024,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        tls: ServerTls | None = None,
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        self.host = host
        self.tls = tls
        self.port = port
        self.max_frame_length = max_frame_length
        self.max_inflight_per_connection = max_inflight_per_connection
        self.backlog = backlog
        self.idle_timeout = idle_timeout
        self.memory_budget = memory_budget if memory_budget is not None else MemoryBudget()
        self._idle_task: asyncio.Task[None] | None = None
        self._routes: dict[int, Route] = {}
        self._default_route: Route | None = None
        self._disconnect_callbacks: list[DisconnectCallback] = []
        self._server: Listener | None = None
        self._closing = False
        self._connections: set[Connection] = set()
        self._callback_tasks: set[asyncio.Task[Any]] = set()

    def register(self, code: int, handler: Handler, *, eager: bool = True) -> None:
        """Serve requests with `code` by `handler` (replaces an earlier one); allowed while running.

        An `async def` handler starts at once, as the request is read, and
        continues in a task of its own only if it suspends, so a handler that
        never waits costs no task and no loop turn. Until its first await it
        runs outside any task: do not enter `asyncio.timeout()` or a
        `TaskGroup` before awaiting something, or pass `eager=False` to give
        every request a task from the start. A plain function runs inline.
        """
        self._routes[int(code)] = Route(handler, eager=eager)

    def register_default(self, handler: Handler, *, eager: bool = True) -> None:
        """Serve every code that has no handler of its own with `handler`."""
        self._default_route = Route(handler, eager=eager)

    def route(self, code: int) -> Route | None:
        """The handler serving `code` (the default handler, or None when none is registered)."""
        return self._routes.get(code) or self._default_route

    def on_disconnect(self, callback: DisconnectCallback) -> None:
        """Call `callback(peer)` (plain or async) once for each connection that closes."""
        self._disconnect_callbacks.append(callback)

    @property
    def peers(self) -> list[Peer]:
        """The currently open connections."""
        return [conn.peer for conn in self._connections]

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    async def start(self) -> tuple[str, int]:
        """Bind and listen; returns the bound (host, port), port 0 resolved."""
        loop = asyncio.get_running_loop()
        self._server = await listen(self._new_connection, self.host, self.port, tls=self.tls, backlog=self.backlog)
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = str(sockname[0]), int(sockname[1])
        mode = "plain" if self.tls is None else "TLS and plain" if self.tls.permissive else "TLS"
        log.info("remoting server listening on %s:%d (%s)", self.host, self.port, mode)
        if self.idle_timeout:
            self._idle_task = loop.create_task(self._close_idle(self.idle_timeout))
        return self.host, self.port

    async def _close_idle(self, idle_timeout: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(idle_timeout / 4, 10.0))
            now = loop.time()
            for conn in list(self._connections):
                if now - conn.last_activity > idle_timeout and not conn.busy and not conn.closed:
                    log.info("closing %s: idle for more than %ss", conn.peer.addr, idle_timeout)
                    conn.close()

    def _new_connection(self) -> Connection:
        conn = _AcceptedConnection(
            self._routes,
            default_route=lambda: self._default_route,
            max_frame_length=self.max_frame_length,
            max_inflight=self.max_inflight_per_connection,
            on_lost=self._connection_lost,
            budget=self.memory_budget,
            pause_reading_while_writes_wait=True,
        )
        conn.on_made = self._connection_made
        return conn

    def _connection_made(self, conn: Connection) -> None:
        if self._closing:  # a TLS handshake that finished after close() began
            conn.close()
            return
        self._connections.add(conn)

    def _connection_lost(self, conn: Connection) -> None:
        self._connections.discard(conn)
        for callback in self._disconnect_callbacks:
            try:
                result = callback(conn.peer)
            except Exception:
                log.exception("disconnect callback failed for %s", conn.peer.addr)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Task[Any]) -> None:
        self._callback_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("disconnect callback failed", exc_info=task.exception())

    async def close(self, drain_timeout: float = 0.0) -> None:
        """Stop accepting, let running handlers finish for up to `drain_timeout` seconds, then close.

        While draining, connections read no new requests; answers of handlers
        that finish in time are written before their connection closes. Handlers
        still running afterwards are cancelled with their connection.
        """
        self._closing = True
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        if self._server is not None:
            self._server.close()
        conns = list(self._connections)
        if drain_timeout > 0:
            running = [task for conn in conns for task in conn.stop_reading()]
            if running:
                await asyncio.wait(running, timeout=drain_timeout)
        for conn in conns:
            conn.close()
        if conns:
            await asyncio.wait([conn.lost for conn in conns], timeout=5.0)
        for conn in conns:
            if not conn.lost.done():
                conn.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if self._callback_tasks:
            await asyncio.wait(list(self._callback_tasks), timeout=5.0)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class _AcceptedConnection(Connection):
    """A server's connection, counted from `connection_made` on: with TLS the protocol exists
    from the accept, but a connection whose handshake fails is never made (nor lost)."""

    on_made: Callable[[Connection], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.on_made is not None:
            self.on_made(self)


class RemotingClient:
    """Sends requests to servers by address, one reused connection per address.

    A lost connection fails its pending requests at once with `ConnectError`
    and is re-established by the next request. Requests the server sends to
    the client (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...) go
    to handlers registered here and are answered unless oneway. With
    `ssl_context` every connection speaks TLS (`TlsSettings.client_context()`).
    """

    def __init__(
        self,
        connect_timeout: float = 3.0,
        *,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        max_inflight_per_connection: int = DEFAULT_MAX_INFLIGHT,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.ssl_context = ssl_context
        self.max_frame_length = max_frame_length
        self.max_inflight_per_connection = max_inflight_per_connection
        self._routes: dict[int, Route] = {}
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}
        self._async_tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        #: RPC hooks (hooks.py), run in order around every request; empty on the fast path.
        self.rpc_hooks: list[RPCHook] = []
        #: How many hooks at the end of `rpc_hooks` must stay last (ACL signing: it signs what
        #: the hooks before it added).
        self._final_hooks = 0
        #: A broker in this process (local.py): `invoke` hands requests to its address straight to it.
        self.local: LocalChannel | None = None

    def add_rpc_hook(self, hook: RPCHook, *, final: bool = False) -> None:
        """Run `hook` around every request from now on; a `final` hook runs after all others."""
        if final:
            self.rpc_hooks.append(hook)
            self._final_hooks += 1
        else:
            self.rpc_hooks.insert(len(self.rpc_hooks) - self._final_hooks, hook)

    def _before(self, addr: str, cmd: RemotingCommand) -> None:
        for hook in self.rpc_hooks:
            hook.do_before_request(addr, cmd)

    def _after(self, addr: str, cmd: RemotingCommand, response: RemotingCommand) -> None:
        for hook in self.rpc_hooks:
            hook.do_after_response(addr, cmd, response)

    def register(self, code: int, handler: Handler, *, eager: bool = True) -> None:
        """Serve requests with `code` that a server sends over our connections (as `RemotingServer.register`)."""
        self._routes[int(code)] = Route(handler, eager=eager)

    async def connect(self, addr: str) -> Peer:
        """The connection to `addr`, opened if needed (`ConnectError` on failure or timeout)."""
        return (await self._connection(addr)).peer

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send `cmd` to `addr` and wait for its response.

        `timeout` (seconds) covers connecting and waiting; raises `ConnectError`
        when the connection cannot be made or is lost, `RequestTimeout` when no
        response arrives in time.
        """
        hooks = self.rpc_hooks
        if hooks:
            self._before(addr, cmd)
        local = self.local
        if local is not None and addr == local.addr:
            if self._closed:
                raise ConnectError("client is closed")
            try:
                response = await local.invoke(cmd, timeout)
            except asyncio.CancelledError:
                local.forget(cmd.opaque)
                raise
            if hooks:
                self._after(addr, cmd, response)
            return response
        conn = self._connections.get(addr)
        if conn is None or not conn.usable:
            started = time.monotonic()
            conn = await self._connection(addr, timeout)
            timeout -= time.monotonic() - started
            if timeout <= 0:
                raise RequestTimeout(f"connecting to {addr} used up the request timeout")
        # Connection.invoke inlined: one coroutine frame less on every request.
        fut = conn.invoke_future(cmd, timeout)
        try:
            response = await fut
        except asyncio.CancelledError:
            conn.forget(cmd.opaque)
            raise
        if hooks:
            self._after(addr, cmd, response)
        return response

    def invoke_async(
        self,
        addr: str,
        cmd: RemotingCommand,
        timeout: float = 3.0,
        callback: Callable[[asyncio.Future[RemotingCommand]], None] | None = None,
    ) -> asyncio.Future[RemotingCommand]:
        """Send `cmd` without waiting; the returned future gets the response or the error.

        `callback(future)` is called once the future is done (as with
        `add_done_callback`). Must be called from the client's event loop.
        """
        conn = self._connections.get(addr)
        hooks = False
        if conn is not None and conn.usable:
            hooks = bool(self.rpc_hooks)
            if hooks:
                self._before(addr, cmd)
            fut = conn.invoke_future(cmd, timeout)
        else:
            task = asyncio.ensure_future(self.invoke(addr, cmd, timeout))  # runs the hooks itself
            self._async_tasks.add(task)
            task.add_done_callback(self._async_tasks.discard)
            fut = task
        if hooks:
            def after(done: asyncio.Future[RemotingCommand]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self._after(addr, cmd, done.result())

            fut.add_done_callback(after)
        if callback is not None:
            fut.add_done_callback(callback)
        return fut

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send `cmd` flagged oneway; returns once it is queued (`ConnectError` if that fails)."""
        cmd.flag |= RPC_ONEWAY
        if self.rpc_hooks:
            self._before(addr, cmd)
        conn = self._connections.get(addr)
        if conn is None or not conn.usable:
            conn = await self._connection(addr)
        conn.send(cmd)
        await conn.drain()

    def close_connection(self, addr: str) -> None:
        """Close the connection to `addr` if open; pending requests on it fail with `ConnectError`."""
        conn = self._connections.pop(addr, None)
        if conn is not None:
            conn.close()

    async def _connection(self, addr: str, timeout: float | None = None) -> Connection:
        if self._closed:
            raise ConnectError("client is closed")
        conn = self._connections.get(addr)
        if conn is not None and conn.usable:
            return conn
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.ensure_future(self._open(addr))
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connect_done(addr, t))
        # Several callers may wait for one connect; shield it from any one of them being cancelled.
        wait = self.connect_timeout if timeout is None else min(timeout, self.connect_timeout)
        try:
            return await asyncio.wait_for(asyncio.shield(task), wait + 0.1)
        except TimeoutError:
            raise ConnectError(f"connect to {addr} timed out after {wait}s") from None

    def _connect_done(self, addr: str, task: asyncio.Task[Connection]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # retrieved here: the waiters that got it may have given up already

    async def _open(self, addr: str) -> Connection:
        host, port = split_addr(addr)
        loop = asyncio.get_running_loop()
        try:
            if self.ssl_context is None:
                connecting = loop.create_connection(self._new_connection, host, port)
            else:
                connecting = loop.create_connection(
                    self._new_connection, host, port, ssl=self.ssl_context, server_hostname=host,
                    ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
                )
            _, conn = await asyncio.wait_for(connecting, self.connect_timeout)
        except TimeoutError:
            raise ConnectError(f"connect to {addr} timed out after {self.connect_timeout}s") from None
        except ssl.SSLError as exc:
            raise ConnectError(f"TLS handshake with {addr} failed: {exc.reason or exc}") from None
        except OSError as exc:
            raise ConnectError(f"connect to {addr} failed: {exc}") from None
        if self._closed:
            conn.close()
            raise ConnectError("client is closed")
        self._connections[addr] = conn
        log.debug("connected to %s", addr)
        return conn

    def _new_connection(self) -> Connection:
        return Connection(
            self._routes,
            max_frame_length=self.max_frame_length,
            max_inflight=self.max_inflight_per_connection,
            on_lost=self._connection_lost,
        )

    def _connection_lost(self, conn: Connection) -> None:
        for addr, known in list(self._connections.items()):
            if known is conn:
                del self._connections[addr]
                log.info("connection to %s lost", addr)

    async def close(self) -> None:
        """Close every connection; requests still pending fail with `ConnectError`."""
        self._closed = True
        if self.local is not None:
            self.local.close()
        for task in list(self._connecting.values()) + list(self._async_tasks):
            task.cancel()
        conns = list(self._connections.values())
        self._connections.clear()
        for conn in conns:
            conn.close()
        if conns:
            await asyncio.wait([conn.lost for conn in conns], timeout=5.0)
        for conn in conns:
            if not conn.lost.done():
                conn.abort()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
