"""A CommitLog flush whose fsync is still running when the store is truncated must not leave the
flushed position (mapped file, group commit, checkpoint) past the cut: bytes appended there
afterwards would count as durable without an fsync (lost on power loss). The fsync is held in
its worker thread by a gate, so the interleaving is forced, not hoped for."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from orbitmq.store.config import BrokerRole, FlushDiskType
from orbitmq.store.flush import FlushOutcome
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config

pytestmark = pytest.mark.timeout(30)


class HeldFsync:
    """os.fdatasync that, once armed, holds the first call made from a worker thread until released."""

    def __init__(self, real: Callable[[int], None]) -> None:
        self.real = real
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, fd: int) -> None:
        if self.armed and threading.current_thread() is not threading.main_thread():
            self.armed = False
            self.entered.set()
            assert self.release.wait(20), "the test never released the fsync"
        self.real(fd)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldFsync:
    gate = HeldFsync(os.fdatasync)
    monkeypatch.setattr(os, "fdatasync", gate)
    return gate


async def _filled(store: DefaultMessageStore) -> list[int]:
    ends = []
    for i in range(6):
        result = await store.put_message(message(body=b"m%03d" % i))
        assert result.append_result is not None
        ends.append(result.append_result.wrote_offset + result.append_result.wrote_bytes)
    return ends


async def test_an_interval_flush_overlapping_a_truncation_leaves_no_position_past_the_cut(
    tmp_path: Path, held: HeldFsync
) -> None:
    config = small_config(tmp_path, flush_interval_commit_log=3_600_000)  # only the flush the test runs
    async with DefaultMessageStore(config) as store:
        ends = await _filled(store)
        cut = ends[2]
        held.armed = True
        loop = asyncio.get_running_loop()
        flushing = loop.run_in_executor(store._flush_pool, store._flush_commitlog_blocking)
        assert await asyncio.to_thread(held.entered.wait, 10), "the flush started its fsync"
        store.set_role(BrokerRole.SLAVE)
        assert store.truncate(cut) == ends[-1] - cut
        held.release.set()
        await flushing
        assert store.commitlog.log.flushed_offset <= cut
        assert store.checkpoint is not None and store.checkpoint.physic_flushed_offset <= cut
        # What a new term writes past the cut is dirty, so the next flush writes it out.
        store.set_role(BrokerRole.SYNC_MASTER)
        await store.put_message(message(body=b"new term"))
        assert store.get_max_phy_offset() - store.commitlog.log.flushed_offset > 0


async def test_a_group_commit_overlapping_a_truncation_vouches_for_nothing_past_the_cut(
    tmp_path: Path, held: HeldFsync
) -> None:
    config = small_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH, flush_interval_commit_log=3_600_000)
    async with DefaultMessageStore(config) as store:
        ends = await _filled(store)  # each put waited for its fsync
        cut = ends[2]
        group = store._group
        assert group is not None and group.flushed_offset == ends[-1]
        held.armed = True
        waiting = asyncio.ensure_future(store.put_message(message(body=b"cut away")))
        assert await asyncio.to_thread(held.entered.wait, 10), "the group commit started its fsync"
        store.set_role(BrokerRole.SLAVE)
        store.truncate(cut)
        held.release.set()
        result = await waiting
        assert not result.is_ok, "its record was cut: it is not acknowledged as durable"
        assert group.flushed_offset <= cut
        assert store.commitlog.log.flushed_offset <= cut
        assert store.checkpoint is not None and store.checkpoint.physic_flushed_offset <= cut
        assert (await group.wait(cut)) is FlushOutcome.FLUSHED
