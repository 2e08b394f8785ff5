"""The epoch file (controller mode): format, refusals, crash safety, and the consistent point."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from orbitmq.store.epochs import (
    EpochEntry,
    EpochError,
    EpochFile,
    decode_epochs,
    encode_epochs,
    find_consistent_point,
)


def test_file_format_is_count_crc_and_epoch_offset_lines(tmp_path: Path) -> None:
    f = EpochFile(str(tmp_path / "epochFileCheckpoint"))
    assert f.append(1, 0)
    assert f.append(3, 1000)
    body = b"1-0\n3-1000\n"
    assert (tmp_path / "epochFileCheckpoint").read_bytes() == b"2\n%d\n" % (zlib.crc32(body) & 0x7FFFFFFF) + body
    again = EpochFile(str(tmp_path / "epochFileCheckpoint"))
    assert again.entries == [EpochEntry(1, 0), EpochEntry(3, 1000)]
    assert again.last_epoch() == 3
    assert again.epoch_at(999) == 1 and again.epoch_at(1000) == 3


def test_lower_or_equal_epochs_and_backward_offsets_are_refused(tmp_path: Path) -> None:
    f = EpochFile(str(tmp_path / "e"))
    f.append(2, 100)
    assert not f.append(2, 100), "the same entry again changes nothing"
    with pytest.raises(EpochError):
        f.append(1, 200)
    with pytest.raises(EpochError):
        f.append(2, 300)
    with pytest.raises(EpochError):
        f.append(3, 50)
    assert EpochFile(str(tmp_path / "e")).entries == [EpochEntry(2, 100)]


def test_a_damaged_file_falls_back_to_the_bak_copy_or_to_nothing(tmp_path: Path) -> None:
    path = tmp_path / "e"
    good = encode_epochs([EpochEntry(1, 0), EpochEntry(2, 10)])
    path.write_bytes(good.replace(b"2-10", b"2-11"))  # CRC no longer matches
    assert EpochFile(str(path)).entries == []
    (tmp_path / "e.bak").write_bytes(good)
    assert EpochFile(str(path)).entries == [EpochEntry(1, 0), EpochEntry(2, 10)]
    assert decode_epochs(b"3\n0\n1-0\n") is None, "fewer lines than the count says"
    assert decode_epochs(b"2\n0\n2-0\n1-5\n") is None, "epochs must grow"


def test_truncation_and_cleaning_drop_the_right_terms(tmp_path: Path) -> None:
    f = EpochFile(str(tmp_path / "e"))
    for epoch, start in ((1, 0), (2, 100), (4, 250)):
        f.append(epoch, start)
    assert f.truncate_from(250) == 1
    assert f.entries == [EpochEntry(1, 0), EpochEntry(2, 100)]
    assert f.drop_before(150) == 1, "epoch 1 ended at 100, below the oldest byte kept"
    assert EpochFile(str(tmp_path / "e")).entries == [EpochEntry(2, 100)]


def test_consistent_point_follows_rocketmq5s_rule() -> None:
    # The example of the reference: A held epoch 1 up to 1200; the master B wrote epoch 1
    # up to 1000 and epoch 2 from there to 1400.
    a = [EpochEntry(1, 0)]
    b = [EpochEntry(1, 0), EpochEntry(2, 1000)]
    assert find_consistent_point(a, 1200, b, 1400) == 1000
    # A behind the master in the same epoch keeps everything.
    assert find_consistent_point(a, 800, b, 1400) == 800
    # A wrote its own epoch 3 that the master never had: back to the end of the shared epoch 2.
    assert find_consistent_point([EpochEntry(1, 0), EpochEntry(2, 1000), EpochEntry(3, 1100)], 1500, b, 1400) == 1100
    # Same epoch number with another start offset is not the same term.
    assert find_consistent_point([EpochEntry(5, 0)], 10, [EpochEntry(5, 7)], 20) == -1
    # No local terms: nothing to compare, nothing cut.
    assert find_consistent_point([], 640, b, 1400) == 640
