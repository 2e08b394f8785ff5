"""The message store seen from the broker: the `MessageStore` protocol and its result types.

Contract (docs/architecture.md, "Store"):

* The store is opened with a `StoreConfig`, recovers in `await start()` and
  is closed with `await close()`. All methods are called from the event loop
  that ran `start()`; the store has one writer, that loop.
* `put_message` / `put_messages` return after the record is in the mapped
  CommitLog and dispatched to its ConsumeQueue (and index), and, under
  SYNC_FLUSH when the message asks to wait (`WAIT` not "false"), after an
  fsync covers it. A put that fails changes nothing readers can see.
* Reads are synchronous and return `memoryview` slices of the mapped files,
  never copies. A result that holds slices pins the files they come from:
  call `release()` once the bytes are written out (or use `with`). A file a
  reader forgets to release is deleted anyway after
  `destroy_mapped_file_interval_forcibly`; its slices stay readable because
  the mapping outlives the unlinked file.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, Self, runtime_checkable

from orbitmq.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner


class PutMessageStatus(enum.Enum):
    """Outcome of a put, with RocketMQ's names. Only PUT_OK (and the three flush/slave
    timeouts, which still stored the message) mean the message is in the store."""

    PUT_OK = "PUT_OK"
    #: Stored, but the fsync covering it took longer than sync_flush_timeout.
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    #: Not stored: fewer in-sync copies than minInSyncReplicas (controller mode), checked before the append.
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    #: Not stored: the store is closed, a slave, or the disk is over the warning ratio.
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    #: Not stored: the message breaks a limit (size, topic length, property length).
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"

    @property
    def is_stored(self) -> bool:
        return self in _STORED


_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


class AppendMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


# Results are plain slotted dataclasses, not frozen ones: a frozen dataclass costs ~2 µs to
# build and one is built per put. Treat them as read-only.


@dataclass(slots=True)
class AppendMessageResult:
    """Where a put landed. For a batch, offsets are those of the first item and
    `msg_ids` holds one offset message id per item, in order."""

    status: AppendMessageStatus
    #: CommitLog offset of the (first) record.
    wrote_offset: int = 0
    #: Bytes written, all records of a batch together.
    wrote_bytes: int = 0
    #: Offset message id (§5.11) of the (first) record.
    msg_id: str = ""
    msg_ids: tuple[str, ...] = ()
    store_timestamp: int = 0
    #: Queue offset of the (first) record; 0 for prepared/rollback transaction records.
    logics_offset: int = 0
    msg_num: int = 1


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append_result: AppendMessageResult | None = None
    #: Why a put was refused, fit for a response remark.
    remark: str = ""

    @property
    def is_ok(self) -> bool:
        """True when the message is stored (PUT_OK or a flush/slave timeout)."""
        return self.status.is_stored


class GetMessageStatus(enum.Enum):
    """Outcome of a read from a queue, with RocketMQ's names (§3.2 maps them to response codes)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class Releasable(Protocol):
    def release(self) -> None: ...


@dataclass(slots=True, eq=False)
class _Pinned:
    """Holds references to mapped files until released (idempotent)."""

    _holds: list[Releasable] = field(default_factory=list, repr=False)

    def release(self) -> None:
        """Let the files these slices come from be deleted. Safe to call twice."""
        holds, self._holds = self._holds, []
        for hold in holds:
            hold.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(slots=True, eq=False)
class SelectMappedBufferResult(_Pinned):
    """One slice of a mapped file: `buffer` starts at global offset `start_offset`."""

    start_offset: int = 0
    buffer: memoryview = field(default_factory=lambda: memoryview(b""))

    @property
    def size(self) -> int:
        return len(self.buffer)


@dataclass(slots=True, eq=False)
class GetMessageResult(_Pinned):
    """Messages read from one queue: whole records, in queue order, as slices of the CommitLog.

    `buffers` concatenated are a valid PULL_MESSAGE body (§5.2).
    """

    status: GetMessageStatus = GetMessageStatus.NO_MESSAGE_IN_QUEUE
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    buffers: list[memoryview] = field(default_factory=list)
    #: Queue offset of each returned message, parallel to `buffers`.
    queue_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    #: True when the reader is far behind the head (its data is likely not in memory).
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.buffers)


@dataclass(slots=True, eq=False)
class QueryMessageResult(_Pinned):
    """Messages found by key: whole records as CommitLog slices, plus the index's progress."""

    buffers: list[memoryview] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.buffers)


@runtime_checkable
class MessageFilter(Protocol):
    """Server-side filter hook for `get_message` (tag codes, SQL92).

    The store asks `is_matched_by_consume_queue` with the ConsumeQueue tag
    slot first (cheap: no CommitLog read); only for entries that pass does it
    read the record and ask `is_matched_by_commit_log`. `properties` is None
    when the store did not decode them; the filter decodes the record's
    property string itself if it needs it (e.g. SQL92), so tag-only filters
    pay nothing.
    """

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool: ...


class DispatchRequest(NamedTuple):
    """One stored record as dispatch sees it: what the CommitLog append returns and what the
    ConsumeQueue, the index and extra dispatchers take (one type from append to dispatch;
    a NamedTuple because one is built per message)."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    consume_queue_offset: int
    tags_code: int
    store_timestamp: int
    sys_flag: int
    #: The KEYS property as stored (space-separated keys), "" when absent.
    keys: str
    #: The UNIQ_KEY property, "" when absent.
    uniq_key: str
    prepared_transaction_offset: int


class CommitLogDispatcher(Protocol):
    """A consumer of appended records, run in the same loop turn as the append (and by recovery)."""

    def dispatch(self, requests: Iterable[DispatchRequest]) -> None: ...


#: `listener(topic, queue_id, max_offset_after)`: messages up to (excluding)
#: `max_offset_after` are now readable in that queue. Called once per queue
#: per batch of appends, after dispatch, from the event loop; must not block.
DispatchListener = Callable[[str, int, int], None]


class MessageStore(Protocol):
    """What the broker needs from a message store."""

    async def start(self) -> None:
        """Open the files and recover (normal after a clean stop, full after a crash)."""

    async def close(self) -> None:
        """Flush everything, stop background tasks, remove the abort marker."""

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message. Sets msg.store_timestamp, queue_offset, commit_log_offset,
        store_size and msg_id on success."""

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append every item of a SEND_BATCH_MESSAGE body as its own record, consecutive queue offsets."""

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        """Read up to `max_msg_nums` messages from `offset`, within the pull byte/count limits (§5.2)."""

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The queue offset the next message will get (0 for an unknown queue)."""

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """The oldest queue offset still readable."""

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        """CommitLog offset of the message at a queue offset (0 when absent)."""

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        """True when the message at a queue offset lies further behind the CommitLog head than
        accessMessageInMemoryMaxRatio of physical memory (RocketMQ's checkInDiskByConsumeOffset);
        False when there is no such message."""

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """Queue offset of the message stored closest to `timestamp` ms (§3.7 rule)."""

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time (ms) of the oldest readable message of the queue, -1 when none."""

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        """Store time (ms) of the message at a queue offset, -1 when absent."""

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """Decode the record at a CommitLog offset (None when there is none)."""

    def select_one_message_by_offset(self, commit_log_offset: int) -> SelectMappedBufferResult | None:
        """The whole record at a CommitLog offset, as a slice (None when there is none)."""

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        """Records whose key (or UNIQ_KEY) is `key`, stored within [begin, end] ms, at most `max_num`."""

    def get_commit_log_data(self, offset: int) -> SelectMappedBufferResult | None:
        """CommitLog bytes from `offset` to the written end of its file (replication)."""

    def append_to_commit_log(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Slave replication: append the master's CommitLog bytes at `start_offset` and dispatch
        the records they complete. False (nothing written) unless a running slave continues its log."""

    def get_max_phy_offset(self) -> int: ...

    def get_min_phy_offset(self) -> int: ...

    def delete_topics(self, topics: Iterable[str]) -> int:
        """Drop the ConsumeQueues (and queue offsets) of these topics; returns how many queues went."""

    def add_dispatch_listener(self, listener: DispatchListener) -> None:
        """Call `listener` after each dispatch (long polling wakes pullers here)."""

    def consume_queue_entries(self, topic: str, queue_id: int, index: int, count: int) -> list[tuple[int, int, int]] | None:
        """Up to `count` raw entries (CommitLog offset, size, tags code) from queue offset `index`;
        [] when the queue has no entry there, None when the store has no such queue (QUERY_CONSUME_QUEUE)."""

    def clean_expired_consume_queues(self) -> int:
        """Destroy queues whose every entry points below the CommitLog's min offset (their queue
        offsets restart at 0, as RocketMQ's cleanExpiredConsumerQueue); returns how many went."""

    def clean_unused_topics(self, keep: Iterable[str]) -> int:
        """Destroy the queues of topics not in `keep` (the broker's topic table), sparing the store's
        own system topics; returns how many queues went (CLEAN_UNUSED_TOPIC)."""

    def delete_expired_files_manually(self) -> None:
        """Run a CommitLog cleaning round now, as at `deleteWhen` (DELETE_EXPIRED_COMMITLOG): files past
        fileReservedTime go whatever the disk use and hour."""

    def runtime_info(self) -> dict[str, str]:
        """Figures for GET_BROKER_RUNTIME_INFO (offsets, disk ratio, flush state)."""


__all__ = [
    "AppendMessageResult",
    "AppendMessageStatus",
    "CommitLogDispatcher",
    "DispatchListener",
    "DispatchRequest",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageFilter",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "Releasable",
    "SelectMappedBufferResult",
]
