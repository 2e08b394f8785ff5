"""1,000 timed messages through a real broker process that is SIGKILLed and restarted midway.

Scaled to fit the test budget: the times are spread over 18 s (the issue's
check uses 60 s); the broker is killed 10 s in and restarted at once.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from orbitmq.common.message import MessageExt
from orbitmq.errors import OrbitMQError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import FLAG_SUBSCRIPTION, FLAG_SUSPEND, props, pull, records, send_v2
from tests.broker_features.inproc import create_topic
from tests.support.procs import ServerProcess, start_lone_broker

pytestmark = pytest.mark.timeout(90)

COUNT = 1000
#: Times start 4 s out so that all 1,000 are stored before the first is due.
WINDOW_MS = (4_000, 22_000)
KILL_AFTER_S = 10.0


def start_broker(tmp_path: Path) -> ServerProcess:
    return start_lone_broker(
        tmp_path,
        "brokerIP1=127.0.0.1\nmappedFileSizeCommitLog=8388608\nmappedFileSizeConsumeQueue=120000\ntimerMaxDelaySec=120\n",
    )


class Puller:
    """Long-polls queue 0 of a topic from whichever broker address is current, surviving restarts."""

    def __init__(self, client: RemotingClient, addr: str, topic: str) -> None:
        self.client, self.addr, self.topic = client, addr, topic
        self.offset = 0
        self.got: list[tuple[float, MessageExt]] = []

    async def run(self, want: int, deadline: float) -> None:
        while len({m.body for _, m in self.got}) < want and time.monotonic() < deadline:
            try:
                response = await pull(
                    self.client, self.addr, self.topic, "G", self.offset, max_nums=64,
                    sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_ms=1000, timeout=3,
                )
            except OrbitMQError:
                await asyncio.sleep(0.05)
                continue
            now = time.time()
            if response.code == ResponseCode.SUCCESS:
                self.got.extend((now, m) for m in records(response))
            if "nextBeginOffset" in response.ext_fields:
                self.offset = int(response.ext_fields["nextBeginOffset"])


async def test_a_thousand_timers_arrive_in_time_order_within_a_second_across_a_sigkill(tmp_path: Path) -> None:
    broker = start_broker(tmp_path)
    client = RemotingClient()
    try:
        addr = broker.addr
        await create_topic(client, addr, "Timers")
        base = int(time.time() * 1000)
        rng = random.Random(7)
        due = {i: base + rng.randint(*WINDOW_MS) for i in range(COUNT)}
        for start in range(0, COUNT, 100):
            responses = await asyncio.gather(*(
                send_v2(client, addr, "Timers", str(i).encode(), props(TIMER_DELIVER_MS=str(due[i])))
                for i in range(start, start + 100)
            ))
            assert all(r.code == ResponseCode.SUCCESS for r in responses), responses[0].remark
        sent_ms = time.time() * 1000
        assert sent_ms < base + WINDOW_MS[0], "sending took longer than the window's lead"

        puller = Puller(client, addr, "Timers")
        pulling = asyncio.ensure_future(puller.run(COUNT, time.monotonic() + 45))
        await asyncio.sleep(KILL_AFTER_S - (time.time() * 1000 - base) / 1000)
        killed_ms = time.time() * 1000
        broker.kill()
        broker = await asyncio.to_thread(start_broker, tmp_path)
        ready_ms = time.time() * 1000
        puller.addr = broker.addr
        await pulling
    finally:
        await client.close()
        broker.stop()

    first: dict[int, tuple[float, MessageExt]] = {}
    for arrived, msg in puller.got:
        first.setdefault(int(msg.body), (arrived * 1000, msg))
    assert sorted(first) == list(range(COUNT)), f"lost: {sorted(set(range(COUNT)) - set(first))[:10]}"
    assert any(killed_ms > due[i] for i in first) and any(ready_ms < due[i] for i in first)
    in_queue_order = sorted(first.values(), key=lambda am: am[1].queue_offset)
    dues = [int(m.properties["TIMER_OUT_MS"]) for _, m in in_queue_order]
    assert dues == sorted(dues), "first deliveries out of time order"
    for i, (arrived_ms, msg) in first.items():
        assert int(msg.properties["TIMER_OUT_MS"]) == due[i]
        assert msg.store_timestamp >= due[i], f"message {i} delivered early"
        # Timers due while the broker was down come as soon as it is back.
        assert arrived_ms - max(due[i], ready_ms) < 1000, f"message {i} late by {arrived_ms - due[i]:.0f} ms"
