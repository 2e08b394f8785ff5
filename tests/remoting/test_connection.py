"""Connection internals without sockets: write coalescing, inline handlers, timeouts, loss."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from orbitmq.errors import BrokerError, ConnectError, HeaderError, RequestTimeout, TopicNotExist
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import Buffer, RemotingCommand
from orbitmq.remoting.connection import UNEXPECTED_ERROR_REMARK, Connection, Peer, Route

pytestmark = pytest.mark.timeout(10)


class RecordingTransport:
    """Just enough of an asyncio transport to see what a Connection writes."""

    def __init__(self) -> None:
        self.writes: list[list[Buffer]] = []
        self.closing = False
        self.paused_reading = False

    def writelines(self, data: list[Buffer]) -> None:
        self.writes.append(list(data))

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def pause_reading(self) -> None:
        self.paused_reading = True

    def resume_reading(self) -> None:
        self.paused_reading = False

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def frames(self) -> list[RemotingCommand]:
        decoder = FrameDecoder()
        return [cmd for write in self.writes for part in write for cmd in decoder.feed(bytes(part))]


def inline_echo(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(body=request.body_bytes())


async def async_echo(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    await asyncio.sleep(0)
    return request.response(body=request.body_bytes())


def connect(routes: dict[int, Route], **kwargs: Any) -> tuple[Connection, RecordingTransport]:
    conn = Connection(routes, max_frame_length=1 << 20, **kwargs)
    transport = RecordingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


def stream_of(*cmds: RemotingCommand) -> bytes:
    return b"".join(bytes(part) for cmd in cmds for part in encode(cmd))


async def test_inline_handler_answers_of_one_read_leave_in_a_single_write() -> None:
    conn, transport = connect({1: Route(inline_echo)})
    requests = [RemotingCommand.request(1, body=bytes([i])) for i in range(10)]
    conn.data_received(stream_of(*requests))
    assert len(transport.writes) == 1
    assert [r.opaque for r in transport.frames()] == [r.opaque for r in requests]


async def test_async_handler_answers_finished_in_one_loop_turn_leave_in_a_single_write() -> None:
    conn, transport = connect({2: Route(async_echo)})
    requests = [RemotingCommand.request(2, body=bytes([i])) for i in range(10)]
    conn.data_received(stream_of(*requests))
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(transport.writes) == 1
    assert sorted(r.opaque for r in transport.frames()) == sorted(r.opaque for r in requests)


async def test_a_failing_inline_handler_is_answered_system_error_without_python_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        raise KeyError("no such queue")

    conn, transport = connect({3: Route(broken)})
    with caplog.at_level(logging.ERROR, logger="orbitmq.remoting"):
        conn.data_received(stream_of(RemotingCommand.request(3)))
    (response,) = transport.frames()
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == f"{UNEXPECTED_ERROR_REMARK}, request code 3"
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1 and tracebacks[0].exc_info[0] is KeyError  # type: ignore[index]


@pytest.mark.parametrize("inline", [True, False])
async def test_a_broker_error_is_answered_with_its_code_and_remark_and_no_traceback(
    inline: bool, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        raise TopicNotExist("topic[T] not exist, apply first please!")

    async def refuse_later(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        await asyncio.sleep(0)
        raise BrokerError.for_code(24, "the consumer's subscription not exist")

    conn, transport = connect({3: Route(refuse if inline else refuse_later)})
    with caplog.at_level(logging.DEBUG):
        conn.data_received(stream_of(RemotingCommand.request(3)))
        for _ in range(3):
            await asyncio.sleep(0)
    (response,) = transport.frames()
    if inline:
        assert (response.code, response.remark) == (17, "topic[T] not exist, apply first please!")
    else:
        assert (response.code, response.remark) == (24, "the consumer's subscription not exist")
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_oneway_request_whose_handler_refuses_gets_no_answer() -> None:
    def refuse(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        raise TopicNotExist("no")

    conn, transport = connect({3: Route(refuse)})
    conn.data_received(stream_of(RemotingCommand.request(3, oneway=True)))
    assert transport.frames() == []


async def test_a_plain_handler_may_return_an_awaitable_that_is_awaited_in_a_task() -> None:
    loop = asyncio.get_running_loop()
    later: asyncio.Future[RemotingCommand] = loop.create_future()

    def deferred(request: RemotingCommand, peer: Peer) -> asyncio.Future[RemotingCommand]:
        loop.call_soon(later.set_result, request.response(remark="later"))
        return later

    conn, transport = connect({4: Route(deferred)})
    conn.data_received(stream_of(RemotingCommand.request(4)))
    await later
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [r.remark for r in transport.frames()] == ["later"]


async def test_a_default_route_serves_codes_without_their_own_handler() -> None:
    conn, transport = connect({}, default_route=lambda: Route(inline_echo))
    conn.data_received(stream_of(RemotingCommand.request(777, body=b"d")))
    assert [r.body for r in transport.frames()] == [b"d"]


async def test_reading_pauses_while_too_many_handlers_run_and_resumes_after() -> None:
    gate = asyncio.Event()

    async def held(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        await gate.wait()
        return request.response()

    conn, transport = connect({5: Route(held)}, max_inflight=4)
    conn.data_received(stream_of(*(RemotingCommand.request(5) for _ in range(4))))
    assert transport.paused_reading
    gate.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not transport.paused_reading
    assert len(transport.frames()) == 4


async def test_a_request_times_out_no_earlier_than_its_timeout() -> None:
    conn, _ = connect({})
    loop = asyncio.get_running_loop()
    started = loop.time()
    fut = conn.invoke_future(RemotingCommand.request(1), 0.05)
    with pytest.raises(RequestTimeout):
        await fut
    assert loop.time() - started >= 0.05


async def test_a_response_after_the_timeout_is_dropped() -> None:
    conn, _ = connect({})
    request = RemotingCommand.request(1)
    with pytest.raises(RequestTimeout):
        await conn.invoke_future(request, 0.01)
    conn.data_received(stream_of(request.response()))  # late: nobody waits, nothing breaks


async def test_resending_a_command_object_gives_it_a_fresh_opaque_while_the_first_is_pending() -> None:
    conn, _ = connect({})
    request = RemotingCommand.request(1)
    first = conn.invoke_future(request, 5.0)
    first_opaque = request.opaque
    second = conn.invoke_future(request, 5.0)
    assert request.opaque != first_opaque
    await asyncio.sleep(0)
    conn.data_received(stream_of(RemotingCommand(0, opaque=first_opaque, flag=1)))
    assert (await first).opaque == first_opaque and not second.done()
    conn.connection_lost(None)
    with pytest.raises(ConnectError):
        await second


async def test_handler_tasks_are_cancelled_when_the_connection_is_lost() -> None:
    cancelled = asyncio.Event()

    async def forever(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return request.response()

    conn, transport = connect({6: Route(forever)})
    conn.data_received(stream_of(RemotingCommand.request(6)))
    await asyncio.sleep(0)
    conn.connection_lost(None)
    await asyncio.wait_for(cancelled.wait(), 2.0)
    assert transport.frames() == []
    with pytest.raises(ConnectError):
        conn.send(RemotingCommand.request(1))


async def test_an_async_handler_runs_up_to_its_first_await_while_the_request_is_read() -> None:
    steps: list[str] = []

    async def two_phase(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        steps.append(f"start {request.body_bytes().decode()}")
        await asyncio.sleep(0)
        steps.append(f"end {request.body_bytes().decode()}")
        return request.response(body=request.body_bytes())

    conn, transport = connect({7: Route(two_phase)})
    conn.data_received(stream_of(RemotingCommand.request(7, body=b"a"), RemotingCommand.request(7, body=b"b")))
    assert steps == ["start a", "start b"]
    for _ in range(4):
        await asyncio.sleep(0)
    assert steps == ["start a", "start b", "end a", "end b"]
    assert [r.body for r in transport.frames()] == [b"a", b"b"]


async def test_an_async_handler_that_never_waits_is_answered_without_a_task() -> None:
    conn, transport = connect({8: Route(async_echo_now)})
    conn.data_received(stream_of(RemotingCommand.request(8, body=b"now")))
    assert [r.body for r in transport.frames()] == [b"now"]  # before any loop turn


async def async_echo_now(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(body=request.body_bytes())


async def test_a_handler_failing_after_its_first_await_is_answered_system_error() -> None:
    async def late_failure(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        await asyncio.sleep(0)
        raise HeaderError("bad offset")  # our own validation text is the remark

    conn, transport = connect({9: Route(late_failure)})
    conn.data_received(stream_of(RemotingCommand.request(9)))
    for _ in range(3):
        await asyncio.sleep(0)
    (response,) = transport.frames()
    assert response.code == ResponseCode.SYSTEM_ERROR and response.remark == "bad offset"


async def test_a_handler_registered_not_eager_runs_inside_a_task_from_the_start() -> None:
    seen: list[asyncio.Task[Any] | None] = []

    async def needs_task(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        seen.append(asyncio.current_task())
        async with asyncio.timeout(1.0):
            await asyncio.sleep(0)
        return request.response()

    conn, transport = connect({10: Route(needs_task, eager=False)})
    conn.data_received(stream_of(RemotingCommand.request(10)))
    for _ in range(4):
        await asyncio.sleep(0)
    assert seen and seen[0] is not None
    assert [r.code for r in transport.frames()] == [ResponseCode.SUCCESS]


async def test_a_handler_returning_something_else_than_a_command_is_answered_system_error() -> None:
    def confused(request: RemotingCommand, peer: Peer) -> Any:
        return {"code": 0}

    conn, transport = connect({11: Route(confused)})
    conn.data_received(stream_of(RemotingCommand.request(11), RemotingCommand.request(11)))
    assert [r.code for r in transport.frames()] == [ResponseCode.SYSTEM_ERROR] * 2


async def test_closing_from_inside_a_handler_still_sends_the_answers_already_made() -> None:
    def answer_then_close(request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        if request.body_bytes() == b"close":
            peer.close()
            return None
        return request.response(body=b"ok")

    conn, transport = connect({12: Route(answer_then_close)})
    conn.data_received(stream_of(RemotingCommand.request(12), RemotingCommand.request(12, body=b"close")))
    assert [r.body for r in transport.frames()] == [b"ok"]
    assert transport.closing


async def test_a_short_timeout_fires_on_time_while_a_longer_one_is_pending() -> None:
    conn, _ = connect({})
    long_poll = conn.invoke_future(RemotingCommand.request(1), 30.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(RequestTimeout):
        await conn.invoke_future(RemotingCommand.request(1), 0.05)
    assert loop.time() - started < 5.0
    assert not long_poll.done()
    conn.connection_lost(None)
    with pytest.raises(ConnectError):
        await long_poll


async def test_answered_requests_leave_nothing_behind_for_the_sweeper() -> None:
    conn, _ = connect({})
    for _ in range(3):
        requests = [RemotingCommand.request(1) for _ in range(100)]
        futures = [conn.invoke_future(r, 30.0) for r in requests]
        conn.data_received(stream_of(*(r.response() for r in requests)))
        assert all(f.done() for f in futures)
    pending = conn._pending
    assert len(pending) == 0
    assert sum(len(b) for b in pending._buckets.values()) == 0


async def test_a_handler_cancelled_before_it_ever_waits_ends_quietly_and_the_connection_lives_on() -> None:
    async def gives_up(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        raise asyncio.CancelledError

    conn, transport = connect({13: Route(gives_up), 1: Route(inline_echo)})
    conn.data_received(stream_of(RemotingCommand.request(13), RemotingCommand.request(1, body=b"next")))
    assert [r.body for r in transport.frames()] == [b"next"]
    assert not transport.closing
