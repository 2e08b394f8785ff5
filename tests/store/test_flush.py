"""SYNC_FLUSH group commit and ASYNC_FLUSH background flushing."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from orbitmq.store.api import PutMessageStatus
from orbitmq.store.config import FlushDiskType
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config


async def test_concurrent_sync_puts_share_fsyncs(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH, mapped_file_size_commit_log=1 << 20)
    async with DefaultMessageStore(config) as store:
        assert store._group is not None
        calls = 0
        real_flush = store._group._flush

        def counting_flush() -> int:
            nonlocal calls
            calls += 1
            return real_flush()

        store._group._flush = counting_flush
        results = await asyncio.gather(*(store.put_message(message(body=b"x" * 1000)) for _ in range(64)))
        assert all(r.status is PutMessageStatus.PUT_OK for r in results)
        assert 1 <= calls < 64
        assert store._group.flushed_offset >= store.get_max_phy_offset()
        assert store.commitlog.log.flushed_offset == store.get_max_phy_offset()


async def test_a_sync_put_slower_than_the_timeout_is_stored_but_reported(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=20)
    async with DefaultMessageStore(config) as store:
        assert store._group is not None
        release = threading.Event()
        real_flush = store._group._flush

        def stuck_flush() -> int:
            release.wait(5)
            return real_flush()

        store._group._flush = stuck_flush
        try:
            result = await store.put_message(message(body=b"slow"))
        finally:
            release.set()
        assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT and result.is_ok
        with store.get_message("g", "T", 0, 0, 1) as got:
            assert got.message_count == 1


async def test_a_sync_put_that_does_not_wait_returns_before_the_fsync(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    async with DefaultMessageStore(config) as store:
        assert store._group is not None

        def failing_flush() -> int:
            raise AssertionError("WAIT=false must not wait for an fsync")

        store._group._flush = failing_flush
        result = await store.put_message(message(properties={"WAIT": "false"}))
        assert result.status is PutMessageStatus.PUT_OK


async def test_a_failed_fsync_makes_the_store_refuse_further_puts(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    async with DefaultMessageStore(config) as store:
        assert store._group is not None

        def broken_disk() -> int:
            raise OSError(5, "Input/output error")

        store._group._flush = broken_disk
        first = await store.put_message(message())
        assert first.status is PutMessageStatus.UNKNOWN_ERROR
        second = await store.put_message(message())
        assert second.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "Input/output error" in second.remark


async def test_async_flush_reaches_the_disk_in_the_background(tmp_path: Path) -> None:
    config = small_config(
        tmp_path, flush_interval_commit_log=10, flush_commit_log_least_pages=0, flush_interval_consume_queue=10,
        flush_consume_queue_least_pages=0,
    )
    async with DefaultMessageStore(config) as store:
        await store.put_message(message(body=b"y" * 500))
        end = store.get_max_phy_offset()
        for _ in range(300):
            if store.commitlog.log.flushed_offset >= end and store.checkpoint is not None and (
                store.checkpoint.logics_phy_offset >= end
            ):
                break
            await asyncio.sleep(0.01)
        assert store.commitlog.log.flushed_offset >= end
        assert store.checkpoint is not None and store.checkpoint.physic_flushed_offset >= end
        assert store.checkpoint.logics_phy_offset >= end


async def test_a_failed_background_flush_also_stops_puts(tmp_path: Path) -> None:
    config = small_config(tmp_path, flush_interval_commit_log=10, flush_commit_log_least_pages=0)
    async with DefaultMessageStore(config) as store:
        flusher = store._commitlog_flusher
        assert flusher is not None

        def broken_disk() -> None:
            raise OSError(5, "Input/output error")

        flusher._flush = lambda: broken_disk
        await store.put_message(message())
        for _ in range(200):
            if flusher.error is not None:
                break
            await asyncio.sleep(0.01)
        refused = await store.put_message(message())
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        flusher._flush = store._commitlog_flush_job


async def test_a_batch_waits_for_the_fsync_unless_its_wait_is_false(tmp_path: Path) -> None:
    from orbitmq.common.message import Message, MessageExtBatch
    from orbitmq.common.record import encode_batch
    from tests.store.helpers import BORN_HOST, STORE_HOST

    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    async with DefaultMessageStore(config) as store:
        assert store._group is not None
        flushes = 0
        real_flush = store._group._flush

        def counting_flush() -> int:
            nonlocal flushes
            flushes += 1
            return real_flush()

        store._group._flush = counting_flush
        for props, wait, expected in (("WAIT\x01false", False, 0), ("XWAIT\x01false\x02WAIT\x01true", True, 1)):
            batch = MessageExtBatch(
                topic="T", queue_id=0, body=encode_batch([Message("T", b"x")]), properties_string=props,
                born_host=BORN_HOST, store_host=STORE_HOST, wait_store=wait,
            )
            result = await store.put_messages(batch)
            assert result.status is PutMessageStatus.PUT_OK
            assert flushes == expected
