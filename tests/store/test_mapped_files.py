"""Mapped files and their queues: naming, lookup, growth, truncation, reference counts."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import pytest

from orbitmq.errors import StoreError
from orbitmq.store.consumequeue import ConsumeQueue
from orbitmq.store.mapped_file import MappedFile, file_name_for, offset_from_name
from orbitmq.store.mapped_queue import MappedFileQueue


def test_files_are_named_by_their_20_digit_start_offset() -> None:
    assert file_name_for(1073741824) == "00000000001073741824"
    assert offset_from_name("00000000001073741824") == 1073741824
    assert offset_from_name("abc") is None
    assert offset_from_name("0000000000107374182x") is None


def test_appends_grow_the_queue_and_offsets_find_their_file(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path), 1024)
    for i in range(5):
        mf = queue.get_last_for_append()
        assert mf.append(bytes([i]) * 512) == i * 512
    assert [mf.file_name for mf in queue.files] == [file_name_for(0), file_name_for(1024), file_name_for(2048)]
    assert queue.max_offset == 2560
    found = queue.find(1500)
    assert found is not None and found.file_from_offset == 1024
    assert bytes(found.slice(1500 - 1024, 4)) == b"\x02\x02\x02\x02"
    assert queue.find(4096) is None and queue.find(-1) is None
    with pytest.raises(StoreError):
        queue.last.append(bytes(1000))  # type: ignore[union-attr]
    queue.close()


def test_the_next_file_is_prepared_ahead_of_need(tmp_path: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        queue = MappedFileQueue(str(tmp_path), 4096, allocator=pool, warm=True)
        queue.get_last_for_append().append(b"x")
        pool.submit(lambda: None).result()  # the allocation ran before this
        assert (tmp_path / file_name_for(4096)).stat().st_size == 4096
        queue.files[0].wrote_position = 4096
        second = queue.get_last_for_append()
        assert second.file_from_offset == 4096
        queue.close()


def test_truncating_a_dirty_tail_zeroes_it_and_drops_later_files(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path), 1024)
    for _ in range(3):
        queue.get_last_for_append().append(b"\xff" * 1024)
    queue.truncate_dirty(1500)
    assert len(queue.files) == 2 and queue.max_offset == 1500
    assert not (tmp_path / file_name_for(2048)).exists()
    raw = (tmp_path / file_name_for(1024)).read_bytes()
    assert raw[:476] == b"\xff" * 476 and raw[476:] == bytes(548)
    queue.close()


def test_loading_refuses_a_missing_file_in_the_middle(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path), 1024)
    for _ in range(3):
        queue.get_last_for_append().append(b"\x01" * 1024)
    queue.close()
    (tmp_path / file_name_for(1024)).unlink()
    with pytest.raises(StoreError, match="missing"):
        MappedFileQueue(str(tmp_path), 1024).load()


def test_a_held_file_is_deleted_only_after_release_or_the_forcible_interval(tmp_path: Path) -> None:
    mf = MappedFile.create(str(tmp_path), 0, 4096)
    mf.append(b"payload")
    assert mf.hold()
    view = mf.slice(0, 7)
    assert not mf.destroy(interval_forcibly_ms=1000, now_ms=0)
    assert not mf.hold(), "no new readers once deletion began"
    assert (tmp_path / file_name_for(0)).exists()
    assert mf.destroy(interval_forcibly_ms=1000, now_ms=1000)
    assert not (tmp_path / file_name_for(0)).exists()
    assert bytes(view) == b"payload"
    other = MappedFile.create(str(tmp_path), 4096, 4096)
    assert other.hold()
    other.release()
    assert other.destroy(interval_forcibly_ms=1000, now_ms=0)


def test_consume_queue_starting_past_zero_pads_its_first_file_with_blanks(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path), 20 * 10)
    cq.put(4096, 100, 7, 13)
    cq.put(4196, 100, 8, 14)
    assert (cq.min_offset_in_queue, cq.max_offset_in_queue) == (13, 15)
    assert cq.entry(12) is None
    assert cq.entry(14) == (4196, 100, 8)
    raw = (tmp_path / "T" / "0" / file_name_for(200)).read_bytes()
    assert raw[:20] == bytes(8) + b"\x7f\xff\xff\xff" + bytes(8)
    cq.truncate_past(4196)
    assert cq.max_offset_in_queue == 14
    cq.close()
