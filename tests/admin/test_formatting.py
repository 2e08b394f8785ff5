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


def test_jformat_rounds_f_conversions_as_javas_formatter() -> None:
    """java.util.Formatter rounds %f half-up on the double's decimal form; these are what
    String.format printed for the same values and formats."""
    from orbitmq.admin.jprint import jformat

    cases = {0.125: "0.13|          0.13|0.1     |0", 1.005: "1.01|          1.01|1.0     |1",
             0.5: "0.50|          0.50|0.5     |1", 2.5: "2.50|          2.50|2.5     |3",
             -0.125: "-0.13|         -0.13|-0.1    |-0", 123456.785: "123456.79|     123456.79|123456.8|123457"}
    for value, java in cases.items():
        assert jformat("%.2f|%14.2f|%-8.1f|%.0f", value, value, value, value) == java, value
    assert jformat("%09.2f|%+.1f|%,.2f|%f", -3.14159, 2.0, 1234567.891, 1 / 3) == "-00003.14|+2.0|1,234,567.89|0.333333"
    assert jformat("%.2f %.2f", float("nan"), float("-inf")) == "NaN -Infinity"
    assert jformat("%s %d%% %-5s|%n", None, 5, True) == "null 5% true |\n"
