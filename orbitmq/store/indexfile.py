"""The IndexFile: a hash index from message keys to CommitLog offsets (protocol reference §7.3).

File layout (big-endian), byte-compatible with RocketMQ 4.x::

    header (40 bytes)
        beginTimestamp   long   store time of the first entry (ms)
        endTimestamp     long   store time of the last entry (ms)
        beginPhyOffset   long   CommitLog offset of the first entry
        endPhyOffset     long   CommitLog offset of the last entry
        hashSlotCount    int    slots in use
        indexCount       int    next entry number (starts at 1; entry 0 is unused)
    slots (hash_slot_num x 4 bytes)
        int: number of the newest entry whose key hashes to this slot, 0 = empty
    entries (index_num x 20 bytes; entry k at 40 + hash_slot_num*4 + k*20)
        keyHash          int    |String.hashCode(key)|
        phyOffset        long   CommitLog offset of the message
        timeDiff         int    seconds since beginTimestamp
        prevIndex        int    previous entry in the same slot, 0 = end of chain

Keys are ``topic#key``; a lookup walks a slot's chain newest first and keeps
entries whose hash and time match. Different keys can share a hash, so a
lookup may return offsets of messages with other keys (as in RocketMQ); the
caller reads the records and checks the key when it matters.

Files are named by their creation time, ``yyyyMMddHHmmssSSS`` in local time.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, NamedTuple

from orbitmq.common.hashing import index_key_hash
from orbitmq.common.properties import KEY_SEPARATOR
from orbitmq.common.sysflag import TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.errors import StoreError
from orbitmq.store.mapped_file import RESERVE_CHUNK, reserve_blocks
from orbitmq.store.paths import store_path

if TYPE_CHECKING:
    from orbitmq.store.api import DispatchRequest

HEADER = struct.Struct(
    ">q"  # beginTimestamp
    "q"  # endTimestamp
    "q"  # beginPhyOffset
    "q"  # endPhyOffset
    "i"  # hashSlotCount
    "i"  # indexCount
)
ENTRY = struct.Struct(
    ">i"  # keyHash
    "q"  # phyOffset
    "i"  # timeDiff, seconds
    "i"  # prevIndex
)
_SLOT = struct.Struct(">i")
_unpack_slot = _SLOT.unpack_from
_pack_slot = _SLOT.pack_into
_pack_entry = ENTRY.pack_into
_pack_header = HEADER.pack_into
HEADER_SIZE: Final = 40
SLOT_SIZE: Final = 4
ENTRY_SIZE: Final = 20
DEFAULT_HASH_SLOT_NUM: Final = 5_000_000
DEFAULT_INDEX_NUM: Final = 20_000_000
_INT_MAX = 0x7FFFFFFF
_BUILDING_SUFFIX = ".tmp"

log = logging.getLogger(__name__)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return HEADER_SIZE + hash_slot_num * SLOT_SIZE + index_num * ENTRY_SIZE


def index_file_name(epoch_ms: int) -> str:
    """``yyyyMMddHHmmssSSS`` of a time in local time, as RocketMQ names index files."""
    t = time.localtime(epoch_ms // 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{epoch_ms % 1000:03d}"


class IndexFile:
    """One memory-mapped index file.

    Ownership: `put_key`, `select_phy_offsets` and `truncate_from` run on the
    store's event loop (one writer, no locks on the hot path). `flush` may run
    in a worker thread: it only fdatasyncs the file, and `close` takes the same
    lock so a file is never closed under a flush.
    """

    __slots__ = (
        "_closed",
        "_entries_base",
        "_fd",
        "_lock",
        "_mm",
        "_reserved",
        "begin_phy_offset",
        "begin_timestamp",
        "end_phy_offset",
        "end_timestamp",
        "hash_slot_count",
        "hash_slot_num",
        "index_count",
        "index_num",
        "path",
    )

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int

    def __init__(self, path: str, hash_slot_num: int, index_num: int, *, create: bool) -> None:
        if hash_slot_num <= 0 or index_num <= 1:
            raise ValueError("an index file needs at least one slot and two entries")
        self.path = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        size = index_file_size(hash_slot_num, index_num)
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        reserved = 0
        try:
            if create:
                os.ftruncate(fd, size)  # sparse: untouched slots and entries read as zeros
                # Blocks for the slots (written anywhere) and the first entries now; later
                # entries in chunks ahead of the writes (see `put_hash`). Never the whole file:
                # 400 MiB of entries would be held by an index that has barely begun.
                reserved = min(size, HEADER_SIZE + hash_slot_num * SLOT_SIZE + RESERVE_CHUNK)
                try:
                    reserve_blocks(fd, 0, reserved)
                except StoreError:
                    os.unlink(path)
                    raise
            elif os.fstat(fd).st_size != size:
                raise StoreError(
                    f"index file {os.path.basename(path)} is {os.fstat(fd).st_size} bytes; the configured "
                    f"{hash_slot_num} slots and {index_num} entries need {size}"
                )
            self._mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        #: Bytes from the start whose blocks are allocated (0 for a file opened: found out on write).
        self._reserved = reserved
        self._entries_base = HEADER_SIZE + hash_slot_num * SLOT_SIZE
        self._lock = threading.Lock()
        self._closed = False
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
         self.hash_slot_count, self.index_count) = HEADER.unpack_from(self._mm, 0)
        if self.index_count <= 0:
            self.index_count = 1
        self.index_count = min(self.index_count, index_num)

    @classmethod
    def create(
        cls, path: str, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM,
        *, begin_phy_offset: int = 0, begin_timestamp: int = 0,
    ) -> IndexFile:
        """Create a new, empty index file that continues where the previous one ended.

        As RocketMQ does, the header starts with the previous file's end offset
        and time, so the first entry's time difference counts from there.
        The file is built under a ``.tmp`` name and renamed once sized and
        headed, so a crash never leaves a short file under an index name
        (`IndexService.load` removes leftover ``.tmp`` files).
        """
        if os.path.exists(path):
            raise FileExistsError(errno.EEXIST, "index file exists", path)
        building = path + _BUILDING_SUFFIX
        with contextlib.suppress(FileNotFoundError):
            os.unlink(building)  # left by a crash while building
        f = cls(building, hash_slot_num, index_num, create=True)
        try:
            if begin_phy_offset > 0:
                f.begin_phy_offset = f.end_phy_offset = begin_phy_offset
            if begin_timestamp > 0:
                f.begin_timestamp = f.end_timestamp = begin_timestamp
            f._write_header()
            os.rename(building, path)
        except BaseException:
            f.destroy()
            raise
        f.path = path
        return f

    @classmethod
    def open(cls, path: str, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM) -> IndexFile:
        """Map an existing index file; its size must match the slot and entry counts."""
        return cls(path, hash_slot_num, index_num, create=False)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    @property
    def entry_count(self) -> int:
        """Entries written (indexCount counts from 1)."""
        return self.index_count - 1

    def _write_header(self) -> None:
        HEADER.pack_into(
            self._mm, 0, self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset,
            self.hash_slot_count, self.index_count,
        )

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add an entry for `key`; False (and nothing written) when the file is full."""
        return self.put_hash(index_key_hash(key), phy_offset, store_timestamp)

    def put_hash(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """`put_key` for a key already hashed with `index_key_hash`.

        Costs three `pack_into` calls. The header in the mapping is kept
        current on every put, so a process crash leaves it consistent with
        the entries.
        """
        count = self.index_count
        if count >= self.index_num:
            return False
        if self._entries_base + (count + 1) * ENTRY_SIZE > self._reserved:
            self._reserve_for(count + 1)
        mm = self._mm
        slot_pos = HEADER_SIZE + (key_hash % self.hash_slot_num) * SLOT_SIZE
        prev = _unpack_slot(mm, slot_pos)[0]
        if prev <= 0 or prev > count:
            prev = 0
            self.hash_slot_count += 1
        begin = self.begin_timestamp
        if begin <= 0:
            diff = 0
        else:
            diff = (store_timestamp - begin) // 1000
            if diff < 0:
                diff = 0
            elif diff > _INT_MAX:
                diff = _INT_MAX
        _pack_entry(mm, self._entries_base + count * ENTRY_SIZE, key_hash, phy_offset, diff, prev)
        _pack_slot(mm, slot_pos, count)
        if count <= 1:
            # RocketMQ sets the begin fields after computing the first entry's
            # difference (from the previous file's end time); we match it.
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = begin = store_timestamp
        count += 1
        self.index_count = count
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        _pack_header(mm, 0, begin, store_timestamp, self.begin_phy_offset, phy_offset, self.hash_slot_count, count)
        return True

    def _reserve_for(self, entries: int) -> None:
        """Allocate blocks for the slots and `entries` entries, a chunk ahead; StoreError when the
        disk is full (a write to an unallocated mapped page would be SIGBUS instead)."""
        size = index_file_size(self.hash_slot_num, self.index_num)
        target = min(size, self._entries_base + entries * ENTRY_SIZE + RESERVE_CHUNK)
        reserve_blocks(self._fd, self._reserved, target - self._reserved)
        self._reserved = target

    def is_time_matched(self, begin: int, end: int) -> bool:
        """Whether [begin, end] overlaps this file's time span (RocketMQ's rule)."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    def select_phy_offsets(self, key: str, max_num: int, begin_ts: int, end_ts: int) -> list[int]:
        """CommitLog offsets of entries for `key` stored within [begin_ts, end_ts], newest first.

        Entry times have one-second resolution (begin time + whole seconds).
        The walk stops at `max_num` results, at the end of the chain, at a
        broken link, or at the first entry older than `begin_ts`.
        """
        out: list[int] = []
        self.select_into(out, index_key_hash(key), max_num, begin_ts, end_ts)
        return out

    def select_into(self, out: list[int], key_hash: int, max_num: int, begin_ts: int, end_ts: int) -> None:
        """`select_phy_offsets` by key hash, appending to `out` until it holds `max_num` offsets."""
        count = self.index_count
        if count <= 1 or len(out) >= max_num:
            return
        mm = self._mm
        (current,) = _SLOT.unpack_from(mm, HEADER_SIZE + (key_hash % self.hash_slot_num) * SLOT_SIZE)
        base = self._entries_base
        begin = self.begin_timestamp
        seen = 0
        while 0 < current < count and len(out) < max_num:
            hash_read, phy, diff, prev = ENTRY.unpack_from(mm, base + current * ENTRY_SIZE)
            if diff < 0:
                break
            t = begin + diff * 1000
            if hash_read == key_hash and begin_ts <= t <= end_ts:
                out.append(phy)
            seen += 1
            # prev must point strictly backwards; anything else is damage.
            if prev >= current or t < begin_ts or seen >= count:
                break
            current = prev

    def truncate_from(self, phy_offset: int) -> int:
        """Remove every entry whose CommitLog offset is >= `phy_offset`; return how many went.

        Entries are appended in CommitLog order, so they form a suffix; it is
        unlinked newest first, which restores each slot to its previous chain
        head. The end fields then describe the newest kept entry (its time
        only to the second, as the entry stores it).
        """
        mm = self._mm
        base = self._entries_base
        count = self.index_count
        removed = 0
        k = count - 1
        while k >= 1:
            key_hash, phy, _, prev = ENTRY.unpack_from(mm, base + k * ENTRY_SIZE)
            if phy < phy_offset:
                break
            slot_pos = HEADER_SIZE + (key_hash % self.hash_slot_num) * SLOT_SIZE
            (head,) = _SLOT.unpack_from(mm, slot_pos)
            if head == k:
                _SLOT.pack_into(mm, slot_pos, prev if 0 < prev < k else 0)
                if not 0 < prev < k:
                    self.hash_slot_count = max(0, self.hash_slot_count - 1)
            mm[base + k * ENTRY_SIZE : base + (k + 1) * ENTRY_SIZE] = bytes(ENTRY_SIZE)
            removed += 1
            k -= 1
        if removed:
            self.index_count = k + 1
            if k >= 1:
                _, phy, diff, _ = ENTRY.unpack_from(mm, base + k * ENTRY_SIZE)
                self.end_phy_offset = phy
                self.end_timestamp = self.begin_timestamp + diff * 1000
            else:
                self.end_phy_offset = self.begin_phy_offset
                self.end_timestamp = self.begin_timestamp
            self._write_header()
        return removed

    def flush(self) -> None:
        """Write the mapping's dirty pages to disk (blocking; safe from a worker thread).

        fdatasync, not `mmap.flush()`: on Linux it writes pages dirtied
        through the shared mapping just the same, and it releases the GIL,
        while CPython 3.11's msync call holds it, stalling the event loop
        for the whole write (tens of ms for the slot pages a second of keys
        dirties).
        """
        with self._lock:
            if not self._closed:
                os.fdatasync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._mm.close()
            finally:
                os.close(self._fd)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


# --- the service over a directory of index files ------------------------------------------


class QueryOffsetResult(NamedTuple):
    """CommitLog offsets found by key (newest first, no duplicates) and the index's progress."""

    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


class IndexService:
    """Index files in one directory: builds keys on dispatch, rolls, queries, recovers and cleans.

    Ownership: every method except `flush` runs on the store's event loop,
    which is the only writer; `flush` (blocking fdatasync) may run in a worker
    thread and only reads what the loop writes.

    Deferred writing: on a running loop `put` queues the keys and one
    callback at the end of the loop turn writes them all, so sends are
    answered before their keys are hashed. Queries, truncation, cleaning,
    `close` and the `index_last_update_*` figures write the queue first.
    `flush` does not (it runs in a thread); it covers what is written, and
    its end timestamp says exactly that, so the checkpoint never vouches for
    queued keys.

    Keys: ``topic#UNIQ_KEY`` and ``topic#key`` for each space-separated key
    of KEYS; rollback records are not indexed. Crash recovery truncates: after
    the CommitLog is recovered, the store calls `truncate_from(end_offset)`,
    which removes entries for records past the recovered end (whole files
    when they begin past it), then re-dispatches from its checkpoint;
    `dispatch` skips records below the last file's end offset, so replayed
    records are not indexed twice (the one record at that end offset may be,
    and queries drop the duplicate offset).
    """

    def __init__(
        self,
        directory: str,
        hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
        index_num: int = DEFAULT_INDEX_NUM,
        *,
        max_msgs_num_batch: int = 64,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.directory = directory
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self._clock_ms = clock_ms
        #: Oldest first; the last one takes new entries.
        self.files: list[IndexFile] = []
        self._unflushed: list[IndexFile] = []
        self._flush_lock = threading.Lock()
        #: "topic#" by topic, so the append path builds no string per key.
        self._prefixes: dict[str, str] = {}
        #: (topic, keys, uniq_key, phy_offset, store_timestamp) put but not yet written (see `put`).
        self._pending: list[tuple[str, str, str, int, int]] = []
        self._closed = False
        #: The last write of keys failed (full disk); logged once per change.
        self._write_failed = False

    def load(self) -> None:
        """Map the index files already in the directory, oldest first. Blocking (call once at start)."""
        os.makedirs(self.directory, exist_ok=True)
        listed = os.listdir(self.directory)
        for name in listed:
            if name.endswith(_BUILDING_SUFFIX) and name[: -len(_BUILDING_SUFFIX)].isdigit():
                os.unlink(store_path(self.directory, name))  # a file a crash interrupted while building
        names = sorted(n for n in listed if len(n) == 17 and n.isdigit())
        for name in names:
            self.files.append(IndexFile.open(store_path(self.directory, name), self.hash_slot_num, self.index_num))

    # --- building -----------------------------------------------------------------

    def dispatch(self, requests: Iterable[DispatchRequest]) -> None:
        """Index a run of appended records (the store's CommitLogDispatcher hook)."""
        for req in requests:
            self.put(req.topic, req.keys, req.uniq_key, req.commit_log_offset, req.store_timestamp, req.sys_flag)

    def put(self, topic: str, keys: str, uniq_key: str, phy_offset: int, store_timestamp: int, sys_flag: int) -> None:
        """Index one record's UNIQ_KEY and KEYS under ``topic#key``.

        On an event loop the keys are written at the end of the loop turn
        (after the turn's responses left); every read of the index writes
        what is pending first, so a query never misses an acknowledged
        message. Without a running loop (recovery in a worker thread) they
        are written at once.
        """
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE or not (keys or uniq_key):
            return
        pending = self._pending
        pending.append((topic, keys, uniq_key, phy_offset, store_timestamp))
        if len(pending) == 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._drain()
                return
            loop.call_soon(self._drain)

    def _drain(self) -> None:
        """Write the pending keys, in CommitLog order."""
        pending = self._pending
        if not pending or self._closed:
            return
        self._pending = []
        try:
            self._write(pending)
        except StoreError as exc:
            # A full disk: the messages are stored and readable by queue; only lookups by
            # key miss them. Said once until writing works again.
            if not self._write_failed:
                log.error("index: keys not written (lookups by key will miss them): %s", exc)
            self._write_failed = True
        else:
            if self._write_failed:
                log.warning("index: keys are written again")
            self._write_failed = False

    def _write(self, pending: list[tuple[str, str, str, int, int]]) -> None:
        files = self.files
        f = files[-1] if files else self._roll()
        prefixes = self._prefixes
        for topic, keys, uniq_key, phy_offset, store_timestamp in pending:
            if phy_offset < f.end_phy_offset:
                continue  # replayed during recovery: already indexed
            prefix = prefixes.get(topic)
            if prefix is None:
                if len(prefixes) >= 4096:
                    prefixes.clear()
                prefix = prefixes[topic] = topic + "#"
            if uniq_key and not f.put_hash(index_key_hash(uniq_key, prefix), phy_offset, store_timestamp):
                f = self._roll()
                f.put_hash(index_key_hash(uniq_key, prefix), phy_offset, store_timestamp)
            if keys:
                for key in keys.split(KEY_SEPARATOR):
                    if key:
                        f = self._put(f, index_key_hash(key, prefix), phy_offset, store_timestamp)

    def _put(self, f: IndexFile, key_hash: int, phy_offset: int, store_timestamp: int) -> IndexFile:
        if not f.put_hash(key_hash, phy_offset, store_timestamp):
            f = self._roll()
            f.put_hash(key_hash, phy_offset, store_timestamp)
        return f

    def _roll(self) -> IndexFile:
        """Start a new index file continuing from the last one."""
        os.makedirs(self.directory, exist_ok=True)
        last = self.files[-1] if self.files else None
        now = self._clock_ms()
        name = index_file_name(now)
        # Names must stay unique and sorted even when files fill within a millisecond.
        while (last is not None and name <= last.name) or os.path.exists(store_path(self.directory, name)):
            now += 1
            name = index_file_name(now)
        f = IndexFile.create(
            store_path(self.directory, name), self.hash_slot_num, self.index_num,
            begin_phy_offset=last.end_phy_offset if last else 0, begin_timestamp=last.end_timestamp if last else 0,
        )
        _fsync_dir(self.directory)  # once per file: the new name must survive a power loss
        with self._flush_lock:
            if last is not None:
                self._unflushed.append(last)
            self.files.append(f)
        return f

    # --- querying -------------------------------------------------------------------

    def query_offsets(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> QueryOffsetResult:
        """Offsets of messages indexed under ``topic#key`` stored within [begin_ts, end_ts].

        Searches files newest first and stops at `max_num` (capped by
        `max_msgs_num_batch`) or at the first file that begins before
        `begin_ts`. Offsets are newest first within a file, without
        duplicates; hash collisions can add offsets of other keys.
        """
        self._drain()
        max_num = min(max_num, self.max_msgs_num_batch)
        found: list[int] = []
        last_ts = last_phy = 0
        key_hash = index_key_hash(key, topic + "#")
        files = self.files
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin_ts, end_ts):
                f.select_into(found, key_hash, max_num, begin_ts, end_ts)
            if f.begin_timestamp < begin_ts or len(found) >= max_num:
                break
        return QueryOffsetResult(list(dict.fromkeys(found)), last_ts, last_phy)

    @property
    def index_last_update_timestamp(self) -> int:
        self._drain()
        return self.files[-1].end_timestamp if self.files else 0

    @property
    def index_last_update_phyoffset(self) -> int:
        self._drain()
        return self.files[-1].end_phy_offset if self.files else 0

    # --- recovery and cleaning ------------------------------------------------------

    def truncate_from(self, phy_offset: int) -> int:
        """Forget entries for records at or past `phy_offset` (crash recovery); return how many went.

        Walking newest first: files that are empty (created just before a
        crash; their header still holds the previous file's end) or whose
        first entry is at or past `phy_offset` are deleted; the newest file
        with older entries loses its tail, and the walk stops there.
        """
        self._drain()
        removed = 0
        while self.files:
            f = self.files[-1]
            if f.entry_count == 0 or f.begin_phy_offset >= phy_offset:
                removed += f.entry_count
                self._drop(f)
                continue
            removed += f.truncate_from(phy_offset)
            break
        return removed

    def delete_expired_files(self, min_commit_log_offset: int) -> int:
        """Delete index files whose entries all lie below `min_commit_log_offset`; never the newest file.

        Returns how many files were deleted.
        """
        self._drain()
        deleted = 0
        for f in list(self.files[:-1]):
            if f.end_phy_offset >= min_commit_log_offset:
                break
            self._drop(f)
            deleted += 1
        return deleted

    def _drop(self, f: IndexFile) -> None:
        with self._flush_lock:
            self.files.remove(f)
            if f in self._unflushed:
                self._unflushed.remove(f)
        f.destroy()

    # --- durability ---------------------------------------------------------------------

    def flush(self) -> int:
        """fdatasync files rolled since the last flush and the current file. Blocking.

        Returns the end timestamp now on disk (for the checkpoint's
        indexMsgTimestamp), 0 when nothing is indexed.
        """
        with self._flush_lock:
            pending, self._unflushed = self._unflushed, []
            current = self.files[-1] if self.files else None
        covered = current.end_timestamp if current is not None else 0
        for f in pending:
            f.flush()
        if current is not None:
            current.flush()
        return covered

    def close(self) -> None:
        """Write what is pending, flush and unmap every file (on the loop)."""
        self._drain()
        self._closed = True
        self.flush()
        for f in self.files:
            f.close()
        self.files = []

    def destroy(self) -> None:
        """Delete every index file (used when the whole store is wiped)."""
        self._pending = []
        for f in list(self.files):
            self._drop(f)
