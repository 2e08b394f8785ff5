"""Broker CPU per message, in one process, without sockets or client processes.

    python -m bench.broker_cpu [--rounds N] [--repeat R] [--only sync,send,batch,pull] [--set K=V] [--profile FILE]

An embedded `Broker` (ASYNC_FLUSH, temp store) gets the exact request frames
the lean client of `bench.e2e` sends, fed straight into a server connection
whose transport only collects what the broker writes:

* sync   one SEND_MESSAGE_V2 frame per read (the sync workload: one send in flight)
* send   64 SEND_MESSAGE_V2 frames per read (one read of the async64 workload)
* batch  4 SEND_BATCH_MESSAGE frames of 32 messages per read
* pull   8 PULL_MESSAGE frames (32 messages each) per read over the stored backlog

Each figure is process CPU time (all threads: the loop, flushing, ...) per
message, the fastest of `--repeat` runs. On a shared, noisy machine this is
far steadier than end-to-end throughput, so it is the figure to compare
before and after a change of the broker's hot paths. Frames are encoded
before the clock starts; only the broker's work is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench.e2e import BODY_SIZE, QUEUES, TOPIC, pull_request, send_fields
from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common import properties as mc
from orbitmq.common.message import Message
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.record import encode_batch
from orbitmq.remoting.codec import encode
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Connection
from orbitmq.remoting.loop import run as run_loop


class CollectingTransport:
    """The transport side a `Connection` uses, keeping written bytes instead of sending them."""

    def __init__(self) -> None:
        self.written = 0
        self.writes = 0
        self._closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def writelines(self, buffers: list[Any]) -> None:
        self.writes += 1
        self.written += sum(len(b) if not isinstance(b, memoryview) else b.nbytes for b in buffers)

    def write(self, data: Any) -> None:
        self.writelines([data])

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def abort(self) -> None:
        self._closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _frames(commands: list[RemotingCommand]) -> bytes:
    return b"".join(bytes(part) for cmd in commands for part in encode(cmd))


def _fields(queue_id: int, props: str, batch: bool) -> dict[str, str]:
    return send_fields(queue_id, props, batch, "broker-a")


def send_reads(ids: UniqueIdGenerator, reads: int, per_read: int = 64) -> list[bytes]:
    body = b"x" * BODY_SIZE
    out = []
    for r in range(reads):
        cmds = []
        for i in range(per_read):
            props = mc.encode_properties({mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: ids.next(), mc.WAIT_STORE_MSG_OK: "true"})
            cmds.append(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _fields((r + i) % QUEUES, props, False), body))
        out.append(_frames(cmds))
    return out


def batch_reads(ids: UniqueIdGenerator, reads: int, per_read: int = 4, size: int = 32) -> list[bytes]:
    body = b"x" * BODY_SIZE
    props = mc.encode_properties({mc.WAIT_STORE_MSG_OK: "true"})
    out = []
    for r in range(reads):
        cmds = []
        for i in range(per_read):
            messages = [Message(TOPIC, body, properties={mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: ids.next()}) for _ in range(size)]
            cmds.append(RemotingCommand.request(
                RequestCode.SEND_BATCH_MESSAGE, _fields((r + i) % QUEUES, props, True), encode_batch(messages)
            ))
        out.append(_frames(cmds))
    return out


def pull_reads(reads: int, per_read: int = QUEUES, size: int = 32) -> list[bytes]:
    out = []
    for r in range(reads):
        cmds = []
        for q in range(per_read):
            cmds.append(pull_request(q, r * size, 0, size))
        out.append(_frames(cmds))
    return out


async def feed(conn: Connection, reads: list[bytes]) -> float:
    """CPU seconds the process spends while the connection handles `reads` (one loop turn each)."""
    t0 = time.process_time()
    for data in reads:
        conn.data_received(data)
        await asyncio.sleep(0)  # let the turn's callbacks (dispatch wake-ups, flush scheduling) run
    return time.process_time() - t0


async def measure(args: argparse.Namespace) -> dict[str, float]:
    only = {w.strip() for w in args.only.split(",") if w.strip()}
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="orbitmq-cpu-") as tmp:
        config = BrokerConfig.from_properties({
            "listenHost": "127.0.0.1", "listenPort": "0", "brokerIP1": "127.0.0.1",
            "storePathRootDir": os.path.join(tmp, "store"), "mappedFileSizeCommitLog": str(256 << 20),
            "flushDiskType": "ASYNC_FLUSH", "namesrvAddr": "", **dict(kv.split("=", 1) for kv in args.set),
        })
        broker = Broker(config)
        await broker.start()
        try:
            broker.topics.ensure(TOPIC, QUEUES, PERM_READ | PERM_WRITE)
            server = broker.server
            assert server is not None
            conn = server._new_connection()
            transport = CollectingTransport()
            conn.connection_made(transport)  # type: ignore[arg-type]
            ids = UniqueIdGenerator()
            profiler = cProfile.Profile() if args.profile else None
            runs: dict[str, tuple[Callable[[], list[bytes]], int]] = {
                "sync": (lambda: send_reads(ids, args.rounds * 4, per_read=1), 1),
                "send": (lambda: send_reads(ids, args.rounds), 64),
                "batch": (lambda: batch_reads(ids, args.rounds // 4 or 1), 128),
                "pull": (lambda: pull_reads(args.rounds // 2 or 1), QUEUES * 32),
            }
            sent = 0
            for name, (make, per_read) in runs.items():
                if name not in only and not (name == "send" and "pull" in only):
                    continue  # a pull run needs the backlog the send run leaves
                best = float("inf")
                for _ in range(args.repeat):
                    if name == "pull":
                        reads = pull_reads(min(args.rounds // 2, _stored(broker) // 32 // QUEUES) or 1)
                    else:
                        reads = make()
                    if profiler is not None:
                        profiler.enable()
                    cpu = await feed(conn, reads)
                    if profiler is not None:
                        profiler.disable()
                    best = min(best, cpu / (len(reads) * per_read))
                    if name != "pull":
                        sent += len(reads) * per_read
                if name in only:
                    results[name] = best * 1e6
            if _stored(broker, exact=True) != sent:  # every send was stored: the broker answered them all
                raise RuntimeError(f"sent {sent} messages but the store holds {_stored(broker, exact=True)}")
            if transport.writes == 0:
                raise RuntimeError("the broker wrote nothing")
            if profiler is not None:
                profiler.dump_stats(args.profile)
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        finally:
            await broker.close()
    return results


def _stored(broker: Broker, exact: bool = False) -> int:
    """Messages stored in the topic (exact) or a count every queue holds at least (for pulls)."""
    store = broker.store
    assert store is not None
    counts = [store.get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES)]
    return sum(counts) if exact else min(counts) * QUEUES


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=200, help="reads per run (send: 64 messages each)")
    p.add_argument("--repeat", type=int, default=3, help="runs per workload; the fastest counts")
    p.add_argument("--only", default="sync,send,batch,pull")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra broker.conf setting")
    p.add_argument("--profile", default="", help="write a cProfile of all measured runs to this file")
    args = p.parse_args()
    results = run_loop(measure(args))
    for name, us in results.items():
        print(f"{name:6s} {us:6.2f} us CPU/msg")


if __name__ == "__main__":
    main()
