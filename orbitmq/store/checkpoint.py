"""The checkpoint file (§7.4) and the abort marker.

The checkpoint is one 4 KiB page:

    >q  physicMsgTimestamp   store time of the last CommitLog record known flushed
    >q  logicsMsgTimestamp   same for the ConsumeQueues
    >q  indexMsgTimestamp    same for the index

RocketMQ 4.x reads only these three longs, so the bytes after them are ours:
we keep two CommitLog offsets there (past the two longs 5.x adds): up to
where the CommitLog is known fsynced (byte 40) and up to where every record
is in a flushed ConsumeQueue and index (byte 48). Both are record
boundaries, so a crash recovery can start validating and re-dispatching at
the smaller one instead of at the start of a 1 GiB file.

The abort marker is an empty file that exists while the store runs; finding
it at start means the last run did not shut down cleanly.
"""

from __future__ import annotations

import mmap
import os
import struct

CHECKPOINT_SIZE = 4096
_TIMESTAMPS = struct.Struct(
    ">q"  # physicMsgTimestamp
    "q"   # logicsMsgTimestamp
    "q"   # indexMsgTimestamp
)
_OFFSETS = struct.Struct(
    ">q"  # CommitLog offset known fsynced
    "q"   # CommitLog offset below which every record is in flushed ConsumeQueues and index
)
_OFFSETS_AT = 40


class StoreCheckpoint:
    """Reads and writes the checkpoint page. Values are written to the mapping;
    `flush()` (blocking) makes them durable."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size < CHECKPOINT_SIZE:
            os.ftruncate(self._fd, CHECKPOINT_SIZE)
        self._mm = mmap.mmap(self._fd, CHECKPOINT_SIZE)
        phys, logics, index = _TIMESTAMPS.unpack_from(self._mm, 0)
        physic_offset, logics_offset = _OFFSETS.unpack_from(self._mm, _OFFSETS_AT)
        self.physic_msg_timestamp: int = phys
        self.logics_msg_timestamp: int = logics
        self.index_msg_timestamp: int = index
        #: CommitLog offset known fsynced (-1: unknown, e.g. a store RocketMQ wrote).
        self.physic_flushed_offset: int = physic_offset if physic_offset > 0 else -1
        #: CommitLog offset below which every record is in flushed ConsumeQueues and index (-1: unknown).
        self.logics_phy_offset: int = logics_offset if logics_offset > 0 else -1

    @property
    def min_timestamp(self) -> int:
        """The earliest of the CommitLog and ConsumeQueue flush times, less 3 s of slack
        for records stored out of order around a flush (RocketMQ's rule)."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def min_timestamp_with_index(self) -> int:
        return max(0, min(self.min_timestamp, self.index_msg_timestamp - 3000))

    def write(self) -> None:
        _TIMESTAMPS.pack_into(
            self._mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp
        )
        _OFFSETS.pack_into(
            self._mm, _OFFSETS_AT, max(self.physic_flushed_offset, 0), max(self.logics_phy_offset, 0)
        )

    def flush(self) -> None:
        """Write the current values and fsync the page. Blocking."""
        self.write()
        os.fdatasync(self._fd)

    def close(self) -> None:
        self.write()
        self._mm.close()
        os.close(self._fd)


def create_abort_marker(path: str) -> bool:
    """Create the abort marker; True when it already existed (the last run crashed)."""
    existed = os.path.exists(path)
    if not existed:
        with open(path, "wb"):
            pass
        _fsync_parent(path)
    return existed


def remove_abort_marker(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    _fsync_parent(path)


def _fsync_parent(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
