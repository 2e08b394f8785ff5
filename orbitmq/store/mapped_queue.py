"""A folder of equal-size mapped files forming one contiguous log (CommitLog or a ConsumeQueue).

File k starts at global offset `first.file_from_offset + k * file_size`, so
finding the file of an offset is one division. The queue creates the next
file on demand and, when asked, one file ahead in a worker thread so that an
append crossing into a new file does not wait for file creation.

Ownership: the list of files is owned by the event loop; the preallocation
thread only builds a `MappedFile` and hands it back through a future.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os

from orbitmq.errors import StoreError
from orbitmq.store.mapped_file import RESERVE_CHUNK, MappedFile, offset_from_name
from orbitmq.store.paths import store_path

log = logging.getLogger(__name__)


class MappedFileQueue:
    """Ordered mapped files of one log, with lookup by global offset."""

    def __init__(
        self,
        directory: str,
        file_size: int,
        *,
        warm: bool = False,
        sync_dir: bool = True,
        allocator: concurrent.futures.Executor | None = None,
        reserve: int | None = None,
        reserve_step: int = RESERVE_CHUNK,
    ) -> None:
        self.directory = directory
        self.file_size = file_size
        self.files: list[MappedFile] = []
        self._warm = warm
        self._sync_dir = sync_dir
        #: Bytes of each new file reserved at creation (None: the whole file; see MappedFile).
        self._reserve = reserve
        #: Step by which files reserve blocks ahead of their writes.
        self._reserve_step = reserve_step
        #: Where next files are built ahead of need (None: build on demand only).
        self._allocator = allocator
        self._next: tuple[int, concurrent.futures.Future[MappedFile]] | None = None
        #: Start of the first file `load` found cut short and repaired (None: none was).
        self.repaired_from: int | None = None

    # --- loading -------------------------------------------------------------

    def load(self) -> None:
        """Map every store file of the folder, in offset order. Files of the wrong size are refused."""
        os.makedirs(self.directory, exist_ok=True)
        names = sorted(n for n in os.listdir(self.directory) if offset_from_name(n) is not None)
        for name in names:
            path = store_path(self.directory, name)
            if os.path.getsize(path) == 0:
                # A file whose creation was cut short by a crash holds nothing yet.
                os.unlink(path)
                continue
            size = os.path.getsize(path)
            if size < self.file_size:
                # Cut short (a crash while creating it, or a damaged disk): grow it back;
                # the missing part reads as zeros and recovery ends the log there.
                log.warning("%s is %d bytes, expected %d: extending it with zeros", path, size, self.file_size)
                with open(path, "r+b") as f:
                    f.truncate(self.file_size)
                if self.repaired_from is None:
                    self.repaired_from = offset_from_name(name)
            mf = MappedFile.open_existing(path, self.file_size, self._reserve_step)
            if size < self.file_size and self._reserve is None:
                try:
                    mf.reserve(self.file_size)  # the grown part was sparse: a full disk fails here, not as SIGBUS
                except StoreError:
                    mf.close()
                    raise
            if self.files and mf.file_from_offset != self.files[-1].file_from_offset + self.file_size:
                raise StoreError(f"{path} does not follow {self.files[-1].path}: a file is missing")
            # Until recovery says otherwise every loaded file counts as full and flushed.
            mf.set_positions(self.file_size)
            self.files.append(mf)

    # --- lookup --------------------------------------------------------------

    @property
    def first(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        """Global offset of the first byte still on disk (0 when empty)."""
        return self.files[0].file_from_offset if self.files else 0

    @property
    def max_offset(self) -> int:
        """Global offset just past the last byte written."""
        return self.files[-1].end_offset if self.files else 0

    @property
    def flushed_offset(self) -> int:
        for mf in reversed(self.files):
            if mf.flushed_position:
                return mf.file_from_offset + mf.flushed_position
        return self.min_offset

    def find(self, offset: int) -> MappedFile | None:
        """The file holding global `offset`, or None when it is outside the log."""
        files = self.files
        if not files:
            return None
        index = (offset - files[0].file_from_offset) // self.file_size
        if 0 <= index < len(files):
            mf = files[index]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.file_size:
                return mf
        return None

    # --- growing -------------------------------------------------------------

    def get_last_for_append(self, start_offset: int = 0) -> MappedFile:
        """The file appends go to, creating the next one when the last is full.

        `start_offset` is where an empty log begins (a ConsumeQueue may start
        past zero); it is rounded down to a file boundary.
        """
        last = self.last
        if last is not None and not last.is_full:
            return last
        if last is None:
            start = start_offset - start_offset % self.file_size
        else:
            start = last.file_from_offset + self.file_size
        mf = self._take_preallocated(start)
        self.files.append(mf)
        self._preallocate(start + self.file_size)
        return mf

    def prepare_next(self) -> None:
        """Start building the file after the last one (after recovery, before appends need it)."""
        last = self.last
        if last is not None:
            self._preallocate(last.file_from_offset + self.file_size)

    def _take_preallocated(self, start: int) -> MappedFile:
        pending = self._next
        if pending is not None and pending[0] == start:
            self._next = None
            return pending[1].result()
        os.makedirs(self.directory, exist_ok=True)
        return MappedFile.create(
            self.directory, start, self.file_size, self._warm, self._sync_dir, self._reserve, self._reserve_step
        )

    def build_next(self) -> MappedFile:
        """Create the file after the last one now (before appends reach it) and keep it for
        `get_last_for_append`; a full disk fails here with StoreError. Blocking."""
        last = self.last
        start = last.file_from_offset + self.file_size if last is not None else 0
        pending = self._next
        if pending is not None and pending[0] == start:
            try:
                return pending[1].result()
            except BaseException:
                self._next = None
                raise
        self._discard_preallocated()
        mf = self._take_preallocated(start)
        done: concurrent.futures.Future[MappedFile] = concurrent.futures.Future()
        done.set_result(mf)
        self._next = (start, done)
        return mf

    def _preallocate(self, start: int) -> None:
        if self._allocator is None or (self._next is not None and self._next[0] == start):
            return
        self._discard_preallocated()
        future = self._allocator.submit(
            MappedFile.create, self.directory, start, self.file_size, self._warm, self._sync_dir, self._reserve,
            self._reserve_step,
        )
        self._next = (start, future)

    def _discard_preallocated(self) -> None:
        """Drop a file built ahead that will not be used (its offset is no longer next)."""
        if self._next is None:
            return
        _, future = self._next
        self._next = None
        try:
            mf = future.result()
        except (OSError, StoreError):
            return
        mf.close()
        try:
            os.unlink(mf.path)
        except FileNotFoundError:
            pass

    # --- shrinking -----------------------------------------------------------

    def truncate_dirty(self, offset: int) -> None:
        """Forget everything from global `offset` on: later files are deleted, the file
        holding `offset` is zeroed past it (recovery only, no readers yet)."""
        self._discard_preallocated()
        keep: list[MappedFile] = []
        for mf in self.files:
            end = mf.file_from_offset + self.file_size
            if end <= offset:
                keep.append(mf)
            elif mf.file_from_offset <= offset:
                mf.truncate_after(offset - mf.file_from_offset, reserve_whole=self._reserve is None)
                keep.append(mf)
            else:
                mf.destroy()
        self.files = keep

    def delete_first(self, interval_forcibly_ms: int, now_ms: int) -> bool:
        """Try to delete the oldest file; True once it is gone from the queue."""
        if not self.files:
            return False
        mf = self.files[0]
        if not mf.destroy(interval_forcibly_ms, now_ms):
            return False
        self.files.pop(0)
        return True

    def delete_all(self) -> None:
        self._discard_preallocated()
        for mf in self.files:
            mf.destroy()
        self.files = []
        try:
            os.rmdir(self.directory)
        except OSError:
            pass

    # --- flushing and closing -----------------------------------------------

    def dirty_files(self, from_offset: int) -> list[MappedFile]:
        """Files with bytes written at or past `from_offset` that are not yet flushed."""
        return [mf for mf in self.files if mf.wrote_position > mf.flushed_position
                and mf.file_from_offset + mf.wrote_position > from_offset]

    def flush(self) -> int:
        """fdatasync every file with unflushed bytes; returns the flushed global offset. Blocking."""
        for mf in list(self.files):
            if mf.wrote_position > mf.flushed_position:
                mf.flush()
        return self.flushed_offset

    def close(self) -> None:
        self._discard_preallocated()
        for mf in self.files:
            mf.close()

