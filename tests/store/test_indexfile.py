"""The IndexFile (§7.3): byte layout, chained lookups, roll-over, recovery truncation and cleaning."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from orbitmq.common.hashing import index_key_hash, java_string_hash
from orbitmq.errors import StoreError
from orbitmq.store.api import DispatchRequest
from orbitmq.store.indexfile import (
    IndexFile,
    IndexService,
    index_file_name,
    index_file_size,
)

T0 = 1_700_000_000_000


def _dispatch(topic: str, offset: int, ts: int, keys: str = "", uniq: str = "", sys_flag: int = 0) -> DispatchRequest:
    return DispatchRequest(
        topic=topic, queue_id=0, commit_log_offset=offset, msg_size=100, tags_code=0, store_timestamp=ts,
        consume_queue_offset=0, keys=keys, uniq_key=uniq, sys_flag=sys_flag, prepared_transaction_offset=0,
    )


def test_file_size_and_names_follow_rocketmq() -> None:
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040
    name = index_file_name(T0 + 45)
    assert len(name) == 17 and name.isdigit() and name.endswith("045")


def test_entries_header_and_slots_are_written_byte_for_byte(tmp_path: Path) -> None:
    path = str(tmp_path / "idx")
    f = IndexFile.create(path, hash_slot_num=7, index_num=5)
    assert f.put_key("T#k1", 4096, T0)
    assert f.put_key("T#k1", 8192, T0 + 2500)
    f.flush()
    raw = Path(path).read_bytes()
    assert len(raw) == 40 + 7 * 4 + 5 * 20
    h = index_key_hash("T#k1")
    slot = h % 7
    # header: begin/end timestamp, begin/end offset, one slot used, next entry number 3
    assert raw[:40] == struct.pack(">qqqqii", T0, T0 + 2500, 4096, 8192, 1, 3)
    assert raw[40 + slot * 4 : 44 + slot * 4] == struct.pack(">i", 2)
    base = 40 + 7 * 4
    assert raw[base : base + 20] == bytes(20)  # entry 0 is never used
    assert raw[base + 20 : base + 40] == struct.pack(">iqii", h, 4096, 0, 0)
    assert raw[base + 40 : base + 60] == struct.pack(">iqii", h, 8192, 2, 1)  # 2 whole seconds, previous = 1
    f.close()


def test_a_full_file_refuses_more_keys(tmp_path: Path) -> None:
    f = IndexFile.create(str(tmp_path / "idx"), hash_slot_num=3, index_num=4)
    assert all(f.put_key(f"T#{i}", i, T0) for i in range(3))
    assert f.is_full and not f.put_key("T#x", 9, T0)
    assert f.entry_count == 3
    f.close()


def test_chains_return_newest_first_and_skip_colliding_keys(tmp_path: Path) -> None:
    # One slot: every key collides into one chain.
    f = IndexFile.create(str(tmp_path / "idx"), hash_slot_num=1, index_num=100)
    for i in range(30):
        f.put_key(f"T#key{i % 3}", 1000 + i, T0 + i * 1000)
    assert f.select_phy_offsets("T#key1", 100, 0, 2**62) == [1000 + i for i in range(28, 0, -3)]
    assert f.select_phy_offsets("T#key1", 2, 0, 2**62) == [1028, 1025]
    assert f.select_phy_offsets("T#nothing", 100, 0, 2**62) == []
    # time filter, second resolution
    assert f.select_phy_offsets("T#key0", 100, T0 + 3000, T0 + 9000) == [1009, 1006, 1003]
    f.close()


def test_keys_with_equal_hashes_are_both_returned_as_rocketmq_does(tmp_path: Path) -> None:
    assert java_string_hash("T#Aa") == java_string_hash("T#BB")
    f = IndexFile.create(str(tmp_path / "idx"), hash_slot_num=11, index_num=10)
    f.put_key("T#Aa", 1, T0)
    f.put_key("T#BB", 2, T0)
    assert f.select_phy_offsets("T#Aa", 10, 0, 2**62) == [2, 1]
    f.close()


def test_a_reopened_file_answers_the_same_queries(tmp_path: Path) -> None:
    path = str(tmp_path / "idx")
    f = IndexFile.create(path, hash_slot_num=13, index_num=50)
    for i in range(40):
        f.put_key(f"T#k{i % 7}", i * 10, T0 + i)
    before = [f.select_phy_offsets(f"T#k{j}", 50, 0, 2**62) for j in range(7)]
    f.close()
    g = IndexFile.open(path, hash_slot_num=13, index_num=50)
    assert [g.select_phy_offsets(f"T#k{j}", 50, 0, 2**62) for j in range(7)] == before
    assert (g.index_count, g.begin_phy_offset, g.end_phy_offset) == (41, 0, 390)
    g.close()
    with pytest.raises(StoreError):
        IndexFile.open(path, hash_slot_num=14, index_num=50)


def test_damaged_chains_end_the_walk_instead_of_looping(tmp_path: Path) -> None:
    path = str(tmp_path / "idx")
    f = IndexFile.create(path, hash_slot_num=1, index_num=10)
    for i in range(3):
        f.put_key("T#k", i, T0)
    f.close()
    raw = bytearray(Path(path).read_bytes())
    base = 44
    struct.pack_into(">i", raw, base + 1 * 20 + 16, 3)  # entry 1 points forward to entry 3
    Path(path).write_bytes(bytes(raw))
    g = IndexFile.open(path, hash_slot_num=1, index_num=10)
    assert g.select_phy_offsets("T#k", 10, 0, 2**62) == [2, 1, 0]
    g.close()


def _service(tmp_path: Path, slots: int = 17, entries: int = 10, clock: list[int] | None = None) -> IndexService:
    ticks = clock if clock is not None else [T0]
    return IndexService(str(tmp_path / "index"), slots, entries, max_msgs_num_batch=64, clock_ms=lambda: ticks[0])


def test_service_indexes_uniq_key_and_each_key_and_skips_rollbacks(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=50)
    svc.dispatch([
        _dispatch("T", 0, T0, keys="order-1  order-2", uniq="U1"),
        _dispatch("T", 100, T0 + 1000, keys="order-1", sys_flag=0x4),  # prepared: indexed
        _dispatch("T", 200, T0 + 2000, keys="order-1", sys_flag=0xC),  # rollback: not indexed
        _dispatch("Other", 300, T0 + 3000, keys="order-1"),
    ])
    assert svc.query_offsets("T", "order-1", 10, 0, 2**62).phy_offsets == [100, 0]
    assert svc.query_offsets("T", "order-2", 10, 0, 2**62).phy_offsets == [0]
    assert svc.query_offsets("T", "U1", 10, 0, 2**62).phy_offsets == [0]
    assert svc.query_offsets("Other", "order-1", 10, 0, 2**62).phy_offsets == [300]
    result = svc.query_offsets("T", "missing", 10, 0, 2**62)
    assert (result.phy_offsets, result.index_last_update_timestamp, result.index_last_update_phyoffset) == (
        [], T0 + 3000, 300)
    svc.close()


def test_service_rolls_to_new_files_and_queries_across_them_newest_first(tmp_path: Path) -> None:
    clock = [T0]
    svc = _service(tmp_path, entries=10, clock=clock)  # 9 entries per file
    for i in range(40):
        clock[0] = T0 + i  # several files created within the same millisecond range
        svc.dispatch([_dispatch("T", i * 100, T0 + i * 1000, keys=f"k{i % 4}")])
    assert len(svc.files) == 5
    names = [f.name for f in svc.files]
    assert names == sorted(names) and len(set(names)) == 5
    assert svc.query_offsets("T", "k1", 64, 0, 2**62).phy_offsets == [i * 100 for i in range(37, 0, -4)]
    assert svc.query_offsets("T", "k1", 3, 0, 2**62).phy_offsets == [3700, 3300, 2900]
    # a time window that only the middle files cover
    window = svc.query_offsets("T", "k2", 64, T0 + 10_000, T0 + 20_000).phy_offsets
    assert window == [1800, 1400, 1000]
    svc.close()


def test_new_file_header_continues_from_the_previous_file(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=3)
    svc.dispatch([_dispatch("T", i * 10, T0 + i * 1000, keys="k") for i in range(3)])
    first, second = svc.files
    assert (first.end_phy_offset, first.end_timestamp) == (10, T0 + 1000)
    assert (second.begin_phy_offset, second.begin_timestamp, second.entry_count) == (20, T0 + 2000, 1)
    svc.close()


def test_service_reloads_its_files_and_keeps_indexing_after_restart(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=5)
    svc.dispatch([_dispatch("T", i, T0 + i, keys="k") for i in range(10)])
    svc.close()
    again = _service(tmp_path, entries=5, clock=[T0 + 10_000])
    again.load()
    assert len(again.files) == 3
    again.dispatch([_dispatch("T", i, T0 + i, keys="k") for i in range(8, 12)])  # 8 is below the end; 9 (at the end) is re-put
    assert again.query_offsets("T", "k", 64, 0, 2**62).phy_offsets == list(range(11, -1, -1))
    again.close()


def test_recovery_truncation_removes_entries_past_the_recovered_end(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=6)  # 5 entries per file
    svc.dispatch([_dispatch("T", i * 100, T0 + i * 1000, keys=f"k{i % 2}", uniq=f"u{i}") for i in range(8)])
    assert len(svc.files) == 4
    removed = svc.truncate_from(500)  # records at 500, 600, 700 were lost with the CommitLog tail
    assert removed == 6
    assert svc.query_offsets("T", "k1", 64, 0, 2**62).phy_offsets == [300, 100]
    assert svc.query_offsets("T", "u6", 64, 0, 2**62).phy_offsets == []
    assert svc.index_last_update_phyoffset == 400
    # the store re-dispatches the recovered records; new ones index normally
    svc.dispatch([_dispatch("T", 500, T0 + 9000, keys="k1", uniq="new")])
    assert svc.query_offsets("T", "k1", 64, 0, 2**62).phy_offsets == [500, 300, 100]
    svc.close()
    reloaded = _service(tmp_path, entries=6)
    reloaded.load()
    assert reloaded.query_offsets("T", "new", 64, 0, 2**62).phy_offsets == [500]
    reloaded.close()


def test_truncation_keeps_slot_chains_intact(tmp_path: Path) -> None:
    f = IndexFile.create(str(tmp_path / "idx"), hash_slot_num=2, index_num=40)
    for i in range(30):
        f.put_key(f"T#k{i % 5}", i, T0 + i * 1000)
    slots_used = f.hash_slot_count
    assert f.truncate_from(12) == 18
    for j in range(5):
        assert f.select_phy_offsets(f"T#k{j}", 40, 0, 2**62) == [i for i in range(11, -1, -1) if i % 5 == j]
    assert f.hash_slot_count == slots_used and f.index_count == 13
    assert f.truncate_from(0) == 12 and f.hash_slot_count == 0
    assert f.select_phy_offsets("T#k0", 40, 0, 2**62) == []
    f.close()


def test_cleaning_deletes_files_wholly_below_the_commit_log_minimum_but_never_the_newest(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=4)  # 3 entries per file
    svc.dispatch([_dispatch("T", i * 100, T0 + i, keys="k") for i in range(9)])
    assert len(svc.files) == 3
    doomed = svc.files[0].path
    assert svc.delete_expired_files(250) == 1
    assert not os.path.exists(doomed) and len(svc.files) == 2
    assert svc.query_offsets("T", "k", 64, 0, 2**62).phy_offsets == [800, 700, 600, 500, 400, 300]
    assert svc.delete_expired_files(10**9) == 1
    assert len(svc.files) == 1
    svc.close()


def test_flush_reports_the_end_timestamp_now_on_disk(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    assert svc.flush() == 0
    svc.dispatch([_dispatch("T", 0, T0 + 5, keys="k")])
    assert svc.flush() == T0 + 5
    svc.close()


def test_truncation_drops_an_empty_file_left_by_a_crash_and_trims_the_one_before(tmp_path: Path) -> None:
    svc = _service(tmp_path, entries=4)
    svc.dispatch([_dispatch("T", i * 100, T0 + i * 1000, keys="k") for i in range(3)])  # fills file 1
    svc._roll()  # a crash right after creating the next file leaves it empty
    assert [f.entry_count for f in svc.files] == [3, 0]
    assert svc.truncate_from(150) == 1
    assert len(svc.files) == 1 and svc.index_last_update_phyoffset == 100
    svc.dispatch([_dispatch("T", 200, T0 + 5000, keys="k")])  # re-dispatched after recovery: indexed again
    assert svc.query_offsets("T", "k", 64, 0, 2**62).phy_offsets == [200, 100, 0]
    svc.close()
