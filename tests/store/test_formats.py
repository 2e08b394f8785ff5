"""Bytes the store writes match the protocol reference (§5.1, §7.1, §7.2) byte for byte."""

from __future__ import annotations

import struct
from pathlib import Path

from orbitmq.common.record import decode_record
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import FakeClock, message, small_config

# The annotated example of §5.1: topic T, queue 1, queue offset 5, CommitLog offset 4096,
# body "hello", TAGS=TagA, born 10.0.0.2:50000 at 1700000000000, stored on 10.0.0.1:10911
# at 1700000000123.
DOC_RECORD = bytes.fromhex(
    "0000006a" "daa320a7" "3610a686" "00000001" "00000000" "0000000000000005" "0000000000001000"
    "00000000" "0000018bcfe56800" "0a000002" "0000c350" "0000018bcfe5687b" "0a000001" "00002a9f"
    "00000000" "0000000000000000" "00000005" "68656c6c6f" "01" "54" "0009" "544147530154616741"
)
# §7.2: commit-log offset (8), size (4), tags code (8); TagA hashes to 2598919 (§5.10).
DOC_CQ_ENTRY = struct.pack(">qiq", 4096, 106, 2598919)


async def test_record_and_consume_queue_entry_match_the_documented_bytes(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000_123)
    store = DefaultMessageStore(small_config(tmp_path, mapped_file_size_commit_log=64 * 1024), clock_ms=clock)
    await store.start()
    try:
        # Five records of queue 1 filling exactly 4096 bytes put the sixth at offset 4096, queue offset 5.
        for body_len in (727, 727, 727, 727, 728):
            result = await store.put_message(message(body=b"x" * body_len, queue_id=1, tags=None))
            assert result.is_ok
        result = await store.put_message(message(body=b"hello", queue_id=1, tags="TagA"))
        assert result.append_result is not None
        assert (result.append_result.wrote_offset, result.append_result.logics_offset) == (4096, 5)
        assert result.append_result.msg_id == "0A00000100002A9F0000000000001000"

        selected = store.select_one_message_by_offset(4096)
        assert selected is not None
        with selected:
            assert bytes(selected.buffer) == DOC_RECORD

        cq = store.queues.find("T", 1)
        assert cq is not None
        assert cq.entry(5) == struct.unpack(">qiq", DOC_CQ_ENTRY)
        cq_file = tmp_path / "consumequeue" / "T" / "1" / "00000000000000000000"
        assert cq_file.read_bytes()[100:120] == DOC_CQ_ENTRY
    finally:
        await store.close()
    log_file = tmp_path / "commitlog" / "00000000000000000000"
    assert log_file.read_bytes()[4096 : 4096 + 106] == DOC_RECORD
    decoded = decode_record(DOC_RECORD)
    assert (decoded.topic, decoded.body, decoded.tags, decoded.queue_offset) == ("T", b"hello", "TagA", 5)


async def test_a_record_that_does_not_fit_leaves_an_end_of_file_blank_and_rolls_over(tmp_path: Path) -> None:
    store = DefaultMessageStore(small_config(tmp_path, mapped_file_size_commit_log=4096))
    await store.start()
    try:
        first = await store.put_message(message(body=b"a" * 3000))
        second = await store.put_message(message(body=b"b" * 1000))
        assert first.append_result is not None and second.append_result is not None
        assert second.append_result.wrote_offset == 4096
        assert second.append_result.logics_offset == 1
        size = first.append_result.wrote_bytes
        got = store.get_message("g", "T", 0, 0, 32)
        with got:
            assert [len(b) for b in got.buffers] == [size, second.append_result.wrote_bytes]
    finally:
        await store.close()
    data = (tmp_path / "commitlog" / "00000000000000000000").read_bytes()
    assert len(data) == 4096
    # 8-byte blank: TOTALSIZE = bytes left in the file, MAGICCODE 0xCBD43194.
    assert data[size : size + 8] == struct.pack(">iI", 4096 - size, 0xCBD43194)
    assert (tmp_path / "commitlog" / "00000000000000004096").stat().st_size == 4096
