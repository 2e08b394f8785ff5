"""Disk blocks are reserved before mapped writes reach them (no SIGBUS on a full disk), and only
as far as the writes go: queues and index files never hold their whole size up front."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from orbitmq.common.message import Message, MessageExtBatch
from orbitmq.common.record import encode_batch
from orbitmq.errors import StoreError
from orbitmq.store import mapped_file
from orbitmq.store.api import PutMessageStatus
from orbitmq.store.indexfile import IndexService
from orbitmq.store.mapped_file import RESERVE_CHUNK, MappedFile
from orbitmq.store.mapped_queue import MappedFileQueue
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import BORN_HOST, STORE_HOST, message, small_config


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


def allocated(path: Path) -> int:
    """Bytes of disk a file really holds."""
    return os.stat(path).st_blocks * 512


async def test_creating_many_queues_does_not_reserve_their_whole_files(tmp_path: Path) -> None:
    """Issue 10: every new ConsumeQueue held its whole 5.7 MiB file, so creating topics filled the disk."""
    config = small_config(tmp_path, mapped_file_size_consume_queue=300_000 * 20, max_index_num=400_000)
    async with DefaultMessageStore(config) as store:
        for t in range(8):
            for q in range(8):
                assert (await store.put_message(message(topic=f"T{t}", queue_id=q, keys=f"k{t}"))).is_ok
        store.index._drain()  # type: ignore[union-attr]
        cq_files = list((tmp_path / "consumequeue").glob("*/*/*"))
        assert len(cq_files) == 64
        for f in cq_files:
            assert f.stat().st_size == 300_000 * 20
            assert allocated(f) <= RESERVE_CHUNK
        index_files = list((tmp_path / "index").iterdir())
        assert len(index_files) == 1
        index_size = index_files[0].stat().st_size
        assert allocated(index_files[0]) <= index_size // 4


async def test_a_queue_reserves_ahead_of_its_writes_as_it_grows(tmp_path: Path) -> None:
    per_chunk = RESERVE_CHUNK // 20
    config = small_config(
        tmp_path, mapped_file_size_consume_queue=300_000 * 20, mapped_file_size_commit_log=4 << 20,
        max_message_size=64,
    )
    async with DefaultMessageStore(config) as store:
        for _ in range(per_chunk + 10):
            assert (await store.put_message(message(body=b"x"))).is_ok
        cq = store.queues.find("T", 0)
        assert cq is not None and cq.log.last is not None
        mf = cq.log.last
        assert mf.wrote_position == (per_chunk + 10) * 20
        assert mf.wrote_position <= mf.reserved <= 2 * RESERVE_CHUNK
        assert allocated(Path(mf.path)) >= mf.reserved - 4096


async def test_a_full_disk_refuses_a_put_before_anything_is_written(tmp_path: Path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    async with DefaultMessageStore(small_config(tmp_path)) as store:
        assert (await store.put_message(message(topic="Old"))).is_ok
        end = store.get_max_phy_offset()

        def no_space(fd: int, offset: int, size: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(mapped_file.os, "posix_fallocate", no_space)
        with caplog.at_level(logging.ERROR, logger="orbitmq.store.store"):
            for _ in range(3):
                refused = await store.put_message(message(topic="New"))
                assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
                assert "disk full" in refused.remark
            items = [Message("New", b"b%d" % i) for i in range(3)]
            batch = MessageExtBatch(
                topic="New", queue_id=1, body=encode_batch(items), born_host=BORN_HOST, store_host=STORE_HOST
            )
            assert (await store.put_messages(batch)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert len([r for r in caplog.records if "disk full" in r.getMessage()]) == 1, "one line, not one per put"
        assert store.get_max_phy_offset() == end
        assert store.get_max_offset_in_queue("New", 0) == 0
        assert store.get_max_offset_in_queue("New", 1) == 0
        # A queue with reserved room left still takes messages.
        assert (await store.put_message(message(topic="Old"))).is_ok
        monkeypatch.undo()
        assert (await store.put_message(message(topic="New"))).is_ok
        with store.get_message("g", "New", 0, 0, 8) as got:
            assert got.message_count == 1


def test_a_commit_log_file_cut_back_by_recovery_stays_reserved_whole(tmp_path: Path) -> None:
    """CommitLog appends do not check `reserved`: every block of their file must stay allocated."""
    size = 1 << 20
    first = MappedFileQueue(str(tmp_path / "commitlog"), size)
    first.get_last_for_append().append(b"x" * 300_000)
    first.close()
    whole = MappedFileQueue(str(tmp_path / "commitlog"), size)  # as at a restart: loaded, not created
    whole.load()
    chunked = MappedFileQueue(str(tmp_path / "cq"), size, reserve=0)
    chunked.get_last_for_append().append(b"x" * 300_000)
    try:
        for log in (whole, chunked):
            log.truncate_dirty(1000)
        assert allocated(Path(whole.files[0].path)) >= size
        assert whole.files[0].reserved == size
        # A queue file keeps what it had reserved (5 chunks for 300,000 bytes), no more.
        assert chunked.files[0].reserved == 5 * RESERVE_CHUNK
        assert allocated(Path(chunked.files[0].path)) <= 5 * RESERVE_CHUNK
    finally:
        whole.close()
        chunked.close()


def test_a_commit_log_file_found_short_is_reserved_again_when_loaded(tmp_path: Path) -> None:
    size = 1 << 20
    folder = tmp_path / "commitlog"
    folder.mkdir()
    (folder / mapped_file.file_name_for(0)).write_bytes(b"\0" * 4096)
    log = MappedFileQueue(str(folder), size)
    try:
        log.load()
        assert allocated(Path(log.files[0].path)) >= size
    finally:
        log.close()


def test_an_index_without_disk_for_its_next_entries_drops_keys_with_one_log_line(
    tmp_path: Path, monkeypatch, caplog  # type: ignore[no-untyped-def]
) -> None:
    service = IndexService(str(tmp_path / "index"), 64, 100_000)
    try:
        service.put("T", "k0", "", 0, 1_700_000_000_000, 0)
        entries_reserved = RESERVE_CHUNK // 20

        def no_space(fd: int, offset: int, size: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(mapped_file.os, "posix_fallocate", no_space)
        with caplog.at_level(logging.ERROR, logger="orbitmq.store.indexfile"):
            for i in range(1, entries_reserved + 50):
                service.put("T", f"k{i}", "", i * 100, 1_700_000_000_000 + i, 0)
        assert len([r for r in caplog.records if "keys not written" in r.getMessage()]) == 1
        assert service.query_offsets("T", "k1", 4, 0, 2**62).phy_offsets == [100], "reserved entries were written"
    finally:
        service.close()
