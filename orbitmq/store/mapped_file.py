"""One fixed-size, memory-mapped store file (a CommitLog or ConsumeQueue segment).

A file is named by the 20-digit zero-padded global offset of its first byte
(§7.1, §7.2). Appends and reads go through one writable `memoryview` of the
whole mapping, so a read is a slice of that view: no copy, and the slice stays
valid as long as someone holds it, even after the file is unlinked.

Disk blocks are reserved (fallocate) before any mapped write reaches them:
a write to a mapped page with no block behind it on a full disk is SIGBUS,
which kills the process. Every file is reserved in steps ahead of its write
position (`reserve`): a ConsumeQueue file in `RESERVE_CHUNK` steps, so an
empty or short queue costs a few KiB of disk, not its whole 5.7 MiB file; a
CommitLog file in `COMMIT_LOG_RESERVE_STEP` steps, so an idle broker holds
a few MiB, not its whole 1 GiB file (only `warmMapedFileEnable` reserves and
writes a file whole). `reserved` says how far blocks are known to be
allocated; every writer checks it (or calls `reserve`) before writing, and
`reserve` fails with a StoreError before anything is written.

Ownership: positions (`wrote_position`, `flushed_position`, `reserved`) are owned by the
event loop. `flush()` and `create()` are blocking and run in worker threads;
`flush()` only reads `wrote_position` (an int, read atomically under the GIL)
and fsyncs the descriptor, never touching the mapping. A flush that was running
while the positions were set back (a truncation) does not raise `flushed_position`
afterwards: what it synced may have been cut, and the bytes written there since
are not on disk.
"""

from __future__ import annotations

import errno
import mmap
import os
import threading
import time

from orbitmq.errors import StoreError
from orbitmq.store.paths import store_path

#: Width of file names: the start offset as a zero-padded decimal.
NAME_WIDTH = 20
_ZEROS = bytes(1 << 20)
#: Step by which ConsumeQueue files reserve blocks ahead of their writes: 3,276 entries,
#: one fallocate per that many messages of a queue, and at most this much disk held
#: by a queue that has barely been written.
RESERVE_CHUNK = 64 * 1024
#: Step by which CommitLog files reserve blocks ahead of their appends: one fallocate per
#: 16 MiB written (64 per 1 GiB file), and at most this much disk held by an idle broker.
COMMIT_LOG_RESERVE_STEP = 16 << 20


def file_name_for(offset: int) -> str:
    return f"{offset:0{NAME_WIDTH}d}"


def offset_from_name(name: str) -> int | None:
    """The start offset a file name encodes, or None when it is not a store file name."""
    if len(name) != NAME_WIDTH or not name.isdigit():
        return None
    return int(name)


#: Guards the flushed position's update after an fsync (a worker thread) against a reset of
#: the positions (the loop); held only for those few instructions, never across an fsync.
_POSITIONS = threading.Lock()


class MappedFile:
    """A store file mapped into memory with positions and a reader reference count."""

    __slots__ = (
        "_available",
        "_closed",
        "_cuts",
        "_refs",
        "_shutdown_at_ms",
        "fd",
        "file_from_offset",
        "file_size",
        "flushed_position",
        "last_store_timestamp",
        "mm",
        "path",
        "reserve_step",
        "reserved",
        "view",
        "wrote_position",
    )

    def __init__(
        self,
        path: str,
        file_from_offset: int,
        file_size: int,
        fd: int,
        mm: mmap.mmap,
        reserved: int = 0,
        reserve_step: int = RESERVE_CHUNK,
    ) -> None:
        self.path = path
        self.file_from_offset = file_from_offset
        self.file_size = file_size
        self.fd = fd
        self.mm = mm
        self.view = memoryview(mm)
        #: Bytes appended so far (the next append goes here).
        self.wrote_position = 0
        #: Bytes known to be on disk.
        self.flushed_position = 0
        #: Bytes from the start whose disk blocks are allocated (writes stay below it).
        self.reserved = reserved
        #: `reserve` allocates in multiples of this many bytes.
        self.reserve_step = reserve_step
        #: Store time (ms) of the last record appended, for the checkpoint.
        self.last_store_timestamp = 0
        self._refs = 1  # the owner's own reference, dropped by shutdown()
        self._available = True
        self._shutdown_at_ms = 0
        self._closed = False
        #: How many times the positions were set (back): a flush started before a cut is stale.
        self._cuts = 0

    # --- opening -------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str,
        file_from_offset: int,
        file_size: int,
        warm: bool = False,
        sync_dir: bool = True,
        reserve: int | None = None,
        reserve_step: int = RESERVE_CHUNK,
    ) -> MappedFile:
        """Create (or reopen) the file for `file_from_offset`, sized and mapped. Blocking.

        The first `reserve` bytes (None: all of them) get their blocks
        reserved with fallocate, so a full disk fails here with StoreError
        (and the new file is removed) and the first write to a page needs no
        block allocation; the rest stays sparse until `reserve` is called,
        which then allocates `reserve_step` bytes at a time.
        With `warm` the pages are also written with zeros (from this thread,
        GIL released) so appends find them in the page cache. With `sync_dir`
        the folder is fsynced so the new name survives a power loss
        (ConsumeQueue files skip it: recovery rebuilds them from the CommitLog).
        """
        upfront = file_size if reserve is None else min(reserve, file_size)
        path = store_path(directory, file_name_for(file_from_offset))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            current = os.fstat(fd).st_size
            if current > file_size:
                raise StoreError(f"{path} is {current} bytes, larger than the configured {file_size}")
            if current < file_size:
                os.ftruncate(fd, file_size)
                try:
                    reserve_blocks(fd, 0, upfront)
                except StoreError:
                    if current == 0:
                        os.unlink(path)
                    raise
                if warm and current == 0:
                    _write_zeros(fd, upfront)
                if sync_dir:
                    _fsync_dir(directory)
            else:
                upfront = 0  # reopened whole: how much is allocated is not known, `reserve` finds out
            mm = mmap.mmap(fd, file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, file_from_offset, file_size, fd, mm, upfront, reserve_step)

    @classmethod
    def open_existing(cls, path: str, file_size: int, reserve_step: int = RESERVE_CHUNK) -> MappedFile:
        """Map an existing store file; its size must be `file_size`."""
        name = os.path.basename(path)
        start = offset_from_name(name)
        if start is None:
            raise StoreError(f"{path} is not named by a 20-digit offset")
        size = os.path.getsize(path)
        if size != file_size:
            raise StoreError(f"{path} is {size} bytes, expected {file_size} (mappedFileSize changed?)")
        fd = os.open(path, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, file_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, start, file_size, fd, mm, 0, reserve_step)

    # --- positions -----------------------------------------------------------

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def end_offset(self) -> int:
        """Global offset just past the last byte written."""
        return self.file_from_offset + self.wrote_position

    def set_positions(self, position: int) -> None:
        """Declare the first `position` bytes valid and flushed (recovery, truncation)."""
        with _POSITIONS:
            self._cuts += 1
            self.wrote_position = position
            self.flushed_position = position

    # --- writing -------------------------------------------------------------

    def reserve(self, end: int) -> None:
        """Make sure the blocks of the first `end` bytes are allocated, reserving in
        `reserve_step` steps. Raises StoreError (nothing written) on a full disk."""
        if end <= self.reserved:
            return
        if end > self.file_size:
            raise StoreError(f"cannot reserve {end} bytes in {self.path} of {self.file_size}")
        step = self.reserve_step
        target = min(self.file_size, -(-end // step) * step)
        reserve_blocks(self.fd, self.reserved, target - self.reserved)
        self.reserved = target

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy `data` at the write position; return the global offset it landed at."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            raise StoreError(f"append of {len(data)} bytes past the end of {self.path}")
        if end > self.reserved:
            self.reserve(end)
        self.view[pos:end] = data
        self.wrote_position = end
        return self.file_from_offset + pos

    def flush(self) -> int:
        """fdatasync what was written; returns the position now durable. Blocking.

        The file's size never changes after creation, so fdatasync (which skips
        metadata such as mtime) is enough to make the data durable.
        """
        cuts = self._cuts
        target = self.wrote_position
        if target > self.flushed_position and not self._closed:
            try:
                os.fdatasync(self.fd)
            except OSError:
                if self._closed:  # deleted by cleaning meanwhile: nothing left to flush
                    return self.flushed_position
                raise
            with _POSITIONS:
                if self._cuts == cuts:  # else truncated meanwhile: `target` may lie past the cut
                    self.flushed_position = max(self.flushed_position, target)
        return self.flushed_position

    def sync(self) -> None:
        """fdatasync the file whatever the positions say (after in-place rewrites). Blocking."""
        if not self._closed:
            os.fdatasync(self.fd)
            self.flushed_position = self.wrote_position

    def truncate_after(self, position: int, reserve_whole: bool = False) -> None:
        """Make everything from `position` on zeros again and the write position `position`.

        Stale bytes past a recovered end must not survive: a later crash
        recovery could otherwise mistake an old record for a new one. Shrinking
        the file and growing it back lets the kernel zero the tail without us
        writing it (done only while no reader holds the file: at recovery).
        """
        keep = self.file_size if reserve_whole else self.reserved
        os.ftruncate(self.fd, position)
        os.ftruncate(self.fd, self.file_size)
        # Shrinking gave the blocks past `position` back: take back what was reserved
        # (all of it for a file reserved whole, such as a warmed CommitLog file).
        self.reserved = 0
        self.reserve(max(keep, position))
        self.set_positions(position)

    # --- reading -------------------------------------------------------------

    def slice(self, position: int, size: int) -> memoryview:
        """A view of `size` bytes at `position` (clipped to what was written)."""
        end = min(position + size, self.wrote_position)
        return self.view[position:end]

    # --- lifetime ------------------------------------------------------------

    def hold(self) -> bool:
        """Take a reader reference; False when the file is being deleted."""
        if not self._available:
            return False
        self._refs += 1
        return True

    def release(self) -> None:
        self._refs -= 1
        if self._refs <= 0 and not self._available:
            self._close_mapping()

    @property
    def is_available(self) -> bool:
        return self._available

    def shutdown(self, interval_forcibly_ms: int, now_ms: int | None = None) -> bool:
        """Begin deleting: refuse new readers, and close once readers are gone
        or `interval_forcibly_ms` after the first call. True once closed."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if self._available:
            self._available = False
            self._shutdown_at_ms = now
            self._refs -= 1
        if self._refs <= 0 or now - self._shutdown_at_ms >= interval_forcibly_ms:
            self._close_mapping()
        return self._closed

    def destroy(self, interval_forcibly_ms: int = 0, now_ms: int | None = None) -> bool:
        """Shut down and unlink the file. True when the file is gone."""
        if not self.shutdown(interval_forcibly_ms, now_ms):
            return False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        return True

    def close(self) -> None:
        """Unmap and close without deleting (store shutdown)."""
        self._available = False
        self._close_mapping()

    def _close_mapping(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.view.release()
        except BufferError:
            pass
        try:
            self.mm.close()
        except BufferError:
            # Slices handed to readers are still alive. The mapping stays until
            # they are garbage; the descriptor can go now.
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass

    def __repr__(self) -> str:
        return f"MappedFile({self.file_name}, wrote={self.wrote_position}, flushed={self.flushed_position})"


def reserve_blocks(fd: int, offset: int, size: int) -> None:
    """Allocate the blocks of `size` bytes at `offset` now: a full disk must fail here,
    as a clear StoreError, and never later as SIGBUS on a write to a mapped page."""
    if size <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            # Filesystems without fallocate (tmpfs on old kernels) still work, just slower.
            return
        raise StoreError(f"cannot reserve {size} bytes for a store file: {exc.strerror}") from exc


def _write_zeros(fd: int, size: int) -> None:
    for off in range(0, size, len(_ZEROS)):
        os.pwrite(fd, _ZEROS[: min(len(_ZEROS), size - off)], off)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
