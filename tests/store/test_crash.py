"""SIGKILL a writing process over and over; every acknowledged message must survive intact.

A child appends with 8 concurrent writers and prints each acknowledged put.
The test kills it at a random moment, reopens the store (crash recovery) and
checks: every acknowledged message is at its queue offset and CommitLog
offset with the same body bytes, queue offsets are dense and in order, and
no torn record is ever returned. Twenty kills in a row on the same store,
for SYNC_FLUSH and for ASYNC_FLUSH (the page cache survives a process kill,
so nothing acknowledged may be lost there either).
"""

from __future__ import annotations

import hashlib
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbitmq.common.record import body_crc, iter_records
from orbitmq.store.config import FlushDiskType
from orbitmq.store.store import DefaultMessageStore
from tests.store.crash_child import QUEUES, crash_config

ROUNDS = 20
REPO = Path(__file__).resolve().parents[2]


def run_child_until_killed(root: Path, flush: FlushDiskType, seed: int, rng: random.Random) -> list[str]:
    """Start the child, SIGKILL it after a random delay, return the complete lines it printed."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_child", str(root), flush.value, str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env,
    )
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ)
    data = b""
    kill_at: float | None = None
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if kill_at is None and b"READY\n" in data:
                # Kill anywhere from "right away" to a few hundred acknowledged puts later.
                kill_at = time.monotonic() + rng.uniform(0.0, 0.35)
            if kill_at is not None and time.monotonic() >= kill_at:
                break
            if child.poll() is not None:
                raise AssertionError(f"child exited on its own: {child.stderr.read() if child.stderr else b''!r}")
            for _ in sel.select(0.01):
                chunk = child.stdout.read()
                if chunk:
                    data += chunk
        else:
            raise AssertionError("child never became ready")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        sel.close()
    rest = child.stdout.read()
    data += rest or b""
    child.stdout.close()
    if child.stderr is not None:
        child.stderr.close()
    lines = data.decode().split("\n")
    return lines[:-1]  # the last piece is either empty or a line cut by the kill


async def verify(
    root: Path, flush: FlushDiskType, acked: dict[tuple[int, int], tuple[int, str]], keys: dict[str, int]
) -> None:
    async with DefaultMessageStore(crash_config(root, flush)) as store:
        assert store.recovered_from_crash
        # The index survives too: a sample of acknowledged keys still finds its record.
        for key in random.Random(len(keys)).sample(sorted(keys), min(10, len(keys))):
            with store.query_message("T", key, 4, 0, 2**62) as found:
                assert keys[key] in [r.commit_log_offset for r in iter_records(b"".join(found.buffers))]
        for queue_id in range(QUEUES):
            expected_max = 1 + max((qo for (q, qo) in acked if q == queue_id), default=-1)
            max_offset = store.get_max_offset_in_queue("T", queue_id)
            assert max_offset >= expected_max
            offset = 0
            while offset < max_offset:
                with store.get_message("g", "T", queue_id, offset, 32) as got:
                    records = list(iter_records(b"".join(got.buffers)))
                    assert records and len(records) == got.message_count
                    for rec in records:
                        assert rec.queue_offset == offset, "queue offsets must be dense and in order"
                        assert body_crc(rec.body) == rec.body_crc, "a torn record was returned"
                        want = acked.get((queue_id, offset))
                        if want is not None:
                            assert (rec.commit_log_offset, hashlib.sha1(rec.body).hexdigest()) == want
                        offset += 1
                    assert got.next_begin_offset == offset


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.parametrize("flush", [FlushDiskType.SYNC_FLUSH, FlushDiskType.ASYNC_FLUSH])
async def test_acknowledged_messages_survive_twenty_sigkills_in_a_row(tmp_path: Path, flush: FlushDiskType) -> None:
    rng = random.Random(20240601 + len(flush.value))
    acked: dict[tuple[int, int], tuple[int, str]] = {}
    keys: dict[str, int] = {}
    total_lines = 0
    for round_no in range(ROUNDS):
        lines = run_child_until_killed(tmp_path, flush, round_no, rng)
        for line in lines:
            if not line.startswith("ACK "):
                continue
            _, queue_id, queue_offset, phys, digest, msg_key = line.split()
            keys[msg_key] = int(phys)
            key = (int(queue_id), int(queue_offset))
            assert key not in acked or acked[key] == (int(phys), digest), "an acknowledged offset was reused"
            acked[key] = (int(phys), digest)
            total_lines += 1
        await verify(tmp_path, flush, acked, keys)
        # The next child must go through crash recovery too, not a clean start.
        (tmp_path / "abort").touch()
    assert total_lines > ROUNDS * 5, "the child acknowledged too little to test anything"
