"""MemoryMessageStore: the `MessageStore` protocol kept in memory, for tests and embedding.

The same records as the file store (RocketMQ's CommitLog format, so reads
are valid PULL bodies and replication bytes are interchangeable), the same
statuses, limits and offsets; nothing survives `close()`. Each record is one
`bytes` object, so reads hand out views of it without copying and without
pinning anything (release() is a no-op). There is no cleaning, so queue min
offsets stay 0 and nothing expires.

Ownership: everything is owned by the event loop that runs `start()`.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Self

from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner
from orbitmq.common.record import (
    MAX_TOPIC_BYTES_V1,
    check_record,
    decode_record,
    encode_record_into,
    host_flags,
    record_size,
)
from orbitmq.common.sysflag import (
    HOST_V6_BITS,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from orbitmq.errors import CorruptRecord
from orbitmq.store.api import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchListener,
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    SelectMappedBufferResult,
)
from orbitmq.store.batch_records import batch_items
from orbitmq.store.commitlog import AppendFailure
from orbitmq.store.config import BrokerRole, StoreConfig
from orbitmq.store.dispatch import is_topic_dir, notify_listeners
from orbitmq.store.record_writer import offset_id_prefix, peek_property
from orbitmq.store.recovery import DEFAULT_DELAY_LEVELS_MS, read_dispatch_fields

log = logging.getLogger(__name__)


class _Entry(NamedTuple):
    """One ConsumeQueue entry, with the store time kept beside it for searches by time."""

    phys: int
    size: int
    tags_code: int
    store_timestamp: int


class MemoryMessageStore:
    """A `MessageStore` in memory (see the module docstring for what differs from the file store)."""

    def __init__(
        self,
        config: StoreConfig,
        *,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        delay_levels_ms: Sequence[int] = DEFAULT_DELAY_LEVELS_MS,
    ) -> None:
        self.config = config
        self.clock_ms = clock_ms
        self._delay_levels_ms = tuple(delay_levels_ms)
        #: Records in CommitLog order and the offset each starts at (parallel lists).
        self._records: list[bytes] = []
        self._starts: list[int] = []
        self._end = 0
        #: Replicated bytes of a record not yet complete (slaves).
        self._partial = bytearray()
        self._queues: dict[tuple[str, int], list[_Entry]] = {}
        self._index: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self._last_store_timestamp = 0
        self._listeners: list[DispatchListener] = []
        self._wakeups: dict[tuple[str, int], int] = {}
        self._wakeup_scheduled = False
        self._running = False

    # --- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        self._running = True

    async def close(self) -> None:
        """Refuse puts from now on; wake-ups still pending are delivered first."""
        self._running = False
        if self._wakeups:
            self._notify()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- writing ---------------------------------------------------------------------

    def _refuse(self, topic: str, queue_id: int) -> PutMessageResult | None:
        if not self._running:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is not running")
        if self.config.broker_role is BrokerRole.SLAVE:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is a slave")
        if not is_topic_dir(topic) or queue_id < 0:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL, remark=f"illegal topic {topic!r} or queue id {queue_id}"
            )
        return None

    def _encode(
        self, phys: int, topic: bytes, body: bytes | memoryview, props: bytes, queue_id: int, flag: int, queue_offset: int,
        sys_flag: int, born_timestamp: int, born_host: str, store_timestamp: int, store_host: str,
        reconsume_times: int = 0, prepared_transaction_offset: int = 0,
    ) -> bytes:
        if len(props) > mc.MAX_PROPERTIES_BYTES:
            raise AppendFailure(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties are {len(props)} bytes; at most {mc.MAX_PROPERTIES_BYTES} fit",
            )
        size = record_size(len(body), len(topic), len(props), sys_flag)
        if size > self.config.max_record_size:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"record of {size} bytes exceeds the limit of {self.config.max_record_size}",
            )
        buf = bytearray(size)
        encode_record_into(
            buf, 0, topic=topic, body=body, properties=props, queue_id=queue_id, flag=flag,
            queue_offset=queue_offset, physical_offset=phys, sys_flag=sys_flag, born_timestamp=born_timestamp,
            born_host=born_host, store_timestamp=store_timestamp, store_host=store_host,
            reconsume_times=reconsume_times, prepared_transaction_offset=prepared_transaction_offset,
        )
        return bytes(buf)

    def _check_common(self, topic: str, body_len: int) -> bytes:
        raw = topic.encode()
        if len(raw) > MAX_TOPIC_BYTES_V1:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(raw)} bytes; a 4.x record holds at most {MAX_TOPIC_BYTES_V1}"
            )
        if body_len > self.config.max_message_size:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"body is {body_len} bytes; maxMessageSize is {self.config.max_message_size}",
            )
        return raw

    def _store_time(self) -> int:
        self._last_store_timestamp = max(self._last_store_timestamp, self.clock_ms())
        return self._last_store_timestamp

    def _add(self, record: bytes) -> int:
        phys = self._end
        self._records.append(record)
        self._starts.append(phys)
        self._end += len(record)
        return phys

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        refused = self._refuse(msg.topic, msg.queue_id)
        if refused is not None:
            return refused
        try:
            topic = self._check_common(msg.topic, len(msg.body))
            sys_flag = (msg.sys_flag & ~HOST_V6_BITS) | host_flags(msg.born_host, msg.store_host)
            tran = sys_flag & TRANSACTION_TYPE_MASK
            consumable = tran not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
            queue = self._queues.get((msg.topic, msg.queue_id), [])
            queue_offset = len(queue) if consumable else 0
            store_ts = max(self._last_store_timestamp, self.clock_ms())
            record = self._encode(
                self._end, topic, msg.body, msg.properties_string.encode(), msg.queue_id, msg.flag, queue_offset, sys_flag,
                msg.born_timestamp, msg.born_host, store_ts, msg.store_host, msg.reconsume_times,
                msg.prepared_transaction_offset,
            )
        except AppendFailure as exc:
            return PutMessageResult(exc.status, remark=exc.remark)
        self._last_store_timestamp = store_ts
        phys = self._add(record)
        msg.sys_flag, msg.store_timestamp, msg.queue_offset = sys_flag, store_ts, queue_offset
        msg.commit_log_offset, msg.store_size = phys, len(record)
        msg.offset_msg_id = f"{offset_id_prefix(msg.store_host)}{phys:016X}"
        props = msg.properties
        self._dispatch(
            msg.topic, msg.queue_id, phys, len(record), msg.tags_code, store_ts, sys_flag,
            props.get(mc.KEYS, ""), props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""),
        )
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK, phys, len(record), msg.offset_msg_id, (msg.offset_msg_id,), store_ts,
            queue_offset, 1,
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result)

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        refused = self._refuse(batch.topic, batch.queue_id)
        if refused is not None:
            return refused
        if batch.sys_flag & TRANSACTION_TYPE_MASK:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="a batch cannot be transactional")
        extra = batch.properties_string.encode()
        sys_flag = (batch.sys_flag & ~HOST_V6_BITS) | host_flags(batch.born_host, batch.store_host)
        first_queue_offset = len(self._queues.get((batch.topic, batch.queue_id), ()))
        store_ts = max(self._last_store_timestamp, self.clock_ms())
        records: list[tuple[bytes, bytes]] = []
        end = self._end  # where the next item's record will start
        try:
            topic = self._check_common(batch.topic, len(batch.body))
            try:
                items = batch_items(batch.body, extra, mc.MAX_PROPERTIES_BYTES)
            except ValueError as exc:  # the file store's own check of a batch body
                raise AppendFailure(PutMessageStatus[exc.args[0]], exc.args[1]) from None
            for i, (flag, body, props) in enumerate(items):
                record = self._encode(
                    end, topic, body, props, batch.queue_id, flag, first_queue_offset + i, sys_flag,
                    batch.born_timestamp, batch.born_host, store_ts, batch.store_host,
                )
                records.append((record, props))
                end += len(record)
        except AppendFailure as exc:
            return PutMessageResult(exc.status, remark=exc.remark)
        if end - self._end > self.config.max_record_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="batch exceeds the record size limit")
        self._last_store_timestamp = store_ts
        prefix = offset_id_prefix(batch.store_host)
        ids: list[str] = []
        first = self._end
        for record, props in records:
            phys = self._add(record)
            ids.append(f"{prefix}{phys:016X}")
            tags = peek_property(props, b"TAGS\x01", b"\x02TAGS\x01")
            self._dispatch(
                batch.topic, batch.queue_id, phys, len(record), tag_hash_code(tags or None), store_ts, sys_flag,
                peek_property(props, b"KEYS\x01", b"\x02KEYS\x01"),
                peek_property(props, b"UNIQ_KEY\x01", b"\x02UNIQ_KEY\x01"),
            )
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK, first, self._end - first, ids[0], tuple(ids), store_ts, first_queue_offset, len(ids),
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result)

    def _dispatch(
        self, topic: str, queue_id: int, phys: int, size: int, tags_code: int, store_ts: int, sys_flag: int,
        keys: str, uniq_key: str,
    ) -> None:
        tran = sys_flag & TRANSACTION_TYPE_MASK
        if tran not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE):
            queue = self._queues.setdefault((topic, queue_id), [])
            queue.append(_Entry(phys, size, tags_code, store_ts))
            self._wake(topic, queue_id, len(queue))
        if tran != TRANSACTION_ROLLBACK_TYPE:
            for key in ([uniq_key] if uniq_key else []) + [k for k in keys.split(mc.KEY_SEPARATOR) if k]:
                self._index.setdefault((topic, key), []).append((phys, store_ts))

    def _wake(self, topic: str, queue_id: int, max_offset: int) -> None:
        if not self._listeners:
            return
        self._wakeups[(topic, queue_id)] = max_offset
        if not self._wakeup_scheduled:
            self._wakeup_scheduled = True
            asyncio.get_running_loop().call_soon(self._notify)

    def _notify(self) -> None:
        self._wakeup_scheduled = False
        wakeups, self._wakeups = self._wakeups, {}
        notify_listeners(self._listeners, wakeups)

    # --- reading -----------------------------------------------------------------------

    def _record_at(self, offset: int) -> bytes | None:
        i = bisect.bisect_left(self._starts, offset)
        if i < len(self._starts) and self._starts[i] == offset:
            return self._records[i]
        return None

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        result = GetMessageResult()
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            return result
        max_offset = len(queue)
        result.min_offset, result.max_offset = 0, max_offset
        if max_offset == 0:
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            return result
        if offset < 0:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, 0
            return result
        if offset >= max_offset:
            one = offset == max_offset
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE if one else GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = offset if one else 0  # never cleaned: a reader past the end restarts at 0
            return result
        config = self.config
        scan_limit = max(16000, max_msg_nums * 20) // 20
        total = count = 0
        scanned = 0
        for i in range(offset, min(max_offset, offset + scan_limit)):
            scanned = i - offset + 1
            entry = queue[i]
            if count and (
                count >= max_msg_nums
                or total + entry.size > config.max_transfer_bytes_on_message_in_memory
                or count >= config.max_transfer_count_on_message_in_memory
            ):
                scanned -= 1
                break
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(entry.tags_code):
                continue
            record = self._record_at(entry.phys)
            if record is None:
                continue
            view = memoryview(record)
            if message_filter is not None and not message_filter.is_matched_by_commit_log(view, None):
                continue
            result.buffers.append(view)
            result.queue_offsets.append(i)
            total += entry.size
            count += 1
        result.buffer_total_size = total
        result.next_begin_offset = offset + scanned
        result.status = GetMessageStatus.FOUND if count else GetMessageStatus.NO_MATCHED_MESSAGE
        return result

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return len(self._queues.get((topic, queue_id), ()))

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return 0 if (topic, queue_id) in self._queues else -1

    def _entry(self, topic: str, queue_id: int, consume_queue_offset: int) -> _Entry | None:
        queue = self._queues.get((topic, queue_id), [])
        return queue[consume_queue_offset] if 0 <= consume_queue_offset < len(queue) else None

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        entry = self._entry(topic, queue_id, consume_queue_offset)
        return entry.phys if entry is not None else 0

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        """Everything this store holds is in memory."""
        return False

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The same rule as the file store: an exact match (the first of equal times), else the
        nearer neighbour, the earlier on a tie; 0 for an empty queue."""
        queue = self._queues.get((topic, queue_id), [])
        if not queue:
            return 0
        times = [e.store_timestamp for e in queue]
        lo = bisect.bisect_left(times, timestamp)
        if lo < len(times) and times[lo] == timestamp:
            return lo
        if lo >= len(times):
            return len(times) - 1
        if lo == 0:
            return 0
        return lo if times[lo] - timestamp < timestamp - times[lo - 1] else lo - 1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self.get_message_store_timestamp(topic, queue_id, 0)

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        entry = self._entry(topic, queue_id, consume_queue_offset)
        return entry.store_timestamp if entry is not None else -1

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        record = self._record_at(commit_log_offset)
        if record is None:
            return None
        try:
            return decode_record(record)
        except CorruptRecord:
            return None

    def select_one_message_by_offset(self, commit_log_offset: int) -> SelectMappedBufferResult | None:
        record = self._record_at(commit_log_offset)
        if record is None:
            return None
        return SelectMappedBufferResult(start_offset=commit_log_offset, buffer=memoryview(record))

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        result = QueryMessageResult()
        limit = min(max_num, self.config.max_msgs_num_batch)
        seen: set[int] = set()
        for phys, ts in reversed(self._index.get((topic, key), [])):
            if len(result.buffers) >= limit:
                break
            record = self._record_at(phys)
            if begin_timestamp <= ts <= end_timestamp and phys not in seen and record is not None:
                seen.add(phys)
                result.buffers.append(memoryview(record))
        if self._starts:
            result.index_last_update_phyoffset = self._starts[-1]
            result.index_last_update_timestamp = self._last_store_timestamp
        return result

    def get_commit_log_data(self, offset: int) -> SelectMappedBufferResult | None:
        end = self._end
        if not 0 <= offset < end:
            return None
        i = bisect.bisect_right(self._starts, offset) - 1
        joined = b"".join(self._records[i:])
        return SelectMappedBufferResult(start_offset=offset, buffer=memoryview(joined)[offset - self._starts[i] :])

    def append_to_commit_log(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Slave side of replication: `start_offset` must continue the log (records and a cut
        record alike); complete records are stored and dispatched."""
        if not self._running or self.config.broker_role is not BrokerRole.SLAVE:
            return False
        if not self._records and not self._partial and self._end == 0:
            self._end = start_offset  # an empty slave log begins where the master starts it
        if start_offset != self._end + len(self._partial):
            return False
        self._partial += data
        pos = 0
        buf = memoryview(self._partial)
        try:
            while pos + 8 <= len(buf):
                size = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
                if size <= 0 or pos + size > len(buf):
                    break
                if check_record(buf, pos) == 0:  # an end-of-file blank from a file store
                    self._end += size
                    pos += size
                    continue
                record = bytes(buf[pos : pos + size])
                rec = read_dispatch_fields(memoryview(record), 0, size, self._end, self._delay_levels_ms)
                self._add(record)
                self._last_store_timestamp = max(self._last_store_timestamp, rec.store_timestamp)
                self._dispatch(
                    rec.topic, rec.queue_id, rec.commit_log_offset, size, rec.tags_code, rec.store_timestamp,
                    rec.sys_flag, rec.keys, rec.uniq_key,
                )
                pos += size
        except CorruptRecord:
            log.error("replicated data holds a bad record at %d; dispatch stops there", self._end)
        finally:
            buf.release()
        del self._partial[:pos]
        return True

    def get_max_phy_offset(self) -> int:
        return self._end + len(self._partial)

    def get_min_phy_offset(self) -> int:
        return self._starts[0] if self._starts else 0

    # --- administration -------------------------------------------------------------------

    def delete_topics(self, topics: Iterable[str]) -> int:
        removed = 0
        for topic in set(topics):
            for key in [k for k in self._queues if k[0] == topic]:
                del self._queues[key]
                removed += 1
        return removed

    def add_dispatch_listener(self, listener: DispatchListener) -> None:
        self._listeners.append(listener)

    def consume_queue_entries(self, topic: str, queue_id: int, index: int, count: int) -> list[tuple[int, int, int]] | None:
        entries = self._queues.get((topic, queue_id))
        if entries is None:
            return None
        start = max(index, 0)
        return [(e.phys, e.size, e.tags_code) for e in entries[start:start + max(count, 0)]]

    def clean_expired_consume_queues(self) -> int:
        return 0  # records are never deleted from memory, so no queue expires

    def clean_unused_topics(self, keep: Iterable[str]) -> int:
        kept = set(keep)
        unused = {t for t, _ in self._queues if t not in kept and not names.is_system_topic(t)
                  and not t.startswith(names.LMQ_PREFIX)}
        return self.delete_topics(unused)

    def delete_expired_files_manually(self) -> None:
        return None  # the memory store keeps no files

    def runtime_info(self) -> dict[str, str]:
        return {
            "commitLogMinOffset": str(self.get_min_phy_offset()),
            "commitLogMaxOffset": str(self.get_max_phy_offset()),
            "commitLogFlushedOffset": str(self.get_max_phy_offset()),
            "commitLogDiskRatio": "0.0000",
            "consumeQueueCount": str(len(self._queues)),
            "dispatchBehindBytes": "0",
            "diskFull": "false",
            "earliestMessageTimeStamp": str(
                decode_record(self._records[0], with_body=False).store_timestamp if self._records else -1
            ),
        }


if TYPE_CHECKING:  # both stores satisfy the protocol (checked by mypy)
    from orbitmq.store.store import DefaultMessageStore

    _memory_store: MessageStore = MemoryMessageStore(StoreConfig())
    _file_store: MessageStore = DefaultMessageStore(StoreConfig())

__all__ = ["MemoryMessageStore"]
