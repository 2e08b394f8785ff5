"""Atomic metadata files with a .bak fallback (§7.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orbitmq.store.config_file import load_with_backup, write_atomically


def test_a_write_replaces_the_file_and_keeps_the_previous_content_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    write_atomically(str(path), '{"v":1}')
    write_atomically(str(path), '{"v":2}')
    assert path.read_text() == '{"v":2}'
    assert (tmp_path / "config" / "topics.json.bak").read_text() == '{"v":1}'
    assert not (tmp_path / "config" / "topics.json.tmp").exists()


def test_loading_falls_back_to_the_bak_when_the_file_is_torn_or_missing(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    write_atomically(str(path), '{"offsetTable":{}}')
    write_atomically(str(path), '{"offsetTable":{"T@G":{"0":5}}}')
    path.write_text('{"offsetTable":{"T@')  # a torn write by something else
    assert load_with_backup(str(path), json.loads) == {"offsetTable": {}}
    path.unlink()
    assert load_with_backup(str(path), json.loads) == {"offsetTable": {}}


def test_loading_nothing_gives_none_and_two_corrupt_files_raise(tmp_path: Path) -> None:
    path = tmp_path / "delayOffset.json"
    assert load_with_backup(str(path), json.loads) is None
    path.write_text("{broken")
    (tmp_path / "delayOffset.json.bak").write_text("{also broken")
    with pytest.raises(ValueError):
        load_with_backup(str(path), json.loads)
