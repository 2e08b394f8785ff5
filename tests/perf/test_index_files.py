"""Index files appear only whole: a crash while one is being built leaves nothing that breaks a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.store.indexfile import IndexFile, IndexService

T0 = 1_700_000_000_000


def test_a_file_left_half_built_by_a_crash_is_removed_at_load(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    svc = IndexService(str(directory), 8, 16)
    svc.load()
    svc.put("T", "k", "", 100, T0, 0)
    svc.close()
    (directory / "29991231235959999.tmp").write_bytes(b"")  # killed between create and sizing
    again = IndexService(str(directory), 8, 16)
    again.load()
    assert [p.name for p in directory.iterdir() if p.name.endswith(".tmp")] == []
    assert again.query_offsets("T", "k", 4, 0, 2**62).phy_offsets == [100]
    again.close()


def test_a_new_file_is_sized_and_headed_before_it_gets_its_name(tmp_path: Path) -> None:
    path = tmp_path / "20240101000000000"
    f = IndexFile.create(str(path), 8, 16, begin_phy_offset=500, begin_timestamp=T0)
    assert path.stat().st_size == 40 + 8 * 4 + 16 * 20
    assert not (tmp_path / "20240101000000000.tmp").exists()
    f.close()
    reopened = IndexFile.open(str(path), 8, 16)
    assert (reopened.begin_phy_offset, reopened.begin_timestamp) == (500, T0)
    reopened.close()
    with pytest.raises(FileExistsError):
        IndexFile.create(str(path), 8, 16)
