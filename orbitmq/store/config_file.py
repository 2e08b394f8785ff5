"""Atomic JSON metadata files with a `.bak`, as RocketMQ keeps topics.json and friends (§7.5).

A write goes to `<file>.tmp` (fsynced), the current file is copied to
`<file>.bak`, then the tmp file is renamed over the file and the folder is
fsynced. A crash at any moment leaves either the old or the new content under
the file name, and the previous content in `.bak`. Loading falls back to the
`.bak` when the file is missing, empty or unreadable.

Callers (the broker's managers) serialize to text themselves (fastjson-style
bodies need their own writer); this module moves bytes safely.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def write_atomically(path: str, text: str | bytes) -> None:
    """Replace `path` with `text` so that a crash never leaves a torn file. Blocking."""
    data = text.encode() if isinstance(text, str) else text
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(path):
        bak = path + ".bak"
        shutil.copyfile(path, bak + ".tmp")
        with open(bak + ".tmp", "rb+") as f:
            os.fsync(f.fileno())
        os.replace(bak + ".tmp", bak)
    os.replace(tmp, path)
    fsync_dir(directory)


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist or is empty."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return text if text.strip() else None


def load_with_backup(path: str, parse: Callable[[str], T]) -> T | None:
    """Parse `path`, or its `.bak` when the file is missing, empty or fails to parse.

    Returns None when neither exists. Raises the parse error of the `.bak`
    when both exist and neither parses (a corrupt config must not be
    silently replaced by defaults).
    """
    first_error: Exception | None = None
    text = read_text(path)
    if text is not None:
        try:
            return parse(text)
        except (ValueError, TypeError, KeyError) as exc:
            first_error = exc
    backup = read_text(path + ".bak")
    if backup is not None:
        return parse(backup)
    if first_error is not None:
        raise first_error
    return None


def replace_file(path: str, data: bytes) -> None:
    """Replace `path` with `data` through a fsynced `<file>.tmp` and a rename, then fsync the
    folder (no `.bak` is kept). Blocking."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def fsync_dir(directory: str) -> None:
    """Make the names in `directory` (a rename, a new or removed file) survive a power loss."""
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["fsync_dir", "load_with_backup", "read_text", "replace_file", "write_atomically"]
