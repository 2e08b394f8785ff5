"""End-to-end benchmark: `orbitmq dev` in one process, producers and consumers in others.

    python -m bench.e2e [--quick] [--seconds S] [--backlog N] [--only LIST] [--flush async|sync]
                        [--client lean|orbitmq]

Workloads (1 KiB bodies, 8-queue topic, every send acknowledged; the broker
flushes as `--flush` says: ASYNC_FLUSH, the dev default, or SYNC_FLUSH):

* sync       one process, one send in flight
* async64    one process, 64 sends in flight (pipelined)
* batch32    one process, batches of 32 messages, 4 batches in flight
* 4 procs    four processes, 64 sends in flight each
* drain      a consumer process pulls a backlog of N messages (default 200,000)
* latency    a producer at a steady 2,000 msg/s and a long-polling consumer:
             send -> receive latency p50 / p99 / p99.9

For each workload the broker's CPU time (utime + stime from /proc/<pid>/stat,
before and after) is divided by the messages handled; the client processes
report theirs too (on 2 cores the load generator competes with the broker). The client side is a
lean protocol client built on `orbitmq.remoting` (requests as RocketMQ's Java
client sends them: SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE with a UNIQ_KEY per
message, PULL_MESSAGE), so the figures measure the broker and the wire, not
the convenience layers of `orbitmq.client`; `--client orbitmq` runs the send
workloads through `orbitmq.client.Producer` instead.

Workers are this module run with `--worker MODE`; they print one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import Message
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.record import encode_batch, iter_records
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from orbitmq.remoting.loop import run as run_loop
from orbitmq.remoting.sysflag import PullSysFlag
from orbitmq.remoting.transport import RemotingClient

BODY_SIZE = 1024
QUEUES = 8
TOPIC = "BenchE2E"
GROUP = "bench_consumer"
_STAMP = struct.Struct(">q")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- the lean protocol client (runs in worker processes) ------------------------------


def send_fields(queue_id: int, props: str, batch: bool, broker_name: str) -> dict[str, str]:
    """The V2 send header the lean client sends (as a Java producer fills it)."""
    return SendMessageRequestHeader(
        producer_group="bench_producer", topic=TOPIC, default_topic=names.AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums=4, queue_id=queue_id, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties=props, reconsume_times=0, unit_mode=False, batch=batch, bname=broker_name,
    ).to_compact_fields()


class Sender:
    """Builds SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE requests the way the Java client does."""

    def __init__(self, client: RemotingClient, addr: str, broker_name: str) -> None:
        self.client = client
        self.addr = addr
        self.broker_name = broker_name
        self.ids = UniqueIdGenerator()
        self.filler = b"x" * (BODY_SIZE - _STAMP.size)
        self.sent = 0
        self.errors = 0

    def body(self) -> bytes:
        # The first 8 bytes carry the send time, so a consumer can measure latency.
        return _STAMP.pack(time.time_ns()) + self.filler

    def _fields(self, queue_id: int, props: str, batch: bool) -> dict[str, str]:
        return send_fields(queue_id, props, batch, self.broker_name)

    async def send_one(self, queue_id: int) -> None:
        props = mc.encode_properties({mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self.ids.next(), mc.WAIT_STORE_MSG_OK: "true"})
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, self._fields(queue_id, props, False), self.body())
        response = await self.client.invoke(self.addr, cmd, timeout=10.0)
        if response.code == ResponseCode.SUCCESS:
            self.sent += 1
        else:
            self.errors += 1

    async def send_batch(self, queue_id: int, size: int) -> None:
        messages = [
            Message(TOPIC, self.body(), properties={mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self.ids.next()})
            for _ in range(size)
        ]
        props = mc.encode_properties({mc.WAIT_STORE_MSG_OK: "true"})
        cmd = RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE, self._fields(queue_id, props, True), encode_batch(messages)
        )
        response = await self.client.invoke(self.addr, cmd, timeout=10.0)
        if response.code == ResponseCode.SUCCESS:
            self.sent += size
        else:
            self.errors += size


def pull_request(queue_id: int, offset: int, suspend_ms: int, max_nums: int = 32) -> RemotingCommand:
    flags = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend_ms else 0)  # SUSPEND: long polling
    header = PullMessageRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=queue_id, queue_offset=offset, max_msg_nums=max_nums, sys_flag=flags,
        commit_offset=0, suspend_timeout_millis=suspend_ms, sub_version=0, subscription="*", expression_type="TAG",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def queue_max_offset(client: RemotingClient, addr: str, queue_id: int) -> int:
    header = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=queue_id)
    cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
    response = await client.invoke(addr, cmd, timeout=5.0)
    return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset


async def wait_until(epoch_s: float) -> None:
    """Sleep until a wall-clock time shared by all workers of one workload (0: start now)."""
    delay = epoch_s - time.time()
    if delay > 0:
        await asyncio.sleep(delay)


async def worker_produce(
    addr: str, broker: str, mode: str, seconds: float, depth: int, count: int, start_at: float
) -> dict[str, Any]:
    client = RemotingClient()
    sender = Sender(client, addr, broker)
    await sender.send_one(0)  # connect and warm up outside the measured window
    sender.sent = 0
    await wait_until(start_at)
    deadline = time.monotonic() + seconds
    batch = 32 if mode == "batch" else 0

    async def loop(lane: int) -> None:
        i = lane
        while time.monotonic() < deadline and (count <= 0 or sender.sent < count):
            if batch:
                await sender.send_batch(i % QUEUES, batch)
            else:
                await sender.send_one(i % QUEUES)
            i += depth

    start = time.time()
    cpu0 = time.process_time()
    await asyncio.gather(*(loop(lane) for lane in range(depth)))
    cpu = time.process_time() - cpu0
    end = time.time()
    await client.close()
    return {"sent": sender.sent, "errors": sender.errors, "start": start, "end": end, "cpu": cpu}


async def worker_produce_with_client(
    namesrv: str, mode: str, seconds: float, depth: int, count: int, start_at: float
) -> dict[str, Any]:
    """The same send loop through `orbitmq.client.Producer` (routing, validation, retries, UNIQ_KEY)."""
    from orbitmq.client.producer import Producer

    producer = Producer("bench_producer", namesrv_addr=namesrv)
    await producer.start()
    filler = b"x" * (BODY_SIZE - _STAMP.size)

    def message() -> Message:
        return Message(TOPIC, _STAMP.pack(time.time_ns()) + filler)

    await producer.send(message())  # routes and connection, outside the measured window
    sent = errors = 0
    await wait_until(start_at)
    deadline = time.monotonic() + seconds

    async def loop() -> None:
        nonlocal sent, errors
        while time.monotonic() < deadline and (count <= 0 or sent < count):
            batch = [message() for _ in range(32)] if mode == "batch" else message()
            n = 32 if mode == "batch" else 1
            try:
                await producer.send(batch)
                sent += n
            except Exception:  # noqa: BLE001 - a benchmark counts failures instead of stopping
                errors += n

    start = time.time()
    cpu0 = time.process_time()
    await asyncio.gather(*(loop() for _ in range(depth)))
    cpu = time.process_time() - cpu0
    end = time.time()
    await producer.shutdown()
    return {"sent": sent, "errors": errors, "start": start, "end": end, "cpu": cpu}


async def worker_drain(addr: str) -> dict[str, Any]:
    client = RemotingClient()
    targets = [await queue_max_offset(client, addr, q) for q in range(QUEUES)]
    received = 0

    async def drain(queue_id: int) -> None:
        nonlocal received
        offset = 0
        while offset < targets[queue_id]:
            response = await client.invoke(addr, pull_request(queue_id, offset, 0), timeout=10.0)
            fields = response.ext_fields or {}
            if response.code == ResponseCode.SUCCESS:
                received += sum(1 for _ in iter_records(response.body_bytes()))
            elif response.code not in (ResponseCode.PULL_RETRY_IMMEDIATELY, ResponseCode.PULL_NOT_FOUND):
                raise RuntimeError(f"pull failed: {response.code} {response.remark}")
            offset = int(fields.get("nextBeginOffset", offset))

    start = time.time()
    cpu0 = time.process_time()
    await asyncio.gather(*(drain(q) for q in range(QUEUES)))
    cpu = time.process_time() - cpu0
    end = time.time()
    await client.close()
    return {"received": received, "start": start, "end": end, "cpu": cpu}


async def worker_latency_consumer(addr: str, expect: int, seconds: float) -> dict[str, Any]:
    client = RemotingClient()
    offsets = [await queue_max_offset(client, addr, q) for q in range(QUEUES)]
    latencies_us: list[float] = []
    deadline = time.monotonic() + seconds
    print(json.dumps({"ready": True}), flush=True)  # the producer starts once we are polling

    async def poll(queue_id: int) -> None:
        while len(latencies_us) < expect and time.monotonic() < deadline:
            response = await client.invoke(addr, pull_request(queue_id, offsets[queue_id], 1000), timeout=5.0)
            if response.code == ResponseCode.SUCCESS:
                now = time.time_ns()
                for msg in iter_records(response.body_bytes()):
                    latencies_us.append((now - _STAMP.unpack_from(msg.body)[0]) / 1000.0)
            offsets[queue_id] = int((response.ext_fields or {}).get("nextBeginOffset", offsets[queue_id]))

    await asyncio.gather(*(poll(q) for q in range(QUEUES)))
    await client.close()
    latencies_us.sort()

    def pct(q: float) -> float:
        return latencies_us[min(len(latencies_us) - 1, int(q * len(latencies_us)))] / 1000.0

    summary: dict[str, float] = {"count": len(latencies_us)}
    if latencies_us:
        summary.update(p50=pct(0.50), p99=pct(0.99), p999=pct(0.999), max=latencies_us[-1] / 1000.0,
                       mean=statistics.fmean(latencies_us) / 1000.0)
    return summary


async def worker_paced(addr: str, broker: str, rate: int, seconds: float) -> dict[str, Any]:
    client = RemotingClient()
    sender = Sender(client, addr, broker)
    await queue_max_offset(client, addr, 0)  # connect without sending a message the consumer would count
    total = int(rate * seconds)
    wall_start = time.time()
    start = time.monotonic()
    tasks: set[asyncio.Task[None]] = set()
    acks_ms: list[float] = []

    async def timed_send(queue_id: int) -> None:
        # The send's acknowledgement time, to tell broker/transport delay from delivery delay.
        t0 = time.perf_counter()
        await sender.send_one(queue_id)
        acks_ms.append((time.perf_counter() - t0) * 1000.0)

    for i in range(total):
        # Send on schedule whatever earlier sends are doing (no coordinated omission).
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(timed_send(i % QUEUES))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    wall_end = time.time()
    await client.close()
    acks_ms.sort()
    ack = {f"ack_{name}": acks_ms[min(len(acks_ms) - 1, int(q * len(acks_ms)))] if acks_ms else float("nan")
           for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))}
    return {"sent": sender.sent, "errors": sender.errors, "start": wall_start, "end": wall_end, **ack}


def worker_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worker", required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--broker", default="broker-a")
    p.add_argument("--mode", default="single")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--depth", type=int, default=1)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--rate", type=int, default=2000)
    p.add_argument("--start-at", type=float, default=0.0)
    p.add_argument("--namesrv", default="")
    a = p.parse_args(argv)
    if a.worker == "produce":
        result = run_loop(worker_produce(a.addr, a.broker, a.mode, a.seconds, a.depth, a.count, a.start_at))
    elif a.worker == "client-produce":
        result = run_loop(worker_produce_with_client(a.namesrv, a.mode, a.seconds, a.depth, a.count, a.start_at))
    elif a.worker == "drain":
        result = run_loop(worker_drain(a.addr))
    elif a.worker == "latency-consumer":
        result = run_loop(worker_latency_consumer(a.addr, a.count, a.seconds))
    elif a.worker == "paced":
        result = run_loop(worker_paced(a.addr, a.broker, a.rate, a.seconds))
    else:
        raise SystemExit(f"unknown worker {a.worker}")
    print(json.dumps(result), flush=True)


# --- the driver ----------------------------------------------------------------------------

#: name -> (title, producer processes, mode, requests in flight per process)
SEND_WORKLOADS = {
    "sync": ("sync send, 1 in flight", 1, "single", 1),
    "async64": ("async send, 64 in flight", 1, "single", 64),
    "batch32": ("batches of 32, 4 in flight", 1, "batch", 4),
    "procs4": ("4 producer procs x 64 in flight", 4, "single", 64),
}
WORKLOADS = [*SEND_WORKLOADS, "drain", "latency"]


@dataclass
class Row:
    name: str
    messages: int
    seconds: float
    cpu_us_per_msg: float
    note: str = ""
    #: CPU of the client processes per message (what the load itself costs on this machine).
    client_cpu_us_per_msg: float = float("nan")

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the command name: field 14 (utime) and 15 (stime) are at 11 and 12.
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def spawn(args: list[str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "bench.e2e", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def collect(procs: list[subprocess.Popen[str]], timeout: float = 600.0) -> list[dict[str, Any]]:
    out = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed with exit code {proc.returncode}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def produce_row(name: str, broker_pid: int, addr: str, procs: int, mode: str, depth: int,
                seconds: float, count: int = 0, namesrv: str = "") -> Row:
    """Run `procs` producer workers together; with `namesrv` they use orbitmq.client.Producer."""
    # Workers start together a little later, after their interpreters have loaded and connected,
    # and the broker's CPU is read around exactly that window.
    start_at = time.time() + 1.5 + 0.5 * procs
    worker = ["--worker", "client-produce", "--namesrv", namesrv] if namesrv else ["--worker", "produce"]
    workers = [
        spawn([*worker, "--addr", addr, "--mode", mode, "--depth", str(depth),
               "--seconds", str(seconds), "--count", str(count), "--start-at", str(start_at)])
        for _ in range(procs)
    ]
    time.sleep(max(0.0, start_at - time.time()))
    cpu0 = cpu_seconds(broker_pid)
    time.sleep(seconds)
    cpu = cpu_seconds(broker_pid) - cpu0
    results = collect(workers)
    sent = sum(r["sent"] for r in results)
    errors = sum(r["errors"] for r in results)
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    note = f"{errors} errors" if errors else ""
    client_cpu = sum(r["cpu"] for r in results)
    return Row(name, sent, span, cpu * 1e6 / max(sent, 1), note, client_cpu * 1e6 / max(sent, 1))


def main() -> None:
    if "--worker" in sys.argv:
        worker_main(sys.argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each send workload")
    p.add_argument("--backlog", type=int, default=200_000, help="messages to drain")
    p.add_argument("--latency-seconds", type=float, default=10.0)
    p.add_argument("--quick", action="store_true", help="short run (2 s workloads, 20k backlog)")
    p.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
    p.add_argument("--client", choices=["lean", "orbitmq"], default="lean",
                   help="send workloads through the lean protocol client or orbitmq.client.Producer")
    p.add_argument("--flush", choices=["async", "sync"], default="async",
                   help="broker flushDiskType: ASYNC_FLUSH (the dev default) or SYNC_FLUSH (fsync before the ack)")
    a = p.parse_args()
    chosen = [w.strip() for w in a.only.split(",") if w.strip()]
    unknown = set(chosen) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    if a.quick:
        a.seconds, a.backlog, a.latency_seconds = 2.0, 20_000, 3.0

    from orbitmq.admin.api import AdminClient
    from orbitmq.admin.models import TopicConfig
    from tests.support.procs import orbitmq_command, start_server

    with tempfile.TemporaryDirectory(prefix="orbitmq-bench-") as tmp:
        conf = os.path.join(tmp, "broker.conf")
        with open(conf, "w") as f:
            f.write(f"flushDiskType={a.flush.upper()}_FLUSH\n")
        server = start_server(orbitmq_command("dev", *dev_flags(tmp), "-c", conf), listeners=2, cwd=tmp)
        try:
            namesrv, broker_addr = server_addresses(server.output)

            async def setup() -> None:
                async with AdminClient([namesrv]) as admin:
                    await admin.create_topic(broker_addr, TopicConfig(TOPIC, QUEUES, QUEUES))

            asyncio.run(setup())
            pid = server.pid
            rows: list[Row] = []
            percentiles: dict[str, float] = {}
            for name in chosen:
                if name in SEND_WORKLOADS:
                    title, procs, mode, depth = SEND_WORKLOADS[name]
                    via = namesrv if a.client == "orbitmq" else ""
                    rows.append(produce_row(title, pid, broker_addr, procs, mode, depth, a.seconds, namesrv=via))
                elif name == "drain":
                    rows.append(drain_row(pid, namesrv, broker_addr, a.backlog))
                elif name == "latency":
                    latency_row, percentiles = run_latency(pid, broker_addr, a.latency_seconds)
                    rows.append(latency_row)
            print(f"flushDiskType={a.flush.upper()}_FLUSH, {a.client} client, {BODY_SIZE}-byte bodies, {QUEUES} queues, "
                  f"load average before: {os.getloadavg()[0]:.2f}")
            print_report(rows, percentiles)
        finally:
            server.stop()


def dev_flags(tmp: str) -> list[str]:
    """Flags for `orbitmq dev`: ephemeral ports on loopback, store under `tmp`."""
    return os.environ.get("ORBITMQ_BENCH_DEV_FLAGS", "").split() or [
        "--host", "127.0.0.1", "--namesrv-port", "0", "--broker-port", "0", "--store", os.path.join(tmp, "store"),
    ]


def server_addresses(lines: list[str]) -> tuple[str, str]:
    namesrv = broker = ""
    for line in lines:
        if line.startswith("namesrv listening on "):
            namesrv = line.split()[-1]
        elif line.startswith("broker ") and " listening on " in line:
            broker = line.split()[-1]
    if not namesrv or not broker:
        raise RuntimeError("orbitmq dev did not print both readiness lines:\n" + "".join(lines))
    return namesrv, broker


def drain_row(pid: int, namesrv: str, addr: str, backlog: int) -> Row:
    """Top the topic up to `backlog` messages with batches (not measured), then drain it all from a fresh process."""
    from orbitmq.admin.api import AdminClient
    from orbitmq.client.queue import MessageQueue

    async def stored() -> int:
        async with AdminClient([namesrv]) as admin:
            return sum([await admin.max_offset(addr, MessageQueue(TOPIC, "", q)) for q in range(QUEUES)])

    need = backlog - asyncio.run(stored())
    if need > 0:
        collect([spawn(["--worker", "produce", "--addr", addr, "--mode", "batch", "--depth", "4",
                        "--seconds", "600", "--count", str(need)])])
    cpu0 = cpu_seconds(pid)
    result = collect([spawn(["--worker", "drain", "--addr", addr])])[0]
    cpu = cpu_seconds(pid) - cpu0
    return Row(f"drain a backlog of {result['received']:,}", result["received"], result["end"] - result["start"],
               cpu * 1e6 / max(result["received"], 1), "", result["cpu"] * 1e6 / max(result["received"], 1))


def run_latency(pid: int, addr: str, seconds: float, rate: int = 2000) -> tuple[Row, dict[str, float]]:
    expect = int(rate * seconds)
    consumer = spawn(["--worker", "latency-consumer", "--addr", addr, "--count", str(expect),
                      "--seconds", str(seconds + 15)])
    assert consumer.stdout is not None
    json.loads(consumer.stdout.readline())  # {"ready": true}
    cpu0 = cpu_seconds(pid)
    producer = collect([spawn(["--worker", "paced", "--addr", addr, "--rate", str(rate),
                               "--seconds", str(seconds)])])[0]
    # Keep reading through the same buffered stream as the "ready" line: communicate() would
    # read the pipe underneath it and lose what the buffer already holds.
    tail = consumer.stdout.read()
    if consumer.wait(timeout=60) != 0:
        raise RuntimeError(f"latency consumer failed with exit code {consumer.returncode}")
    summary = json.loads(tail.strip().splitlines()[-1])
    cpu = cpu_seconds(pid) - cpu0
    elapsed = producer["end"] - producer["start"]
    received = int(summary.pop("count"))
    percentiles = {k: float(v) for k, v in summary.items()}
    percentiles.update({k: float(v) for k, v in producer.items() if k.startswith("ack_")})
    note = f"received {received}/{producer['sent']}" + (f", {producer['errors']} send errors" if producer['errors'] else "")
    return Row(f"steady {rate} msg/s send->receive", producer["sent"], elapsed, cpu * 1e6 / max(received, 1),
               note), percentiles


def print_report(rows: list[Row], percentiles: dict[str, float]) -> None:
    headers = ("workload", "messages", "msg/s", "broker CPU us/msg", "client CPU us/msg", "note")
    table = [
        (r.name, f"{r.messages:,}", f"{r.rate:,.0f}", f"{r.cpu_us_per_msg:.1f}",
         "-" if r.client_cpu_us_per_msg != r.client_cpu_us_per_msg else f"{r.client_cpu_us_per_msg:.1f}", r.note)
        for r in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    if percentiles:
        e2e = ", ".join(f"{k} {v:.2f}" for k, v in percentiles.items() if not k.startswith("ack_"))
        ack = ", ".join(f"{k[4:]} {v:.2f}" for k, v in percentiles.items() if k.startswith("ack_"))
        print(f"send->receive latency at 2,000 msg/s (ms): {e2e}")
        print(f"send->acknowledgement latency (ms): {ack}")


if __name__ == "__main__":
    main()
