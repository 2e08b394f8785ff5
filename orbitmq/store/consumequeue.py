"""ConsumeQueue: the per-topic, per-queue index of CommitLog records (§7.2).

Entry `i` (the message with queue offset `i`) sits at byte `i * 20` of the
queue's log and holds:

    >q  commit-log offset of the record
    >i  record size
    >q  tags code (§5.10; the delivery time for SCHEDULE_TOPIC_XXXX)

A queue that starts past offset 0 has its leading slots in the first file
filled with blank entries (offset 0, size 0x7FFFFFFF, tags 0), as RocketMQ
writes them. Commit-log offsets grow along a queue, which recovery and
cleaning rely on.

Ownership: everything here is owned by the event loop; flushes run the
blocking `MappedFileQueue.flush` in a worker thread.
"""

from __future__ import annotations

import concurrent.futures
import os
import struct
from collections.abc import Iterator

from orbitmq.store.config import CQ_UNIT_SIZE
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.mapped_queue import MappedFileQueue
from orbitmq.store.paths import queue_dir

CQ_ENTRY = struct.Struct(
    ">q"  # commit-log offset
    "i"   # record size
    "q"   # tags code
)
assert CQ_ENTRY.size == CQ_UNIT_SIZE

#: Size of a blank (padding) entry; no real record is this large.
BLANK_SIZE = 0x7FFFFFFF
_BLANK = CQ_ENTRY.pack(0, BLANK_SIZE, 0)


class ConsumeQueue:
    """The entries of one topic/queue, in queue-offset order."""

    def __init__(
        self,
        topic: str,
        queue_id: int,
        root: str,
        file_size: int,
        allocator: concurrent.futures.Executor | None = None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.log = MappedFileQueue(
            queue_dir(root, topic, queue_id), file_size, sync_dir=False, allocator=allocator, reserve=0
        )
        #: Byte offset of the first readable entry (entries before it are blanks or cleaned).
        self.min_logic_offset = 0
        #: CommitLog offset just past the last record this queue points to.
        self.max_physic_offset = -1
        #: True when the next entry at the end of the queue falls in reserved disk blocks, so a
        #: put needs no `reserve_entries` call first. Kept by the append fast paths; anything
        #: else leaves it False (the mapped writes check `reserved` themselves regardless).
        self.room_for_next = False

    # --- positions -----------------------------------------------------------

    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_UNIT_SIZE

    @property
    def max_offset_in_queue(self) -> int:
        """Queue offset the next entry gets."""
        return self.log.max_offset // CQ_UNIT_SIZE

    # --- writing -------------------------------------------------------------

    def put(self, phys_offset: int, size: int, tags_code: int, queue_offset: int) -> None:
        """Write the entry for `queue_offset`; entries already present are rewritten in place.

        Rewriting covers recovery, which dispatches records again that the
        queue may already hold (possibly torn by a crash mid-write).
        """
        pos = queue_offset * CQ_UNIT_SIZE
        log = self.log
        last = log.last
        if last is not None and last.end_offset == pos and last.wrote_position + CQ_UNIT_SIZE <= last.reserved:
            # The common case: append at the end of the last file.
            CQ_ENTRY.pack_into(last.view, last.wrote_position, phys_offset, size, tags_code)
            wrote = last.wrote_position = last.wrote_position + CQ_UNIT_SIZE
            self.room_for_next = wrote + CQ_UNIT_SIZE <= last.reserved
        elif pos < log.max_offset and pos >= log.min_offset:
            # Recovery dispatching a record again: rewrite the entry only if it differs,
            # so that replaying intact entries does not dirty their pages.
            mf = log.find(pos)
            assert mf is not None
            at = pos - mf.file_from_offset
            if CQ_ENTRY.unpack_from(mf.view, at) != (phys_offset, size, tags_code):
                CQ_ENTRY.pack_into(mf.view, at, phys_offset, size, tags_code)
        else:
            self._put_slow(pos, phys_offset, size, tags_code)
        end = phys_offset + size
        self.max_physic_offset = max(self.max_physic_offset, end)

    def put_run(self, queue_offset: int, entries: list[tuple[int, int, int]]) -> None:
        """Write consecutive entries from `queue_offset` on (a batch): one copy when they fit
        at the end of the last file, else one by one."""
        log = self.log
        last = log.last
        pos = queue_offset * CQ_UNIT_SIZE
        n = len(entries)
        if (
            last is not None and last.end_offset == pos
            and last.wrote_position + n * CQ_UNIT_SIZE <= last.reserved
        ):
            flat = [v for entry in entries for v in entry]
            start = last.wrote_position
            last.view[start : start + n * CQ_UNIT_SIZE] = struct.pack(">" + "qiq" * n, *flat)
            last.wrote_position = start + n * CQ_UNIT_SIZE
            self.room_for_next = last.wrote_position + CQ_UNIT_SIZE <= last.reserved
            phys, size, _ = entries[-1]
            self.max_physic_offset = max(self.max_physic_offset, phys + size)
            return
        for i, (phys, size, tags_code) in enumerate(entries):
            self.put(phys, size, tags_code, queue_offset + i)

    def reserve_entries(self, queue_offset: int, count: int) -> None:
        """Reserve the disk blocks that `count` entries from `queue_offset` on will take,
        creating the file they start in (and the next one, when they cross into it).

        Called before the records are appended to the CommitLog, so that a full
        disk refuses the put (StoreError) before anything is written, instead of
        failing the dispatch of a record already in the log. Only a batch
        spanning more than two queue files (possible with tiny test files, not
        with RocketMQ's sizes) leaves the rest to dispatch, which reserves too.
        """
        pos = queue_offset * CQ_UNIT_SIZE
        end = pos + count * CQ_UNIT_SIZE
        last = self.log.last
        if last is not None and last.file_from_offset <= pos and end - last.file_from_offset <= last.reserved:
            return
        self._reserve_slow(pos, end)

    def _reserve_slow(self, pos: int, end: int) -> None:
        log = self.log
        if log.files and pos < log.min_offset:
            return  # below the cleaned part: dispatch writes nothing
        if not log.files:
            self.min_logic_offset = pos  # as `_put_slow` does for a queue starting past 0
        last = log.get_last_for_append(pos)
        file_end = last.file_from_offset + last.file_size
        if pos >= file_end:
            return  # a gap past the last file (see `_put_slow`): dispatch reserves as it fills it
        last.reserve(min(end, file_end) - last.file_from_offset)
        if end > file_end:
            following = log.build_next()
            following.reserve(min(end - file_end, following.file_size))

    def _put_slow(self, pos: int, phys_offset: int, size: int, tags_code: int) -> None:
        self.room_for_next = False
        log = self.log
        if log.files and pos < log.min_offset:
            return  # below the cleaned part of the queue: nothing to keep
        if not log.files:
            # A queue that starts past 0 blanks the leading slots of its first file.
            self.min_logic_offset = pos
        mf = log.get_last_for_append(pos)
        while mf.end_offset < pos:
            # A gap (entries lost before a recovery scan started) is filled with
            # blanks so that offsets stay positional; readers skip blanks.
            mf.append(_BLANK)
            mf = log.get_last_for_append(pos)
        mf.append(CQ_ENTRY.pack(phys_offset, size, tags_code))

    # --- reading -------------------------------------------------------------

    def entries_from(self, queue_offset: int) -> tuple[MappedFile, memoryview] | None:
        """The entries from `queue_offset` to the written end of their file, as one slice."""
        pos = queue_offset * CQ_UNIT_SIZE
        if pos < self.min_logic_offset:
            return None
        mf = self.log.find(pos)
        if mf is None:
            return None
        start = pos - mf.file_from_offset
        if start >= mf.wrote_position:
            return None
        return mf, mf.view[start:mf.wrote_position]

    def entry(self, queue_offset: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of one entry, or None when absent."""
        pos = queue_offset * CQ_UNIT_SIZE
        if pos < self.min_logic_offset:
            return None
        mf = self.log.find(pos)
        if mf is None or pos - mf.file_from_offset >= mf.wrote_position:
            return None
        return CQ_ENTRY.unpack_from(mf.view, pos - mf.file_from_offset)

    def iter_file_entries(self, mf: MappedFile, start: int = 0) -> Iterator[tuple[int, int, int]]:
        end = mf.wrote_position - (mf.wrote_position - start) % CQ_UNIT_SIZE
        return CQ_ENTRY.iter_unpack(mf.view[start:end])

    def next_file_offset(self, queue_offset: int) -> int:
        """First queue offset of the file after the one holding `queue_offset`."""
        per_file = self.log.file_size // CQ_UNIT_SIZE
        return queue_offset + per_file - queue_offset % per_file

    # --- recovery ------------------------------------------------------------

    def load(self) -> None:
        self.log.load()

    def recover(self) -> None:
        """Find the written end: the first entry that is all zeros (or size <= 0)
        scanning from the third-last file, and drop what lies past it."""
        self.room_for_next = False
        files = self.log.files
        if not files:
            return
        start = max(0, len(files) - 3)
        end = files[start].file_from_offset
        for mf in files[start:]:
            valid = 0
            for phys, size, _tags in CQ_ENTRY.iter_unpack(mf.view):
                if phys < 0 or size <= 0:
                    break
                valid += CQ_UNIT_SIZE
                if size != BLANK_SIZE:
                    self.max_physic_offset = max(self.max_physic_offset, phys + size)
            end = mf.file_from_offset + valid
            if valid < mf.file_size:
                break
        self.log.truncate_dirty(end)

    def truncate_past(self, phys_end: int) -> None:
        """Drop entries pointing at or past CommitLog offset `phys_end` (they lost their records)."""
        if self.max_physic_offset < phys_end:
            return
        self.room_for_next = False
        log = self.log
        cut = log.max_offset
        while cut > log.min_offset:
            mf = log.find(cut - CQ_UNIT_SIZE)
            assert mf is not None
            phys, size, _ = CQ_ENTRY.unpack_from(mf.view, cut - CQ_UNIT_SIZE - mf.file_from_offset)
            if size != BLANK_SIZE and phys + size <= phys_end:
                break
            cut -= CQ_UNIT_SIZE
        log.truncate_dirty(cut)
        self.max_physic_offset = -1
        last = log.last
        if last is not None and last.wrote_position:
            phys, size, _ = CQ_ENTRY.unpack_from(last.view, last.wrote_position - CQ_UNIT_SIZE)
            self.max_physic_offset = phys + size if size != BLANK_SIZE else -1
        self.min_logic_offset = min(self.min_logic_offset, cut)

    # --- cleaning ------------------------------------------------------------

    def correct_min_offset(self, commit_log_min_offset: int) -> None:
        """Move the min offset to the first entry whose record is still in the CommitLog."""
        first = self.log.first
        if first is None:
            return
        pos = max(self.min_logic_offset, first.file_from_offset)
        for mf in self.log.files:
            if mf.file_from_offset + mf.wrote_position <= pos:
                continue
            start = pos - mf.file_from_offset if pos > mf.file_from_offset else 0
            for i, (phys, size, _t) in enumerate(self.iter_file_entries(mf, start)):
                if size != BLANK_SIZE and phys >= commit_log_min_offset:
                    self.min_logic_offset = mf.file_from_offset + start + i * CQ_UNIT_SIZE
                    return
            pos = mf.file_from_offset + mf.wrote_position
        self.min_logic_offset = self.log.max_offset

    def delete_expired_file(self, commit_log_min_offset: int, interval_forcibly_ms: int, now_ms: int) -> bool:
        """Delete the first file when every record it points to is gone; True if one went."""
        files = self.log.files
        if len(files) < 2:
            return False  # the last file is where appends go; it stays
        first = files[0]
        phys, size, _ = CQ_ENTRY.unpack_from(first.view, first.file_size - CQ_UNIT_SIZE)
        if phys + size > commit_log_min_offset and size != BLANK_SIZE:
            return False
        if not self.log.delete_first(interval_forcibly_ms, now_ms):
            return False
        self.min_logic_offset = max(self.min_logic_offset, self.log.min_offset)
        return True

    def destroy(self) -> None:
        self.log.delete_all()
        try:
            os.rmdir(os.path.dirname(self.log.directory))
        except OSError:
            pass  # other queues of the topic remain

    def close(self) -> None:
        self.log.close()
