"""Transactional send rate against `orbitmq dev`, beside plain sends for comparison.

    python -m bench.transactions [--count N] [--concurrency C]

Workloads (1 KiB bodies, one 4-queue topic, `orbitmq.client` producers in this
process, the broker in a child process with its default ASYNC_FLUSH):

* plain      Producer.send, one in flight
* tx         TransactionProducer.send_message_in_transaction committing, one in flight
             (a half-message send, the local transaction, a oneway END_TRANSACTION;
             the broker then writes the real message and an op record)
* tx xC      the same with C transactions in flight

Each line gives messages per second and the broker's CPU time (utime + stime
from /proc) per message. Figures vary with the machine; run twice.
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

from orbitmq.client import LocalTransactionState, Message, Producer, TransactionProducer
from orbitmq.common import names

BODY = b"x" * 1024
TOPIC = "BenchTx"
_READY = re.compile(r"^(?:namesrv|broker \S+) listening on (\S+):(\d+)")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class Commit:
    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


def start_dev(store: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbitmq", "dev", "--store", store, "--namesrv-port", "0", "--broker-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    addrs: list[str] = []
    while len(addrs) < 2:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("orbitmq dev exited before it was ready")
        m = _READY.match(line)
        if m:
            addrs.append(f"{m.group(1)}:{m.group(2)}")
    return proc, addrs[0]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


async def timed(label: str, pid: int, count: int, work: asyncio.Future[None] | object) -> None:
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    await work  # type: ignore[misc]
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    print(f"{label:<10} {count / elapsed:8.0f} msg/s   broker CPU {cpu / count * 1e6:6.0f} us/msg")


async def main(count: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as store:
        proc, namesrv = start_dev(store)
        try:
            async with Producer("bench_plain", namesrv_addr=namesrv) as plain, \
                    TransactionProducer("bench_tx", Commit(), namesrv_addr=namesrv) as tx:
                for _ in range(100):  # routes, topic creation and warm-up
                    try:
                        await plain.create_topic(names.AUTO_CREATE_TOPIC_KEY_TOPIC, TOPIC, 4)
                        break
                    except Exception:  # noqa: BLE001 - the broker registers a moment after it listens
                        await asyncio.sleep(0.1)
                for _ in range(200):
                    await plain.send(Message(TOPIC, BODY))
                    await tx.send_message_in_transaction(Message(TOPIC, BODY))

                async def sequential_plain() -> None:
                    for _ in range(count):
                        await plain.send(Message(TOPIC, BODY))

                async def sequential_tx() -> None:
                    for _ in range(count):
                        await tx.send_message_in_transaction(Message(TOPIC, BODY))

                async def concurrent_tx() -> None:
                    per_task = count // concurrency

                    async def one() -> None:
                        for _ in range(per_task):
                            await tx.send_message_in_transaction(Message(TOPIC, BODY))
                    await asyncio.gather(*(one() for _ in range(concurrency)))

                await timed("plain", proc.pid, count, sequential_plain())
                await timed("tx", proc.pid, count, sequential_tx())
                await timed(f"tx x{concurrency}", proc.pid, count // concurrency * concurrency, concurrent_tx())
        finally:
            proc.terminate()
            proc.wait(15)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Transactional send rate against orbitmq dev.")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(main(args.count, args.concurrency))
