"""CommitLog: every message of every topic, appended as RocketMQ records (§5.1, §7.1).

Appends run on the event loop only (one writer, no lock). A record never
spans two files: when a record plus the 8-byte end-of-file marker does not
fit in what is left of the current file, the marker (TOTALSIZE = bytes left,
MAGICCODE 0xCBD43194) fills the rest and the record goes to the next file.

Queue offsets come from `topic_queue_table`, advanced per stored message;
prepared and rollback transaction records get queue offset 0 and do not
advance it (they are not consumable, §7.2).
"""

from __future__ import annotations

import concurrent.futures
import struct
from collections.abc import Callable, Iterator

from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner
from orbitmq.common.record import (
    BLANK_MAGIC,
    BLANK_RECORD,
    MAGIC_V1,
    MAGIC_V2,
    MAX_TOPIC_BYTES_V1,
    MIN_RECORD_SIZE,
    RECORD_PREFIX,
    check_record,
    encode_blank_into,
    encode_record_into,
    host_flags,
    record_size,
)
from orbitmq.common.sysflag import (
    BORNHOST_V6,
    HOST_V6_BITS,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from orbitmq.errors import CorruptRecord, StoreError
from orbitmq.store import kernels
from orbitmq.store.api import DispatchRequest, PutMessageStatus
from orbitmq.store.batch_records import batch_items
from orbitmq.store.config import StoreConfig
from orbitmq.store.mapped_file import COMMIT_LOG_RESERVE_STEP, MappedFile
from orbitmq.store.mapped_queue import MappedFileQueue
from orbitmq.store.record_writer import ipv4_host, offset_id_prefix, peek_property, topic_block, write_v4

END_FILE_MIN_BLANK_LENGTH = 8
_TAGS, _SEP_TAGS = b"TAGS\x01", b"\x02TAGS\x01"
_KEYS, _SEP_KEYS = b"KEYS\x01", b"\x02KEYS\x01"
_UNIQ, _SEP_UNIQ = b"UNIQ_KEY\x01", b"\x02UNIQ_KEY\x01"
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
_SYSFLAG_AT = 36
_BORN_HOST_AT = 48
_NOT_CONSUMABLE = (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)


class AppendFailure(StoreError):
    """An append refused before anything was written."""

    def __init__(self, status: PutMessageStatus, remark: str) -> None:
        super().__init__(remark)
        self.status = status
        self.remark = remark


class CommitLog:
    """The mapped CommitLog files, the queue-offset table and record encoding."""

    def __init__(self, config: StoreConfig, allocator: concurrent.futures.Executor | None = None) -> None:
        self.config = config
        self.log = MappedFileQueue(
            config.commit_log_dir,
            config.mapped_file_size_commit_log,
            warm=config.warm_mapped_file_enable,
            allocator=allocator if config.preallocate_next_file else None,
            # A warmed file is written whole at creation, so it is reserved whole; any other
            # file holds blocks only a step ahead of its appends, which check `reserved`.
            reserve=None if config.warm_mapped_file_enable else COMMIT_LOG_RESERVE_STEP,
            reserve_step=COMMIT_LOG_RESERVE_STEP,
        )
        #: (topic, queue id) -> queue offset of the next message.
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        #: Store time of the last record appended; store times never go backwards
        #: so that searching a queue by time can bisect.
        self.last_store_timestamp = 0
        self._topic_bytes: dict[str, bytes] = {}
        self._max_record = min(
            config.max_record_size, config.mapped_file_size_commit_log - END_FILE_MIN_BLANK_LENGTH
        )

    def update_config(self, config: StoreConfig) -> None:
        """Take a new maxMessageSize (the file size and folders stay those of the start)."""
        self.config = config
        self._max_record = min(
            config.max_record_size, config.mapped_file_size_commit_log - END_FILE_MIN_BLANK_LENGTH
        )

    # --- appending -----------------------------------------------------------

    def _topic_utf8(self, topic: str) -> bytes:
        raw = self._topic_bytes.get(topic)
        if raw is None:
            raw = topic.encode()
            if len(raw) > MAX_TOPIC_BYTES_V1:
                raise AppendFailure(
                    PutMessageStatus.MESSAGE_ILLEGAL,
                    f"topic is {len(raw)} bytes; a 4.x record holds at most {MAX_TOPIC_BYTES_V1}",
                )
            self._topic_bytes[topic] = raw
        return raw

    def append_message(self, msg: MessageExtBrokerInner, now_ms: int) -> DispatchRequest:
        """Encode `msg` at the end of the log and fill in its store fields.

        Raises AppendFailure (nothing written) when it breaks a size limit.
        """
        topic_raw = self._topic_bytes.get(msg.topic) or self._topic_utf8(msg.topic)
        props_raw = msg.properties_string.encode()
        if len(props_raw) > mc.MAX_PROPERTIES_BYTES:
            raise AppendFailure(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties are {len(props_raw)} bytes; at most {mc.MAX_PROPERTIES_BYTES} fit",
            )
        body = msg.body
        if len(body) > self.config.max_message_size:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"body is {len(body)} bytes; maxMessageSize is {self.config.max_message_size}",
            )
        born = ipv4_host(msg.born_host)
        store = ipv4_host(msg.store_host)
        sys_flag = msg.sys_flag & ~HOST_V6_BITS
        if born is None or store is None:
            sys_flag |= host_flags(msg.born_host, msg.store_host)
        size = record_size(len(body), len(topic_raw), len(props_raw), sys_flag)
        if size > self._max_record:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL, f"record of {size} bytes exceeds the limit of {self._max_record}"
            )
        key = (msg.topic, msg.queue_id)
        tran = sys_flag & TRANSACTION_TYPE_MASK
        consumable = tran != TRANSACTION_PREPARED_TYPE and tran != TRANSACTION_ROLLBACK_TYPE
        queue_offset = self.topic_queue_table.get(key, 0) if consumable else 0
        mf = self.log.get_last_for_append()
        if size + END_FILE_MIN_BLANK_LENGTH > mf.file_size - mf.wrote_position:
            mf = self._roll_over(mf)
        pos = mf.wrote_position
        if pos + size > mf.reserved:
            mf.reserve(pos + size)  # StoreError on a full disk, before anything is written
        phys = mf.file_from_offset + pos
        store_ts = max(self.last_store_timestamp, now_ms)
        self.last_store_timestamp = store_ts
        if born is not None and store is not None:
            write_v4(
                mf.view, pos, size, msg.queue_id, msg.flag, queue_offset, phys, sys_flag, msg.born_timestamp,
                born, store_ts, store, msg.reconsume_times, msg.prepared_transaction_offset, body,
                topic_block(topic_raw), props_raw,
            )
        else:
            encode_record_into(
                mf.view, pos, topic=topic_raw, body=body, properties=props_raw,
                queue_id=msg.queue_id, flag=msg.flag, queue_offset=queue_offset, physical_offset=phys,
                sys_flag=sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
                store_timestamp=store_ts, store_host=msg.store_host, reconsume_times=msg.reconsume_times,
                prepared_transaction_offset=msg.prepared_transaction_offset,
            )
        mf.wrote_position = pos + size
        mf.last_store_timestamp = store_ts
        if consumable:
            self.topic_queue_table[key] = queue_offset + 1
        msg.sys_flag = sys_flag
        msg.store_timestamp = store_ts
        msg.queue_offset = queue_offset
        msg.commit_log_offset = phys
        msg.store_size = size
        msg.offset_msg_id = f"{offset_id_prefix(msg.store_host)}{phys:016X}"
        props = msg.properties
        return DispatchRequest(
            msg.topic, msg.queue_id, phys, size, queue_offset, msg.tags_code, store_ts, sys_flag,
            props.get(mc.KEYS, ""), props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""),
            msg.prepared_transaction_offset,
        )

    def append_raw(self, start_offset: int, data: bytes | bytearray | memoryview) -> None:
        """Copy CommitLog bytes a master sent (replication) to the end of the log.

        `start_offset` must be the current end. The bytes are the master's own
        file contents (records and end-of-file blanks, possibly cut mid-record),
        so with equal file sizes they fill the same files at the same places.
        """
        # An empty log may begin at any file boundary: a new slave starts from the
        # master's newest file, not from offset 0.
        fresh = self.log.last is None and start_offset % self.log.file_size == 0
        if start_offset != self.max_offset and not fresh:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"replicated data starts at {start_offset}, the CommitLog ends at {self.max_offset}",
            )
        view = data if isinstance(data, memoryview) else memoryview(data)
        while view:
            mf = self.log.get_last_for_append(start_offset)
            n = min(len(view), mf.file_size - mf.wrote_position)
            mf.append(view[:n])
            view = view[n:]

    def _roll_over(self, mf: MappedFile) -> MappedFile:
        """Fill the rest of `mf` with the end-of-file blank record and move to the next file."""
        if mf.wrote_position + BLANK_RECORD.size > mf.reserved:
            mf.reserve(mf.wrote_position + BLANK_RECORD.size)
        encode_blank_into(mf.view, mf.wrote_position, mf.file_size - mf.wrote_position)
        mf.wrote_position = mf.file_size
        return self.log.get_last_for_append()

    def append_batch(
        self, batch: MessageExtBatch, now_ms: int, reserve_entries: Callable[[int, int], None] | None = None
    ) -> list[DispatchRequest]:
        """Store every item of a batch body as its own record, consecutive queue offsets, one file.

        Raises AppendFailure (nothing written) when an item is malformed or a limit is broken.
        `reserve_entries(first_queue_offset, count)` is called once the items are counted and
        before anything is written; what it raises (StoreError: disk full) stops the append.
        """
        topic_raw = self._topic_bytes.get(batch.topic) or self._topic_utf8(batch.topic)
        extra = batch.properties_string.encode()
        born = ipv4_host(batch.born_host)
        store = ipv4_host(batch.store_host)
        sys_flag = batch.sys_flag & ~(HOST_V6_BITS | TRANSACTION_TYPE_MASK)
        if born is None or store is None:
            sys_flag |= host_flags(batch.born_host, batch.store_host)
        if len(batch.body) > self.config.max_message_size:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"batch body is {len(batch.body)} bytes; maxMessageSize is {self.config.max_message_size}",
            )
        # Every item's record: fixed part + body + topic + properties (own, then the batch's).
        fixed = record_size(0, len(topic_raw), 0, sys_flag)
        try:
            count, total = kernels.plan_batch(batch.body, extra, fixed, mc.MAX_PROPERTIES_BYTES)
        except ValueError as exc:
            raise AppendFailure(PutMessageStatus[exc.args[0]], exc.args[1]) from None
        if total > self._max_record:
            raise AppendFailure(
                PutMessageStatus.MESSAGE_ILLEGAL, f"batch of {total} bytes exceeds the limit of {self._max_record}"
            )
        topic = batch.topic
        queue_id = batch.queue_id
        key = (topic, queue_id)
        queue_offset = self.topic_queue_table.get(key, 0)
        if reserve_entries is not None:
            reserve_entries(queue_offset, count)
        mf = self.log.get_last_for_append()
        if total + END_FILE_MIN_BLANK_LENGTH > mf.file_size - mf.wrote_position:
            mf = self._roll_over(mf)
        pos = mf.wrote_position
        if pos + total > mf.reserved:
            mf.reserve(pos + total)  # StoreError on a full disk, before anything is written
        store_ts = max(self.last_store_timestamp, now_ms)
        self.last_store_timestamp = store_ts
        out: list[DispatchRequest] = []
        append = out.append
        view = mf.view
        phys = mf.file_from_offset + pos
        born_ts = batch.born_timestamp
        if born is not None and store is not None:
            rows = kernels.write_batch_v4(
                view, pos, batch.body, extra, topic_block(topic_raw), fixed, mc.MAX_PROPERTIES_BYTES, queue_id,
                queue_offset, phys, sys_flag, born_ts, born[0], born[1], store_ts, store[0], store[1],
            )
            for size, tags_code, keys, uniq in rows:
                append(
                    DispatchRequest(topic, queue_id, phys, size, queue_offset, tags_code, store_ts, sys_flag, keys, uniq, 0)
                )
                phys += size
                queue_offset += 1
            pos += total
        else:
            for flag, body, raw in batch_items(batch.body, extra, mc.MAX_PROPERTIES_BYTES):
                size = fixed + len(body) + len(raw)
                encode_record_into(
                    view, pos, topic=topic_raw, body=body, properties=raw, queue_id=queue_id, flag=flag,
                    queue_offset=queue_offset, physical_offset=phys, sys_flag=sys_flag, born_timestamp=born_ts,
                    born_host=batch.born_host, store_timestamp=store_ts, store_host=batch.store_host,
                )
                append(
                    DispatchRequest(
                        topic, queue_id, phys, size, queue_offset,
                        tag_hash_code(peek_property(raw, _TAGS, _SEP_TAGS) or None), store_ts, sys_flag,
                        peek_property(raw, _KEYS, _SEP_KEYS), peek_property(raw, _UNIQ, _SEP_UNIQ), 0,
                    )
                )
                pos += size
                phys += size
                queue_offset += 1
        mf.wrote_position = pos
        mf.last_store_timestamp = store_ts
        self.topic_queue_table[key] = queue_offset
        return out

    # --- reading -------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        first = self.log.first
        if first is None:
            return 0
        return first.file_from_offset if first.is_available else first.file_from_offset + first.file_size

    @property
    def max_offset(self) -> int:
        return self.log.max_offset

    def record_at(self, offset: int) -> tuple[MappedFile, memoryview] | None:
        """The whole message record starting at `offset`, or None when no record starts there
        (an offset from a client may point anywhere: inside a record, at the end-of-file blank)."""
        mf = self.log.find(offset)
        if mf is None or not mf.is_available:
            return None
        pos = offset - mf.file_from_offset
        if pos + 8 > mf.wrote_position:
            return None
        size, magic = BLANK_RECORD.unpack_from(mf.view, pos)
        if (magic != MAGIC_V1 and magic != MAGIC_V2) or size < MIN_RECORD_SIZE or pos + size > mf.wrote_position:
            return None
        return mf, mf.view[pos : pos + size]

    def store_timestamp_at(self, offset: int) -> int:
        """Store time (ms) of the record at `offset`, -1 when there is none."""
        mf = self.log.find(offset)
        if mf is None or not mf.is_available:
            return -1
        pos = offset - mf.file_from_offset
        if pos + RECORD_PREFIX.size + 40 > mf.wrote_position:
            return -1
        (sys_flag,) = _I32.unpack_from(mf.view, pos + _SYSFLAG_AT)
        at = pos + _BORN_HOST_AT + (20 if sys_flag & BORNHOST_V6 else 8)
        return int(_I64.unpack_from(mf.view, at)[0])

    def next_file_offset(self, offset: int) -> int:
        """Start of the file after the one holding `offset`."""
        size = self.log.file_size
        return offset + size - offset % size

    # --- recovery scanning ---------------------------------------------------

    def scan(self, mf: MappedFile, check_crc: bool, start: int = 0) -> Iterator[tuple[int, int]]:
        """(position, size) of each valid record of `mf` from `start` (a record boundary),
        stopping at the first invalid byte; the end-of-file marker yields size 0."""
        pos = start
        view = mf.view
        limit = mf.file_size
        base = mf.file_from_offset
        while pos + 8 <= limit:
            try:
                size = check_record(view, pos, check_crc=check_crc)
            except CorruptRecord:
                return
            if size == 0:
                (blank,) = _I32.unpack_from(view, pos)
                if pos + blank == limit:
                    yield pos, 0
                return
            if _I64.unpack_from(view, pos + 28)[0] != base + pos:
                return  # a record that does not know its own offset is not ours to keep
            yield pos, size
            pos += size

    def is_blank_at(self, mf: MappedFile, pos: int) -> bool:
        return pos + 8 <= mf.file_size and BLANK_RECORD.unpack_from(mf.view, pos)[1] == BLANK_MAGIC

    def close(self) -> None:
        self.log.close()
