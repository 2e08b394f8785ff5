"""Option parsing: case-insensitive keys, clear errors, mode-specific rules."""

from __future__ import annotations

import pytest

from orbitmq.errors import ConfigError
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import TimestampPosition, parse_sink_options, parse_source_options

BASE = {"namesrvaddr": "127.0.0.1:9876", "topic": "orders"}


def test_lower_cased_keys_from_spark_are_understood() -> None:
    o = parse_source_options({**BASE, "subexpression": "TagA || TagB", "includeproperties": "false",
                              "maxoffsetspertrigger": "500"}, streaming=True)
    assert o.topics == ("orders",)
    assert o.sub_expression == "TagA || TagB"
    assert o.include_properties is False
    assert o.max_offsets_per_trigger == 500
    assert o.fail_on_data_loss is True


def test_a_comma_list_of_topics_is_split_and_deduplicated() -> None:
    o = parse_source_options({**BASE, "topic": "a, b,a"}, streaming=False)
    assert o.topics == ("a", "b")


def test_an_unknown_option_is_refused_with_its_name() -> None:
    with pytest.raises(ConfigError, match="maxoffsetpertrigger"):
        parse_source_options({**BASE, "maxOffsetPerTrigger": "5"}, streaming=True)


@pytest.mark.parametrize("missing", ["namesrvaddr", "topic"])
def test_required_options_are_required(missing: str) -> None:
    raw = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ConfigError, match=missing.replace("addr", "Addr") if missing == "namesrvaddr" else missing):
        parse_source_options(raw, streaming=False)


def test_offsets_json_and_timestamps_are_parsed() -> None:
    o = parse_source_options({**BASE, "startingOffsets": '{"orders": {"broker-a:1": 5}}',
                              "endingTimestamp": "1700000000000"}, streaming=False)
    assert o.starting == {QueueRef("orders", "broker-a", 1): 5}
    assert o.ending == TimestampPosition(1700000000000)


@pytest.mark.parametrize("extra", [
    {"startingOffsets": "latest"},
    {"endingOffsets": "earliest"},
    {"startingOffsets": '{"orders": {"broker-a:0": -1}}'},
    {"startingOffsets": '{"other": {"broker-a:0": 1}}'},
    {"startingOffsets": "earliest", "startingTimestamp": "5"},
    {"maxOffsetsPerTrigger": "10"},
    {"failOnDataLoss": "maybe"},
    {"topic": "bad topic"},
    {"namesrvAddr": "localhost"},
    {"accessKey": "ak"},
    {"expressionType": "REGEX"},
    {"pullBatchSize": "0"},
])
def test_batch_reads_refuse_contradictory_or_malformed_options(extra: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        parse_source_options({**BASE, **extra}, streaming=False)


def test_streaming_reads_refuse_an_ending_position() -> None:
    with pytest.raises(ConfigError, match="batch reads only"):
        parse_source_options({**BASE, "endingOffsets": "latest"}, streaming=True)


def test_sink_options_have_defaults_and_optional_topic() -> None:
    o = parse_sink_options({"namesrvaddr": "h:1", "batchsize": "64"})
    assert o.topic is None and o.batch_size == 64 and o.producer_group == "ORBITMQ_SPARK_WRITER"
    with pytest.raises(ConfigError):
        parse_sink_options({"namesrvaddr": "h:1", "startingoffsets": "earliest"})


def test_credentials_are_kept_out_of_the_repr() -> None:
    o = parse_sink_options({"namesrvaddr": "h:1", "accesskey": "ak", "secretkey": "s3cret"})
    assert o.connection.secret_key == "s3cret"
    assert "s3cret" not in repr(o)


def test_filter_pushdown_is_a_batch_only_opt_in() -> None:
    assert parse_source_options(BASE, streaming=False).push_filters is False
    assert parse_source_options({**BASE, "pushfilters": "true"}, streaming=False).push_filters is True
    with pytest.raises(ConfigError, match="batch reads only"):
        parse_source_options({**BASE, "pushFilters": "true"}, streaming=True)
