"""Child process for the crash tests: appends forever and reports each acknowledged put.

Usage: python -m tests.store.crash_child ROOT SYNC_FLUSH|ASYNC_FLUSH SEED

Prints `READY` once the store has recovered, then one line per acknowledged
message: `ACK <queue id> <queue offset> <commit-log offset> <sha1 of body> <key>`.
The parent kills this process with SIGKILL at a random moment.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import sys
from pathlib import Path

from orbitmq.store.api import PutMessageStatus
from orbitmq.store.config import FlushDiskType
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config

QUEUES = 3
WRITERS = 8


def crash_config(root: Path, flush: FlushDiskType):  # type: ignore[no-untyped-def]
    return small_config(
        root, flush_disk_type=flush, mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 200, flush_interval_commit_log=20, flush_interval_consume_queue=30,
    )


async def main(root: Path, flush: FlushDiskType, seed: int) -> None:
    rng = random.Random(seed)
    store = DefaultMessageStore(crash_config(root, flush))
    await store.start()
    out = sys.stdout
    out.write("READY\n")
    out.flush()

    async def writer(w: int) -> None:
        n = 0
        while True:
            n += 1
            body = f"{seed}-{w}-{n}-".encode() + rng.randbytes(rng.randint(20, 900))
            key = f"k{seed}-{w}-{n}"
            msg = message(body=body, queue_id=rng.randrange(QUEUES), keys=key)
            result = await store.put_message(msg)
            if result.status is not PutMessageStatus.PUT_OK or result.append_result is None:
                raise SystemExit(f"put failed: {result}")
            r = result.append_result
            out.write(f"ACK {msg.queue_id} {r.logics_offset} {r.wrote_offset} {hashlib.sha1(body).hexdigest()} {key}\n")
            out.flush()
            if n % 4 == 0:
                await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(WRITERS)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), FlushDiskType(sys.argv[2]), int(sys.argv[3])))
