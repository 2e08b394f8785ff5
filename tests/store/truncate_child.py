"""Child process for the truncation crash test: fills a store, then cuts it and is killed mid-way.

Usage: python -m tests.store.truncate_child ROOT STAGE

Puts 60 messages over two queues with epochs 1 (from 0) and 2 (from the 30th
message's offset), prints `CUT <offset>` (the 20th message's offset), then
truncates to it and SIGKILLs itself at STAGE: `epochs` (after the epoch file
was cut), `commitlog` (after the CommitLog was cut, before the queues) or
`queues` (after the first queue was cut).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from orbitmq.store.consumequeue import ConsumeQueue
from orbitmq.store.epochs import EpochFile
from orbitmq.store.mapped_queue import MappedFileQueue
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def main(root: Path, stage: str) -> None:
    store = DefaultMessageStore(small_config(root))
    await store.start()
    offsets: list[int] = []
    for i in range(60):
        if i == 30:
            store.epochs.append(2, store.get_max_phy_offset())
        if i == 0:
            store.epochs.append(1, 0)
        result = await store.put_message(message(body=b"m%03d" % i + b"." * 200, queue_id=i % 2, keys=f"k{i}"))
        assert result.append_result is not None
        offsets.append(result.append_result.wrote_offset)
    cut = offsets[20]
    print(f"CUT {cut}", flush=True)
    if stage == "epochs":
        real_epochs = EpochFile.truncate_from

        def epochs_then_die(self: EpochFile, offset: int) -> int:
            real_epochs(self, offset)
            _die()
            return 0

        EpochFile.truncate_from = epochs_then_die  # type: ignore[method-assign]
    elif stage == "commitlog":
        real_log = MappedFileQueue.truncate_dirty

        def log_then_die(self: MappedFileQueue, offset: int) -> None:
            real_log(self, offset)
            if self is store.commitlog.log:
                _die()

        MappedFileQueue.truncate_dirty = log_then_die  # type: ignore[method-assign]
    else:
        real_cq = ConsumeQueue.truncate_past

        def one_queue_then_die(self: ConsumeQueue, phys_end: int) -> None:
            real_cq(self, phys_end)
            _die()

        ConsumeQueue.truncate_past = one_queue_then_die  # type: ignore[method-assign]
    store.truncate(cut)
    print("NOT KILLED", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
