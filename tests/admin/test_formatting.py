"""Pure pieces of the admin commands: tables, key/value blocks, time arguments."""

from __future__ import annotations

import datetime as dt

import pytest

from orbitmq.admin.models import perm_text
from orbitmq.admin.output import format_millis, render_kv, render_table
from orbitmq.admin.times import parse_timestamp


def test_table_aligns_columns_and_right_aligns_numbers() -> None:
    text = render_table(["Broker Name", "QID", "Max Offset"], [("broker-a", 0, 12), ("b", 10, 3)])
    lines = text.splitlines()
    assert lines[0] == "#Broker Name  #QID  #Max Offset"
    assert lines[1] == "broker-a         0           12"
    assert lines[2] == "b               10            3"
    assert all(line == line.rstrip() for line in lines)


def test_table_shows_missing_values_as_dash() -> None:
    text = render_table(["A", "B"], [("x", None)])
    assert text.splitlines()[1].split() == ["x", "-"]


def test_table_rejects_rows_of_the_wrong_width() -> None:
    with pytest.raises(ValueError):
        render_table(["A", "B"], [("only one",)])


def test_key_value_block_aligns_colons_and_can_sort() -> None:
    text = render_kv({"putTps": "1.0", "brokerVersionDesc": "V4_9_7"}, sort=True)
    assert text.splitlines() == ["brokerVersionDesc : V4_9_7", "putTps            : 1.0"]


def test_millis_print_in_local_time_with_milliseconds() -> None:
    ms = int(dt.datetime(2024, 3, 5, 7, 8, 9).timestamp()) * 1000 + 42
    assert format_millis(ms) == "2024-03-05 07:08:09,042"
    assert format_millis(0) == "-"


def test_reset_time_accepts_now_millis_and_the_mqadmin_date_form() -> None:
    assert parse_timestamp("now", now_ms=123) == 123
    assert parse_timestamp("1700000000000") == 1700000000000
    expected = int(dt.datetime(2024, 1, 2, 3, 4, 5).timestamp()) * 1000 + 6
    assert parse_timestamp("2024-01-02#03:04:05:006") == expected


@pytest.mark.parametrize("bad", ["yesterday", "2024-01-02 03:04:05", "2024-13-02#03:04:05:006", ""])
def test_reset_time_rejects_other_forms(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(bad)


def test_permission_prints_as_rocketmq_letters() -> None:
    assert perm_text(6) == "RW-"
    assert perm_text(7) == "RWX"
    assert perm_text(4) == "R--"
