"""DefaultMessageStore: the file store behind the `MessageStore` protocol.

Wiring: one CommitLog, a table of ConsumeQueues, the IndexService, the
checkpoint, flushing (group commit or interval), and cleaning. Appends and
dispatch run on the event loop in the put call itself (before its first
await), so a put is atomic with respect to other loop tasks and readers see
a record as soon as its put returns. Blocking file work (fsync, creating
files) runs in three worker threads: CommitLog flush, ConsumeQueue/index
flush, file allocation.

Shutdown order: refuse puts, let the running fsync finish, stop background
tasks, flush everything, write the checkpoint, remove the abort marker.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Self

from orbitmq.common import names
from orbitmq.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner
from orbitmq.common.record import check_record, decode_record
from orbitmq.common.sysflag import TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.errors import CorruptRecord, StoreError
from orbitmq.store.api import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchListener,
    DispatchRequest,
    GetMessageResult,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    SelectMappedBufferResult,
)
from orbitmq.store.checkpoint import StoreCheckpoint, create_abort_marker, remove_abort_marker
from orbitmq.store.cleaning import CleanService, DiskUsage, disk_used_ratio
from orbitmq.store.commitlog import AppendFailure, CommitLog
from orbitmq.store.config import RUNTIME_FIELDS, BrokerRole, FlushDiskType, StoreConfig, key_of
from orbitmq.store.config_file import fsync_dir, replace_file
from orbitmq.store.consumequeue import ConsumeQueue
from orbitmq.store.dispatch import ConsumeQueueTable, Dispatcher, is_topic_dir
from orbitmq.store.epochs import EPOCH_FILE_NAME, EpochFile
from orbitmq.store.flush import FlushOutcome, GroupCommit, IntervalFlush
from orbitmq.store.indexfile import IndexService
from orbitmq.store.paths import store_path
from orbitmq.store.reading import QueueReader, offset_by_time
from orbitmq.store.record_writer import offset_id_prefix
from orbitmq.store.recovery import (
    DEFAULT_DELAY_LEVELS_MS,
    crash_scan_start,
    read_dispatch_fields,
    recover_abnormally,
    recover_normally,
)

log = logging.getLogger(__name__)

#: Cleaning rounds DELETE_EXPIRED_COMMITLOG runs as if at deleteWhen (RocketMQ's MAX_MANUAL_DELETE_FILE_TIMES).
MANUAL_DELETE_ROUNDS = 20


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class DefaultMessageStore:
    """The CommitLog/ConsumeQueue/IndexFile store (see `orbitmq.store.api.MessageStore`).

    `clock_ms` and `disk_usage` are injectable so tests drive time-based
    cleaning and the disk watermarks without sleeping or filling a disk.
    """

    def __init__(
        self,
        config: StoreConfig,
        *,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        disk_usage: DiskUsage = disk_used_ratio,
        delay_levels_ms: Sequence[int] = DEFAULT_DELAY_LEVELS_MS,
    ) -> None:
        self.config = config
        self.clock_ms = clock_ms
        self._delay_levels_ms = tuple(delay_levels_ms)
        self._flush_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="orbitmq-flush")
        self._logics_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="orbitmq-cqflush")
        self._alloc_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="orbitmq-alloc")
        self.commitlog = CommitLog(config, self._alloc_pool)
        self.queues = ConsumeQueueTable(config.consume_queue_dir, config.mapped_file_size_consume_queue)
        self.index: IndexService | None = (
            IndexService(
                config.index_dir, config.max_hash_slot_num, config.max_index_num,
                max_msgs_num_batch=config.max_msgs_num_batch, clock_ms=clock_ms,
            )
            if config.message_index_enable
            else None
        )
        self.dispatcher = Dispatcher(self.queues, self.index)
        self.reader = QueueReader(config, self.commitlog)
        self.checkpoint: StoreCheckpoint | None = None
        self.cleaner = CleanService(
            config, self.commitlog, self.queues, self.index, clock_ms, disk_usage,
            on_deleted=lambda min_offset: self.epochs.drop_before(min_offset),
        )
        self._group: GroupCommit | None = None
        self._commitlog_flusher: IntervalFlush | None = None
        #: Truncations so far; a CommitLog flush that saw another count when it started does not
        #: move the checkpoint (`_flush_commitlog_blocking`, a worker thread).
        self._truncations = 0
        self._truncation_lock = threading.Lock()
        #: CommitLog offset up to which replicated records are dispatched (slaves).
        self._reput_offset = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        self._lock_fd = -1
        self._sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        #: True when the last start found the abort marker (a crash recovery ran).
        self.recovered_from_crash = False
        #: The last put was refused for want of disk blocks (logged once until one succeeds).
        self._reserve_failed = False
        #: Master terms and where each began in the CommitLog (controller mode; epochs.py).
        self.epochs = EpochFile(store_path(config.root_dir, EPOCH_FILE_NAME))
        #: Controller mode with allAck: consumers read only records ending at or below this
        #: CommitLog offset (the confirm offset); None: no limit (`limit_reads`).
        self.visible_end: int | None = None
        #: Dispatch wake-ups held back until the confirm offset covers them:
        #: (topic, queue id, queue max offset, CommitLog end at dispatch).
        self._held_wakeups: collections.deque[tuple[str, int, int, int]] = collections.deque()

    # --- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Lock the folder, load files and recover; then start flushing and cleaning."""
        config = self.config
        os.makedirs(config.root_dir, exist_ok=True)
        self._lock_folder()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._alloc_pool, self._load_and_recover)
        except BaseException:
            # Leave nothing behind: no lock, no threads, no half-open files.
            self.commitlog.close()
            self.queues.close()
            if self.checkpoint is not None:
                self.checkpoint.close()
                self.checkpoint = None
            for pool in (self._flush_pool, self._logics_pool, self._alloc_pool):
                pool.shutdown(wait=True)
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise
        self._running = True
        commitlog = self.commitlog
        commitlog.log.prepare_next()
        self._reput_offset = commitlog.max_offset
        if self._sync:
            self._group = GroupCommit(
                commitlog.log.flush, lambda: commitlog.max_offset, self._flush_pool,
                config.sync_flush_timeout, self._on_commitlog_flushed,
            )
            self._group.flushed_offset = commitlog.max_offset
        # Also under SYNC_FLUSH: bytes nobody waits for (WAIT=false puts, replicated data)
        # still reach the disk within the interval.
        flusher = self._commitlog_flusher = IntervalFlush(
            "CommitLog", self._commitlog_flush_job,
            lambda: commitlog.max_offset - commitlog.log.flushed_offset, self._flush_pool,
            config.flush_interval_commit_log, config.flush_commit_log_least_pages,
            config.flush_commit_log_thorough_interval,
        )
        self._tasks.append(loop.create_task(flusher.run()))
        self._logics_flusher = IntervalFlush(
            "ConsumeQueue", self._logics_flush_job, self._logics_dirty, self._logics_pool,
            config.flush_interval_consume_queue, config.flush_consume_queue_least_pages,
            config.flush_consume_queue_thorough_interval,
        )
        self._tasks.append(loop.create_task(self._logics_flusher.run()))
        self._tasks.append(loop.create_task(self.cleaner.run()))

    def _lock_folder(self) -> None:
        path = store_path(self.config.root_dir, "lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"store folder {self.config.root_dir} is in use by another process") from exc
        self._lock_fd = fd

    def _load_and_recover(self) -> None:
        """Blocking: map files, recover, then create the abort marker."""
        config = self.config
        self.checkpoint = StoreCheckpoint(config.checkpoint_path)
        self.commitlog.log.load()
        # A file found cut short means the last stop was not clean, marker or not.
        repaired_from = self.commitlog.log.repaired_from
        crashed = os.path.exists(config.abort_path) or repaired_from is not None
        self.recovered_from_crash = crashed
        self.queues.load()
        if self.index is not None:
            self.index.load()
        if crashed:
            start = crash_scan_start(self.commitlog, self.checkpoint)
            if repaired_from is not None:
                start = min(start, repaired_from)
            # The index keeps what it has: its put skips records below its own end offset,
            # so the re-dispatch adds only what is missing; what lies past the recovered
            # end is truncated below.
            recover_abnormally(
                self.commitlog, self.queues, start, config.check_crc_on_recover,
                lambda records: self.dispatcher.dispatch(records, notify=False), self._delay_levels_ms,
            )
        else:
            recover_normally(self.commitlog, self.queues, config.check_crc_on_recover)
        end = self.commitlog.max_offset
        if self.index is not None:
            self.index.truncate_from(end)
        # Make what recovery changed durable before the checkpoint vouches for it: the
        # truncated CommitLog tail and every queue file recovery wrote (in place, too).
        last = self.commitlog.log.last
        if last is not None:
            last.sync()
        for cq in self.queues.dirty:
            for mf in cq.log.files:
                mf.sync()
        self.queues.dirty.clear()
        self.checkpoint.physic_flushed_offset = end
        self.checkpoint.logics_phy_offset = end
        self.checkpoint.flush()
        pending = _read_truncate_marker(self._truncate_marker_path)
        if pending is not None:
            # A truncation was cut short by a crash: finish it before anything is served.
            log.warning("finishing an interrupted truncation of the CommitLog to offset %d", pending)
            self._truncate_blocking(pending)
        create_abort_marker(config.abort_path)

    def update_config(self, config: StoreConfig) -> None:
        """Take the settings of `config` that may change while the store runs (`RUNTIME_FIELDS`:
        retention, cleaning, pull limits, maxMessageSize); the others stay those of the start."""
        changes = {f: getattr(config, f) for f in RUNTIME_FIELDS if getattr(config, f) != getattr(self.config, f)}
        if not changes:
            return
        config = dataclasses.replace(self.config, **changes)
        self.config = config
        self.commitlog.update_config(config)
        self.reader.update_config(config)
        self.cleaner.update_config(config)
        log.info("store settings changed: %s", ", ".join(sorted(key_of(f) for f in changes)))

    async def close(self) -> None:
        """Flush everything and release the folder. Safe to call twice."""
        if not self._running:
            return
        self._running = False
        if self._group is not None:
            await self._group.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._flush_pool, self._flush_commitlog_blocking)
        await loop.run_in_executor(self._logics_pool, self._logics_flush_job())
        self.commitlog.close()
        self.queues.close()
        if self.index is not None:
            self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()
        remove_abort_marker(self.config.abort_path)
        for pool in (self._flush_pool, self._logics_pool, self._alloc_pool):
            pool.shutdown(wait=True)
        os.close(self._lock_fd)
        self._lock_fd = -1

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- flushing ------------------------------------------------------------------

    def _flush_commitlog_blocking(self) -> None:
        with self._truncation_lock:  # not in the middle of a cut: `target` is before or after it
            truncations = self._truncations
            target = self.commitlog.max_offset
            ts = self.commitlog.last_store_timestamp
        self.commitlog.log.flush()
        with self._truncation_lock:
            # A truncation while the fsync ran: `target` may lie past the cut, and the
            # checkpoint must not vouch for bytes written there since (power loss).
            if truncations == self._truncations:
                self._on_commitlog_flushed(target, ts)

    def _commitlog_flush_job(self) -> Callable[[], None]:
        return self._flush_commitlog_blocking

    def _on_commitlog_flushed(self, target: int, ts: int | None = None) -> None:
        checkpoint = self.checkpoint
        if checkpoint is not None:
            checkpoint.physic_flushed_offset = max(checkpoint.physic_flushed_offset, target)
            checkpoint.physic_msg_timestamp = self.commitlog.last_store_timestamp if ts is None else ts

    def _logics_dirty(self) -> int:
        return len(self.queues.dirty) * IntervalFlush.PAGE + (4096 if self.index is not None else 0)

    def _logics_flush_job(self) -> Callable[[], None]:
        """On the loop: note how far dispatch got and take the dirty queues; the returned
        job fsyncs them, the index and then the checkpoint (in a worker thread)."""
        covered = self.commitlog.max_offset
        ts = self.commitlog.last_store_timestamp
        dirty, self.queues.dirty = self.queues.dirty, set()

        def job() -> None:
            for cq in dirty:
                cq.log.flush()
            index_ts = self.index.flush() if self.index is not None else ts
            checkpoint = self.checkpoint
            if checkpoint is None:
                return
            checkpoint.logics_msg_timestamp = ts
            checkpoint.index_msg_timestamp = index_ts or ts
            checkpoint.logics_phy_offset = covered
            checkpoint.flush()

        return job

    # --- writing ---------------------------------------------------------------------

    def _refuse(self) -> PutMessageResult | None:
        if not self._running:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is not running")
        if self.config.broker_role is BrokerRole.SLAVE:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is a slave")
        if self.cleaner.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark=self.cleaner.full_remark)
        # A failed fsync is sticky: the kernel may have dropped the dirty pages.
        error = self._group.error if self._group is not None else None
        if error is None and self._commitlog_flusher is not None:
            error = self._commitlog_flusher.error
        if error is not None:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark=f"CommitLog write failed: {error}")
        return None

    def _queue_for_put(self, topic: str, queue_id: int) -> ConsumeQueue | PutMessageResult:
        """The ConsumeQueue a put goes to, or the refusal of a name that cannot be one."""
        cq = self.queues.queues.get((topic, queue_id))
        if cq is not None:
            return cq
        if not is_topic_dir(topic) or queue_id < 0:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL, remark=f"illegal topic {topic!r} or queue id {queue_id}"
            )
        return self.queues.find_or_create(topic, queue_id)

    def _reserve_for_put(self, topic: str, queue_id: int, sys_flag: int) -> PutMessageResult | None:
        """Reserve the queue entry of one put (the slow path of `put_message`); a refusal or None."""
        tran = sys_flag & TRANSACTION_TYPE_MASK
        not_queued = tran == TRANSACTION_PREPARED_TYPE or tran == TRANSACTION_ROLLBACK_TYPE
        if not_queued and queue_id >= 0 and is_topic_dir(topic):
            return None  # stored, never dispatched to a queue: no queue to make room in
        cq = self._queue_for_put(topic, queue_id)
        if isinstance(cq, PutMessageResult):
            return cq
        try:
            cq.reserve_entries(self.commitlog.topic_queue_table.get((topic, queue_id), 0), 1)
        except StoreError as exc:
            return self._disk_full(exc)
        return None

    def _disk_full(self, exc: StoreError) -> PutMessageResult:
        if not self._reserve_failed:  # one line per change of state, not one per put
            log.error("refusing puts: disk full: %s", exc)
            self._reserve_failed = True
        return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark=f"disk full: {exc}")

    def _space_again(self) -> None:
        self._reserve_failed = False
        log.warning("disk space could be reserved again: accepting puts")

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        refused = self._refuse()
        if refused is not None:
            return refused
        cq = self.queues.queues.get((msg.topic, msg.queue_id))
        if cq is None or not cq.room_for_next:
            # Disk for the queue entry first: a full disk refuses the put before the CommitLog
            # holds a record its queue could not take.
            refused = self._reserve_for_put(msg.topic, msg.queue_id, msg.sys_flag)
            if refused is not None:
                return refused
        try:
            rec = self.commitlog.append_message(msg, self.clock_ms())
        except AppendFailure as exc:
            return PutMessageResult(exc.status, remark=exc.remark)
        except StoreError as exc:  # no room for the next CommitLog file
            return self._disk_full(exc)
        self.dispatcher.dispatch_one(rec)
        if self._reserve_failed:
            self._space_again()
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK, rec.commit_log_offset, rec.msg_size, msg.offset_msg_id, (msg.offset_msg_id,),
            rec.store_timestamp, rec.consume_queue_offset, 1,
        )
        status = PutMessageStatus.PUT_OK
        if self._group is not None and msg.waits_for_store:
            status = await self._await_flush(rec.commit_log_offset + rec.msg_size)
        return PutMessageResult(status, result)

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        refused = self._refuse()
        if refused is not None:
            return refused
        if batch.sys_flag & TRANSACTION_TYPE_MASK:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="a batch cannot be transactional")
        cq = self._queue_for_put(batch.topic, batch.queue_id)
        if isinstance(cq, PutMessageResult):
            return cq
        try:
            records = self.commitlog.append_batch(batch, self.clock_ms(), cq.reserve_entries)
        except AppendFailure as exc:
            return PutMessageResult(exc.status, remark=exc.remark)
        except StoreError as exc:  # no room for the queue entries or the next CommitLog file
            return self._disk_full(exc)
        self.dispatcher.dispatch_batch(records)
        if self._reserve_failed:
            self._space_again()
        prefix = offset_id_prefix(batch.store_host)
        ids = [f"{prefix}{r.commit_log_offset:016X}" for r in records]
        first, last = records[0], records[-1]
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK, first.commit_log_offset, last.commit_log_offset + last.msg_size - first.commit_log_offset,
            ids[0], tuple(ids), first.store_timestamp, first.consume_queue_offset, len(records),
        )
        status = PutMessageStatus.PUT_OK
        if self._group is not None and batch.wait_store:
            status = await self._await_flush(last.commit_log_offset + last.msg_size)
        return PutMessageResult(status, result)

    async def _await_flush(self, end_offset: int) -> PutMessageStatus:
        assert self._group is not None
        outcome = await self._group.wait(end_offset)
        if outcome is FlushOutcome.FLUSHED:
            return PutMessageStatus.PUT_OK
        if outcome is FlushOutcome.TIMEOUT:
            return PutMessageStatus.FLUSH_DISK_TIMEOUT
        return PutMessageStatus.UNKNOWN_ERROR

    # --- reading -----------------------------------------------------------------------

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        return self.reader.get_message(
            self.queues.find(topic, queue_id), offset, max_msg_nums, message_filter, self.visible_end
        )

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return cq.min_offset_in_queue if cq is not None else -1

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.queues.find(topic, queue_id)
        entry = cq.entry(consume_queue_offset) if cq is not None else None
        return entry[0] if entry is not None else 0

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        cq = self.queues.find(topic, queue_id)
        entry = cq.entry(consume_offset) if cq is not None else None
        if entry is None:
            return False
        return self.commitlog.max_offset - entry[0] > self.reader.memory_window

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return offset_by_time(cq, self.commitlog, timestamp) if cq is not None else 0

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset_in_queue)

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.queues.find(topic, queue_id)
        entry = cq.entry(consume_queue_offset) if cq is not None else None
        if entry is None or entry[0] < self.commitlog.min_offset:
            return -1
        return self.commitlog.store_timestamp_at(entry[0])

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        found = self.commitlog.record_at(commit_log_offset)
        if found is None:
            return None
        try:
            return decode_record(found[1])
        except CorruptRecord:
            return None

    def select_one_message_by_offset(self, commit_log_offset: int) -> SelectMappedBufferResult | None:
        found = self.commitlog.record_at(commit_log_offset)
        if found is None or not found[0].hold():
            return None
        return SelectMappedBufferResult(_holds=[found[0]], start_offset=commit_log_offset, buffer=found[1])

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        result = QueryMessageResult()
        if self.index is None:
            return result
        found = self.index.query_offsets(topic, key, max_num, begin_timestamp, end_timestamp)
        result.index_last_update_timestamp = found.index_last_update_timestamp
        result.index_last_update_phyoffset = found.index_last_update_phyoffset
        held: dict[int, object] = {}
        for phys in found.phy_offsets:
            rec = self.commitlog.record_at(phys)
            if rec is None:
                continue
            mf, view = rec
            if id(mf) not in held:
                if not mf.hold():
                    continue
                held[id(mf)] = mf
                result._holds.append(mf)
            result.buffers.append(view)
        return result

    def get_commit_log_data(self, offset: int) -> SelectMappedBufferResult | None:
        mf = self.commitlog.log.find(offset)
        if mf is None or not mf.hold():
            return None
        pos = offset - mf.file_from_offset
        if pos >= mf.wrote_position:
            mf.release()
            return None
        return SelectMappedBufferResult(_holds=[mf], start_offset=offset, buffer=mf.view[pos : mf.wrote_position])

    def append_to_commit_log(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Slave side of replication: append CommitLog bytes from the master at `start_offset`
        (which must be `get_max_phy_offset()`, or a file boundary when the log is empty), then
        dispatch every record now complete.

        Returns False (nothing written) when the store is not a running slave or the offset
        does not continue the log. A record cut at the end of `data` is dispatched once the
        rest arrives.
        """
        if not self._running or self.config.broker_role is not BrokerRole.SLAVE:
            return False
        if self.commitlog.log.last is None:
            self._reput_offset = start_offset  # an empty slave log begins where the master starts it
        try:
            self.commitlog.append_raw(start_offset, data)
        except AppendFailure as exc:
            log.warning("replicated data refused: %s", exc.remark)
            return False
        self._reput()
        return True

    def _reput(self) -> None:
        """Dispatch the complete records between the dispatched offset and the CommitLog end."""
        commitlog = self.commitlog
        end = commitlog.max_offset
        batch: list[DispatchRequest] = []
        while self._reput_offset < end:
            offset = self._reput_offset
            mf = commitlog.log.find(offset)
            if mf is None:
                break
            pos = offset - mf.file_from_offset
            written = mf.view[: mf.wrote_position]
            try:
                size = check_record(written, pos)
            except CorruptRecord:
                if _is_incomplete(written, pos):
                    break  # the rest of this record has not arrived yet
                log.error("replicated CommitLog holds a bad record at %d; dispatch stops there", offset)
                break
            if size == 0:  # end-of-file blank: records continue in the next file
                self._reput_offset = mf.file_from_offset + mf.file_size
                continue
            rec = read_dispatch_fields(mf.view, pos, size, offset, self._delay_levels_ms)
            batch.append(rec)
            if rec.consume_queue_offset >= commitlog.topic_queue_table.get((rec.topic, rec.queue_id), 0):
                tran = rec.sys_flag & TRANSACTION_TYPE_MASK
                if tran not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE):
                    commitlog.topic_queue_table[(rec.topic, rec.queue_id)] = rec.consume_queue_offset + 1
            commitlog.last_store_timestamp = max(commitlog.last_store_timestamp, rec.store_timestamp)
            mf.last_store_timestamp = commitlog.last_store_timestamp
            self._reput_offset = offset + size
        if batch:
            try:
                self.dispatcher.dispatch(batch)
            except StoreError as exc:
                # No disk for the queue entries: the records are in the CommitLog; dispatch
                # them again (entries already written are rewritten in place) with the next bytes.
                log.error("replicated records not dispatched yet: %s", exc)
                self._reput_offset = batch[0].commit_log_offset

    # --- controller mode: role changes and truncation ---------------------------------

    def set_role(self, role: BrokerRole) -> None:
        """Switch between taking puts (a master role) and taking replicated bytes (SLAVE).

        Used by failover: a promoted slave becomes a master, a deposed master a slave.
        A store becoming a slave first cuts any torn record at its end, so replication
        continues from a record boundary.
        """
        if role is self.config.broker_role:
            return
        if role is BrokerRole.SLAVE:
            self._reput()
            if self._reput_offset < self.commitlog.max_offset:
                self.truncate(self._reput_offset)
        elif self._reput_offset < self.commitlog.max_offset:
            # A slave's log may end inside a record the old master never finished sending.
            self.truncate(self._reput_offset)
        self.config = dataclasses.replace(self.config, broker_role=role)
        self._reput_offset = self.commitlog.max_offset

    @property
    def dispatched_offset(self) -> int:
        """CommitLog offset up to which every record is dispatched (the end of the last whole record)."""
        if self.config.broker_role is BrokerRole.SLAVE:
            return self._reput_offset
        return self.commitlog.max_offset

    def truncate(self, offset: int) -> int:
        """Cut the store back to CommitLog `offset` (a record boundary): the CommitLog, the
        ConsumeQueues, the index, the epoch file and the checkpoint forget everything at
        or past it. Returns how many CommitLog bytes went.

        Crash-safe: the target is written (fsynced) to a marker file first and the marker
        is removed last; a start that finds the marker finishes the cut before serving.
        Nothing may append meanwhile: a slave stops its HA client first, a master stops
        taking puts (call it on a slave store, or right after `set_role(SLAVE)`).
        """
        if not self._running:
            raise StoreError("the message store is not running")
        commitlog = self.commitlog
        if offset < commitlog.min_offset or offset > commitlog.max_offset:
            raise StoreError(
                f"cannot truncate to {offset}: the CommitLog holds [{commitlog.min_offset}, {commitlog.max_offset})"
            )
        before = commitlog.max_offset
        _write_truncate_marker(self._truncate_marker_path, offset)
        self._truncate_blocking(offset)
        return before - offset

    @property
    def _truncate_marker_path(self) -> str:
        return store_path(self.config.root_dir, "truncating")

    def _truncate_blocking(self, offset: int) -> None:
        """The cut itself; idempotent, so a start after a crash can run it again.

        Serialised with the CommitLog flusher's bookkeeping (`_flush_commitlog_blocking`): a flush
        whose fsync overlaps the cut does not raise the flushed offset past it afterwards."""
        with self._truncation_lock:
            self._truncations += 1
            self._truncate_locked(offset)

    def _truncate_locked(self, offset: int) -> None:
        commitlog = self.commitlog
        offset = max(min(offset, commitlog.max_offset), commitlog.min_offset)
        if self._group is not None:
            self._group.truncated(offset)
        self.epochs.truncate_from(offset)
        if offset < commitlog.max_offset:
            log.warning("truncating the CommitLog from %d to %d", commitlog.max_offset, offset)
        commitlog.log.truncate_dirty(offset)
        for cq in self.queues:
            cq.truncate_past(offset)
        table = commitlog.topic_queue_table
        table.clear()
        for cq in self.queues:
            table[(cq.topic, cq.queue_id)] = cq.max_offset_in_queue
        if self.index is not None:
            self.index.truncate_from(offset)
            self.index.flush()
        last = commitlog.log.last
        if last is not None:
            last.sync()
        for cq in self.queues:
            for mf in cq.log.files:
                mf.sync()
        self.queues.dirty.clear()
        self._reput_offset = min(self._reput_offset, offset)
        while self._held_wakeups and self._held_wakeups[-1][3] > offset:
            self._held_wakeups.pop()
        if self.visible_end is not None:
            self.visible_end = min(self.visible_end, offset)
        checkpoint = self.checkpoint
        if checkpoint is not None:
            checkpoint.physic_flushed_offset = min(checkpoint.physic_flushed_offset, offset)
            checkpoint.logics_phy_offset = min(checkpoint.logics_phy_offset, offset)
            checkpoint.flush()
        if self._running:
            commitlog.log.prepare_next()
        _remove_truncate_marker(self._truncate_marker_path)

    def get_max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    def get_min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    # --- administration -------------------------------------------------------------------

    def delete_topics(self, topics: Iterable[str]) -> int:
        removed = 0
        for topic in set(topics):
            removed += self.queues.remove_topic(topic)
            for key in [k for k in self.commitlog.topic_queue_table if k[0] == topic]:
                del self.commitlog.topic_queue_table[key]
        return removed

    def add_dispatch_listener(self, listener: DispatchListener) -> None:
        self.dispatcher.listeners.append(listener)

    def limit_reads(self, confirm_offset: int | None) -> None:
        """Controller mode with allAck (RocketMQ 5's confirm offset): serve consumers only the
        records that end at or below `confirm_offset`; None lifts the limit.

        Wake-ups of long-polling pulls for records past the limit are held back and given
        when a later call covers them, so a parked pull is answered once its message is
        confirmed, not at its next timeout.
        """
        listeners = self.dispatcher.listeners
        if confirm_offset is not None and self.visible_end is None:
            listeners.insert(0, self._hold_wakeup)
        elif confirm_offset is None and self.visible_end is not None:
            listeners.remove(self._hold_wakeup)
        self.visible_end = confirm_offset
        held = self._held_wakeups
        if not held:
            return
        limit = confirm_offset if confirm_offset is not None else self.commitlog.max_offset
        ready: dict[tuple[str, int], int] = {}
        while held and held[0][3] <= limit:
            topic, queue_id, max_offset, _ = held.popleft()
            ready[(topic, queue_id)] = max_offset
        if confirm_offset is None:
            held.clear()
        for (topic, queue_id), max_offset in ready.items():
            for listener in listeners:
                if listener != self._hold_wakeup:
                    listener(topic, queue_id, max_offset)

    def _hold_wakeup(self, topic: str, queue_id: int, max_offset: int) -> None:
        end = self.commitlog.max_offset
        visible = self.visible_end
        if visible is not None and end > visible:
            self._held_wakeups.append((topic, queue_id, max_offset, end))

    def consume_queue_entries(self, topic: str, queue_id: int, index: int, count: int) -> list[tuple[int, int, int]] | None:
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return None
        entries: list[tuple[int, int, int]] = []
        for offset in range(max(index, 0), max(index, 0) + max(count, 0)):
            entry = cq.entry(offset)
            if entry is None:
                break
            entries.append(entry)
        return entries

    def clean_expired_consume_queues(self) -> int:
        min_phys = self.commitlog.min_offset
        removed = 0
        for cq in list(self.queues):
            if cq.topic == names.SCHEDULE_TOPIC or cq.max_physic_offset < 0:
                continue  # delay levels keep their queues; an empty queue may have just been made
            if cq.max_physic_offset <= min_phys:
                key = (cq.topic, cq.queue_id)
                self.queues.queues.pop(key, None)
                self.queues.dirty.discard(cq)
                cq.destroy()
                self.commitlog.topic_queue_table.pop(key, None)
                log.info("cleanExpiredConsumeQueue: %s %d destroyed (all below CommitLog offset %d)",
                         cq.topic, cq.queue_id, min_phys)
                removed += 1
        return removed

    def clean_unused_topics(self, keep: Iterable[str]) -> int:
        kept = set(keep)
        unused = {
            cq.topic for cq in self.queues
            if cq.topic not in kept and not names.is_system_topic(cq.topic) and not cq.topic.startswith(names.LMQ_PREFIX)
        }
        for topic in sorted(unused):
            log.info("cleanUnusedTopic: %s destroyed", topic)
        return self.delete_topics(unused)

    def delete_expired_files_manually(self) -> None:
        self.cleaner.manual_rounds = MANUAL_DELETE_ROUNDS
        log.info("executeDeleteFilesManually was invoked")

    def runtime_info(self) -> dict[str, str]:
        group = self._group
        return {
            "commitLogMinOffset": str(self.commitlog.min_offset),
            "commitLogMaxOffset": str(self.commitlog.max_offset),
            "commitLogFlushedOffset": str(group.flushed_offset if group else self.commitlog.log.flushed_offset),
            "commitLogDiskRatio": f"{self.cleaner.last_ratio:.4f}",
            "consumeQueueCount": str(len(self.queues.queues)),
            "dispatchBehindBytes": "0",
            "diskFull": "true" if self.cleaner.disk_full else "false",
            "earliestMessageTimeStamp": str(self.commitlog.store_timestamp_at(self.commitlog.min_offset)),
        }


def _write_truncate_marker(path: str, offset: int) -> None:
    replace_file(path, f"{offset}\n".encode("ascii"))


def _read_truncate_marker(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            text = f.read().decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    if not text.isdigit():
        # The marker is renamed into place whole, so this is damage: keep it for a person to see.
        raise StoreError(f"truncation marker {path} holds {text!r}, not an offset; remove it to start")
    return int(text)


def _remove_truncate_marker(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(os.path.dirname(path))


def _is_incomplete(written: memoryview, pos: int) -> bool:
    """True when the record at `pos` runs past the bytes written so far (more are coming)."""
    if pos + 8 > len(written):
        return True
    size = int.from_bytes(written[pos : pos + 4], "big", signed=True)
    return size > 0 and pos + size > len(written)
