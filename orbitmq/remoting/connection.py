"""One remoting connection, shared by the server and the client side.

`Connection` is an asyncio protocol: it feeds received bytes to a
`FrameDecoder`, starts one task per incoming request, matches responses to
the requests it sent by opaque, and coalesces outgoing frames so that every
frame produced during one loop turn leaves with a single `writelines` (one
write costs ~5 µs here, whatever its size). `Peer` is the face of a
connection that handlers see.

Ownership: all state of a connection belongs to the event loop thread that
runs it; nothing here is thread-safe.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping

from orbitmq.errors import ConnectError, FrameError, RequestTimeout
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RPC_TYPE_RESPONSE, Buffer, RemotingCommand, next_opaque

log = logging.getLogger("orbitmq.remoting")

Handler = Callable[[RemotingCommand, "Peer"], Awaitable[RemotingCommand | None]]
"""`async def handler(request, peer) -> response | None` (None: send nothing)."""

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
        """`"ip:port"` of the other end, as RocketMQ writes addresses."""
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._conn.closed

    async def invoke(self, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send `cmd` and return the response; `RequestTimeout` or `ConnectError` otherwise."""
        return await self._conn.invoke(cmd, timeout)

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        """Send `cmd` with the oneway flag; returns once queued for writing (`ConnectError` if closed)."""
        cmd.flag |= 0x2
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
        handlers: Mapping[int, Handler],
        *,
        default_handler: Handler | None = None,
        max_frame_length: int,
        max_inflight: int = 4096,
        on_lost: Callable[[Connection], None] | None = None,
    ) -> None:
        self._handlers = handlers
        self._default_handler = default_handler
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
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._read_paused = False
        # Requests we sent that await their response: opaque -> (future, timeout timer).
        self._pending: dict[int, tuple[asyncio.Future[RemotingCommand], asyncio.TimerHandle]] = {}
        # Handler tasks of incoming requests; cancelled when the connection goes away.
        self._tasks: set[asyncio.Task[None]] = set()
        self.lost: asyncio.Future[None] = self._loop.create_future()

    # --- asyncio.Protocol -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peername = transport.get_extra_info("peername")
        if isinstance(peername, tuple) and len(peername) >= 2:
            self.peer.host, self.peer.port = str(peername[0]), int(peername[1])

    def data_received(self, data: bytes) -> None:
        try:
            commands = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("closing connection %s: %s", self.peer.addr, exc)
            self.abort()
            return
        for cmd in commands:
            if cmd.flag & RPC_TYPE_RESPONSE:
                self._complete(cmd)
            else:
                self._dispatch(cmd)

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.clear()
        pending, self._pending = self._pending, {}
        for fut, timer in pending.values():
            timer.cancel()
            if not fut.done():
                fut.set_exception(ConnectError(f"connection to {self.peer.addr} lost"))
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
        if self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        out, self._out = self._out, []
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(out)

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
        opaque = cmd.opaque
        self._pending[opaque] = (fut, self._loop.call_later(timeout, self._expire, opaque, timeout))
        return fut

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        fut = self.invoke_future(cmd, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            self.forget(cmd.opaque)
            raise

    def forget(self, opaque: int) -> None:
        """Stop waiting for the response to `opaque` (a late answer is then dropped)."""
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[1].cancel()

    def _expire(self, opaque: int, timeout: float) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(
                RequestTimeout(f"no response from {self.peer.addr} to request {opaque} within {timeout}s")
            )

    def _complete(self, response: RemotingCommand) -> None:
        entry = self._pending.pop(response.opaque, None)
        if entry is None:
            log.debug("response %d from %s matches no pending request", response.opaque, self.peer.addr)
            return
        fut, timer = entry
        timer.cancel()
        if not fut.done():
            fut.set_result(response)

    # --- serving ------------------------------------------------------------------

    def _dispatch(self, request: RemotingCommand) -> None:
        handler = self._handlers.get(request.code, self._default_handler)
        if handler is None:
            if not request.is_oneway:
                remark = f" request type {request.code} not supported"
                self.send(request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark))
            return
        task = self._loop.create_task(self._serve(handler, request))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        if len(self._tasks) >= self._max_inflight and not self._read_paused and self._transport is not None:
            # Stop reading until handlers catch up, so one peer cannot queue unbounded work.
            self._read_paused = True
            self._transport.pause_reading()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._read_paused and len(self._tasks) <= self._max_inflight // 2 and not self.closed:
            self._read_paused = False
            if self._transport is not None:
                self._transport.resume_reading()

    async def _serve(self, handler: Handler, request: RemotingCommand) -> None:
        try:
            response = await handler(request, self.peer)
        except Exception as exc:  # the boundary where a handler's failure becomes a SYSTEM_ERROR answer
            log.warning("handler for request code %d from %s failed", request.code, self.peer.addr,
                        exc_info=not isinstance(exc, ValueError))
            response = request.response(ResponseCode.SYSTEM_ERROR, str(exc) or type(exc).__name__)
        if response is None or request.is_oneway or self.closed:
            return
        response.opaque = request.opaque
        response.flag |= RPC_TYPE_RESPONSE
        response.serialize_type = request.serialize_type
        try:
            self.send(response)
        except FrameError as exc:
            log.error("response to request code %d cannot be framed: %s", request.code, exc)
            self.send(request.response(ResponseCode.SYSTEM_ERROR, f"response cannot be encoded: {exc}"))
        except ConnectError:
            return
        if self._write_paused:
            await self.drain()

    # --- closing ------------------------------------------------------------------

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
