"""Index keys written at the end of the loop turn are still seen by every reader at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orbitmq.store.indexfile import IndexService

T0 = 1_700_000_000_000
FAR = 2**62


def _service(tmp_path: Path) -> IndexService:
    svc = IndexService(str(tmp_path / "index"), 101, 1000)
    svc.load()
    return svc


async def test_a_query_in_the_same_loop_turn_sees_keys_put_just_before(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    for i in range(5):
        svc.put("T", f"k{i} shared", f"u{i}", i * 100, T0 + i, 0)
    assert svc._pending  # queued, not yet written
    assert svc.query_offsets("T", "u3", 64, 0, FAR).phy_offsets == [300]
    assert svc.query_offsets("T", "shared", 64, 0, FAR).phy_offsets == [400, 300, 200, 100, 0]
    svc.close()


async def test_queued_keys_are_written_at_the_end_of_the_turn(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.put("T", "", "u1", 100, T0, 0)
    await asyncio.sleep(0)
    assert not svc._pending
    assert svc.files[-1].entry_count == 1
    svc.close()


async def test_closing_writes_what_is_queued_and_a_late_callback_does_nothing(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.put("T", "", "u1", 100, T0, 0)
    svc.close()
    await asyncio.sleep(0)  # the turn's callback runs after the close: nothing left to write
    again = _service(tmp_path)
    assert again.query_offsets("T", "u1", 64, 0, FAR).phy_offsets == [100]
    assert again.index_last_update_phyoffset == 100
    again.close()


def test_without_a_running_loop_keys_are_written_at_once(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.put("T", "k", "", 100, T0, 0)
    assert not svc._pending and svc.files[-1].entry_count == 1
    svc.close()


async def test_replayed_records_below_the_index_end_are_skipped_when_the_queue_is_written(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    svc.put("T", "k", "", 500, T0, 0)
    svc.put("T", "k", "", 300, T0, 0)  # below the end once 500 is written: a replay
    svc.put("T", "k", "", 600, T0, 0)
    assert svc.query_offsets("T", "k", 64, 0, FAR).phy_offsets == [600, 500]
    svc.close()
