"""Delayed and timed messages against a broker process: send rate, delivery rate and lateness.

    python -m bench.delayed [--count N] [--in-flight K] [--timer-spread-ms S]

The broker runs in a child process (ASYNC_FLUSH, delay table "1s 2s 3s");
this process sends with raw SEND_MESSAGE_V2 requests, K in flight, 1 KiB
bodies, to a one-queue topic. Workloads:

* plain     sends without a delay (for comparison)
* level     DELAY=1: stored in SCHEDULE_TOPIC_XXXX, moved back after 1 s
* timer     TIMER_DELIVER_MS spread over S ms (default 3000) starting 3 s out;
            --timer-spread-ms 0 makes them all due at once (delivery capacity)

For `level` and `timer` the run then waits until every message is in the
real topic and reports how late each was stored there compared with its
due time (p50/p99/max, ms; for `level` the due time is taken as send time +
1 s, a lower bound, so its lateness is an upper bound) and the rate from the
first due time to the last delivery (for `timer` that is bounded by the 3 s
spread). Send lines give the broker's CPU time per message (from /proc).
Figures vary; run twice.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.record import iter_records
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.headers import CreateTopicRequestHeader, SendMessageRequestHeader
from orbitmq.remoting.transport import RemotingClient

BODY = b"x" * 1024
_READY = re.compile(r"listening on (\S+):(\d+)")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def start_broker(root: str) -> tuple[subprocess.Popen[str], str]:
    conf = os.path.join(root, "broker.conf")
    with open(conf, "w") as f:
        f.write("brokerIP1=127.0.0.1\nmessageDelayLevel=1s 2s 3s\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbitmq", "broker", "-c", conf, "--listen", "127.0.0.1:0",
         "--store", os.path.join(root, "store")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the broker exited before it was ready")
        m = _READY.search(line)
        if m:
            return proc, f"{m.group(1)}:{m.group(2)}"


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


async def create_topic(client: RemotingClient, addr: str, topic: str) -> None:
    fields = CreateTopicRequestHeader(
        topic=topic, default_topic=names.AUTO_CREATE_TOPIC_KEY_TOPIC, read_queue_nums=1, write_queue_nums=1,
        perm=PERM_READ | PERM_WRITE, topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False,
    ).to_ext_fields()
    response = await client.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields), 10)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def send_all(
    client: RemotingClient, addr: str, topic: str, count: int, in_flight: int, props: Callable[[int], str]
) -> float:
    """Send `count` messages, `in_flight` at a time; returns the elapsed seconds."""
    next_i = 0

    async def worker() -> None:
        nonlocal next_i
        while next_i < count:
            i = next_i
            next_i += 1
            fields = SendMessageRequestHeader(
                producer_group="BenchPG", topic=topic, default_topic=names.AUTO_CREATE_TOPIC_KEY_TOPIC,
                default_topic_queue_nums=1, queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
                properties=props(i), reconsume_times=0, unit_mode=False, batch=False,
            ).to_compact_fields()
            response = await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, BODY))
            if response.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"send failed: {response.code} {response.remark}")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - started


async def read_all(client: RemotingClient, addr: str, topic: str, count: int, timeout: float) -> list[tuple[int, int]]:
    """(due ms, store ms) of each message in the topic, pulling until `count` arrived."""
    out: list[tuple[int, int]] = []
    offset = 0
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        fields = {"consumerGroup": "BenchG", "topic": topic, "queueId": "0", "queueOffset": str(offset),
                  "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000",
                  "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
        response = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), 5)
        if response.code == ResponseCode.SUCCESS:
            for msg in iter_records(response.body_bytes(), with_body=False):
                due = int(msg.properties.get("TIMER_OUT_MS") or msg.properties["BENCH_DUE"])
                out.append((due, msg.store_timestamp))
        offset = int((response.ext_fields or {})["nextBeginOffset"])
    return out


def percentile(sorted_values: list[int], p: float) -> int:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


async def run(count: int, in_flight: int, spread_ms: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-delayed-") as root:
        proc, addr = start_broker(root)
        try:
            async with RemotingClient() as client:
                for topic in ("Plain", "Level", "Timer"):
                    await create_topic(client, addr, topic)
                cpu0 = cpu_seconds(proc.pid)
                took = await send_all(client, addr, "Plain", count, in_flight, lambda i: "")
                report("plain send", count, took, cpu_seconds(proc.pid) - cpu0)

                cpu0 = cpu_seconds(proc.pid)
                # The store time is not known to the sender; BENCH_DUE is a lower bound of the due time.
                took = await send_all(client, addr, "Level", count, in_flight, lambda i: mc.encode_properties(
                    {"DELAY": "1", "BENCH_DUE": str(int(time.time() * 1000) + 1000)}))
                report("level send", count, took, cpu_seconds(proc.pid) - cpu0)
                got = await read_all(client, addr, "Level", count, 60)
                lateness("level delivery", got, count)

                base = int(time.time() * 1000) + 3000
                cpu0 = cpu_seconds(proc.pid)
                took = await send_all(client, addr, "Timer", count, in_flight, lambda i: mc.encode_properties(
                    {"TIMER_DELIVER_MS": str(base + (i * 7919) % max(spread_ms, 1))}))
                report("timer send", count, took, cpu_seconds(proc.pid) - cpu0)
                got = await read_all(client, addr, "Timer", count, 60)
                lateness("timer delivery", got, count)
        finally:
            proc.terminate()
            proc.wait(10)


def report(name: str, count: int, seconds: float, cpu: float) -> None:
    print(f"{name:16s} {count / seconds:9.0f} msg/s   broker CPU {cpu / count * 1e6:6.1f} us/msg")


def lateness(name: str, got: list[tuple[int, int]], count: int) -> None:
    late = sorted(stored - due for due, stored in got)
    first_due = min(due for due, _ in got)
    last_stored = max(stored for _, stored in got)
    span = max(last_stored - first_due, 1) / 1000
    print(f"{name:16s} {len(got)}/{count} delivered; late p50 {percentile(late, 0.5)} ms, "
          f"p99 {percentile(late, 0.99)} ms, max {late[-1]} ms; {len(got) / span:.0f} msg/s once due")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--timer-spread-ms", type=int, default=3000)
    args = parser.parse_args()
    asyncio.run(run(args.count, args.in_flight, args.timer_spread_ms))


if __name__ == "__main__":
    main()
