"""OrbitMQ beside NATS JetStream and Redis Streams: the same five workloads, each broker with its own Python client.

    ./run bench peers [--seconds S] [--backlog N] [--reps R] [--only LIST] [--systems LIST]

Systems (each started here on 127.0.0.1, ephemeral port, temp folder, stopped by PID):

* orbitmq  `orbitmq dev` (ASYNC_FLUSH: a send is acknowledged once in the mapped CommitLog),
           OrbitMQ's own client (`Producer`, `PullConsumer`, `PushConsumer`)
* nats     Debian's `nats-server -js` (file storage: acknowledged once written to its block file,
           fsync in the background), nats-py
* redis    Debian's `redis-server` with `appendonly yes`, `appendfsync everysec`, redis-py with hiredis

The three acknowledge at the same durability: written to the OS page cache, fsynced within about
a second, not before the acknowledgement.

Workloads (1 KiB bodies; warm-up sends before the measured window are not counted):

* pipelined  one producer, 64 sends in flight on one connection (Redis: pipelines of 64 XADDs)
* one        one producer, one send at a time: msg/s and acknowledgement latency p50 / p99
* procs4     four producer processes, each pipelined as above
* drain      one consumer reads a backlog of N messages (default 200,000) from the start
             (OrbitMQ: PullConsumer over the 8 queues; NATS: a pull consumer, fetch of 256, ack-all
             per batch; Redis: XRANGE COUNT 1000)
* latency    a producer at a steady 2,000 msg/s and a pushing/blocking consumer: send->receive p50/p99
             (OrbitMQ: PushConsumer; NATS: push subscription; Redis: XREAD BLOCK)

Broker CPU per message is read from /proc/<pid>/stat around the measured window; client CPU per
message is the producer or consumer processes' own CPU time. Systems run interleaved, workload by
workload and rep by rep, so all figures of one run share the machine's state; the report gives
each figure's median over the reps and each peer's ratio to OrbitMQ.

Workers are this module run with `--worker SYSTEM WORKLOAD`; they print one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from bench.e2e import collect, cpu_seconds, dev_flags, server_addresses

BODY_SIZE = 1024
DEPTH = 64
RATE = 2000
TOPIC = "BenchPeers"
QUEUES = 8
GROUP = "bench_peers"
STREAM = "BENCHPEERS"
SUBJECT = "bench.peers"
REDIS_KEY = "bench:peers"
_STAMP = struct.Struct(">q")
WORKLOADS = ["pipelined", "one", "procs4", "drain", "latency"]
SYSTEMS = ["orbitmq", "nats", "redis"]


def body() -> bytes:
    """1 KiB whose first 8 bytes are the send time in ns (for send->receive latency)."""
    return _STAMP.pack(time.time_ns()) + b"x" * (BODY_SIZE - _STAMP.size)


def stamp_of(data: bytes | memoryview) -> int:
    return int(_STAMP.unpack_from(data)[0])


def pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def wait_until(epoch_s: float) -> None:
    delay = epoch_s - time.time()
    if delay > 0:
        await asyncio.sleep(delay)


# --- per-system clients (run in worker processes) --------------------------------------------------


class Client:
    """One broker's own Python client, reduced to what the workloads need."""

    async def connect(self) -> None: ...

    async def send(self) -> None:
        """One acknowledged 1 KiB send."""
        raise NotImplementedError

    async def send_pipelined(self, depth: int) -> int:
        """`depth` acknowledged sends in flight together; returns how many succeeded."""
        results = await asyncio.gather(*(self.send() for _ in range(depth)), return_exceptions=True)
        return sum(1 for r in results if not isinstance(r, BaseException))

    async def drain(self, expect: int) -> int:
        """Read the stream from its start until `expect` messages arrived; returns the count."""
        raise NotImplementedError

    async def consume(self, on_body: Callable[[bytes], None], ready: Callable[[], None], stop: asyncio.Event) -> None:
        """Deliver every new message's body to `on_body` until `stop` is set; call `ready` once listening."""
        raise NotImplementedError

    async def close(self) -> None: ...


class OrbitClient(Client):
    def __init__(self, namesrv: str, topic: str) -> None:
        self.namesrv = namesrv
        self.topic = topic
        self.producer: Any = None

    async def connect(self) -> None:
        from orbitmq.client import Producer

        self.producer = Producer("bench_peers_producer", namesrv_addr=self.namesrv)
        await self.producer.start()

    async def send(self) -> None:
        from orbitmq.client import Message

        await self.producer.send(Message(self.topic, body()))

    async def drain(self, expect: int) -> int:
        from orbitmq.client import PullConsumer
        from orbitmq.client.queue import MessageQueue

        consumer = PullConsumer(GROUP + "_drain", namesrv_addr=self.namesrv)
        await consumer.start()
        received = 0
        try:
            queues: list[MessageQueue] = await consumer.fetch_subscribe_message_queues(self.topic)

            async def one_queue(mq: MessageQueue) -> None:
                nonlocal received
                offset, end = 0, await consumer.max_offset(mq)
                while offset < end:
                    result = await consumer.pull(mq, "*", offset, 32)
                    received += len(result.messages)
                    if result.next_begin_offset <= offset:
                        break
                    offset = result.next_begin_offset
                await consumer.update_consume_offset(mq, offset)

            await asyncio.gather(*(one_queue(mq) for mq in queues))
        finally:
            await consumer.shutdown()
        return received

    async def consume(self, on_body: Callable[[bytes], None], ready: Callable[[], None], stop: asyncio.Event) -> None:
        from orbitmq.client import ConsumeResult, PushConsumer

        consumer = PushConsumer(GROUP + "_push", namesrv_addr=self.namesrv,
                                consume_from_where="CONSUME_FROM_LAST_OFFSET")
        consumer.subscribe(self.topic, "*")

        # A coroutine listener runs on the consumer's event loop, as nats-py's callback does (a plain
        # function would run on the consumer's thread pool, as Java's listeners do).
        async def listener(msgs: list[Any]) -> ConsumeResult:
            for m in msgs:
                on_body(m.body)
            return ConsumeResult.CONSUME_SUCCESS

        consumer.register_listener(listener)
        await consumer.start()  # start() rebalances: the queues are this consumer's when it returns
        ready()
        await stop.wait()
        await consumer.shutdown()

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.shutdown()



class NatsClient(Client):
    def __init__(self, url: str) -> None:
        self.url = url
        self.nc: Any = None
        self.js: Any = None

    async def connect(self) -> None:
        import nats

        self.nc = await nats.connect(self.url)
        self.js = self.nc.jetstream()

    async def send(self) -> None:
        await self.js.publish(SUBJECT, body())

    async def drain(self, expect: int) -> int:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        sub = await self.js.pull_subscribe(
            SUBJECT, durable="drain", config=ConsumerConfig(ack_policy=AckPolicy.ALL,
                                                           deliver_policy=DeliverPolicy.ALL))
        received = 0
        while received < expect:
            msgs = await sub.fetch(256, timeout=10)
            received += len(msgs)
            await msgs[-1].ack()  # acknowledges the whole batch (AckPolicy.ALL): an offset commit
        await sub.unsubscribe()
        return received

    async def consume(self, on_body: Callable[[bytes], None], ready: Callable[[], None], stop: asyncio.Event) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        async def cb(msg: Any) -> None:
            on_body(msg.data)

        sub = await self.js.subscribe(SUBJECT, cb=cb, config=ConsumerConfig(
            ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.NEW))
        ready()
        await stop.wait()
        await sub.unsubscribe()

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.drain()


class RedisClient(Client):
    def __init__(self, port: int) -> None:
        self.port = port
        self.r: Any = None

    async def connect(self) -> None:
        import redis.asyncio as redis

        self.r = redis.Redis(host="127.0.0.1", port=self.port)
        await self.r.ping()

    async def send(self) -> None:
        await self.r.xadd(REDIS_KEY, {"b": body()})

    async def send_pipelined(self, depth: int) -> int:
        pipe = self.r.pipeline(transaction=False)
        for _ in range(depth):
            pipe.xadd(REDIS_KEY, {"b": body()})
        results = await pipe.execute(raise_on_error=False)
        return sum(1 for r in results if not isinstance(r, Exception))

    async def drain(self, expect: int) -> int:
        received, start = 0, "-"
        while received < expect:
            entries = await self.r.xrange(REDIS_KEY, min=start, count=1000)
            if not entries:
                break
            received += len(entries)
            start = "(" + entries[-1][0].decode()
        return received

    async def consume(self, on_body: Callable[[bytes], None], ready: Callable[[], None], stop: asyncio.Event) -> None:
        last = "0-0"  # the stream is emptied before each workload: everything in it is new
        ready()
        while not stop.is_set():
            reply = await self.r.xread({REDIS_KEY: last}, count=256, block=200)
            for _key, entries in reply or []:
                for entry_id, fields in entries:
                    on_body(fields[b"b"])
                    last = entry_id

    async def close(self) -> None:
        if self.r is not None:
            await self.r.aclose()


def make_client(system: str, target: str) -> Client:
    if system == "orbitmq":
        namesrv, topic = target.split("/")
        return OrbitClient(namesrv, topic)
    if system == "nats":
        return NatsClient(target)
    return RedisClient(int(target))


# --- workers -----------------------------------------------------------------------------------------


async def worker_produce(client: Client, mode: str, seconds: float, start_at: float) -> dict[str, Any]:
    await client.connect()
    for _ in range(3):  # connection, routes, the first record of the stream: outside the window
        await client.send_pipelined(DEPTH) if mode == "pipelined" else await client.send()
    await wait_until(start_at)
    sent = errors = 0
    latencies: list[float] = []
    cpu0 = time.process_time()
    start = time.time()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if mode == "pipelined":
            ok = await client.send_pipelined(DEPTH)
            sent += ok
            errors += DEPTH - ok
        else:
            t0 = time.perf_counter()
            try:
                await client.send()
                sent += 1
                latencies.append((time.perf_counter() - t0) * 1e6)
            except Exception:  # noqa: BLE001 - a benchmark counts failures instead of stopping
                errors += 1
    end = time.time()
    cpu = time.process_time() - cpu0
    await client.close()
    latencies.sort()
    return {"sent": sent, "errors": errors, "start": start, "end": end, "cpu": cpu,
            "p50_us": pct(latencies, 0.5), "p99_us": pct(latencies, 0.99)}


async def worker_fill(client: Client, count: int) -> dict[str, Any]:
    await client.connect()
    sent = 0
    while sent < count:
        sent += await client.send_pipelined(min(DEPTH, count - sent))
    await client.close()
    return {"sent": sent}


async def worker_drain(client: Client, expect: int) -> dict[str, Any]:
    await client.connect()
    cpu0 = time.process_time()
    start = time.time()
    received = await client.drain(expect)
    end = time.time()
    cpu = time.process_time() - cpu0
    await client.close()
    return {"received": received, "start": start, "end": end, "cpu": cpu}


async def worker_consume(client: Client, expect: int, seconds: float) -> dict[str, Any]:
    await client.connect()
    latencies: list[float] = []
    stop = asyncio.Event()

    def on_body(data: bytes) -> None:
        latencies.append((time.time_ns() - stamp_of(data)) / 1e6)
        if len(latencies) >= expect:
            stop.set()

    def ready() -> None:
        print(json.dumps({"ready": True}), flush=True)

    cpu0 = time.process_time()
    consuming = asyncio.ensure_future(client.consume(on_body, ready, stop))
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        stop.set()
    await consuming
    cpu = time.process_time() - cpu0
    await client.close()
    latencies.sort()
    return {"received": len(latencies), "cpu": cpu, "p50_ms": pct(latencies, 0.5), "p99_ms": pct(latencies, 0.99),
            "p999_ms": pct(latencies, 0.999)}


async def worker_paced(client: Client, seconds: float) -> dict[str, Any]:
    await client.connect()
    total = int(RATE * seconds)
    tasks: set[asyncio.Task[None]] = set()
    errors = 0
    first_error = ""

    async def one() -> None:
        nonlocal errors, first_error
        try:
            await client.send()
        except Exception as exc:  # noqa: BLE001 - counted, the first one reported
            errors += 1
            first_error = first_error or repr(exc)[:300]

    start = time.monotonic()
    cpu0 = time.process_time()
    for i in range(total):
        # On schedule whatever earlier sends are doing (no coordinated omission).
        delay = start + i / RATE - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.ensure_future(one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    cpu = time.process_time() - cpu0
    await client.close()
    return {"sent": total - errors, "errors": errors, "cpu": cpu, "first_error": first_error}


def worker_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worker", nargs=2, required=True, metavar=("SYSTEM", "WORKLOAD"))
    p.add_argument("--target", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--start-at", type=float, default=0.0)
    a = p.parse_args(argv)
    system, work = a.worker
    client = make_client(system, a.target)
    runs: dict[str, Callable[[], Coroutine[Any, Any, dict[str, Any]]]] = {
        "produce-pipelined": lambda: worker_produce(client, "pipelined", a.seconds, a.start_at),
        "produce-one": lambda: worker_produce(client, "one", a.seconds, a.start_at),
        "fill": lambda: worker_fill(client, a.count),
        "drain": lambda: worker_drain(client, a.count),
        "consume": lambda: worker_consume(client, a.count, a.seconds),
        "paced": lambda: worker_paced(client, a.seconds),
    }
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(json.dumps(asyncio.run(runs[work]())), flush=True)


# --- the brokers ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on port {port} within {timeout} s")


@dataclass
class Broker:
    system: str
    tmp: str
    pid: int = 0
    target: str = ""
    stopper: Callable[[], object] = field(default=lambda: None)

    def start(self) -> None:
        getattr(self, f"_start_{self.system}")()

    def reset(self) -> None:
        """Empty the stream/topic between workloads (the drain fills its own backlog)."""
        getattr(self, f"_reset_{self.system}")()

    def _start_orbitmq(self) -> None:
        from tests.support.procs import orbitmq_command, start_server

        server = start_server(orbitmq_command("dev", *dev_flags(self.tmp)), listeners=2, cwd=self.tmp)
        namesrv, broker_addr = server_addresses(server.output)
        self.pid, self.target = server.pid, namesrv
        self.stopper = server.stop
        self._orbit_broker = broker_addr
        self._orbit_round = 0
        self._reset_orbitmq()

    def _reset_orbitmq(self) -> None:
        # A fresh topic per workload: OrbitMQ keeps no per-topic delete cost on the hot path, and a new
        # topic gives the drain and latency consumers a clean start without deleting files.
        from orbitmq.admin.api import AdminClient
        from orbitmq.admin.models import TopicConfig

        self._orbit_round += 1
        topic = f"{TOPIC}{self._orbit_round}"
        namesrv = self.target.split("/")[0]

        async def create() -> None:
            async with AdminClient([namesrv]) as admin:
                await admin.create_topic(self._orbit_broker, TopicConfig(topic, QUEUES, QUEUES))

        asyncio.run(create())
        self.target = f"{namesrv}/{topic}"  # what the workers are told: where and which topic

    def _start_nats(self) -> None:
        binary = shutil.which("nats-server")
        if not binary:
            raise RuntimeError("nats-server is not installed (./run bench peers installs Debian's nats-server)")
        port = free_port()
        proc = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(self.tmp, "js")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, proc)
        self.pid, self.target = proc.pid, f"nats://127.0.0.1:{port}"
        self.stopper = lambda: stop_proc(proc)
        self._reset_nats()

    def _reset_nats(self) -> None:
        async def recreate() -> None:
            import nats
            from nats.js.api import StorageType, StreamConfig

            nc = await nats.connect(self.target)
            js = nc.jetstream()
            if STREAM in {info.config.name for info in await js.streams_info()}:
                await js.delete_stream(STREAM)
            await js.add_stream(StreamConfig(name=STREAM, subjects=[SUBJECT], storage=StorageType.FILE))
            await nc.drain()

        asyncio.run(recreate())

    def _start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if not binary:
            raise RuntimeError("redis-server is not installed (./run bench peers installs Debian's redis-server)")
        port = free_port()
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", self.tmp,
                                 "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                                 "--protected-mode", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, proc)
        self.pid, self.target = proc.pid, str(port)
        self.stopper = lambda: stop_proc(proc)
        self._reset_redis()

    def _reset_redis(self) -> None:
        async def delete() -> None:
            import redis.asyncio as redis

            r = redis.Redis(host="127.0.0.1", port=int(self.target))
            await r.delete(REDIS_KEY)
            await r.aclose()

        asyncio.run(delete())

    def stop(self) -> None:
        self.stopper()


def stop_proc(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --- the driver ----------------------------------------------------------------------------------------


def spawn(system: str, work: str, target: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bench.peers", "--worker", system, work, "--target", target, *extra],
                            stdout=subprocess.PIPE, text=True)


def strace_attach(pids: list[int], seconds: float, out: str) -> subprocess.Popen[bytes]:
    """`strace -c` on `pids` (all their threads) for `seconds`: a count of system calls by name."""
    args = ["timeout", "-s", "INT", str(seconds), "strace", "-c", "-f", "-o", out]
    for pid in pids:
        args += ["-p", str(pid)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def strace_counts(path: str) -> dict[str, int]:
    """Calls by syscall name from a `strace -c` summary."""
    counts: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[-1] != "total" and parts[3].isdigit():
                counts[parts[-1]] = int(parts[3])
    return counts


def per_10k(counts: dict[str, int], messages: int) -> tuple[float, str]:
    total = sum(counts.values()) * 1e4 / max(messages, 1)
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:4]
    return total, ", ".join(f"{name} {n * 1e4 / max(messages, 1):,.0f}" for name, n in top)


def run_produce(b: Broker, mode: str, procs: int, seconds: float, strace_dir: str = "") -> dict[str, float]:
    start_at = time.time() + 2.0 + 0.5 * procs
    workers = [spawn(b.system, f"produce-{mode}", b.target, "--seconds", str(seconds), "--start-at", str(start_at))
               for _ in range(procs)]
    time.sleep(max(0.0, start_at - time.time()))
    tracers = []
    if strace_dir:
        tracers = [strace_attach([b.pid], seconds, os.path.join(strace_dir, "broker")),
                   strace_attach([w.pid for w in workers], seconds, os.path.join(strace_dir, "client"))]
    cpu0 = cpu_seconds(b.pid)
    time.sleep(seconds)
    broker_cpu = cpu_seconds(b.pid) - cpu0
    for tracer in tracers:
        tracer.wait(30)
    results = collect(workers)
    sent = sum(r["sent"] for r in results)
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    row = {"msg/s": sent / span, "broker us/msg": broker_cpu * 1e6 / max(sent, 1),
           "client us/msg": sum(r["cpu"] for r in results) * 1e6 / max(sent, 1),
           "errors": float(sum(r["errors"] for r in results))}
    if mode == "one":
        row["p50 us"] = results[0]["p50_us"]
        row["p99 us"] = results[0]["p99_us"]
    if strace_dir:
        # Under strace every call is slow, so throughput drops; calls per message are what count here.
        for side in ("broker", "client"):
            total, top = per_10k(strace_counts(os.path.join(strace_dir, side)), sent)
            row[f"{side} syscalls/10k"] = total
            print(f"  {b.system} {side}: {total:,.0f} system calls per 10k messages ({top})")
    return row


def run_drain(b: Broker, backlog: int) -> dict[str, float]:
    collect([spawn(b.system, "fill", b.target, "--count", str(backlog))])
    cpu0 = cpu_seconds(b.pid)
    r = collect([spawn(b.system, "drain", b.target, "--count", str(backlog))])[0]
    broker_cpu = cpu_seconds(b.pid) - cpu0
    got = r["received"]
    return {"msg/s": got / (r["end"] - r["start"]), "broker us/msg": broker_cpu * 1e6 / max(got, 1),
            "client us/msg": r["cpu"] * 1e6 / max(got, 1), "errors": float(backlog - got)}


def run_latency(b: Broker, seconds: float) -> dict[str, float]:
    expect = int(RATE * seconds)
    consumer = spawn(b.system, "consume", b.target, "--count", str(expect), "--seconds", str(seconds + 20))
    assert consumer.stdout is not None
    json.loads(consumer.stdout.readline())  # {"ready": true}
    cpu0 = cpu_seconds(b.pid)
    t0 = time.monotonic()
    producer = collect([spawn(b.system, "paced", b.target, "--seconds", str(seconds))])[0]
    tail = consumer.stdout.read()  # the same buffered stream as the ready line
    if consumer.wait(timeout=60) != 0:
        raise RuntimeError(f"consumer failed with exit code {consumer.returncode}")
    wall = time.monotonic() - t0
    broker_cpu = cpu_seconds(b.pid) - cpu0
    c = json.loads(tail.strip().splitlines()[-1])
    if producer["errors"]:
        print(f"  {b.system}: {producer['errors']} paced sends failed, the first with {producer['first_error']}")
    return {"p50 ms": c["p50_ms"], "p99 ms": c["p99_ms"], "p99.9 ms": c["p999_ms"],
            "broker cores": broker_cpu / wall, "received": float(c["received"]),
            "errors": float(expect - c["received"] + producer["errors"])}


def main() -> None:
    if "--worker" in sys.argv:
        worker_main(sys.argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0, help="measured window of each send workload")
    p.add_argument("--backlog", type=int, default=200_000, help="messages to drain")
    p.add_argument("--latency-seconds", type=float, default=10.0)
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions; medians are reported")
    p.add_argument("--quick", action="store_true", help="2 s windows, 20k backlog, 3 s latency, 1 rep")
    p.add_argument("--only", default=",".join(WORKLOADS), help=f"subset of {','.join(WORKLOADS)}")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"subset of {','.join(SYSTEMS)}")
    p.add_argument("--json", action="store_true", help="print the medians as one JSON object too")
    p.add_argument("--strace", action="store_true",
                   help="count system calls per 10k messages of the send workloads (strace -c; slows every system)")
    a = p.parse_args()
    if a.quick:
        a.seconds, a.backlog, a.latency_seconds, a.reps = 2.0, 20_000, 3.0, 1
    workloads = [w for w in a.only.split(",") if w]
    systems = [s for s in a.systems.split(",") if s]
    for name, chosen, known in (("workloads", workloads, WORKLOADS), ("systems", systems, SYSTEMS)):
        if set(chosen) - set(known):
            p.error(f"unknown {name}: {', '.join(sorted(set(chosen) - set(known)))}")

    results: dict[str, dict[str, list[dict[str, float]]]] = {w: {s: [] for s in systems} for w in workloads}
    with tempfile.TemporaryDirectory(prefix="orbitmq-peers-") as tmp:
        brokers = {s: Broker(s, os.path.join(tmp, s)) for s in systems}
        try:
            for b in brokers.values():
                os.makedirs(b.tmp)
                b.start()
            for rep in range(a.reps):
                for w in workloads:
                    for s in (systems if rep % 2 == 0 else list(reversed(systems))):
                        b = brokers[s]
                        b.reset()
                        if w in ("pipelined", "one", "procs4"):
                            mode = "one" if w == "one" else "pipelined"
                            row = run_produce(b, mode, 4 if w == "procs4" else 1, a.seconds,
                                              b.tmp if a.strace else "")
                        elif w == "drain":
                            row = run_drain(b, a.backlog)
                        else:
                            row = run_latency(b, a.latency_seconds)
                        results[w][s].append(row)
                        print(f"rep {rep + 1} {w:<9} {s:<7} " + ", ".join(f"{k} {v:,.1f}" for k, v in row.items()),
                              flush=True)
        finally:
            for b in brokers.values():
                b.stop()
    print(f"\n1 KiB bodies, medians of {a.reps} interleaved reps, load average now {os.getloadavg()[0]:.2f}")
    medians = report(results, systems)
    if a.json:
        print(json.dumps(medians))


def report(results: dict[str, dict[str, list[dict[str, float]]]], systems: list[str]) -> dict[str, Any]:
    medians: dict[str, Any] = {}
    for w, by_system in results.items():
        medians[w] = {s: {k: statistics.median(r[k] for r in rows) for k in rows[0]}
                      for s, rows in by_system.items() if rows}
        keys = [k for k in next(iter(medians[w].values())) if k != "errors"]
        print(f"\n{w}")
        widths = [max(14, len(k)) + 2 for k in keys]
        print("  " + "system".ljust(9) + "".join(k.rjust(n) for k, n in zip(keys, widths)))
        for s in systems:
            m = medians[w].get(s)
            if m:
                print("  " + s.ljust(9) + "".join(f"{m[k]:{n},.1f}" for k, n in zip(keys, widths))
                      + (f"   ({m['errors']:.0f} errors)" if m["errors"] else ""))
        base = medians[w].get("orbitmq")
        headline = "p99 ms" if w == "latency" else "msg/s"
        if base:
            ratios = [f"orbitmq/{s} {base[headline] / medians[w][s][headline]:.2f}x"
                      for s in systems if s != "orbitmq" and s in medians[w] and medians[w][s][headline]]
            if ratios:
                print(f"  {headline} ratio: " + ", ".join(ratios))
    return medians


if __name__ == "__main__":
    main()
