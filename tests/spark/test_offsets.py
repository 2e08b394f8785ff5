"""The offsets JSON contract and the proportional read limit."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.errors import ConfigError
from orbitmq.spark.offsets import (
    EARLIEST,
    LATEST,
    QueueRef,
    from_json_dict,
    parse_json,
    split_limit,
    to_json_dict,
)

A0 = QueueRef("orders", "broker-a", 0)
A1 = QueueRef("orders", "broker-a", 1)
B0 = QueueRef("pay", "broker:b", 0)


def test_offsets_round_trip_through_json_with_string_keys() -> None:
    offsets = {A1: 7, A0: 1200, B0: 3}
    text = orjson.dumps(to_json_dict(offsets))
    assert text == b'{"orders":{"broker-a:0":1200,"broker-a:1":7},"pay":{"broker:b:0":3}}'
    assert from_json_dict(orjson.loads(text)) == offsets


def test_broker_names_with_colons_parse_on_the_last_colon() -> None:
    assert QueueRef.parse("pay", "broker:b:12") == QueueRef("pay", "broker:b", 12)


@pytest.mark.parametrize("key", ["broker-a", ":3", "broker-a:x", "broker-a:-1", ""])
def test_malformed_queue_keys_are_refused(key: str) -> None:
    with pytest.raises(ConfigError):
        from_json_dict({"orders": {key: 1}})


def test_option_json_accepts_earliest_and_latest_markers_only_when_allowed() -> None:
    assert parse_json('{"orders": {"broker-a:0": -2, "broker-a:1": -1}}') == {A0: EARLIEST, A1: LATEST}
    with pytest.raises(ConfigError):
        from_json_dict({"orders": {"broker-a:0": -1}})


@pytest.mark.parametrize("text", ["[1]", '{"orders": 5}', '{"orders": {"broker-a:0": "5"}}',
                                  '{"orders": {"broker-a:0": true}}', "{nope", '{"orders": {"broker-a:0": -3}}'])
def test_option_json_of_the_wrong_shape_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_json(text)


def test_split_limit_divides_in_proportion_to_backlog() -> None:
    start = {A0: 0, A1: 100, B0: 0}
    end = {A0: 300, A1: 200, B0: 0}
    assert split_limit(start, end, 200) == {A0: 150, A1: 150, B0: 0}


def test_split_limit_reads_everything_when_the_backlog_fits() -> None:
    assert split_limit({A0: 5}, {A0: 9}, 100) == {A0: 9}


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=8),
    st.integers(1, 3000),
)
def test_split_limit_never_exceeds_the_limit_or_a_queue_end(spans: list[tuple[int, int]], limit: int) -> None:
    start = {QueueRef("t", "b", i): s for i, (s, _) in enumerate(spans)}
    end = {QueueRef("t", "b", i): s + n for i, (s, n) in enumerate(spans)}
    out = split_limit(start, end, limit)
    moved = sum(out[q] - start[q] for q in end)
    assert moved == min(limit, sum(end[q] - start[q] for q in end))
    assert all(start[q] <= out[q] <= end[q] for q in end)
