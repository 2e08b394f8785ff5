"""One remoting connection, shared by the server and the client side.

`Connection` is an asyncio protocol: it feeds received bytes to a
`FrameDecoder`, runs a handler for each incoming request (an `async def`
handler in its own task; a plain function inline, for handlers that never
wait), matches responses to the requests it sent by opaque, and coalesces
outgoing frames: everything produced while one read is processed leaves
with one `writelines` at its end, and frames produced by tasks leave together
on the next loop turn (one write costs ~5 µs here, whatever its size).
`Peer` is the face of a connection that handlers see.

Ownership: all state of a connection belongs to the event loop thread that
runs it; nothing here is thread-safe.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from orbitmq.errors import BrokerError, ConnectError, FrameError, OrbitMQError
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RPC_ONEWAY, RPC_TYPE_RESPONSE, Buffer, RemotingCommand, next_opaque
from orbitmq.remoting.eager import start_eagerly
from orbitmq.remoting.pending import PendingRequests

#: The remark of an answer to a request whose handler failed unexpectedly (the log has the traceback).
UNEXPECTED_ERROR_REMARK = "internal error in the server; see its log"

log = logging.getLogger("orbitmq.remoting")

Handler = Callable[[RemotingCommand, "Peer"], Awaitable[RemotingCommand | None] | RemotingCommand | None]
"""`async def handler(request, peer) -> response | None` (None: send nothing).

A plain function with the same signature is also a handler: it is called
inline as the request is decoded (no task, no extra loop turn), so it must
not block; if it returns an awaitable, that is awaited in a task.
"""


class Route:
    """A registered handler and how to run it (decided once, at registration).

    An `async def` handler starts eagerly by default: it runs inline up to its
    first suspension and moves to a task only if it suspends (see eager.py for
    the one caveat). `eager=False` gives it a task from the start.
    """

    __slots__ = ("eager", "handler", "is_async")

    def __init__(self, handler: Handler, *, eager: bool = True) -> None:
        self.handler = handler
        self.is_async = inspect.iscoroutinefunction(handler)
        self.eager = eager

_peer_ids = itertools.count(1)


class Peer:
    """The other end of one connection, as request handlers see it.

    `invoke` sends a request over this connection and waits for the answer
    (the broker uses it to ask clients for consumer status, running info,
    ...); `invoke_oneway` sends one that is never answered.
    """

    __slots__ = ("_conn", "host", "id", "port")

    def __init__(self, conn: Connection, host: str, port: int) -> None:
        self._conn = conn
        self.id = next(_peer_ids)
        self.host = host
        self.port = port

    @property
    def addr(self) -> str:
        """`"ip:port"` of the other end, as RocketMQ writes addresses (`"[v6addr]:port"` for IPv6)."""
        if ":" in self.host:
            return f"[{self.host}]:{self.port}"
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._conn.closed

    async def invoke(self, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send `cmd` and return the response; `RequestTimeout` or `ConnectError` otherwise."""
        return await self._conn.invoke(cmd, timeout)

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        """Send `cmd` with the oneway flag; returns once queued for writing (`ConnectError` if closed)."""
        cmd.flag |= RPC_ONEWAY
        self._conn.send(cmd)
        await self._conn.drain()

    def close(self) -> None:
        """Close the connection after writing what is queued."""
        self._conn.close()

    def __repr__(self) -> str:
        return f"Peer(id={self.id}, addr={self.addr!r}, closed={self.closed})"


class Connection(asyncio.Protocol):
    """Frames in, requests dispatched, responses matched, frames out (coalesced)."""

    def __init__(
        self,
        routes: Mapping[int, Route],
        *,
        default_route: Callable[[], Route | None] = lambda: None,
        max_frame_length: int,
        max_inflight: int = 4096,
        on_lost: Callable[[Connection], None] | None = None,
    ) -> None:
        self._routes = routes
        self._default_route = default_route
        self._decoder = FrameDecoder(max_frame_length)
        self._max_inflight = max_inflight
        self._on_lost = on_lost
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self.peer: Peer = Peer(self, "", 0)
        self.closed = False
        # Outgoing frames waiting for the next flush; `_flush_handle` is set while one is scheduled.
        self._out: list[Buffer] = []
        self._flush_handle: asyncio.Handle | None = None
        self._reading = False  # inside data_received: its frames are flushed when it returns
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._read_paused = False
        self._draining = False  # set by stop_reading(): reading stays paused until the close
        # Requests we sent that await their response.
        self._pending = PendingRequests(self._loop, lambda: self.peer.addr)
        # Handler tasks of incoming requests; cancelled when the connection goes away.
        self._tasks: set[asyncio.Task[None]] = set()
        self.lost: asyncio.Future[None] = self._loop.create_future()
        #: Loop time of the last read or write; the server closes connections idle too long.
        self.last_activity = self._loop.time()

    # --- asyncio.Protocol -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not derive from asyncio.Transport, so no isinstance check here.
        self._transport = cast(asyncio.Transport, transport)
        peername = transport.get_extra_info("peername")
        if isinstance(peername, tuple) and len(peername) >= 2:
            self.peer.host, self.peer.port = str(peername[0]), int(peername[1])

    def data_received(self, data: bytes) -> None:
        self.last_activity = self._loop.time()
        try:
            commands = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("closing connection %s: %s", self.peer.addr, exc)
            self.abort()
            return
        self._reading = True
        try:
            for cmd in commands:
                if cmd.flag & RPC_TYPE_RESPONSE:
                    if not self._pending.complete(cmd):
                        log.debug("response %d from %s matches no pending request", cmd.opaque, self.peer.addr)
                else:
                    self._dispatch(cmd)
        finally:
            self._reading = False
        if self._out:
            if self._flush_handle is not None:
                self._flush_handle.cancel()
            self._flush()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.clear()
        self._pending.fail_all(lambda: ConnectError(f"connection to {self.peer.addr} lost"))
        for task in list(self._tasks):
            task.cancel()
        self._wake_writers()
        if not self.lost.done():
            self.lost.set_result(None)
        if self._on_lost is not None:
            self._on_lost(self)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writers()

    # --- sending ------------------------------------------------------------------

    def send(self, cmd: RemotingCommand) -> None:
        """Queue `cmd` for the next flush (same loop turn frames share one write)."""
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectError(f"connection to {self.peer.addr} is closed")
        self._out += encode(cmd)
        if self._flush_handle is None and not self._reading:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        out, self._out = self._out, []
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(out)
            self.last_activity = self._loop.time()

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        if self.closed:
            raise ConnectError(f"connection to {self.peer.addr} is closed")
        if self._write_paused:
            waiter: asyncio.Future[None] = self._loop.create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def _wake_writers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def invoke_future(self, cmd: RemotingCommand, timeout: float) -> asyncio.Future[RemotingCommand]:
        """Send a request; the future gets the response, `RequestTimeout` or `ConnectError`."""
        cmd.flag &= ~RPC_TYPE_RESPONSE
        if cmd.opaque in self._pending:  # a command object sent twice: give it a fresh id
            cmd.opaque = next_opaque()
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self.send(cmd)
        self._pending.add(cmd.opaque, fut, timeout)
        return fut

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        fut = self.invoke_future(cmd, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            self._pending.forget(cmd.opaque)
            raise

    def forget(self, opaque: int) -> None:
        """Stop waiting for the response to `opaque` (a late answer is then dropped)."""
        self._pending.forget(opaque)

    # --- serving ------------------------------------------------------------------

    def _dispatch(self, request: RemotingCommand) -> None:
        route = self._routes.get(request.code) or self._default_route()
        if route is None:
            if not request.is_oneway:
                remark = f" request type {request.code} not supported"
                self.send(request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark))
            return
        if route.is_async:
            if route.eager:
                task = start_eagerly(self._loop, self._serve(route.handler, request))
                if task is not None:
                    self._track(task)
            else:
                self._track(self._loop.create_task(self._serve(route.handler, request)))
            return
        try:
            result = route.handler(request, self.peer)
        except asyncio.CancelledError:
            return  # as for a cancelled task: no answer
        except Exception as exc:  # noqa: BLE001 - any handler failure is answered, see _failure
            result = self._failure(request, exc)
        if inspect.isawaitable(result):
            self._track(self._loop.create_task(self._serve_awaitable(result, request)))
        else:
            self._respond(request, result)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        if len(self._tasks) >= self._max_inflight and not self._read_paused and self._transport is not None:
            # Stop reading until handlers catch up, so one peer cannot queue unbounded work.
            self._read_paused = True
            self._transport.pause_reading()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._read_paused and len(self._tasks) <= self._max_inflight // 2 and not self.closed and not self._draining:
            self._read_paused = False
            if self._transport is not None:
                self._transport.resume_reading()

    async def _serve(self, handler: Handler, request: RemotingCommand) -> None:
        try:
            response = await cast(Awaitable[RemotingCommand | None], handler(request, self.peer))
        except Exception as exc:  # noqa: BLE001 - any handler failure is answered, see _failure
            response = self._failure(request, exc)
        self._respond(request, response)
        if self._write_paused and not self.closed:
            await self.drain()

    async def _serve_awaitable(self, result: Awaitable[RemotingCommand | None], request: RemotingCommand) -> None:
        try:
            response = await result
        except Exception as exc:  # noqa: BLE001 - any handler failure is answered, see _failure
            response = self._failure(request, exc)
        self._respond(request, response)

    def _failure(self, request: RemotingCommand, exc: Exception) -> RemotingCommand:
        """The one boundary where a handler's exception becomes an answer.

        A `BrokerError` is a refusal: answered with its code and remark. Another
        `OrbitMQError` that is a `ValueError` (a malformed header field or body,
        a bad config value) is answered SYSTEM_ERROR with its text, which is
        ours. Anything else is a defect: SYSTEM_ERROR with a generic remark,
        never Python's own text, and one logged traceback.
        """
        if isinstance(exc, BrokerError):
            return request.response(exc.code, exc.remark)
        if isinstance(exc, OrbitMQError) and isinstance(exc, ValueError):
            log.info("request code %d from %s refused: %s", request.code, self.peer.addr, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        log.error("handler for request code %d from %s failed", request.code, self.peer.addr, exc_info=exc)
        return request.response(ResponseCode.SYSTEM_ERROR, f"{UNEXPECTED_ERROR_REMARK}, request code {request.code}")

    def _respond(self, request: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is None or request.flag & RPC_ONEWAY or self.closed:
            return
        if not isinstance(response, RemotingCommand):
            log.error("handler for request code %d returned %r, not a RemotingCommand", request.code, response)
            response = request.response(ResponseCode.SYSTEM_ERROR, "handler returned no RemotingCommand")
        response.opaque = request.opaque
        response.flag |= RPC_TYPE_RESPONSE
        response.serialize_type = request.serialize_type
        try:
            self.send(response)
        except FrameError as exc:
            log.error("response to request code %d cannot be framed: %s", request.code, exc)
            try:
                self.send(request.response(ResponseCode.SYSTEM_ERROR, f"response cannot be encoded: {exc}"))
            except (FrameError, ConnectError):
                pass  # not even an error answer fits: the peer's request will time out
        except ConnectError:
            pass  # the peer left while we worked; nobody to answer

    # --- closing ------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        """Open and not closing: a send now will be written."""
        return not self.closed and self._transport is not None and not self._transport.is_closing()

    @property
    def busy(self) -> bool:
        """Handlers are running or requests we sent await answers (a held long poll is not idleness)."""
        return bool(self._tasks) or len(self._pending) > 0

    def stop_reading(self) -> list[asyncio.Task[None]]:
        """Read no more requests (for a graceful close); returns the handler tasks still running."""
        if self._transport is not None and not self.closed:
            self._draining = True  # reading stays paused: _task_done does not resume it now
            if not self._read_paused:
                self._read_paused = True
                self._transport.pause_reading()
        return list(self._tasks)

    def close(self) -> None:
        """Write what is queued, then close."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        self._flush()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping unwritten data."""
        self._out.clear()
        if self._transport is not None:
            self._transport.abort()
