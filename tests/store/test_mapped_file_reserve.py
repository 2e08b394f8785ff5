"""A store file whose blocks cannot be reserved is refused at creation, never left sparse."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from orbitmq.errors import StoreError
from orbitmq.store import mapped_file
from orbitmq.store.mapped_file import MappedFile


def test_a_full_disk_refuses_the_new_file_and_leaves_nothing_behind(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def no_space(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(mapped_file.os, "posix_fallocate", no_space)
    with pytest.raises(StoreError, match="cannot reserve"):
        MappedFile.create(str(tmp_path), 0, 64 * 1024)
    assert os.listdir(tmp_path) == []


def test_a_filesystem_without_fallocate_still_gets_its_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def unsupported(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(mapped_file.os, "posix_fallocate", unsupported)
    mf = MappedFile.create(str(tmp_path), 0, 64 * 1024)
    try:
        assert os.path.getsize(mf.path) == 64 * 1024
    finally:
        mf.close()
