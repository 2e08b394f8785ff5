"""Recovery at start: find the valid end of the CommitLog and make the ConsumeQueues agree with it.

After a clean stop (no abort marker) everything was flushed, so the last
three CommitLog files are validated and the queues trimmed to match.

After a crash the scan starts where the checkpoint says everything before is
both fsynced and dispatched into flushed ConsumeQueues (or, for a store
without those offsets, at the last file whose first record is older than the
checkpoint's flush times). From there every record is validated (magic,
size, fields, CRC) and dispatched again: entries the queues already hold are
rewritten in place, missing ones are added. The first invalid byte is the
end: the CommitLog is zeroed past it and queue entries pointing past it are
dropped, so queue offsets stay dense and no torn record is ever served.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence

from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.names import SCHEDULE_TOPIC
from orbitmq.common.record import MAGIC_V1, RECORD_PREFIX
from orbitmq.common.sysflag import BORNHOST_V6, STOREHOST_V6
from orbitmq.store.api import DispatchRequest
from orbitmq.store.checkpoint import StoreCheckpoint
from orbitmq.store.commitlog import CommitLog
from orbitmq.store.dispatch import ConsumeQueueTable
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.record_writer import peek_property

log = logging.getLogger(__name__)
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")

#: RocketMQ's delay levels 1..18 in ms (messageDelayLevel), for the schedule topic's tag slot.
DEFAULT_DELAY_LEVELS_MS: tuple[int, ...] = tuple(
    s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
)


def recover_normally(commitlog: CommitLog, queues: ConsumeQueueTable, check_crc: bool) -> int:
    """Validate the last three CommitLog files; returns the CommitLog's valid end."""
    for cq in queues:
        cq.recover()
    files = commitlog.log.files
    start = max(0, len(files) - 3)
    end = _scan(commitlog, files[start:], check_crc, None)
    _finish(commitlog, queues, end)
    return end


def recover_abnormally(
    commitlog: CommitLog,
    queues: ConsumeQueueTable,
    start_offset: int,
    check_crc: bool,
    redispatch: Callable[[list[DispatchRequest]], None],
    delay_levels_ms: Sequence[int] = DEFAULT_DELAY_LEVELS_MS,
) -> int:
    """Validate and re-dispatch from `start_offset` (see `crash_scan_start`); returns the valid end."""
    for cq in queues:
        cq.recover()
    files = commitlog.log.files
    start_index = 0
    for i, mf in enumerate(files):
        if mf.file_from_offset <= start_offset < mf.file_from_offset + mf.file_size:
            start_index = i
            break
    log.info("crash recovery: validating the CommitLog from offset %d", start_offset)

    pending: list[DispatchRequest] = []

    def dispatch(mf: MappedFile, pos: int, size: int) -> None:
        rec = read_dispatch_fields(mf.view, pos, size, mf.file_from_offset + pos, delay_levels_ms)
        pending.append(rec)
        if len(pending) >= 1024:
            redispatch(pending[:])
            pending.clear()

    end = _scan(commitlog, files[start_index:], check_crc, dispatch, start_offset)
    if pending:
        redispatch(pending)
    _finish(commitlog, queues, end)
    return end


def read_dispatch_fields(
    view: memoryview, pos: int, size: int, phys: int, delay_levels_ms: Sequence[int]
) -> DispatchRequest:
    """What dispatch needs from a validated record, read without decoding the whole message."""
    _, magic, _, queue_id, _, queue_offset, _, sys_flag = RECORD_PREFIX.unpack_from(view, pos)
    p = pos + RECORD_PREFIX.size + 8 + (20 if sys_flag & BORNHOST_V6 else 8)
    (store_ts,) = _I64.unpack_from(view, p)
    p += 8 + (20 if sys_flag & STOREHOST_V6 else 8) + 4
    (prepared,) = _I64.unpack_from(view, p)
    (body_len,) = _I32.unpack_from(view, p + 8)
    p += 12 + body_len
    if magic == MAGIC_V1:
        topic_len = view[p]
        p += 1
    else:
        (topic_len,) = _U16.unpack_from(view, p)
        p += 2
    topic = bytes(view[p : p + topic_len]).decode("utf-8", "replace")
    p += topic_len
    (props_len,) = _U16.unpack_from(view, p)
    raw = bytes(view[p + 2 : p + 2 + props_len])
    if topic == SCHEDULE_TOPIC:
        tags_code = _delivery_time(peek_property(raw, b"DELAY\x01", b"\x02DELAY\x01"), store_ts, delay_levels_ms)
    else:
        tags_code = tag_hash_code(peek_property(raw, b"TAGS\x01", b"\x02TAGS\x01") or None)
    return DispatchRequest(
        topic, queue_id, phys, size, queue_offset, tags_code, store_ts, sys_flag,
        peek_property(raw, b"KEYS\x01", b"\x02KEYS\x01"),
        peek_property(raw, b"UNIQ_KEY\x01", b"\x02UNIQ_KEY\x01"), prepared,
    )


def crash_scan_start(commitlog: CommitLog, checkpoint: StoreCheckpoint) -> int:
    """Where a crash recovery starts: a record boundary everything before which is safe."""
    log_min, log_max = commitlog.log.min_offset, commitlog.log.max_offset
    offsets = (checkpoint.physic_flushed_offset, checkpoint.logics_phy_offset)
    if all(log_min <= o <= log_max for o in offsets):
        return min(offsets)
    # A store without our offsets (RocketMQ's own): the last file whose first record
    # is older than both flush times.
    limit = checkpoint.min_timestamp
    for mf in reversed(commitlog.log.files):
        ts = commitlog.store_timestamp_at(mf.file_from_offset)
        if 0 < ts <= limit:
            return mf.file_from_offset
    return log_min


def _scan(
    commitlog: CommitLog,
    files: Sequence[MappedFile],
    check_crc: bool,
    on_record: Callable[[MappedFile, int, int], None] | None,
    start_offset: int = -1,
) -> int:
    """Walk records file by file; returns the offset just past the last valid one."""
    if not files:
        return commitlog.log.min_offset
    end = files[0].file_from_offset
    last_record = -1
    for mf in files:
        first = start_offset - mf.file_from_offset if mf.file_from_offset <= start_offset else 0
        pos = first
        finished_file = False
        for at, size in commitlog.scan(mf, check_crc, first):
            if size == 0:
                finished_file = True
                break
            if on_record is not None:
                on_record(mf, at, size)
            last_record = mf.file_from_offset + at
            pos = at + size
        end = mf.file_from_offset + (mf.file_size if finished_file else pos)
        if not finished_file:
            break
    if last_record >= 0:
        # Store times never go backwards: continue from the newest record's time.
        ts = commitlog.store_timestamp_at(last_record)
        commitlog.last_store_timestamp = max(commitlog.last_store_timestamp, ts)
    return end


def _finish(commitlog: CommitLog, queues: ConsumeQueueTable, end: int) -> None:
    commitlog.log.truncate_dirty(end)
    # Files before the end are whole; the one holding it continues there.
    for mf in commitlog.log.files:
        if mf.file_from_offset + mf.file_size <= end:
            mf.set_positions(mf.file_size)
    for cq in queues:
        cq.truncate_past(end)
    table = commitlog.topic_queue_table
    table.clear()
    min_phys = commitlog.min_offset
    for cq in queues:
        table[(cq.topic, cq.queue_id)] = cq.max_offset_in_queue
        cq.correct_min_offset(min_phys)


def _delivery_time(delay: str, store_timestamp: int, levels: Sequence[int]) -> int:
    """The schedule topic's tag slot: when a message of this delay level is due."""
    try:
        level = int(delay or "0")
    except ValueError:
        return store_timestamp
    if level <= 0 or not levels:
        return store_timestamp
    return store_timestamp + levels[min(level, len(levels)) - 1]
