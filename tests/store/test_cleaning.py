"""Cleaning expired files, disk watermarks, and readers delaying deletion (injected clock and disk use)."""

from __future__ import annotations

import time
from pathlib import Path

from orbitmq.common.record import iter_records
from orbitmq.store.api import GetMessageStatus, PutMessageStatus
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import FakeClock, message, small_config

HOUR_MS = 3_600_000


class FakeDisk:
    """Disk use as a function of how many CommitLog files exist, or a fixed figure."""

    def __init__(self, store_root: Path, fixed: float | None = None) -> None:
        self.root = store_root
        self.fixed = fixed
        self.per_file = 0.0
        self.base = 0.1
        self.store: DefaultMessageStore | None = None

    def __call__(self, path: str) -> float:
        if self.fixed is not None or self.store is None:
            return self.fixed or 0.0
        return self.base + self.per_file * len(self.store.commitlog.log.files)


def hour_of(clock: FakeClock) -> str:
    return str(time.localtime(clock.now_ms / 1000).tm_hour)


def other_hour(clock: FakeClock) -> str:
    return str((time.localtime(clock.now_ms / 1000).tm_hour + 12) % 24)


async def fill_files(store: DefaultMessageStore, n: int) -> None:
    for i in range(n):
        result = await store.put_message(message(body=b"%05d" % i + b"." * 400, queue_id=i % 2))
        assert result.is_ok


def commit_log_names(store: DefaultMessageStore) -> list[str]:
    """Files in the CommitLog (not counting the next one, created ahead of need)."""
    return [mf.file_name for mf in store.commitlog.log.files]


async def test_expired_files_go_at_the_delete_hour_and_queues_follow(tmp_path: Path) -> None:
    clock = FakeClock()
    disk = FakeDisk(tmp_path, fixed=0.2)
    config = small_config(
        tmp_path, file_reserved_time=1, delete_when=hour_of(FakeClock(clock.now_ms + 2 * HOUR_MS)),
        mapped_file_size_consume_queue=20 * 10,
    )
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=disk) as store:
        await fill_files(store, 100)  # ~19 records per 8 KiB file: 6 files
        files_before = commit_log_names(store)
        assert len(files_before) >= 5
        clock.advance(30 * 60_000)
        assert await store.cleaner.clean_once() == 0, "nothing has expired yet"
        clock.advance(90 * 60_000)
        deleted = await store.cleaner.clean_once()
        assert deleted == len(files_before) - 1, "every file but the one being appended to"
        assert commit_log_names(store) == files_before[-1:]
        assert min(p.name for p in (tmp_path / "commitlog").iterdir()) == files_before[-1]
        assert store.get_min_phy_offset() == int(files_before[-1])
        for queue_id in (0, 1):
            min_offset = store.get_min_offset_in_queue("T", queue_id)
            assert min_offset > 0
            first_phys = store.get_commit_log_offset_in_queue("T", queue_id, min_offset)
            assert first_phys >= store.get_min_phy_offset()
            old = store.get_message("g", "T", queue_id, 0, 1)
            assert (old.status, old.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, min_offset)
            with store.get_message("g", "T", queue_id, min_offset, 32) as got:
                assert got.status is GetMessageStatus.FOUND
            cq_files = sorted((tmp_path / "consumequeue" / "T" / str(queue_id)).iterdir())
            assert int(cq_files[0].name) <= min_offset * 20 < int(cq_files[0].name) + 200
        assert store.get_offset_in_queue_by_time("T", 0, 0) == store.get_min_offset_in_queue("T", 0)


async def test_nothing_is_deleted_outside_the_delete_hour_while_the_disk_has_room(tmp_path: Path) -> None:
    clock = FakeClock()
    config = small_config(
        tmp_path, file_reserved_time=1, delete_when=other_hour(FakeClock(clock.now_ms + 5 * HOUR_MS))
    )
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.5)) as store:
        await fill_files(store, 60)
        files = commit_log_names(store)
        clock.advance(5 * HOUR_MS)
        assert await store.cleaner.clean_once() == 0
        assert commit_log_names(store) == files


async def test_a_full_disk_deletes_expired_files_at_any_hour_until_use_drops(tmp_path: Path) -> None:
    clock = FakeClock()
    disk = FakeDisk(tmp_path)
    config = small_config(tmp_path, file_reserved_time=1, delete_when=other_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=disk) as store:
        await fill_files(store, 120)
        files = len(commit_log_names(store))
        assert files >= 6
        clock.advance(2 * HOUR_MS)
        # Each file counts 10 %: over 75 % (the max used ratio) outside the delete hour.
        disk.per_file = 0.1
        disk.store = store
        deleted = await store.cleaner.clean_once()
        assert deleted == files - 1, "every expired file but the one being appended to"
        assert not store.cleaner.disk_full


async def test_forced_cleaning_never_deletes_retained_messages_and_refuses_puts_instead(tmp_path: Path) -> None:
    """Issue 10: past the clean-forcibly ratio, RocketMQ deletes the oldest files even within
    fileReservedTime; here nothing retained goes, and the store refuses puts instead."""
    clock = FakeClock()
    disk = FakeDisk(tmp_path, fixed=0.87)  # over clean-forcibly (85 %), under the warning level (90 %)
    config = small_config(tmp_path, file_reserved_time=72, delete_when=other_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=disk) as store:
        await fill_files(store, 120)
        files = commit_log_names(store)
        assert len(files) >= 6
        clock.advance(71 * HOUR_MS)
        assert await store.cleaner.clean_once() == 0
        assert commit_log_names(store) == files
        assert store.get_min_phy_offset() == 0
        with store.get_message("g", "T", 0, 0, 1) as first:
            assert first.status is GetMessageStatus.FOUND
        refused = await store.put_message(message())
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "retention" in refused.remark
        # The disk falls back under the ratio (an operator freed space): puts resume.
        disk.fixed = 0.5
        store.cleaner.check_disk()
        assert (await store.put_message(message())).status is PutMessageStatus.PUT_OK
        # Once the files expire, a full disk lets them go (all but the one appended to).
        disk.fixed = 0.87
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.clean_once() == len(files) - 1
        assert commit_log_names(store) == files[-1:]
        assert store.cleaner.disk_full, "still past the ratio with only the current file left"


async def test_puts_are_refused_above_the_warning_level_and_resume_below(tmp_path: Path) -> None:
    disk = FakeDisk(tmp_path, fixed=0.95)
    async with DefaultMessageStore(small_config(tmp_path), disk_usage=disk) as store:
        store.cleaner.check_disk()
        refused = await store.put_message(message())
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "disk is full" in refused.remark
        disk.fixed = 0.5
        store.cleaner.check_disk()
        accepted = await store.put_message(message())
        assert accepted.status is PutMessageStatus.PUT_OK


async def test_a_reader_holding_a_file_delays_its_deletion_up_to_the_forcible_interval(tmp_path: Path) -> None:
    clock = FakeClock()
    config = small_config(
        tmp_path, file_reserved_time=1, delete_when=other_hour(clock), destroy_mapped_file_interval_forcibly=60_000
    )
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        await fill_files(store, 60)
        first_file = commit_log_names(store)[0]
        held = store.get_message("g", "T", 0, 0, 1)
        assert held.status is GetMessageStatus.FOUND
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.clean_once(manual=True) == 0
        assert first_file in commit_log_names(store)
        # Readers can no longer start on the file being deleted.
        assert store.get_min_phy_offset() > 0
        assert store.get_message("g", "T", 0, 0, 1).status is not GetMessageStatus.FOUND
        clock.advance(61_000)
        assert await store.cleaner.clean_once(manual=True) >= 1
        assert first_file not in commit_log_names(store)
        assert not (tmp_path / "commitlog" / first_file).exists()
        # The held slice still reads the old bytes: the mapping outlives the file.
        assert [m.body[:5] for m in iter_records(held.buffers[0])] == [b"00000"]
        held.release()


async def test_a_released_reader_lets_the_file_go_on_the_next_round(tmp_path: Path) -> None:
    clock = FakeClock()
    config = small_config(tmp_path, file_reserved_time=1, delete_when=other_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        await fill_files(store, 60)
        held = store.get_message("g", "T", 0, 0, 1)
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.clean_once(manual=True) == 0
        held.release()
        assert await store.cleaner.clean_once(manual=True) >= 1


async def test_a_restart_after_cleaning_keeps_the_advanced_min_offsets(tmp_path: Path) -> None:
    clock = FakeClock()
    config = small_config(tmp_path, file_reserved_time=1, delete_when=other_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        await fill_files(store, 80)
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.clean_once(manual=True) > 0
        min_phys = store.get_min_phy_offset()
        min_offsets = [store.get_min_offset_in_queue("T", q) for q in (0, 1)]
        max_offsets = [store.get_max_offset_in_queue("T", q) for q in (0, 1)]
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        assert store.get_min_phy_offset() == min_phys
        assert [store.get_min_offset_in_queue("T", q) for q in (0, 1)] == min_offsets
        assert [store.get_max_offset_in_queue("T", q) for q in (0, 1)] == max_offsets
        with store.get_message("g", "T", 0, min_offsets[0], 32) as got:
            assert got.status is GetMessageStatus.FOUND
            first = next(iter_records(got.buffers[0]))
            assert first.queue_offset == min_offsets[0]
        result = await store.put_message(message(queue_id=1))
        assert result.append_result is not None and result.append_result.logics_offset == max_offsets[1]


async def test_retention_and_delete_hour_changed_at_run_time_take_effect_on_the_next_round(tmp_path: Path) -> None:
    """UPDATE_BROKER_CONFIG's fileReservedTime/deleteWhen reach the running cleaner (RocketMQ's
    CleanCommitLogService reads MessageStoreConfig on every round)."""
    import dataclasses

    clock = FakeClock()
    config = small_config(tmp_path, file_reserved_time=72, delete_when=other_hour(FakeClock(clock.now_ms + 5 * HOUR_MS)))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        await fill_files(store, 60)
        files = commit_log_names(store)
        clock.advance(5 * HOUR_MS)
        assert await store.cleaner.clean_once() == 0, "within 72 h and outside the delete hour"
        store.update_config(dataclasses.replace(config, file_reserved_time=1, delete_when=hour_of(clock)))
        assert await store.cleaner.clean_once() == len(files) - 1
        store.update_config(dataclasses.replace(config, mapped_file_size_commit_log=1 << 20, file_reserved_time=5))
        assert store.config.file_reserved_time == 5
        assert store.config.mapped_file_size_commit_log == config.mapped_file_size_commit_log, "fixed at start"


async def test_deleting_commit_log_files_drops_the_epochs_that_ended_in_them(tmp_path: Path) -> None:
    clock = FakeClock()
    config = small_config(tmp_path, file_reserved_time=1, delete_when=other_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        store.epochs.append(1, 0)
        await fill_files(store, 30)
        store.epochs.append(2, store.get_max_phy_offset())
        await fill_files(store, 70)
        store.epochs.append(3, store.get_max_phy_offset())
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.clean_once(manual=True) > 0
        assert store.epochs.entries[0].epoch == 2, "epoch 1 ended below the oldest byte kept"
        assert [e.epoch for e in store.epochs.entries] == [2, 3]


async def test_clean_resource_interval_changed_at_run_time_ends_the_wait_under_way(tmp_path: Path) -> None:
    """cleanResourceInterval is read for each wait (RocketMQ's cleaning thread sleeps it anew each
    round): shortening it from an hour makes the next round come at once, not an hour later."""
    import asyncio
    import dataclasses

    config = small_config(tmp_path)  # a round an hour
    async with DefaultMessageStore(config, disk_usage=FakeDisk(tmp_path, fixed=0.97)) as store:
        await asyncio.sleep(0)
        assert not store.cleaner.disk_full, "no round has run yet"
        store.update_config(dataclasses.replace(config, clean_resource_interval=20))
        assert store.config.clean_resource_interval == 20
        async with asyncio.timeout(10):
            while not store.cleaner.disk_full:  # the first round measures the disk
                await asyncio.sleep(0.01)


def test_update_broker_config_accepts_clean_resource_interval() -> None:
    from orbitmq.broker.config import BrokerConfig

    updated = BrokerConfig().with_properties({"cleanResourceInterval": "2000"})
    assert updated.store.clean_resource_interval == 2000
