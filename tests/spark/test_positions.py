"""Resolving positions, searching by time, planning ranges and the next micro-batch end."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.spark.offsets import EARLIEST, LATEST, QueueRef
from orbitmq.spark.options import TimestampPosition
from orbitmq.spark.positions import DataLossError, QueueRange, first_offset_at, next_end, plan_ranges, resolve

Q0 = QueueRef("t", "b", 0)
Q1 = QueueRef("t", "b", 1)
BOUNDS = {Q0: (10, 50), Q1: (0, 7)}


def test_earliest_and_latest_map_to_queue_bounds() -> None:
    assert resolve("earliest", [Q0, Q1], BOUNDS, default_missing=EARLIEST) == {Q0: 10, Q1: 0}
    assert resolve("latest", [Q0, Q1], BOUNDS, default_missing=EARLIEST) == {Q0: 50, Q1: 7}


def test_json_positions_fill_unnamed_queues_with_the_default() -> None:
    assert resolve({Q0: 20}, [Q0, Q1], BOUNDS, default_missing=LATEST) == {Q0: 20, Q1: 7}
    assert resolve({Q0: LATEST, Q1: EARLIEST}, [Q0, Q1], BOUNDS, default_missing=LATEST) == {Q0: 50, Q1: 0}


def test_timestamp_positions_use_the_lookup() -> None:
    got = resolve(TimestampPosition(99), [Q0], BOUNDS, default_missing=EARLIEST, time_lookup=lambda q, ts: ts + 1)
    assert got == {Q0: 100}


@given(st.lists(st.integers(0, 50), min_size=0, max_size=40), st.integers(-5, 60), st.integers(-3, 45))
def test_time_search_finds_the_first_offset_at_or_after_the_time(gaps: list[int], ts: int, hint: int) -> None:
    times, t = [], 0
    for g in gaps:
        t += g // 10  # non-decreasing, with repeats
        times.append(t)
    expected = next((i for i, v in enumerate(times) if v >= ts), len(times))
    assert first_offset_at(ts, 0, len(times), hint, lambda o: times[o]) == expected


def test_plan_makes_one_range_per_queue_and_skips_empty_ones() -> None:
    ranges = plan_ranges({Q0: 10, Q1: 7}, {Q0: 50, Q1: 7})
    assert ranges == [QueueRange(Q0, 10, 50)]


def test_plan_splits_large_ranges_and_marks_new_queues() -> None:
    ranges = plan_ranges({Q0: 0}, {Q0: 5, Q1: 3}, max_records=2)
    assert ranges == [QueueRange(Q0, 0, 2), QueueRange(Q0, 2, 4), QueueRange(Q0, 4, 5),
                      QueueRange(Q1, 0, 2, True), QueueRange(Q1, 2, 3, True)]


def test_next_end_picks_up_new_queues_and_applies_the_limit() -> None:
    end = next_end({Q0: 40}, BOUNDS, fail_on_data_loss=True, limit=10)
    # backlog 10 on Q0, 7 on the new Q1 (from its min 0): 10 split 6/4 by size
    assert end == {Q0: 46, Q1: 4}


def test_a_vanished_queue_is_data_loss_unless_allowed() -> None:
    with pytest.raises(DataLossError):
        next_end({Q0: 40, QueueRef("t", "b", 9): 3}, BOUNDS, fail_on_data_loss=True)
    assert next_end({Q0: 40, QueueRef("t", "b", 9): 3}, BOUNDS, fail_on_data_loss=False) == {Q0: 50, Q1: 7}


def test_a_queue_that_shrank_below_the_position_is_data_loss_unless_allowed() -> None:
    with pytest.raises(DataLossError):
        next_end({Q1: 9}, BOUNDS, fail_on_data_loss=True)
    assert next_end({Q1: 9}, {Q1: (0, 7)}, fail_on_data_loss=False) == {Q1: 7}
