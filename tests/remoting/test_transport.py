"""Behaviour of RemotingServer and RemotingClient over real loopback sockets (in-process)."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import struct
from collections.abc import AsyncIterator

import pytest

from orbitmq.errors import ConnectError, RequestTimeout
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand, SerializeType
from orbitmq.remoting.headers import GetMaxOffsetRequestHeader
from orbitmq.remoting.transport import Peer, RemotingClient, RemotingServer
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(20)

ECHO = 9001
FAIL = 9002
SLOW = 9003
RECORD = 9004


async def echo(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(ext_fields=dict(request.ext_fields or {}), body=request.body_bytes())


async def fail(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    raise RuntimeError("disk on fire")


async def slow(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    await asyncio.sleep(float(request.field("seconds", "5") or 5))
    return request.response()


class Held:
    """A handler that tells when its request arrived and answers only once released (or is cancelled)."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def __call__(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        self.arrived.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return request.response()


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    srv = RemotingServer("127.0.0.1", 0)
    srv.register(ECHO, echo)
    srv.register(FAIL, fail)
    srv.register(SLOW, slow)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    async with RemotingClient(connect_timeout=2.0) as c:
        yield c


def addr_of(server: RemotingServer) -> str:
    return f"{server.host}:{server.port}"


async def raw_connection(server: RemotingServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def read_one(reader: asyncio.StreamReader, timeout: float = 3.0) -> RemotingCommand:
    decoder = FrameDecoder()
    while True:
        data = await asyncio.wait_for(reader.read(65536), timeout)
        if not data:
            raise ConnectionError("closed by server")
        commands = decoder.feed(data)
        if commands:
            return commands[0]


async def test_a_request_is_answered_with_the_same_opaque_and_body(server: RemotingServer, client: RemotingClient) -> None:
    request = RemotingCommand.request(ECHO, {"k": "v"}, body=[b"ab", memoryview(b"cd")])
    response = await client.invoke(addr_of(server), request, timeout=3.0)
    assert response.opaque == request.opaque
    assert response.is_response
    assert response.ext_fields == {"k": "v"}
    assert response.body == b"abcd"


async def test_a_binary_header_request_gets_a_binary_header_response(server: RemotingServer) -> None:
    reader, writer = await raw_connection(server)
    request = RemotingCommand.request(ECHO, {"topic": "T"})
    request.serialize_type = SerializeType.ROCKETMQ
    writer.writelines(encode(request))
    response = await read_one(reader)
    assert response.serialize_type == SerializeType.ROCKETMQ
    assert response.opaque == request.opaque and response.ext_fields == {"topic": "T"}
    writer.close()


async def test_an_unknown_request_code_is_answered_request_code_not_supported(
    server: RemotingServer, client: RemotingClient
) -> None:
    response = await client.invoke(addr_of(server), RemotingCommand.request(4242), timeout=3.0)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 4242 not supported"


async def test_a_failing_handler_is_answered_system_error_and_the_connection_keeps_working(
    server: RemotingServer, client: RemotingClient
) -> None:
    response = await client.invoke(addr_of(server), RemotingCommand.request(FAIL), timeout=3.0)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None and "disk on fire" not in response.remark  # never Python's own text
    again = await client.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"x"), timeout=3.0)
    assert again.code == ResponseCode.SUCCESS and again.body == b"x"


async def test_a_oneway_request_is_never_answered(server: RemotingServer) -> None:
    seen: list[RemotingCommand] = []

    async def record(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        seen.append(request)
        return request.response()

    server.register(RECORD, record)
    reader, writer = await raw_connection(server)
    writer.writelines(encode(RemotingCommand.request(RECORD, oneway=True)))
    writer.writelines(encode(RemotingCommand.request(4242, oneway=True)))
    ping = RemotingCommand.request(ECHO)
    writer.writelines(encode(ping))
    # The first and only answer on the connection is the one to the normal request.
    response = await read_one(reader)
    assert response.opaque == ping.opaque
    assert len(seen) == 1 and seen[0].is_oneway
    writer.close()


async def test_a_slow_handler_does_not_block_other_requests_on_the_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    held = client.invoke_async(addr_of(server), RemotingCommand.request(SLOW, {"seconds": "2"}), timeout=5.0)
    quick = await client.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"q"), timeout=1.0)
    assert quick.body == b"q"
    assert not held.done()
    assert (await held).code == ResponseCode.SUCCESS


async def test_a_request_without_answer_in_time_raises_request_timeout(
    server: RemotingServer, client: RemotingClient
) -> None:
    with pytest.raises(RequestTimeout):
        await client.invoke(addr_of(server), RemotingCommand.request(SLOW, {"seconds": "5"}), timeout=0.2)
    # The connection survives a timeout.
    response = await client.invoke(addr_of(server), RemotingCommand.request(ECHO), timeout=3.0)
    assert response.code == ResponseCode.SUCCESS


async def test_invoke_async_calls_back_with_the_done_future(server: RemotingServer, client: RemotingClient) -> None:
    done: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    def callback(fut: asyncio.Future[RemotingCommand]) -> None:
        done.set_result(fut.result())

    fut = client.invoke_async(addr_of(server), RemotingCommand.request(ECHO, body=b"cb"), 3.0, callback)
    assert (await asyncio.wait_for(done, 3.0)).body == b"cb"
    assert fut.result().body == b"cb"


async def test_connecting_to_a_closed_port_raises_connect_error(client: RemotingClient) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectError):
        await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), timeout=2.0)


async def test_pending_requests_fail_at_once_with_connect_error_when_the_connection_is_lost(
    client: RemotingClient,
) -> None:
    async with RemotingServer() as srv:
        held = Held()
        srv.register(SLOW, held)
        pending = client.invoke_async(addr_of(srv), RemotingCommand.request(SLOW), 30.0)
        await asyncio.wait_for(held.arrived.wait(), 5.0)  # the request is in flight on the connection
        for peer in srv.peers:
            peer.close()
        with pytest.raises(ConnectError):
            await asyncio.wait_for(pending, 3.0)


async def test_the_client_reconnects_after_the_server_restarts(client: RemotingClient) -> None:
    srv = RemotingServer()
    srv.register(ECHO, echo)
    host, port = await srv.start()
    addr = f"{host}:{port}"
    assert (await client.invoke(addr, RemotingCommand.request(ECHO, body=b"1"), 3.0)).body == b"1"
    await srv.close()
    with pytest.raises(ConnectError):
        await client.invoke(addr, RemotingCommand.request(ECHO), 1.0)
    restarted = RemotingServer(host, port)
    restarted.register(ECHO, echo)
    await restarted.start()
    try:
        assert (await client.invoke(addr, RemotingCommand.request(ECHO, body=b"2"), 3.0)).body == b"2"
    finally:
        await restarted.close()


async def test_the_server_can_send_a_request_to_a_client_and_get_its_answer(
    server: RemotingServer, client: RemotingClient
) -> None:
    async def running_info(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=b"info for " + (request.field("consumerGroup") or "").encode())

    client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
    await client.invoke(addr_of(server), RemotingCommand.request(ECHO), 3.0)
    (peer,) = server.peers
    cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "CG", "clientId": "c1"})
    response = await peer.invoke(cmd, timeout=3.0)
    assert response.body == b"info for CG"


async def test_disconnect_callbacks_see_the_peer_that_left(server: RemotingServer) -> None:
    gone: asyncio.Queue[Peer] = asyncio.Queue()
    server.on_disconnect(gone.put_nowait)
    reader, writer = await raw_connection(server)
    writer.writelines(encode(RemotingCommand.request(ECHO)))
    await read_one(reader)
    (peer,) = server.peers
    writer.close()
    left = await asyncio.wait_for(gone.get(), 3.0)
    assert left is peer and left.closed


async def test_an_oversized_length_prefix_closes_only_that_connection(server: RemotingServer) -> None:
    good_reader, good_writer = await raw_connection(server)
    bad_reader, bad_writer = await raw_connection(server)
    bad_writer.write(struct.pack(">i", (16 << 20) + 1) + b"\x00" * 8)
    assert await asyncio.wait_for(bad_reader.read(), 3.0) == b""
    ping = RemotingCommand.request(ECHO, body=b"still here")
    good_writer.writelines(encode(ping))
    assert (await read_one(good_reader)).body == b"still here"
    good_writer.close()
    bad_writer.close()


async def test_a_request_with_a_bad_header_is_answered_system_error_naming_the_field(
    server: RemotingServer, client: RemotingClient
) -> None:
    async def max_offset(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        return request.response(ext_fields={"offset": str(header.queue_id)})

    server.register(RequestCode.GET_MAX_OFFSET, max_offset)
    response = await client.invoke(
        addr_of(server), RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"queueId": "1"}), 3.0
    )
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "the custom field <topic> is null"


async def test_random_and_truncated_frames_never_take_the_server_down(server: RemotingServer) -> None:
    rng = random.Random(20261122)
    valid = b"".join(
        b"".join(bytes(p) for p in encode(RemotingCommand.request(ECHO, {"k": "v" * i}, body=bytes(i))))
        for i in range(5)
    )
    garbage = [
        rng.randbytes(rng.randint(1, 300)) for _ in range(20)
    ] + [
        valid[: rng.randint(1, len(valid) - 1)] for _ in range(10)
    ] + [
        struct.pack(">ii", 40, rng.randint(0, 2**31 - 1)) + rng.randbytes(36) for _ in range(10)
    ] + [
        struct.pack(">ii", 30, 22) + b'{"code":9001,"opaque":' + rng.randbytes(4) for _ in range(5)
    ]
    for junk in garbage:
        reader, writer = await raw_connection(server)
        writer.write(junk)
        await writer.drain()
        writer.close()
    reader, writer = await raw_connection(server)
    ping = RemotingCommand.request(ECHO, body=b"alive")
    writer.writelines(encode(ping))
    assert (await read_one(reader)).body == b"alive"
    writer.close()


async def test_a_connect_that_hangs_raises_connect_error_after_the_connect_timeout() -> None:
    # A listener whose accept queue is full drops further connection attempts, so connect hangs.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        try:
            async with RemotingClient(connect_timeout=0.3) as client:
                with pytest.raises(ConnectError, match="timed out"):
                    await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), timeout=5.0)
        finally:
            for filler in fillers:
                filler.close()


async def test_closing_the_server_cancels_running_handlers_and_fails_pending_requests(
    client: RemotingClient,
) -> None:
    held = Held()
    srv = RemotingServer()
    srv.register(SLOW, held)
    await srv.start()
    pending = client.invoke_async(addr_of(srv), RemotingCommand.request(SLOW), 30.0)
    await asyncio.wait_for(held.arrived.wait(), 5.0)  # the handler runs when the server closes
    await asyncio.wait_for(srv.close(), 5.0)
    assert held.cancelled.is_set()
    with pytest.raises(ConnectError):
        await asyncio.wait_for(pending, 3.0)


async def test_a_response_above_the_clients_frame_limit_drops_that_connection(server: RemotingServer) -> None:
    async with RemotingClient(max_frame_length=1024) as small:
        with pytest.raises(ConnectError):
            await small.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"x" * 4096), timeout=3.0)
        ok = await small.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"fits"), timeout=3.0)
        assert ok.body == b"fits"


async def test_a_oneway_request_from_the_server_reaches_the_client_handler_and_is_not_answered(
    server: RemotingServer, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="orbitmq.remoting")
    received: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    def notify(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        received.put_nowait(request)
        return request.response()  # must not be sent: the request is oneway

    client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, notify)
    await client.invoke(addr_of(server), RemotingCommand.request(ECHO), 3.0)
    (peer,) = server.peers
    await peer.invoke_oneway(
        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "CG"})
    )
    got = await asyncio.wait_for(received.get(), 3.0)
    assert got.is_oneway and got.field("consumerGroup") == "CG"
    # An answer would travel ahead of this request on the same connection and reach the
    # server as a response matching no pending request.
    assert (await client.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"z"), 3.0)).body == b"z"
    assert not [r for r in caplog.records if "matches no pending request" in r.getMessage()]


async def test_a_graceful_close_lets_running_handlers_answer_first(client: RemotingClient) -> None:
    held = Held()
    srv = RemotingServer()
    srv.register(SLOW, held)
    await srv.start()
    pending = client.invoke_async(addr_of(srv), RemotingCommand.request(SLOW), 5.0)
    await asyncio.wait_for(held.arrived.wait(), 5.0)
    closing = asyncio.ensure_future(srv.close(drain_timeout=3.0))
    # The handler finishes only after close() has begun (the loop runs callbacks in order): a close
    # that did not drain would have cancelled it by then.
    asyncio.get_running_loop().call_soon(held.release.set)
    await asyncio.wait_for(closing, 5.0)
    assert not held.cancelled.is_set()
    assert (await asyncio.wait_for(pending, 3.0)).code == ResponseCode.SUCCESS


async def test_a_cancelled_invoke_stops_waiting_and_its_late_answer_is_dropped(
    server: RemotingServer, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="orbitmq.remoting")
    held = Held()
    server.register(SLOW, held)
    call = asyncio.ensure_future(client.invoke(addr_of(server), RemotingCommand.request(SLOW), timeout=5.0))
    await asyncio.wait_for(held.arrived.wait(), 5.0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    held.release.set()  # now the answer comes, for a request nobody waits for

    async def dropped() -> bool:
        return any("matches no pending request" in r.getMessage() for r in caplog.records)

    await until(dropped, timeout=5.0)
    assert (await client.invoke(addr_of(server), RemotingCommand.request(ECHO, body=b"k"), 3.0)).body == b"k"


async def test_an_idle_connection_is_closed_and_an_active_one_is_kept() -> None:
    srv = RemotingServer(idle_timeout=0.6)
    srv.register(ECHO, echo)
    await srv.start()
    try:
        idle_reader, idle_writer = await raw_connection(srv)
        active_reader, active_writer = await raw_connection(srv)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 1.5
        while loop.time() < deadline:  # keep one connection talking
            active_writer.writelines(encode(RemotingCommand.request(ECHO)))
            await read_one(active_reader)
            await asyncio.sleep(0.05)
        assert await asyncio.wait_for(idle_reader.read(), 3.0) == b""
        active_writer.writelines(encode(RemotingCommand.request(ECHO, body=b"alive")))
        assert (await read_one(active_reader)).body == b"alive"
        idle_writer.close()
        active_writer.close()
    finally:
        await srv.close()


async def test_concurrent_first_requests_to_an_address_share_one_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    calls = [client.invoke(addr_of(server), RemotingCommand.request(ECHO, body=bytes([i])), 3.0) for i in range(20)]
    responses = await asyncio.gather(*calls)
    assert [r.body for r in responses] == [bytes([i]) for i in range(20)]
    assert len(server.peers) == 1
