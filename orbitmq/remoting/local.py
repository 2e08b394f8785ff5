"""In-process remoting: requests handed to a broker in the same process as objects (local mode).

A gRPC front running inside a broker (`enableGrpcProxy=true`, `orbitmq dev`) talks to that
broker through its `RemotingClient`s like to any other; with a `LocalChannel` attached
(`client.local`), `RemotingClient.invoke` hands each request for the broker's own address to
the broker's handlers on the broker's event loop — no encoding, socket or decoding — and the
response comes back the same way. Requests to any other address, `invoke_async`,
`invoke_oneway` and requests the broker sends back to a client (transaction checks, consumer
running info: they need a real channel) keep using remoting connections.

The handed-over request is what the broker would have decoded from the wire: ext field values
as strings (None dropped), the body as bytes, an empty remark as none; the response likewise,
its body joined into bytes on the broker's loop before the files it may point into are released.
The broker serves it through the handler registered on its remoting server for the code, so ACL
(the signature the client's RPC hook put on the command), shutdown refusals, statistics and the
error boundary (`failure_answer`) apply exactly as to a request read from a socket. The peer the
handlers see is one `LocalPeer` per channel: the broker's host, port 0, with no channel back.

Timeouts and cancellation behave as over the wire: the caller gets `RequestTimeout` after
`timeout` (also when the handler answers nothing), and a caller giving up does not stop the
handler, whose late answer is dropped. Closing the channel (its client closes) or the dispatch
(the broker closes) cancels the handlers still running, as a lost connection does; requests
handed over afterwards fail with `ConnectError`.

Threads: `LocalDispatch` belongs to the broker's loop; a `LocalChannel` is used from one loop,
another thread's (the in-broker front runs on a thread of its own) or the broker's own. Requests
cross in an inbox the broker's loop empties, answers in an outbox the caller's loop empties: a
burst (the 32 acks of a received batch) costs one wake-up of the other loop, not one each.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orbitmq.errors import ConnectError
from orbitmq.remoting.codec import _ext_value
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RPC_TYPE_RESPONSE, RemotingCommand
from orbitmq.remoting.connection import Peer, _peer_ids, failure_answer
from orbitmq.remoting.eager import start_eagerly
from orbitmq.remoting.pending import PendingRequests

if TYPE_CHECKING:
    from orbitmq.remoting.transport import RemotingServer

log = logging.getLogger("orbitmq.remoting")


def as_received(cmd: RemotingCommand) -> RemotingCommand:
    """A copy of `cmd` as the other side decodes it from the wire (shares no mutable part)."""
    ext = cmd.ext_fields
    if ext is not None:
        ext = {k: v if type(v) is str else _ext_value(v) for k, v in ext.items() if v is not None}
    body = cmd.body
    if body is not None and type(body) is not bytes:
        body = cmd.body_bytes()
    return RemotingCommand(cmd.code, ext, body or None, cmd.remark or None, cmd.opaque, cmd.flag,
                           cmd.language, cmd.version, cmd.serialize_type)


class LocalPeer(Peer):
    """The in-process caller as the broker's handlers see it: no connection to call back over."""

    __slots__ = ("_open",)

    def __init__(self, host: str, port: int = 0) -> None:  # no Connection behind it
        self.id = next(_peer_ids)
        self.host = host
        self.port = port
        self._open = True

    @property
    def closed(self) -> bool:
        return not self._open

    def _conn(self) -> Any:
        raise ConnectError(f"{self.addr} is an in-process caller: no channel for requests from the broker")

    async def invoke(self, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        return self._conn()  # type: ignore[no-any-return]

    async def invoke_oneway(self, cmd: RemotingCommand) -> None:
        self._conn()

    def close(self) -> None:
        self._open = False

    def __repr__(self) -> str:
        return f"LocalPeer(id={self.id}, addr={self.addr!r}, closed={self.closed})"


class LocalDispatch:
    """A broker's handlers offered to callers in the same process (made on the broker's loop).

    Requests handed over from other threads wait in an inbox that one loop callback empties, so a
    burst of them (the 32 acks of a received batch) wakes the broker's loop once, not once each.
    """

    def __init__(self, server: RemotingServer, addr: Callable[[], str]) -> None:
        self.loop = asyncio.get_running_loop()
        self._server = server
        self._addr = addr
        self.closed = False
        #: Requests served in-process so far (tests and diagnostics read it).
        self.served = 0
        self._inbox: deque[tuple[RemotingCommand, LocalChannel, int]] = deque()  # (request, channel, opaque)
        self._lock = threading.Lock()
        self._wake_pending = False
        #: The handlers running, per channel (broker loop only).
        self._running: dict[LocalChannel, set[asyncio.Task[None]]] = {}

    @property
    def addr(self) -> str:
        """The broker's address as routes name it; requests to it are served here."""
        return self._addr()

    def channel(self) -> LocalChannel:
        """A channel for one client (one peer, as one connection would be)."""
        host = self.addr.rpartition(":")[0].strip("[]") or "127.0.0.1"
        return LocalChannel(self, LocalPeer(host))

    @property
    def running(self) -> int:
        """Handlers running for in-process callers now."""
        return sum(len(tasks) for tasks in list(self._running.values()))

    def submit(self, request: RemotingCommand, channel: LocalChannel, key: int) -> None:
        """Serve `request` for `channel` on the broker's loop (callable from any thread); its answer
        goes to `channel.deliver(key, ...)`. `ConnectError` once the broker is closed."""
        if self.closed or self.loop.is_closed():
            raise ConnectError(f"broker {self.addr} is closed")
        with self._lock:
            self._inbox.append((request, channel, key))
            if self._wake_pending:
                return
            self._wake_pending = True
        try:
            self.loop.call_soon_threadsafe(self._take_inbox)
        except RuntimeError:  # closed meanwhile
            raise ConnectError(f"broker {self.addr} is closed") from None

    def _take_inbox(self) -> None:
        with self._lock:
            items = list(self._inbox)
            self._inbox.clear()
            self._wake_pending = False
        for request, channel, key in items:
            if self.closed or channel.peer.closed:
                channel.deliver(key, ConnectError(f"broker {self.addr} or its in-process channel is closed"))
                continue
            route = self._server.route(request.code)
            coro = self._serve(request, channel, key)
            if route is None or route.eager:  # as the connection does: no task unless it waits
                task = start_eagerly(self.loop, coro)
            else:
                task = self.loop.create_task(coro)
            if task is not None:
                tasks = self._running.setdefault(channel, set())
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    async def _serve(self, request: RemotingCommand, channel: LocalChannel, key: int) -> None:
        try:
            answer = await self._answer(request, channel.peer)
        except asyncio.CancelledError:
            channel.deliver(key, ConnectError(f"in-process request to {self.addr} was dropped: "
                                              "the broker or the channel closed"))
            raise
        channel.deliver(key, answer)

    async def _answer(self, request: RemotingCommand, peer: LocalPeer) -> RemotingCommand | None:
        self.served += 1
        route = self._server.route(request.code)
        if route is None:
            if request.is_oneway:
                return None
            return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                    f" request type {request.code} not supported")
        try:
            response = route.handler(request, peer)
            if inspect.isawaitable(response):
                response = await response
        except Exception as exc:  # noqa: BLE001 - the connection's error boundary, as over the wire
            response = failure_answer(request, exc, peer.addr)
        if response is None or request.is_oneway:
            return None
        if not isinstance(response, RemotingCommand):
            log.error("handler for request code %d returned %r, not a RemotingCommand", request.code, response)
            response = request.response(ResponseCode.SYSTEM_ERROR, "handler returned no RemotingCommand")
        try:
            answer = as_received(response)  # joins a body of file slices before they are released
        except (TypeError, ValueError) as exc:
            log.error("response to request code %d cannot be encoded: %s", request.code, exc)
            answer = request.response(ResponseCode.SYSTEM_ERROR, f"response cannot be encoded: {exc}")
        answer.opaque = request.opaque
        answer.flag |= RPC_TYPE_RESPONSE
        answer.serialize_type = request.serialize_type
        return answer

    def cancel(self, channel: LocalChannel) -> None:
        """Cancel the handlers running for `channel` (callable from any thread)."""
        if self.loop.is_closed():  # nothing runs there any more
            return
        try:
            self.loop.call_soon_threadsafe(self._cancel, channel)
        except RuntimeError:
            pass

    def _cancel(self, channel: LocalChannel) -> None:
        for task in self._running.pop(channel, set()):
            task.cancel()

    def close(self) -> None:
        """Refuse new requests and cancel the handlers still running, as closing connections does
        (on the broker's loop)."""
        self.closed = True
        self._take_inbox()
        for channel in list(self._running):
            self._cancel(channel)


class LocalChannel:
    """One client's way into a `LocalDispatch`: what a connection is over the wire. Used from one
    event loop (the caller's); answers come back to it in batches, one loop wake-up per batch.
    Requests are known by their opaque, as on a connection (`PendingRequests`: timeouts swept)."""

    def __init__(self, dispatch: LocalDispatch, peer: LocalPeer) -> None:
        self.dispatch = dispatch
        self.peer = peer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: PendingRequests | None = None
        self._outbox: deque[tuple[int, RemotingCommand | Exception]] = deque()
        self._lock = threading.Lock()
        self._wake_pending = False

    @property
    def addr(self) -> str:
        return self.dispatch.addr

    def invoke(self, cmd: RemotingCommand, timeout: float) -> asyncio.Future[RemotingCommand]:
        """Hand `cmd` to the broker; the future (on the caller's loop) gets its response or
        `RequestTimeout` after `timeout` seconds, or `ConnectError` when the broker or channel closes."""
        pending = self._pending
        if pending is None:
            self._loop = asyncio.get_running_loop()
            pending = self._pending = PendingRequests(self._loop, lambda: self.addr)
        assert self._loop is not None
        result: asyncio.Future[RemotingCommand] = self._loop.create_future()
        if self.peer.closed:
            result.set_exception(ConnectError(f"in-process channel to {self.addr} is closed"))
            return result
        pending.add(cmd.opaque, result, timeout)
        try:
            self.dispatch.submit(as_received(cmd), self, cmd.opaque)
        except ConnectError as exc:
            pending.fail(cmd.opaque, exc)
        return result

    def forget(self, opaque: int) -> None:
        """Stop waiting for `opaque` (its caller was cancelled); a late answer is dropped."""
        if self._pending is not None:
            self._pending.forget(opaque)

    def deliver(self, opaque: int, answer: RemotingCommand | Exception | None) -> None:
        """The broker's answer to request `opaque` (from the broker's loop); None: it answered nothing."""
        loop = self._loop
        if loop is None or answer is None:  # no answer: the caller times out, as over the wire
            return
        with self._lock:
            self._outbox.append((opaque, answer))
            if self._wake_pending:
                return
            self._wake_pending = True
        try:
            loop.call_soon_threadsafe(self._take_outbox)
        except RuntimeError:  # the caller's loop is closed: nobody waits any more
            pass

    def _take_outbox(self) -> None:
        with self._lock:
            items = list(self._outbox)
            self._outbox.clear()
            self._wake_pending = False
        pending = self._pending
        if pending is None:
            return
        for opaque, answer in items:  # an answer nobody waits for any more is dropped
            if isinstance(answer, Exception):
                pending.fail(opaque, answer)
            else:
                pending.complete(answer)

    def close(self) -> None:
        """No more requests (call on the caller's loop); the waiting ones fail with `ConnectError`,
        and this channel's handlers still running are cancelled."""
        self.peer.close()
        if self._pending is not None:
            addr = self.addr
            self._pending.fail_all(lambda: ConnectError(f"in-process channel to {addr} is closed"))
        self.dispatch.cancel(self)
