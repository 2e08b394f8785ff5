"""Restarting the store: clean stops, crashes, torn tails, bad CRCs, cut-short files, lost queue entries."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from orbitmq.common.record import iter_records
from orbitmq.store.checkpoint import CHECKPOINT_SIZE
from orbitmq.store.config import StoreConfig
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config


async def fill(config: StoreConfig, n: int, body_len: int = 300, queues: int = 2) -> list[int]:
    """Put n messages over `queues` queues and stop cleanly; returns each record's CommitLog offset."""
    offsets = []
    async with DefaultMessageStore(config) as store:
        for i in range(n):
            result = await store.put_message(message(body=b"%04d" % i + b"." * body_len, queue_id=i % queues))
            assert result.append_result is not None
            offsets.append(result.append_result.wrote_offset)
    return offsets


def read_all(store: DefaultMessageStore, queue_id: int) -> list[bytes]:
    out: list[bytes] = []
    offset = store.get_min_offset_in_queue("T", queue_id)
    while True:
        with store.get_message("g", "T", queue_id, offset, 32) as got:
            if not got.buffers:
                return out
            out.extend(m.body[:4] for m in iter_records(b"".join(got.buffers)))
            offset = got.next_begin_offset


def simulate_crash(root: Path, flushed_to: int) -> None:
    """Leave the folder as a crash would: abort marker present, checkpoint flushed only to `flushed_to`."""
    (root / "abort").touch()
    patch_file(root / "checkpoint", 40, struct.pack(">qq", flushed_to, flushed_to))


def patch_file(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def flip_byte(path: Path, offset: int) -> None:
    raw = path.read_bytes()
    patch_file(path, offset, bytes([raw[offset] ^ 0xFF]))


def commit_log_file(root: Path, index: int, config: StoreConfig) -> Path:
    return root / "commitlog" / f"{index * config.mapped_file_size_commit_log:020d}"


async def test_clean_restart_keeps_every_message_and_continues_offsets(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    await fill(config, 60)
    assert not (tmp_path / "abort").exists()
    assert (tmp_path / "checkpoint").stat().st_size == CHECKPOINT_SIZE
    async with DefaultMessageStore(config) as store:
        assert (tmp_path / "abort").exists()
        assert not store.recovered_from_crash
        assert read_all(store, 0) == [b"%04d" % i for i in range(0, 60, 2)]
        result = await store.put_message(message(queue_id=1))
        assert result.append_result is not None and result.append_result.logics_offset == 30


async def test_crash_recovery_drops_a_torn_last_record_and_reuses_its_queue_offset(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    offsets = await fill(config, 20)
    last = offsets[-1]
    path = tmp_path / "commitlog" / f"{last - last % config.mapped_file_size_commit_log:020d}"
    # Tear the record: its body ends in zeros.
    patch_file(path, last % config.mapped_file_size_commit_log + 150, bytes(100))
    simulate_crash(tmp_path, offsets[12])
    async with DefaultMessageStore(config) as store:
        assert store.recovered_from_crash
        assert store.get_max_phy_offset() == last
        assert read_all(store, 1) == [b"%04d" % i for i in range(1, 19, 2)]
        result = await store.put_message(message(queue_id=1))
        assert result.append_result is not None
        assert (result.append_result.wrote_offset, result.append_result.logics_offset) == (last, 9)


async def test_a_bad_crc_ends_the_log_at_that_record_on_restart(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    offsets = await fill(config, 30)
    bad = offsets[25]
    path = tmp_path / "commitlog" / f"{bad - bad % config.mapped_file_size_commit_log:020d}"
    # Flip one body byte: size and magic stay valid, the CRC does not.
    flip_byte(path, bad % config.mapped_file_size_commit_log + 90)
    async with DefaultMessageStore(config) as store:
        assert store.get_max_phy_offset() == bad
        assert read_all(store, 0) == [b"%04d" % i for i in range(0, 25, 2)]
        assert read_all(store, 1) == [b"%04d" % i for i in range(1, 25, 2)]
        assert store.get_max_offset_in_queue("T", 1) == 12


async def test_a_cut_short_commit_log_file_is_repaired_and_recovered(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    offsets = await fill(config, 40)
    last_file = max((tmp_path / "commitlog").iterdir())
    start = int(last_file.name)
    kept = [o for o in offsets if o + 400 <= start + 1000]
    os.truncate(last_file, 1000)
    async with DefaultMessageStore(config) as store:
        assert store.recovered_from_crash
        assert last_file.stat().st_size == config.mapped_file_size_commit_log
        n = len(kept)
        assert read_all(store, 0) + read_all(store, 1) == sorted(
            [b"%04d" % i for i in range(0, n, 2)] + [b"%04d" % i for i in range(1, n, 2)],
            key=lambda b: (int(b) % 2, int(b)),
        )
        assert store.get_max_phy_offset() == offsets[n - 1] + (offsets[1] - offsets[0])


async def test_consume_queue_entries_past_the_commit_log_end_are_dropped(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    offsets = await fill(config, 10, queues=1)
    # Lose the CommitLog tail behind the queue's back: the last three records.
    cut = offsets[7]
    path = commit_log_file(tmp_path, 0, config)
    patch_file(path, cut, bytes(config.mapped_file_size_commit_log - cut))
    simulate_crash(tmp_path, offsets[5])
    async with DefaultMessageStore(config) as store:
        assert store.get_max_offset_in_queue("T", 0) == 7
        assert read_all(store, 0) == [b"%04d" % i for i in range(7)]


async def test_lost_consume_queue_entries_are_rebuilt_from_the_commit_log(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    await fill(config, 50)
    for f in (tmp_path / "consumequeue" / "T" / "1").iterdir():
        f.unlink()
    # A checkpoint with no flush record (as RocketMQ writes it, or after a crash right at the
    # start) makes recovery scan the whole CommitLog.
    patch_file(tmp_path / "checkpoint", 0, bytes(CHECKPOINT_SIZE))
    (tmp_path / "abort").touch()
    async with DefaultMessageStore(config) as store:
        assert read_all(store, 1) == [b"%04d" % i for i in range(1, 50, 2)]
        assert read_all(store, 0) == [b"%04d" % i for i in range(0, 50, 2)]
        with store.query_message("T", "nothing", 5, 0, 2**62) as found:
            assert found.buffers == []


async def test_checkpoint_records_flush_progress_in_rocketmq_layout(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    await fill(config, 5)
    raw = (tmp_path / "checkpoint").read_bytes()
    physic, logics, index = struct.unpack_from(">qqq", raw, 0)
    assert physic >= 1_700_000_000_000 and logics >= 1_700_000_000_000 and index > 0


async def test_rebuilt_schedule_queue_entries_carry_the_delivery_time(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    async with DefaultMessageStore(config) as store:
        msg = message(topic="SCHEDULE_TOPIC_XXXX", queue_id=2, properties={"DELAY": "3"})
        result = await store.put_message(msg)
        assert result.append_result is not None
        stored_at = result.append_result.store_timestamp
    for f in (tmp_path / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "2").iterdir():
        f.unlink()
    patch_file(tmp_path / "checkpoint", 0, bytes(CHECKPOINT_SIZE))
    (tmp_path / "abort").touch()
    async with DefaultMessageStore(config) as store:
        cq = store.queues.find("SCHEDULE_TOPIC_XXXX", 2)
        assert cq is not None
        # Level 3 is 10 s in RocketMQ's default table.
        assert cq.entry(0) == (0, result.append_result.wrote_bytes, stored_at + 10_000)


async def test_a_store_that_cannot_recover_releases_its_folder(tmp_path: Path) -> None:
    import pytest

    from orbitmq.errors import StoreError

    config = small_config(tmp_path)
    await fill(config, 60)
    files = sorted((tmp_path / "commitlog").iterdir())
    assert len(files) >= 3
    files[1].unlink()  # a hole in the middle of the CommitLog
    with pytest.raises(StoreError, match="missing"):
        await DefaultMessageStore(config).start()
    files[1].write_bytes(bytes(config.mapped_file_size_commit_log))
    async with DefaultMessageStore(config) as store:  # the folder lock was released
        assert store.get_max_phy_offset() == int(files[1].name)
