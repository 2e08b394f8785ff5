"""Reads by queue: `get_message` with RocketMQ's statuses and limits, and searches by time.

Everything returned is a slice of a mapped CommitLog file; the result pins
those files (one reference per file, released by `result.release()`).
"""

from __future__ import annotations

import os
import struct

from orbitmq.store.api import GetMessageResult, GetMessageStatus, MessageFilter
from orbitmq.store.commitlog import CommitLog
from orbitmq.store.config import CQ_UNIT_SIZE, StoreConfig
from orbitmq.store.consumequeue import BLANK_SIZE, CQ_ENTRY, ConsumeQueue
from orbitmq.store.mapped_file import MappedFile

_I32 = struct.Struct(">i")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


TOTAL_PHYSICAL_MEMORY = _physical_memory()


class QueueReader:
    """`get_message` over a CommitLog and its ConsumeQueues."""

    def __init__(self, config: StoreConfig, commitlog: CommitLog) -> None:
        self.commitlog = commitlog
        self.update_config(config)

    def update_config(self, config: StoreConfig) -> None:
        """Use new pull limits (maxTransfer*, accessMessageInMemoryMaxRatio) from the next read on."""
        self.config = config
        #: Bytes behind the CommitLog head beyond which data is assumed on disk, not in memory.
        self.memory_window = TOTAL_PHYSICAL_MEMORY * config.access_message_in_memory_max_ratio // 100

    def get_message(
        self,
        cq: ConsumeQueue | None,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None,
        visible_end: int | None = None,
    ) -> GetMessageResult:
        """`visible_end`: records ending past this CommitLog offset are not served yet
        (controller mode's confirm offset); the read stops before the first of them."""
        result = GetMessageResult()
        if cq is None:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            return result
        min_offset = cq.min_offset_in_queue
        max_offset = cq.max_offset_in_queue
        result.min_offset, result.max_offset = min_offset, max_offset
        if max_offset == 0:
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            return result
        if offset < min_offset:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = min_offset
            return result
        if offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = offset
            return result
        if offset > max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            # RocketMQ sends a reader past the end of a queue that was never cleaned
            # back to 0, and otherwise to the max offset.
            result.next_begin_offset = 0 if min_offset == 0 else max_offset
            return result
        found = cq.entries_from(offset)
        if found is None:
            result.status = GetMessageStatus.OFFSET_FOUND_NULL
            result.next_begin_offset = cq.next_file_offset(offset)
            return result
        self._collect(result, found[1], offset, max_msg_nums, message_filter, visible_end)
        return result

    def _collect(
        self,
        result: GetMessageResult,
        entries: memoryview,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None,
        visible_end: int | None = None,
    ) -> None:
        config = self.config
        commitlog = self.commitlog
        log = commitlog.log
        min_phys = commitlog.min_offset
        max_phys = commitlog.max_offset
        scan_limit = max(16000, max_msg_nums * CQ_UNIT_SIZE)
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        buffers = result.buffers
        queue_offsets = result.queue_offsets
        held: dict[int, MappedFile] = {}
        total = 0
        count = 0
        skip_below = -1  # records below this are in a file being deleted
        scanned = 0
        n = min(len(entries), scan_limit) // CQ_UNIT_SIZE
        max_pulled = 0
        limited = False
        for i, (phys, size, tags_code) in enumerate(CQ_ENTRY.iter_unpack(entries[: n * CQ_UNIT_SIZE])):
            scanned = i + 1
            if size == BLANK_SIZE or phys < min_phys or phys < skip_below:
                continue
            if visible_end is not None and phys + size > visible_end:
                scanned = i
                limited = True
                break
            in_disk = max_phys - phys > self.memory_window
            if count and (
                count >= max_msg_nums
                or (in_disk and (total + size > config.max_transfer_bytes_on_message_in_disk
                                 or count >= config.max_transfer_count_on_message_in_disk))
                or (not in_disk and (total + size > config.max_transfer_bytes_on_message_in_memory
                                     or count >= config.max_transfer_count_on_message_in_memory))
            ):
                scanned = i
                break
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code):
                continue
            mf = log.find(phys)
            if mf is None or (id(mf) not in held and not mf.hold()):
                if not count:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                skip_below = commitlog.next_file_offset(phys)
                continue
            held[id(mf)] = mf
            pos = phys - mf.file_from_offset
            if pos + size > mf.wrote_position:
                continue
            record = mf.view[pos : pos + size]
            if message_filter is not None and not message_filter.is_matched_by_commit_log(record, None):
                continue
            buffers.append(record)
            queue_offsets.append(offset + i)
            total += size
            count += 1
            max_pulled = phys
        result._holds.extend(held.values())
        result.buffer_total_size = total
        result.next_begin_offset = offset + scanned
        if count:
            result.status = GetMessageStatus.FOUND
            result.suggest_pulling_from_slave = max_phys - max_pulled > self.memory_window
        elif limited and scanned == 0:
            # Nothing confirmed yet at this offset: answered as "no new message" (long polling waits).
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
        else:
            result.status = status


def offset_by_time(cq: ConsumeQueue, commitlog: CommitLog, timestamp: int) -> int:
    """The queue offset whose message was stored closest to `timestamp` (§3.7).

    An exact match wins (the first of equal times); otherwise the nearer of
    the two neighbours, the earlier on a tie. Store times never decrease along
    a queue, so this bisects. 0 when the queue has no readable message.
    """
    lo = cq.min_offset_in_queue
    hi = cq.max_offset_in_queue
    min_phys = commitlog.min_offset
    # Skip entries whose records were cleaned away (or blank).
    while lo < hi:
        entry = cq.entry(lo)
        if entry is not None and entry[1] != BLANK_SIZE and entry[0] >= min_phys:
            break
        lo += 1
    if lo >= hi:
        return 0
    first, last = lo, hi - 1

    def time_at(queue_offset: int) -> int:
        entry = cq.entry(queue_offset)
        return commitlog.store_timestamp_at(entry[0]) if entry is not None else -1

    # Lower bound: the first offset stored at or after `timestamp`.
    while lo < hi:
        mid = (lo + hi) // 2
        if time_at(mid) < timestamp:
            lo = mid + 1
        else:
            hi = mid
    if lo <= last and time_at(lo) == timestamp:
        return lo
    if lo > last:
        return last
    if lo == first:
        return first
    before, after = time_at(lo - 1), time_at(lo)
    return lo if after - timestamp < timestamp - before else lo - 1
