"""The epoch file: which master term wrote which part of the CommitLog (controller mode).

Every time a broker group elects a master, the master term (epoch) grows and
the new master notes where its term starts in its CommitLog. Replicas keep
the same list; comparing lists tells a replica how much of its log the
current master shares with it (`find_consistent_point`), and so what it must
cut before it copies again. RocketMQ 5 keeps this list in `epochFileCheckpoint`
in the store root, in this text format:

    <entry count>
    <CRC32 of the entry lines, each with its newline, masked with 0x7FFFFFFF>
    <epoch>-<start offset>          one line per term, oldest first

Entries grow strictly in epoch and never go back in start offset; an entry
ends where the next one starts and the last one is open. A write goes to a
temporary file that is fsynced and renamed over the old one (and the folder
fsynced), so a crash leaves either the old list or the new one, never a torn
one; RocketMQ's `.bak` copy is read as a fallback when the file itself is
missing or fails its count or CRC check (a file RocketMQ wrote).

Pure file logic, blocking; `find_consistent_point` has no I/O at all.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from orbitmq.errors import StoreError
from orbitmq.store.config_file import replace_file

#: File name under the store root (RocketMQ's storePathEpochFile default).
EPOCH_FILE_NAME = "epochFileCheckpoint"


class EpochEntry(NamedTuple):
    """Master term `epoch` began writing at CommitLog offset `start_offset`."""

    epoch: int
    start_offset: int


class EpochRange(NamedTuple):
    """A term with its end: the CommitLog bytes [start_offset, end_offset) were written in `epoch`."""

    epoch: int
    start_offset: int
    end_offset: int


class EpochError(StoreError):
    """An epoch change the file refuses (a lower epoch, a start going backwards)."""


def encode_epochs(entries: Sequence[EpochEntry]) -> bytes:
    body = "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries).encode("ascii")
    crc = zlib.crc32(body) & 0x7FFFFFFF
    return f"{len(entries)}\n{crc}\n".encode("ascii") + body


def decode_epochs(data: bytes) -> list[EpochEntry] | None:
    """The entries of a file's bytes, or None when they are not a whole, valid file."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if len(lines) < 2:
        return None
    try:
        count = int(lines[0])
        crc = int(lines[1])
    except ValueError:
        return None
    entry_lines = lines[2 : 2 + count]
    if count < 0 or len(entry_lines) != count:
        return None
    body = "".join(line + "\n" for line in entry_lines).encode("ascii")
    if crc != 0 and crc != zlib.crc32(body) & 0x7FFFFFFF:
        return None
    entries: list[EpochEntry] = []
    for line in entry_lines:
        epoch_text, sep, offset_text = line.partition("-")
        if not sep:
            return None
        try:
            entry = EpochEntry(int(epoch_text), int(offset_text))
        except ValueError:
            return None
        if entry.epoch < 0 or entry.start_offset < 0:
            return None
        if entries and (entry.epoch <= entries[-1].epoch or entry.start_offset < entries[-1].start_offset):
            return None
        entries.append(entry)
    return entries


def with_ends(entries: Sequence[EpochEntry], max_offset: int) -> list[EpochRange]:
    """The terms with their end offsets; the last ends at `max_offset`."""
    out: list[EpochRange] = []
    for i, e in enumerate(entries):
        end = entries[i + 1].start_offset if i + 1 < len(entries) else max(max_offset, e.start_offset)
        out.append(EpochRange(e.epoch, e.start_offset, end))
    return out


def find_consistent_point(
    local: Sequence[EpochEntry], local_max: int, master: Sequence[EpochEntry], master_max: int
) -> int:
    """Where this replica's CommitLog stops agreeing with the master's; -1 when nothing matches.

    Walks the local terms newest first and takes the first one the master has
    with the same start offset; both logs agree up to the smaller of the two
    ends of that term. A replica with no terms has nothing to compare: it gets
    its own max offset back (it is not cut), as RocketMQ does.
    """
    if not local:
        return local_max
    theirs = {r.epoch: r for r in with_ends(master, master_max)}
    for mine in reversed(with_ends(local, local_max)):
        other = theirs.get(mine.epoch)
        if other is not None and other.start_offset == mine.start_offset:
            return min(mine.end_offset, other.end_offset)
    return -1


class EpochFile:
    """The epoch file of one store (see the module docstring). Not thread-safe: one owner."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[EpochEntry] = self._load()

    def _load(self) -> list[EpochEntry]:
        for candidate in (self.path, self.path + ".bak"):
            try:
                with open(candidate, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            entries = decode_epochs(data)
            if entries is not None:
                return entries
        return []

    # --- reading -------------------------------------------------------------

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def last(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def last_epoch(self) -> int:
        """The newest term, 0 when there is none."""
        return self._entries[-1].epoch if self._entries else 0

    def find(self, epoch: int) -> EpochEntry | None:
        for e in self._entries:
            if e.epoch == epoch:
                return e
        return None

    def ranges(self, max_offset: int) -> list[EpochRange]:
        return with_ends(self._entries, max_offset)

    def epoch_at(self, offset: int) -> int:
        """The term that wrote CommitLog `offset` (the newest started at or before it); 0 if none."""
        found = 0
        for e in self._entries:
            if e.start_offset <= offset:
                found = e.epoch
            else:
                break
        return found

    # --- changing ------------------------------------------------------------

    def append(self, epoch: int, start_offset: int) -> bool:
        """Note that term `epoch` starts at `start_offset`; fsynced before it returns.

        The same entry again is a no-op (False). A lower or equal epoch with another
        start, or a start before the last term's, raises EpochError: the store must
        never go back to an older master term.
        """
        last = self.last
        if last is not None:
            if epoch == last.epoch and start_offset == last.start_offset:
                return False
            if epoch <= last.epoch:
                raise EpochError(f"epoch {epoch} is not above the last epoch {last.epoch} of this store")
            if start_offset < last.start_offset:
                raise EpochError(
                    f"epoch {epoch} would start at {start_offset}, before epoch {last.epoch} (at {last.start_offset})"
                )
        if epoch < 0 or start_offset < 0:
            raise EpochError(f"epoch {epoch} at offset {start_offset}: both must be non-negative")
        self._write([*self._entries, EpochEntry(epoch, start_offset)])
        return True

    def truncate_from(self, offset: int) -> int:
        """Forget the terms that start at or past `offset` (their bytes were cut); returns how many."""
        keep = [e for e in self._entries if e.start_offset < offset]
        dropped = len(self._entries) - len(keep)
        if dropped:
            self._write(keep)
        return dropped

    def drop_before(self, min_offset: int) -> int:
        """Forget the terms that end at or below `min_offset` (their files were deleted), keeping the last."""
        ranges = self.ranges(min_offset)
        keep = [EpochEntry(r.epoch, r.start_offset) for r in ranges[:-1] if r.end_offset > min_offset]
        if ranges:
            keep.append(EpochEntry(ranges[-1].epoch, ranges[-1].start_offset))
        dropped = len(self._entries) - len(keep)
        if dropped:
            self._write(keep)
        return dropped

    def replace(self, entries: Iterable[EpochEntry]) -> None:
        """Write this list as is (tests, repairs); it must be a valid list."""
        new = list(entries)
        if decode_epochs(encode_epochs(new)) != new:
            raise EpochError("epoch entries must grow strictly in epoch and never go back in offset")
        self._write(new)

    def _write(self, entries: list[EpochEntry]) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        replace_file(self.path, encode_epochs(entries))
        self._entries = entries


__all__ = [
    "EPOCH_FILE_NAME",
    "EpochEntry",
    "EpochError",
    "EpochFile",
    "EpochRange",
    "decode_epochs",
    "encode_epochs",
    "find_consistent_point",
    "with_ends",
]
