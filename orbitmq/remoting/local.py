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

Threads: `LocalDispatch` belongs to the broker's loop; a `LocalChannel` may be used from any
other loop (the in-broker front runs on a thread of its own) or from the broker's loop itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orbitmq.errors import ConnectError, RequestTimeout
from orbitmq.remoting.codec import _ext_value
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RPC_TYPE_RESPONSE, RemotingCommand
from orbitmq.remoting.connection import Peer, _peer_ids, failure_answer

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
    """A broker's handlers offered to callers in the same process (made on the broker's loop)."""

    def __init__(self, server: RemotingServer, addr: Callable[[], str]) -> None:
        self.loop = asyncio.get_running_loop()
        self._server = server
        self._addr = addr
        self.closed = False
        #: Requests served in-process so far (tests and diagnostics read it).
        self.served = 0
        self._running: set[concurrent.futures.Future[RemotingCommand | None]] = set()

    @property
    def addr(self) -> str:
        """The broker's address as routes name it; requests to it are served here."""
        return self._addr()

    def channel(self) -> LocalChannel:
        """A channel for one client (one peer, as one connection would be)."""
        host = self.addr.rpartition(":")[0].strip("[]") or "127.0.0.1"
        return LocalChannel(self, LocalPeer(host))

    def submit(self, request: RemotingCommand, peer: LocalPeer) -> concurrent.futures.Future[RemotingCommand | None]:
        """Serve `request` on the broker's loop (callable from any thread); `ConnectError` once closed."""
        if self.closed or self.loop.is_closed():
            raise ConnectError(f"broker {self.addr} is closed")
        future = asyncio.run_coroutine_threadsafe(self._serve(request, peer), self.loop)
        self._running.add(future)
        future.add_done_callback(self._running.discard)
        return future

    async def _serve(self, request: RemotingCommand, peer: LocalPeer) -> RemotingCommand | None:
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

    def cancel(self, futures: list[concurrent.futures.Future[RemotingCommand | None]]) -> None:
        if self.loop.is_closed():  # nothing runs there any more; the callers time out
            return
        for future in futures:
            future.cancel()  # thread-safe: the handler's task is cancelled on the broker's loop

    def close(self) -> None:
        """Refuse new requests and cancel the handlers still running (as closing connections does)."""
        self.closed = True
        self.cancel(list(self._running))


class LocalChannel:
    """One client's way into a `LocalDispatch`: what a connection is over the wire."""

    def __init__(self, dispatch: LocalDispatch, peer: LocalPeer) -> None:
        self.dispatch = dispatch
        self.peer = peer
        self._running: set[concurrent.futures.Future[RemotingCommand | None]] = set()

    @property
    def addr(self) -> str:
        return self.dispatch.addr

    def invoke(self, cmd: RemotingCommand, timeout: float) -> asyncio.Future[RemotingCommand]:
        """Hand `cmd` to the broker; the future (on the caller's loop) gets its response or
        `RequestTimeout` after `timeout` seconds, or `ConnectError` when the broker or channel closes."""
        loop = asyncio.get_running_loop()
        result: asyncio.Future[RemotingCommand] = loop.create_future()
        if self.peer.closed:
            result.set_exception(ConnectError(f"in-process channel to {self.addr} is closed"))
            return result
        try:
            future = self.dispatch.submit(as_received(cmd), self.peer)
        except ConnectError as exc:
            result.set_exception(exc)
            return result
        self._running.add(future)
        addr, opaque = self.addr, cmd.opaque

        def expire() -> None:
            if not result.done():
                result.set_exception(RequestTimeout(f"no response from {addr} to request {opaque} within {timeout}s"))

        timer = loop.call_later(timeout, expire)
        result.add_done_callback(lambda _: timer.cancel())

        def settle(done: concurrent.futures.Future[RemotingCommand | None]) -> None:
            if result.done():
                return
            if done.cancelled():
                result.set_exception(ConnectError(f"in-process request to {addr} was dropped: the broker or channel closed"))
                return
            exc = done.exception()
            if exc is not None:  # the broker's loop stopped under it; a handler's errors are answers
                result.set_exception(ConnectError(f"in-process request to {addr} failed: {exc!r}"))
                return
            response = done.result()
            if response is not None:  # no answer: the caller times out, as over the wire
                result.set_result(response)

        def finished(done: concurrent.futures.Future[RemotingCommand | None]) -> None:
            self._running.discard(done)
            try:
                loop.call_soon_threadsafe(settle, done)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                pass

        future.add_done_callback(finished)
        return result

    def close(self) -> None:
        """No more requests; cancel this channel's handlers still running."""
        self.peer.close()
        self.dispatch.cancel(list(self._running))
