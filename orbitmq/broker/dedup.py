"""Idempotent sends: the duplicate window keyed on the producer's UNIQ_KEY.

Every RocketMQ producer gives each message a unique id (the UNIQ_KEY
property) before its first attempt and keeps it for the retries. When a
topic has a duplicate window (its `duplicateDetectionWindowSeconds`
attribute, else the broker's key of that name), a send whose id was stored
on that topic less than the window ago is not stored again: it is answered
with the first send's result (offset message id, queue, queue offset), as
NATS JetStream's Msg-Id window and Pulsar's deduplication do.

Parts:

* `DuplicateWindow` is pure state: id -> where the first copy was stored,
  in time slices ("buckets") so that expiry drops whole slices. Bounded by
  `duplicateDetectionMaxEntries` (the oldest slice goes first when full).
* `SendDeduplicator` is the send path's side: which window a topic has,
  claiming an id while its put is in flight (a concurrent retry of the same
  id waits for the first put instead of storing a second copy), recording a
  stored put, and rebuilding the window from the CommitLog tail at start
  (so it survives a restart, and a slave that becomes master builds it from
  its replicated CommitLog).

What is not deduplicated: retry, DLQ and system topics (a message sent back
keeps its UNIQ_KEY), messages that wait before they reach their topic (delay
level, timer, transaction half: they are recorded once delivered to it),
and messages without a UNIQ_KEY.

Memory: an entry is a dict slot, the id (a 128-bit int for the 32 hex
digits every client writes, else the string) and one int packing CommitLog
offset, queue offset and queue id: 126 bytes per id (tracemalloc over 1M
ids; tests/broker_features/test_dedup_window.py keeps it under 200).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.topics import TopicTable
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.sysflag import TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.common.topic_config import DUPLICATE_WINDOW_ATTRIBUTE, TopicConfig
from orbitmq.store.api import MessageStore, PutMessageResult
from orbitmq.store.batch_records import batch_items
from orbitmq.store.commitlog import CommitLog
from orbitmq.store.record_writer import peek_property
from orbitmq.store.recovery import read_dispatch_fields

log = logging.getLogger(__name__)

#: A window is cut into this many time slices; lookups check the live ones.
SLICES = 8
#: The shortest slice (ms), so that short windows do not make many tiny slices.
MIN_SLICE_MS = 1_000

_HEX32 = re.compile(r"[0-9A-F]{32}")
_QID_BITS = 16
_QOFF_BITS = 64

Key = int | str


def id_key(uniq: str) -> Key:
    """The dict key of a UNIQ_KEY: the 128-bit number of the usual 32 upper-case hex digits
    (44 bytes instead of 81 for the string), else the string itself (never equal to an int)."""
    return int(uniq, 16) if len(uniq) == 32 and _HEX32.fullmatch(uniq) else uniq


class Stored(NamedTuple):
    """Where the first copy of a message was stored."""

    commit_log_offset: int
    queue_id: int
    queue_offset: int


class _Slice:
    __slots__ = ("count", "first_ms", "last_ms", "topics")

    def __init__(self, now_ms: int) -> None:
        self.first_ms = now_ms
        self.last_ms = now_ms
        self.count = 0
        self.topics: dict[str, dict[Key, int]] = {}


class DuplicateWindow:
    """Ids stored per topic, with the place each was stored, forgotten after the window."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._slices: deque[_Slice] = deque()
        self._count = 0
        #: The longest window an id was added with: slices older than that are dropped.
        self.longest_ms = 0

    def __len__(self) -> int:
        return self._count

    def find(self, topic: str, key: Key, window_ms: int, now_ms: int) -> Stored | None:
        oldest = now_ms - window_ms
        for piece in reversed(self._slices):
            if piece.last_ms < oldest:
                break
            ids = piece.topics.get(topic)
            if ids is not None:
                packed = ids.get(key)
                if packed is not None:
                    return Stored(
                        packed >> (_QID_BITS + _QOFF_BITS),
                        packed & ((1 << _QID_BITS) - 1),
                        (packed >> _QID_BITS) & ((1 << _QOFF_BITS) - 1),
                    )
        return None

    def add(self, topic: str, key: Key, stored: Stored, window_ms: int, now_ms: int) -> None:
        self.longest_ms = max(self.longest_ms, window_ms)
        slices = self._slices
        span = max(self.longest_ms // SLICES, MIN_SLICE_MS)
        current = slices[-1] if slices else None
        if current is None or now_ms - current.first_ms >= span or current.count >= self.max_entries // SLICES + 1:
            current = _Slice(now_ms)
            slices.append(current)
        ids = current.topics.get(topic)
        if ids is None:
            ids = current.topics[topic] = {}
        packed = (stored.commit_log_offset << (_QID_BITS + _QOFF_BITS)) | (stored.queue_offset << _QID_BITS) | (
            stored.queue_id & ((1 << _QID_BITS) - 1)
        )
        if key not in ids:
            current.count += 1
            self._count += 1
        ids[key] = packed
        current.last_ms = max(current.last_ms, now_ms)
        self._expire(now_ms)

    def _expire(self, now_ms: int) -> None:
        """Drop the slices past the longest window, and the oldest while over `max_entries`
        (the slice being written stays)."""
        slices = self._slices
        oldest = now_ms - self.longest_ms
        while len(slices) > 1 and (slices[0].last_ms < oldest or self._count > self.max_entries):
            self._count -= slices.popleft().count


def topic_window_ms(config: TopicConfig, default_seconds: int) -> int:
    """The topic's duplicate window in ms (0: off). Retry, DLQ and system topics have none."""
    raw = config.attribute(DUPLICATE_WINDOW_ATTRIBUTE) if config.attributes else None
    seconds = int(raw) if raw is not None else default_seconds
    if not seconds:
        return 0
    topic = config.topic_name
    if names.is_retry_topic(topic) or names.is_dlq_topic(topic) or names.is_system_topic(topic):
        return 0
    return seconds * 1000


class SendDeduplicator:
    """The send path's duplicate window: claim an id, answer an earlier result, record a put."""

    def __init__(self, live: LiveConfig, topics: TopicTable, clock_ms: Callable[[], int]) -> None:
        self.live = live
        self.topics = topics
        self.clock_ms = clock_ms
        self.window = DuplicateWindow(live.value.duplicate_detection_max_entries)
        #: topic -> (its config, the broker default, its window in ms), while both stay the same.
        self._windows: dict[str, tuple[TopicConfig, int, int]] = {}
        #: Messages answered with an earlier result instead of being stored.
        self.answered = 0
        #: Ids whose put is in flight, and the future their retries wait on.
        self._pending: dict[tuple[str, Key], asyncio.Future[None] | None] = {}

    def window_ms(self, config: TopicConfig) -> int:
        default = self.live.value.duplicate_detection_window_seconds
        cached = self._windows.get(config.topic_name)
        if cached is not None and cached[0] is config and cached[1] == default:
            return cached[2]
        window = topic_window_ms(config, default)
        self._windows[config.topic_name] = (config, default, window)
        return window

    def claim_now(self, topic: str, key: Key, window_ms: int) -> Stored | asyncio.Future[None] | None:
        """`claim` without waiting: the earlier copy, None (claimed), or the future to wait on
        while the id's first put is in flight (then `claim`)."""
        earlier = self.window.find(topic, key, window_ms, self.clock_ms())
        if earlier is not None:
            return earlier
        pending = self._pending
        if (topic, key) not in pending:
            pending[(topic, key)] = None  # in flight; a retry that comes meanwhile adds a future
            return None
        waiting = pending[(topic, key)]
        if waiting is None:
            waiting = pending[(topic, key)] = asyncio.get_running_loop().create_future()
        return waiting

    async def claim(self, topic: str, key: Key, window_ms: int) -> Stored | None:
        """The earlier copy of this id, or None after marking the id in flight (then `settle` it)."""
        while True:
            found = self.claim_now(topic, key, window_ms)
            if not isinstance(found, asyncio.Future):
                return found
            await asyncio.shield(found)  # the first put of this id ends (stored or not): look again

    def settle(self, topic: str, key: Key, window_ms: int, stored: Stored | None, store_ms: int = 0) -> None:
        """End a claim: remember where the id was stored (None: it was not; `store_ms` is when)
        and wake its retries."""
        if stored is not None:
            self.window.add(topic, key, stored, window_ms, store_ms or self.clock_ms())
        waiting = self._pending.pop((topic, key), None)
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    def rebuild(self, store: MessageStore) -> int:
        """Fill the window from the CommitLog records younger than the longest window; returns
        how many ids it now holds. A store without a CommitLog (the memory store) has none."""
        default = self.live.value.duplicate_detection_window_seconds
        windows = {c.topic_name: self.window_ms(c) for c in self.topics}
        longest = max([*windows.values(), default * 1000])
        commitlog = getattr(store, "commitlog", None)
        if not longest or not isinstance(commitlog, CommitLog):
            return 0
        now = self.clock_ms()
        for topic, uniq, stored, store_ms in commitlog_tail(commitlog, now - longest):
            window = windows.get(topic)
            if window is None:  # a topic whose config was not saved before a crash: the broker's default
                window = windows[topic] = topic_window_ms(TopicConfig(topic), default)
            if window and uniq and store_ms >= now - window:
                self.window.add(topic, id_key(uniq), stored, window, store_ms)
        log.info("duplicate window rebuilt from the CommitLog: %d ids", len(self.window))
        return len(self.window)


def commitlog_tail(commitlog: CommitLog, since_ms: int) -> Iterator[tuple[str, str, Stored, int]]:
    """(topic, UNIQ_KEY, where, store time) of each record stored at or after `since_ms`, oldest first.

    Starts in the newest file whose first record is older than `since_ms` (store times never go
    backwards), so only the tail the window covers is read.
    """
    files = list(commitlog.log.files)
    start = 0
    for i in range(len(files) - 1, -1, -1):
        first_ms = commitlog.store_timestamp_at(files[i].file_from_offset)
        if 0 <= first_ms < since_ms:
            start = i
            break
    for mf in files[start:]:
        for at, size in commitlog.scan(mf, False):
            if size == 0:
                break
            rec = read_dispatch_fields(mf.view, at, size, mf.file_from_offset + at, ())
            if rec.store_timestamp >= since_ms and rec.uniq_key:
                tran = rec.sys_flag & TRANSACTION_TYPE_MASK
                if tran != TRANSACTION_PREPARED_TYPE and tran != TRANSACTION_ROLLBACK_TYPE:
                    stored = Stored(rec.commit_log_offset, rec.queue_id, rec.consume_queue_offset)
                    yield rec.topic, rec.uniq_key, stored, rec.store_timestamp


def batch_ids(body: bytes) -> list[tuple[str, memoryview]] | None:
    """(UNIQ_KEY or "", the item's bytes) of each item of a SEND_BATCH_MESSAGE body (§5.8), or None
    when the body is malformed (the store then refuses it with its own remark)."""
    try:
        items = batch_items(body, b"", mc.MAX_PROPERTIES_BYTES)
    except ValueError:
        return None
    view = memoryview(body)
    out = []
    pos = 0
    for _, item_body, raw in items:
        end = pos + 22 + len(item_body) + len(raw)
        out.append((peek_property(raw, b"UNIQ_KEY\x01", b"\x02UNIQ_KEY\x01"), view[pos:end]))
        pos = end
    return out


def stored_items(result: PutMessageResult, queue_id: int) -> Sequence[Stored]:
    """Where each message of a stored put (one, or a batch's items in order) landed."""
    ar = result.append_result
    if ar is None:
        return ()
    if ar.msg_ids:
        # Offset message ids end with the CommitLog offset in 16 hex digits.
        return [Stored(int(mid[-16:], 16), queue_id, ar.logics_offset + i) for i, mid in enumerate(ar.msg_ids)]
    return [Stored(ar.wrote_offset, queue_id, ar.logics_offset)]
