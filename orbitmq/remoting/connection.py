"""One remoting connection, shared by the server and the client side.

`Connection` is an asyncio protocol: it feeds received bytes to a
`FrameDecoder`, runs a handler for each incoming request (an `async def`
handler in its own task; a plain function inline, for handlers that never
wait), matches responses to the requests it sent by opaque, and coalesces
outgoing frames: everything produced while one read is processed leaves
with one `writelines` at its end, and frames produced by tasks leave together
on the next loop turn (one write costs ~5 µs here, whatever its size).
`Peer` is the face of a connection that handlers see.

Memory: a server's connections share a `MemoryBudget` (budget.py) for their
unfinished frames and stalled output, and a connection stops reading while it
waits for the budget, while its peer does not read its answers (server side),
or while too many of its handlers run. Nothing refers back to a connection
from the objects it owns or hands out (`Peer` holds it weakly), so a closed
connection and its buffers are freed as soon as the transport lets go of it,
without waiting for the cycle collector.

Ownership: all state of a connection belongs to the event loop thread that
runs it; nothing here is thread-safe.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from orbitmq.errors import BrokerError, ConnectError, FrameError, OrbitMQError
from orbitmq.remoting.budget import MemoryBudget
from orbitmq.remoting.codec import FrameDecoder, body_length, encode
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

#: Answers made while one read is processed leave in one write at its end, except that past
#: this many bytes they are written at once: a peer that does not read is then noticed
#: (pause_writing) before answers to the rest of the read pile up.
EARLY_FLUSH_BYTES = 1 << 20


class Peer:
    """The other end of one connection, as request handlers see it.

    `invoke` sends a request over this connection and waits for the answer
    (the broker uses it to ask clients for consumer status, running info,
    ...); `invoke_oneway` sends one that is never answered. A peer refers to
    its connection weakly: registries may keep peers after the connection
    closed without keeping its buffers alive.
    """

    __slots__ = ("_conn_ref", "host", "id", "port")

    def __init__(self, conn: Connection, host: str, port: int) -> None:
        self._conn_ref = weakref.ref(conn)
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
        conn = self._conn_ref()
        return conn is None or conn.closed

    def _conn(self) -> Connection:
        conn = self._conn_ref()
        if conn is None:
            raise ConnectError(f"connection to {self.addr} is closed")
        return conn

    async def invoke(self, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send `cmd` and return the response; `RequestTimeout` or `ConnectError` otherwise."""
        return await self._conn().invoke(cmd, timeout)

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        """Send `cmd` with the oneway flag; returns once queued for writing (`ConnectError` if closed)."""
        cmd.flag |= RPC_ONEWAY
        conn = self._conn()
        conn.send(cmd)
        await conn.drain()

    def close(self) -> None:
        """Close the connection after writing what is queued."""
        conn = self._conn_ref()
        if conn is not None:
            conn.close()

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
        budget: MemoryBudget | None = None,
        pause_reading_while_writes_wait: bool = False,
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
        self._out_bytes = 0
        # Requests read but not yet dispatched because the peer stopped reading our answers.
        self._backlog: list[RemotingCommand] = []
        self._flush_handle: asyncio.Handle | None = None
        self._reading = False  # inside data_received: its frames are flushed when it returns
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        # Reading is paused while any of these holds (see _update_reading).
        self._read_paused = False
        self._draining = False  # set by stop_reading(): reading stays paused until the close
        self._inflight_full = False  # too many handler tasks; cleared at half the limit
        self._budget_wait = False  # queued for the memory budget
        # A server stops reading from a peer that does not read its answers.
        self._pause_on_write = pause_reading_while_writes_wait
        self._budget = budget
        self._budget_frame = 0  # bytes of the unfinished frame reserved in the budget
        self._budget_output = 0  # bytes of stalled output counted in the budget
        # Requests we sent that await their response. The lambda holds the peer, not self (no cycle).
        peer = self.peer
        self._pending = PendingRequests(self._loop, lambda: peer.addr)
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
        if self._budget is not None and not self._budget_wait:
            self._reserve(self._decoder.unfinished_frame_size)
        if self._backlog:  # read before the pause took effect: keep the order
            self._backlog += commands
            return
        self._process(commands)

    def _process(self, commands: list[RemotingCommand]) -> None:
        """Dispatch `commands` in order; their answers leave together at the end (see EARLY_FLUSH_BYTES)."""
        self._reading = True
        try:
            for index, cmd in enumerate(commands):
                if self._pause_on_write and self._write_paused:
                    self._backlog = commands[index:]
                    self._update_reading()
                    break
                if cmd.flag & RPC_TYPE_RESPONSE:
                    if not self._pending.complete(cmd):
                        log.debug("response %d from %s matches no pending request", cmd.opaque, self.peer.addr)
                else:
                    self._dispatch(cmd)
                if self._out_bytes >= EARLY_FLUSH_BYTES:
                    self._flush()
        finally:
            self._reading = False
        if self._out:
            if self._flush_handle is not None:
                self._flush_handle.cancel()
            self._flush()

    def _resume_backlog(self) -> None:
        if self.closed or not self._backlog or (self._pause_on_write and self._write_paused):
            return
        backlog, self._backlog = self._backlog, []
        self._process(backlog)
        self._update_reading()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.clear()
        self._out_bytes = 0
        self._backlog = []
        self._decoder.release()
        if self._budget is not None:
            self._budget.set_output(self._budget_output, 0)
            self._budget.forget(self, self._budget_frame)
            self._budget_frame = self._budget_output = 0
        self._transport = None  # the transport refers to us until it is gone; we let go first
        addr = self.peer.addr
        self._pending.fail_all(lambda: ConnectError(f"connection to {addr} lost"))
        for task in list(self._tasks):
            task.cancel()
        self._wake_writers()
        if not self.lost.done():
            self.lost.set_result(None)
        if self._on_lost is not None:
            self._on_lost(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._count_output()
        if self._pause_on_write:
            self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._count_output()
        self._wake_writers()
        if self._backlog:
            self._loop.call_soon(self._resume_backlog)  # not inside the transport's write callback
        elif self._pause_on_write:
            self._update_reading()

    # --- memory and reading -------------------------------------------------------

    def _reserve(self, size: int) -> None:
        """Hold `size` bytes of the budget for the frame being received (0: none); pause if refused."""
        assert self._budget is not None
        if size == self._budget_frame:
            return
        held, self._budget_frame = self._budget_frame, 0
        if self._budget.exchange(self, held, size):
            self._budget_frame = size
        else:
            self._budget_wait = True
            self._update_reading()

    def budget_granted(self, size: int) -> None:
        """Called by the budget: the reservation this connection queued for is held now."""
        self._budget_frame = size
        self._budget_wait = False
        self._update_reading()

    def _count_output(self) -> None:
        """Count output held above the transport's high-water mark in the budget (0 below it)."""
        if self._budget is None:
            return
        now = 0
        if self._write_paused and self._transport is not None:
            now = self._transport.get_write_buffer_size()
        if now != self._budget_output:
            self._budget.set_output(self._budget_output, now)
            self._budget_output = now

    def _update_reading(self) -> None:
        """Pause or resume reading to match the reasons that hold."""
        want_paused = (
            self._draining
            or self._inflight_full
            or self._budget_wait
            or bool(self._backlog)
            or (self._pause_on_write and self._write_paused)
        )
        if want_paused == self._read_paused or self.closed or self._transport is None:
            return
        self._read_paused = want_paused
        if want_paused:
            self._transport.pause_reading()
        else:
            self._transport.resume_reading()

    # --- sending ------------------------------------------------------------------

    def send(self, cmd: RemotingCommand) -> None:
        """Queue `cmd` for the next flush (same loop turn frames share one write)."""
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectError(f"connection to {self.peer.addr} is closed")
        parts = encode(cmd)
        self._out += parts
        self._out_bytes += len(parts[0]) + body_length(cmd.body)
        if self._flush_handle is None and not self._reading:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        out, self._out = self._out, []
        self._out_bytes = 0
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(out)
            self.last_activity = self._loop.time()
            if self._write_paused:
                self._count_output()

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
        if len(self._tasks) >= self._max_inflight and not self._inflight_full:
            # Stop reading until handlers catch up, so one peer cannot queue unbounded work.
            self._inflight_full = True
            self._update_reading()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._inflight_full and len(self._tasks) <= self._max_inflight // 2:
            self._inflight_full = False
            self._update_reading()

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
        return failure_answer(request, exc, self.peer.addr)

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
            self._draining = True  # reading stays paused until the close
            self._update_reading()
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
        self._out_bytes = 0
        if self._transport is not None:
            self._transport.abort()


def failure_answer(request: RemotingCommand, exc: Exception, peer_addr: str) -> RemotingCommand:
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
        log.info("request code %d from %s refused: %s", request.code, peer_addr, exc)
        return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
    log.error("handler for request code %d from %s failed", request.code, peer_addr, exc_info=exc)
    return request.response(ResponseCode.SYSTEM_ERROR, f"{UNEXPECTED_ERROR_REMARK}, request code {request.code}")
