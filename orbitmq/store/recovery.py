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
from collections.abc import Callable, Sequence

from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.names import SCHEDULE_TOPIC
from orbitmq.common.record import decode_record
from orbitmq.store.checkpoint import StoreCheckpoint
from orbitmq.store.commitlog import Appended, CommitLog
from orbitmq.store.dispatch import ConsumeQueueTable
from orbitmq.store.mapped_file import MappedFile

log = logging.getLogger(__name__)

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
    redispatch: Callable[[list[Appended]], None],
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

    def dispatch(mf: MappedFile, pos: int, size: int) -> None:
        msg = decode_record(mf.view, pos, with_body=False, decompress=False)
        props = msg.properties
        if msg.topic == SCHEDULE_TOPIC:
            tags_code = _delivery_time(props, msg.store_timestamp, delay_levels_ms)
        else:
            tags_code = tag_hash_code(props.get(mc.TAGS))
        redispatch(
            [
                Appended(
                    msg.topic, msg.queue_id, msg.commit_log_offset, size, msg.queue_offset, tags_code,
                    msg.store_timestamp, msg.sys_flag, props.get(mc.KEYS, ""),
                    props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""), msg.prepared_transaction_offset,
                )
            ]
        )
        commitlog.last_store_timestamp = max(commitlog.last_store_timestamp, msg.store_timestamp)

    end = _scan(commitlog, files[start_index:], check_crc, dispatch, start_offset)
    _finish(commitlog, queues, end)
    return end


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


def _delivery_time(props: dict[str, str], store_timestamp: int, levels: Sequence[int]) -> int:
    try:
        level = int(props.get(mc.DELAY_TIME_LEVEL, "0"))
    except ValueError:
        return store_timestamp
    if level <= 0 or not levels:
        return store_timestamp
    return store_timestamp + levels[min(level, len(levels)) - 1]
