"""Issue 10 item 7: what connections hold for their peers is bounded and freed at once on close.

Attacks reproduced at small scale: several connections each sending most of a
large frame and then stalling (each held its whole frame; 100 held 1.65 GB),
a peer that never reads its answers, and closed connections whose buffers
stayed alive through a Connection <-> Peer cycle until a full collection.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
import weakref
from collections.abc import AsyncIterator, Callable

import pytest

from orbitmq.remoting.budget import SMALL_FRAME, MemoryBudget
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Connection
from orbitmq.remoting.transport import Peer, RemotingServer

pytestmark = pytest.mark.timeout(60)

MiB = 1 << 20


def sized(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(remark=str(len(request.body_bytes())))


@pytest.fixture
async def small_budget_server() -> AsyncIterator[RemotingServer]:
    server = RemotingServer("127.0.0.1", 0, memory_budget=MemoryBudget(4 * MiB), idle_timeout=None)
    server.register(5, sized)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def frame(body_size: int) -> bytes:
    return b"".join(bytes(p) for p in encode(RemotingCommand.request(5, body=b"x" * body_size)))


def connections(server: RemotingServer) -> list[Connection]:
    return list(server._connections)


async def until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def read_response(reader: asyncio.StreamReader) -> RemotingCommand:
    decoder = FrameDecoder()
    while True:
        data = await reader.read(65536)
        assert data, "connection closed before the answer"
        got = decoder.feed(data)
        if got:
            return got[0]


async def test_unfinished_large_frames_beyond_the_budget_wait_unread_and_all_finish_in_turn(
    small_budget_server: RemotingServer,
) -> None:
    server = small_budget_server
    whole = frame(3 * MiB)  # three of them do not fit a 4 MiB budget together
    head = 2 * MiB
    streams = [await asyncio.open_connection(*server.address) for _ in range(3)]
    for _, writer in streams:
        writer.write(whole[:head])

    def settled() -> bool:
        conns = connections(server)
        if len(conns) < 3:
            return False
        held = sorted(c._decoder.buffered for c in conns)
        # One connection has its 2 MiB in; each other one has stopped reading or has its 2 MiB too.
        return held[-1] >= head and all(c._decoder.buffered >= head or c._read_paused for c in conns)

    await until(settled)
    held = sum(c._decoder.buffered for c in connections(server))
    # The admitted frame's bytes plus at most one read (256 KiB) taken by each waiting connection.
    assert held <= head + 2 * (256 << 10), f"{held} bytes of unfinished frames held with a 4 MiB budget"
    assert server.memory_budget.used <= 4 * MiB

    for _, writer in streams:
        writer.write(whole[head:])
    answers = await asyncio.gather(*(read_response(reader) for reader, _ in streams))
    assert [a.remark for a in answers] == [str(3 * MiB)] * 3
    for _, writer in streams:
        writer.close()
    await until(lambda: not connections(server))
    assert server.memory_budget.used == 0 and server.memory_budget.waiting == 0


async def test_a_peer_that_does_not_read_its_answers_stops_being_read(small_budget_server: RemotingServer) -> None:
    server = small_budget_server
    server.register(6, lambda request, peer: request.response(body=b"y" * (256 << 10)))
    reader, writer = await asyncio.open_connection(*server.address)
    one = b"".join(bytes(p) for p in encode(RemotingCommand.request(6)))
    writer.write(one * 400)  # 400 answers of 256 KiB: 100 MiB if all were made and queued

    def stalled() -> bool:
        conns = connections(server)
        return bool(conns) and conns[0]._read_paused and conns[0]._write_paused

    await until(stalled)
    conn = connections(server)[0]
    assert conn._transport is not None
    queued = conn._transport.get_write_buffer_size()
    assert queued < 40 * MiB, f"{queued} bytes of answers queued for a peer that reads nothing"
    total = 0
    decoder = FrameDecoder()
    answered = 0
    while answered < 400:  # reading resumes once the peer reads: every request is answered
        data = await reader.read(1 << 20)
        assert data
        total += len(data)
        answered += len(decoder.feed(data))
    writer.close()


async def test_closed_connections_release_their_buffers_without_the_cycle_collector() -> None:
    server = RemotingServer("127.0.0.1", 0, idle_timeout=None)
    await server.start()
    whole = frame(4 * MiB)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        streams = [await asyncio.open_connection(*server.address) for _ in range(10)]
        for _, writer in streams:
            writer.write(whole[: MiB])
        await until(lambda: len(connections(server)) == 10
                    and all(c._decoder.buffered >= MiB for c in connections(server)))
        during = tracemalloc.get_traced_memory()[0] - before
        refs = [weakref.ref(c) for c in connections(server)]
        peers = [c.peer for c in connections(server)]  # registries keep peers after a close
        for _, writer in streams:
            writer.close()
            await writer.wait_closed()
        del streams
        await until(lambda: not connections(server))
        for _ in range(3):
            await asyncio.sleep(0)
        after = tracemalloc.get_traced_memory()[0] - before
        alive = sum(r() is not None for r in refs)
        assert all(p.closed for p in peers)
    finally:
        tracemalloc.stop()
        gc.enable()
        await server.close()
    assert during >= 10 * MiB
    assert alive == 0, f"{alive} of 10 closed connections still alive without a collection"
    assert after < 2 * MiB, f"{after} bytes still held after closing every connection"


def test_small_frames_are_always_admitted_and_a_frame_larger_than_the_budget_waits_for_an_empty_one() -> None:
    class Holder:
        closed = False

        def __init__(self) -> None:
            self.granted = 0

        def budget_granted(self, size: int) -> None:
            self.granted = size

    budget = MemoryBudget(MiB)
    a, b, c = Holder(), Holder(), Holder()
    assert budget.exchange(a, 0, 800 << 10)
    assert budget.exchange(c, 0, SMALL_FRAME)  # small: counted, never refused
    assert not budget.exchange(b, 0, 2 * MiB)  # larger than the budget: waits until nothing is held
    assert budget.waiting == 1
    budget.exchange(a, 800 << 10, 0)
    assert b.granted == 0
    budget.exchange(c, SMALL_FRAME, 0)
    assert b.granted == 2 * MiB and budget.used == 2 * MiB
    budget.forget(b, 2 * MiB)
    assert budget.used == 0
