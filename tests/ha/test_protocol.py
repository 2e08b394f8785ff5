"""The HA stream codec: reports, transfer frames and the start position rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.broker.ha.protocol import (
    ReportDecoder,
    TransferDecoder,
    encode_report,
    encode_transfer_header,
    start_offset,
)
from orbitmq.errors import FrameError


def test_a_report_is_one_big_endian_long() -> None:
    assert encode_report(0x0102030405060708) == bytes([1, 2, 3, 4, 5, 6, 7, 8])


def test_a_negative_report_cannot_be_encoded() -> None:
    with pytest.raises(ValueError):
        encode_report(-1)


def test_the_master_keeps_the_last_whole_report_of_a_read() -> None:
    decoder = ReportDecoder()
    assert decoder.feed(encode_report(10) + encode_report(20) + encode_report(30)[:5]) == 20
    assert decoder.feed(encode_report(30)[5:]) == 30


def test_a_partial_report_waits_for_its_rest() -> None:
    decoder = ReportDecoder()
    assert decoder.feed(encode_report(77)[:3]) is None
    assert decoder.feed(encode_report(77)[3:]) == 77


def test_a_negative_reported_offset_breaks_the_stream() -> None:
    with pytest.raises(FrameError):
        ReportDecoder().feed(b"\xff" * 8)


def test_a_transfer_header_is_offset_then_size() -> None:
    assert encode_transfer_header(5, 3) == (5).to_bytes(8, "big") + (3).to_bytes(4, "big")


@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(1, 97), min_size=1, max_size=20))
def test_frames_come_out_whole_however_the_stream_is_cut(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b""
    offset = 1000
    expected = []
    for data in payloads:
        stream += encode_transfer_header(offset, len(data)) + data
        expected.append((offset, data))
        offset += len(data)
    decoder = TransferDecoder(1024)
    got = []
    pos = 0
    i = 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        got.extend((f.offset, bytes(f.data)) for f in decoder.feed(stream[pos : pos + step]))
        pos += step
        i += 1
    assert got == expected


def test_an_oversized_frame_breaks_the_stream() -> None:
    with pytest.raises(FrameError):
        TransferDecoder(100).feed(encode_transfer_header(0, 101))


def test_an_empty_slave_starts_at_the_masters_newest_file() -> None:
    assert start_offset(0, 2500, 1000) == 2000
    assert start_offset(0, 0, 1000) == 0


def test_a_slave_with_data_continues_from_its_own_offset() -> None:
    assert start_offset(1234, 2500, 1000) == 1234
