"""Message store benchmark (not a test): `python -m bench.store [--seconds S] [--dir PATH]`.

Measures, on this machine:

* sequential write bandwidth with dd (one fdatasync at the end, and O_DSYNC
  on every 1 MiB write), for comparison;
* append throughput (msgs/s, MB/s of bodies) for 128 B and 1 KiB bodies,
  single puts and batches of 32, ASYNC_FLUSH and SYNC_FLUSH, 1 and 64
  concurrent writers (each writer awaits its put before the next);
* read throughput of a backlog (get_message, 32 per call, slices only);
* crash recovery time of a 1 GiB CommitLog after SIGKILL, from the
  checkpoint and with a full scan;
* peak RSS.

Every run uses a fresh store folder under --dir (default: a temp folder).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import Message, MessageExtBatch, MessageExtBrokerInner
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.record import encode_batch
from orbitmq.remoting.loop import run
from orbitmq.store.config import FlushDiskType, StoreConfig
from orbitmq.store.store import DefaultMessageStore

STORE_HOST = "10.0.0.1:10911"
BORN_HOST = "10.0.0.2:50000"
QUEUES = 8


def dd(path: Path, *flags: str, count: int = 1024) -> str:
    out = subprocess.run(
        ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", *flags],
        capture_output=True, text=True, check=True,
    ).stderr
    path.unlink()
    m = re.search(r"copied, ([\d.]+) s, ([\d.]+ [GMk]?B/s)", out)
    return m.group(2) if m else out.strip().splitlines()[-1]


def single(topic: str, body: bytes, queue_id: int, ids: UniqueIdGenerator) -> MessageExtBrokerInner:
    msg = MessageExtBrokerInner(
        topic=topic, body=body, queue_id=queue_id, born_timestamp=int(time.time() * 1000),
        born_host=BORN_HOST, store_host=STORE_HOST,
    )
    # What a Java producer's send carries: tag, unique id, WAIT.
    msg.properties = {mc.TAGS: "TagA", mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: ids.next(), mc.WAIT_STORE_MSG_OK: "true"}
    msg.refresh_properties_string()
    msg.tags_code = tag_hash_code("TagA")
    return msg


def batch(topic: str, body: bytes, queue_id: int, ids: UniqueIdGenerator, n: int = 32) -> MessageExtBatch:
    items = [Message(topic, body, properties={mc.TAGS: "TagA", mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: ids.next()})
             for _ in range(n)]
    return MessageExtBatch(
        topic=topic, queue_id=queue_id, body=encode_batch(items), properties_string="WAIT\x01true",
        born_timestamp=int(time.time() * 1000), born_host=BORN_HOST, store_host=STORE_HOST,
    )


async def append_run(
    root: Path, body_len: int, batched: bool, flush: FlushDiskType, writers: int, seconds: float
) -> tuple[float, float, float]:
    """Returns (msgs/s, MB/s of bodies, CPU µs per message)."""
    config = StoreConfig(store_path_root_dir=str(root), flush_disk_type=flush)
    store = DefaultMessageStore(config)
    await store.start()
    body = os.urandom(body_len)
    ids = UniqueIdGenerator()
    # Requests are built before timing starts, as the broker has them decoded already.
    pool_size = 64 if batched else 2048
    requests = [
        batch("Bench", body, i % QUEUES, ids) if batched else single("Bench", body, i % QUEUES, ids)
        for i in range(pool_size)
    ]
    per_put = 32 if batched else 1
    count = 0
    deadline = time.monotonic() + seconds

    async def writer(w: int) -> None:
        nonlocal count
        i = w
        put = store.put_messages if batched else store.put_message
        while time.monotonic() < deadline:
            for _ in range(64):
                result = await put(requests[i % pool_size])  # type: ignore[arg-type]
                if not result.is_ok:
                    raise RuntimeError(result)
                i += writers
                count += per_put

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await store.close()
    shutil.rmtree(root)
    return count / elapsed, count * body_len / elapsed / 1e6, cpu / count * 1e6


async def read_run(root: Path, messages: int) -> tuple[float, float]:
    config = StoreConfig(store_path_root_dir=str(root))
    body = os.urandom(1024)
    ids = UniqueIdGenerator()
    async with DefaultMessageStore(config) as store:
        for i in range(messages // 32):
            await store.put_messages(batch("Backlog", body, i % QUEUES, ids))
        total = nbytes = 0
        t0 = time.perf_counter()
        for queue_id in range(QUEUES):
            offset = 0
            while True:
                got = store.get_message("g", "Backlog", queue_id, offset, 32)
                if not got.buffers:
                    break
                total += got.message_count
                nbytes += got.buffer_total_size
                offset = got.next_begin_offset
                got.release()
        elapsed = time.perf_counter() - t0
    shutil.rmtree(root)
    return total / elapsed, nbytes / elapsed / 1e6


_FILLER = """
import asyncio, os, sys, time
from bench.store import batch
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.store.config import StoreConfig
from orbitmq.store.store import DefaultMessageStore

async def main():
    store = DefaultMessageStore(StoreConfig(store_path_root_dir=sys.argv[1]))
    await store.start()
    body = os.urandom(1024)
    ids = UniqueIdGenerator()
    target = int(sys.argv[2])
    full = False
    i = 0
    while True:
        await store.put_messages(batch("Recover", body, i % 8, ids))
        i += 1
        if i % 8 == 0:
            # A broker waits on its sockets all the time; let the flush tasks run as they would.
            await asyncio.sleep(0)
        if store.get_max_phy_offset() >= target and not full:
            full = True
            print("FULL", store.get_max_phy_offset(), flush=True)

asyncio.run(main())
"""


def fill_and_kill(root: Path, size: int) -> None:
    """Fill `size` bytes of CommitLog in a child process, then SIGKILL it mid-append."""
    child = subprocess.Popen(
        [sys.executable, "-c", _FILLER, str(root), str(size)], stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith("FULL"):
        raise RuntimeError(f"filler failed: {line!r}")
    time.sleep(1.5)  # a steady state: flushes and checkpoints happen while appends go on
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def forget_checkpoint(root: Path) -> None:
    """Zero the checkpoint (as a store RocketMQ wrote) and mark a crash: recovery scans every record."""
    with open(root / "checkpoint", "r+b") as f:
        f.write(bytes(64))
    (root / "abort").touch()


async def recovery_run(root: Path, size: int) -> tuple[float, float, int]:
    """Time crash recovery of a `size`-byte CommitLog after SIGKILL: from the checkpoint, then full."""
    fill_and_kill(root, size)
    t0 = time.perf_counter()
    store = DefaultMessageStore(StoreConfig(store_path_root_dir=str(root)))
    await store.start()
    from_checkpoint = time.perf_counter() - t0
    end = store.get_max_phy_offset()
    await store.close()
    forget_checkpoint(root)
    t0 = time.perf_counter()
    store = DefaultMessageStore(StoreConfig(store_path_root_dir=str(root)))
    await store.start()
    full = time.perf_counter() - t0
    assert store.get_max_phy_offset() == end
    await store.close()
    shutil.rmtree(root)
    return from_checkpoint, full, end


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each append run")
    parser.add_argument("--dir", default=None, help="folder for the stores (default: a temp folder)")
    parser.add_argument("--backlog", type=int, default=200_000, help="messages in the read backlog")
    parser.add_argument("--recovery-bytes", type=int, default=1 << 30, help="CommitLog size for the recovery run")
    parser.add_argument("--skip", default="", help="comma-separated: dd,append,read,recovery")
    parser.add_argument("--no-uvloop", action="store_true", help="plain asyncio instead of uvloop (the broker's loop)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    base = Path(tempfile.mkdtemp(prefix="orbitmq-bench-", dir=args.dir))
    loop_name = type(asyncio.get_running_loop()).__module__.split(".")[0]
    print(f"# store bench in {base}; {os.cpu_count()} CPUs; python {sys.version.split()[0]}; {loop_name} loop")
    try:
        if "dd" not in skip:
            print(f"dd bs=1M count=1024 conv=fdatasync : {dd(base / 'dd.bin', 'conv=fdatasync')}")
            print(f"dd bs=1M count=512 oflag=dsync     : {dd(base / 'dd.bin', 'oflag=dsync', count=512)}")
        if "append" not in skip:
            print(f"{'body':>5} {'mode':>7} {'flush':>11} {'writers':>7} {'msgs/s':>10} {'MB/s':>8} {'cpu us/msg':>10}")
            for body_len in (128, 1024):
                for batched in (False, True):
                    for flush in (FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH):
                        for writers in (1, 64):
                            rate, mbps, cpu = await append_run(
                                base / "append", body_len, batched, flush, writers, args.seconds
                            )
                            mode = "batch32" if batched else "single"
                            print(f"{body_len:>5} {mode:>7} {flush.value:>11} {writers:>7} "
                                  f"{rate:>10,.0f} {mbps:>8.1f} {cpu:>10.2f}", flush=True)
        if "read" not in skip:
            rate, mbps = await read_run(base / "read", args.backlog)
            print(f"read backlog of {args.backlog} x 1 KiB, 32 per get: {rate:,.0f} msgs/s, {mbps:.0f} MB/s")
        if "recovery" not in skip:
            ckpt, full, end = await recovery_run(base / "recovery", args.recovery_bytes)
            print(f"crash recovery of a {end / (1 << 30):.2f} GiB CommitLog after SIGKILL: "
                  f"{ckpt:.2f} s from the checkpoint, {full:.2f} s scanning every record")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: {own:.0f} MiB (this process), {kids:.0f} MiB (largest child)")


if __name__ == "__main__":
    run(main(), use_uvloop="--no-uvloop" not in sys.argv)
