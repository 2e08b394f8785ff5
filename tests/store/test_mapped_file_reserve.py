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
from orbitmq.store import commitlog, mapped_file
from orbitmq.store.api import PutMessageStatus
from orbitmq.store.indexfile import IndexService
from orbitmq.store.mapped_file import COMMIT_LOG_RESERVE_STEP, RESERVE_CHUNK, MappedFile
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


def test_a_file_reserved_whole_stays_reserved_whole_when_cut_back_by_recovery(tmp_path: Path) -> None:
    """A file reserved whole (a warmed CommitLog file) keeps every block through a truncation;
    a file reserved in steps keeps what it had."""
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


def test_a_file_reserved_whole_found_short_is_reserved_again_when_loaded(tmp_path: Path) -> None:
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


async def test_an_idle_commit_log_holds_one_step_of_disk_not_its_whole_file(tmp_path: Path) -> None:
    """A broker with RocketMQ's 1 GiB CommitLog files held 1 GiB of disk per file before its first
    message: a few test brokers filled the disk. Blocks now follow the appends a step ahead."""
    size = 16 * COMMIT_LOG_RESERVE_STEP
    async with DefaultMessageStore(small_config(tmp_path, mapped_file_size_commit_log=size)) as store:
        assert (await store.put_message(message())).is_ok
        first = tmp_path / "commitlog" / mapped_file.file_name_for(0)
        assert first.stat().st_size == size
        # The next file may be under construction ahead of need: it holds no more than one step either.
        for f in (tmp_path / "commitlog").iterdir():
            assert allocated(f) <= COMMIT_LOG_RESERVE_STEP


async def test_the_commit_log_reserves_ahead_of_its_appends_and_across_files(
    tmp_path: Path, monkeypatch  # type: ignore[no-untyped-def]
) -> None:
    step = 4096
    monkeypatch.setattr(commitlog, "COMMIT_LOG_RESERVE_STEP", step)
    config = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024, max_message_size=2048)
    async with DefaultMessageStore(config) as store:
        for i in range(120):  # about three files of 1 KiB records
            assert (await store.put_message(message(body=b"%04d" % i + b"x" * 1000))).is_ok
            for mf in store.commitlog.log.files:
                assert mf.wrote_position <= mf.reserved <= mf.file_size
                assert mf.reserved - mf.wrote_position <= step or mf.reserved == mf.file_size
        assert len(store.commitlog.log.files) >= 2
        for mf in store.commitlog.log.files:
            assert allocated(Path(mf.path)) >= mf.reserved - 4096
        assert store.get_max_offset_in_queue("T", 0) == 120
        with store.get_message("g", "T", 0, 115, 5) as got:
            assert got.message_count == 5


async def test_a_full_disk_at_a_commit_log_step_refuses_the_put_and_writes_nothing(
    tmp_path: Path, monkeypatch  # type: ignore[no-untyped-def]
) -> None:
    step = 4096
    monkeypatch.setattr(commitlog, "COMMIT_LOG_RESERVE_STEP", step)
    config = small_config(tmp_path, mapped_file_size_commit_log=64 * 1024, max_message_size=2048)
    async with DefaultMessageStore(config) as store:
        # Fill the first step until the next record would cross it.
        assert (await store.put_message(message(body=b"y" * 1000))).is_ok
        while True:
            mf = store.commitlog.log.last
            assert mf is not None
            if mf.wrote_position + 1200 > mf.reserved:
                break
            assert (await store.put_message(message(body=b"y" * 1000))).is_ok
        end = store.get_max_phy_offset()
        count = store.get_max_offset_in_queue("T", 0)
        real_fallocate = os.posix_fallocate

        def no_space(fd: int, offset: int, size: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(mapped_file.os, "posix_fallocate", no_space)
        refused = await store.put_message(message(body=b"z" * 1000))
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "disk full" in refused.remark
        items = [Message("T", b"b" * 600) for _ in range(2)]
        batch = MessageExtBatch(topic="T", queue_id=0, body=encode_batch(items), born_host=BORN_HOST, store_host=STORE_HOST)
        assert (await store.put_messages(batch)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.get_max_phy_offset() == end
        assert store.get_max_offset_in_queue("T", 0) == count
        monkeypatch.setattr(mapped_file.os, "posix_fallocate", real_fallocate)
        assert (await store.put_message(message(body=b"z" * 1000))).is_ok
        assert (await store.put_messages(batch)).is_ok
        with store.get_message("g", "T", 0, count, 8) as got:
            assert got.message_count == 3
