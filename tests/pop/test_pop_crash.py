"""Un-acked POP state survives a SIGKILL: the revive topic is replayed at start.

Popped-unacked messages come back (reconsumeTimes 1) once their invisible time passes;
acked ones and ones never popped twice do not.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from orbitmq.client.pop import ack, pop
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic
from tests.pop.helpers import pop_all, send
from tests.support.procs import ServerProcess, start_lone_broker

pytestmark = pytest.mark.timeout(90)

NAME = "broker-pop"
G = "GID_CRASH"


def start_broker(tmp_path: Path) -> ServerProcess:
    return start_lone_broker(
        tmp_path,
        f"brokerIP1=127.0.0.1\nbrokerName={NAME}\nmappedFileSizeCommitLog=8388608\n"
        "mappedFileSizeConsumeQueue=120000\nflushConsumerOffsetInterval=600000\n",
    )


async def test_popped_unacked_messages_return_after_a_sigkill_and_acked_ones_do_not(tmp_path: Path) -> None:
    broker = start_broker(tmp_path)
    client = RemotingClient()
    try:
        addr = broker.addr
        await create_topic(client, addr, "Crash", queues=2)
        for i in range(6):
            await send(client, addr, "Crash", f"c{i}".encode(), queue_id=i % 2)
        popped = await pop_all(client, addr, NAME, G, "Crash", 6, invisible_ms=3000)
        assert sorted(m.message.body for m in popped.messages) == [f"c{i}".encode() for i in range(6)]
        acked = {b"c0", b"c3", b"c4"}
        for m in popped.messages:
            if m.message.body in acked:
                await ack(client, addr, G, m)
        # A FIFO batch out when the broker dies: its order info (file written within a second) survives.
        await create_topic(client, addr, "CrashO", queues=1)
        for i in range(2):
            await send(client, addr, "CrashO", f"o{i}".encode())
        fifo = await pop(client, addr, NAME, G, "CrashO", order=True, invisible_ms=3000)
        assert [m.message.body for m in fifo.messages] == [b"o0", b"o1"]
        await ack(client, addr, G, fifo.messages[0])
        order_file = tmp_path / "store" / "config" / "consumerOrderInfo.json"
        deadline = time.monotonic() + 10
        while not (order_file.exists() and '"cm":1' in order_file.read_text()):
            assert time.monotonic() < deadline, "the FIFO order info was never written"
            await asyncio.sleep(0.05)
        # The offsets file is written only every 10 minutes here: the restart must rely on the revive log.
        broker.kill()
        broker = await asyncio.to_thread(start_broker, tmp_path)
        addr = broker.addr
        back = await pop_all(client, addr, NAME, G, "Crash", 3, timeout=20, invisible_ms=60_000)
        assert sorted(m.message.body for m in back.messages) == [b"c1", b"c2", b"c5"]
        assert all(m.message.reconsume_times == 1 for m in back.messages)
        for m in back.messages:
            await ack(client, addr, G, m)
        assert (await pop(client, addr, NAME, G, "Crash", poll_ms=4000)).status == "NO_NEW_MSG"
        # The un-acked FIFO message comes back in order, counted; the acked one does not.
        again = await pop(client, addr, NAME, G, "CrashO", order=True, poll_ms=15_000)
        assert [(m.message.body, m.reconsume_times) for m in again.messages] == [(b"o1", 1)]
    finally:
        await client.close()
        broker.stop()
