"""Store truncation (controller mode): cutting back to an offset, and finishing a cut after SIGKILL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.errors import StoreError
from orbitmq.store.config import BrokerRole
from orbitmq.store.epochs import EpochEntry
from orbitmq.store.store import DefaultMessageStore
from tests.store import helpers
from tests.store.helpers import message, small_config

REPO = Path(__file__).resolve().parents[2]


def bodies(store: DefaultMessageStore, queue_id: int) -> list[bytes]:
    return [body[:4] for body in helpers.bodies(store, queue_id)]


def check_cut(store: DefaultMessageStore, cut: int) -> None:
    """Messages 0..19 remain (10 per queue), epoch 2 (from message 30) is gone."""
    assert store.get_max_phy_offset() == cut
    assert bodies(store, 0) == [b"m%03d" % i for i in range(0, 20, 2)]
    assert bodies(store, 1) == [b"m%03d" % i for i in range(1, 20, 2)]
    assert store.get_max_offset_in_queue("T", 0) == 10
    assert store.epochs.entries == [EpochEntry(1, 0)]
    with store.query_message("T", "k25", 4, 0, 2**62) as found:
        assert found.buffers == []
    with store.query_message("T", "k19", 4, 0, 2**62) as found:
        assert len(found.buffers) == 1


async def fill(store: DefaultMessageStore) -> list[int]:
    offsets = []
    for i in range(60):
        if i == 0:
            store.epochs.append(1, 0)
        if i == 30:
            store.epochs.append(2, store.get_max_phy_offset())
        result = await store.put_message(message(body=b"m%03d" % i + b"." * 200, queue_id=i % 2, keys=f"k{i}"))
        assert result.append_result is not None
        offsets.append(result.append_result.wrote_offset)
    return offsets


async def test_truncate_cuts_commitlog_queues_index_and_epochs_and_puts_continue(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    store = DefaultMessageStore(config)
    await store.start()
    try:
        offsets = await fill(store)
        assert len({o // config.mapped_file_size_commit_log for o in offsets}) > 1, "the cut spans files"
        cut = offsets[20]
        assert store.truncate(cut) > 0
        check_cut(store, cut)
        with pytest.raises(StoreError):
            store.truncate(cut + 1)
        result = await store.put_message(message(body=b"n000", queue_id=0))
        assert result.append_result is not None
        assert result.append_result.wrote_offset == cut and result.append_result.logics_offset == 10
    finally:
        await store.close()
    store = DefaultMessageStore(config)
    await store.start()
    try:
        assert bodies(store, 0)[-1] == b"n000"
        assert store.epochs.entries == [EpochEntry(1, 0)]
    finally:
        await store.close()


async def test_a_slave_that_becomes_master_cuts_a_torn_tail(tmp_path: Path) -> None:
    master = DefaultMessageStore(small_config(tmp_path / "m"))
    slave = DefaultMessageStore(small_config(tmp_path / "s", broker_role=BrokerRole.SLAVE))
    await master.start()
    await slave.start()
    try:
        for i in range(3):
            await master.put_message(message(body=b"m%03d" % i, queue_id=0))
        end = master.get_max_phy_offset()
        with master.get_commit_log_data(0) as data:  # type: ignore[union-attr]
            assert slave.append_to_commit_log(0, data.buffer[: end - 10])
        slave.set_role(BrokerRole.SYNC_MASTER)
        assert slave.get_max_phy_offset() < end - 10, "the torn third record went"
        assert bodies(slave, 0) == [b"m000", b"m001"]
        result = await slave.put_message(message(body=b"x", queue_id=0))
        assert result.append_result is not None and result.append_result.logics_offset == 2
    finally:
        await slave.close()
        await master.close()


@pytest.mark.parametrize("stage", ["epochs", "commitlog", "queues"])
async def test_a_truncation_killed_midway_is_finished_at_the_next_start(tmp_path: Path, stage: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "tests.store.truncate_child", str(tmp_path), stage],
        check=False, capture_output=True, cwd=REPO, env=env, timeout=60, text=True,
    )
    assert done.returncode == -9, done.stderr
    assert "NOT KILLED" not in done.stdout
    cut = int(done.stdout.split("CUT ")[1].split()[0])
    assert (tmp_path / "truncating").exists()
    store = DefaultMessageStore(small_config(tmp_path))
    await store.start()
    try:
        check_cut(store, cut)
        assert not (tmp_path / "truncating").exists()
    finally:
        await store.close()
