"""Columnar decoding of pull bodies, ACL signatures and the Arrow schema contract."""

from __future__ import annotations

import zlib

import pytest

from orbitmq.client.acl import AclCredentials, sign_request, signature
from orbitmq.common.properties import encode_properties_bytes
from orbitmq.common.record import encode_record
from orbitmq.errors import CorruptRecord
from orbitmq.remoting.command import RemotingCommand
from orbitmq.spark.records import Columns, decode_into, store_timestamps, tag_filter


def record(offset: int, body: bytes = b"hello", tags: str | None = "TagA", **props: str) -> bytes:
    p = dict(props)
    if tags:
        p["TAGS"] = tags
    sysflag = 0
    if len(body) > 100:
        body, sysflag = zlib.compress(body), 1
    return encode_record(
        topic=b"orders", body=body, properties=encode_properties_bytes(p), queue_id=3, queue_offset=offset,
        physical_offset=4096 + offset, born_timestamp=1_700_000_000_000 + offset,
        store_timestamp=1_700_000_000_500 + offset, store_host="10.0.0.1:10911", reconsume_times=1, sys_flag=sysflag,
    )


def test_records_decode_into_columns_with_ids_tags_keys_and_user_properties() -> None:
    body = record(5, KEYS="k1 k2", UNIQ_KEY="ABC", color="red") + record(6, tags=None)
    cols = Columns()
    assert decode_into(cols, body, end_offset=100, accept_tag=None, include_properties=True) == (2, 6)
    assert cols.queue_offset == [5, 6] and cols.queue_id == [3, 3] and cols.topic == ["orders"] * 2
    assert cols.msg_id[0] == "ABC"
    assert cols.msg_id[1] == "0A00000100002A9F" + f"{4096 + 6:016X}"  # offset msg id when no UNIQ_KEY
    assert cols.tags == ["TagA", None] and cols.keys == ["k1 k2", None]
    assert cols.prop_offsets == [0, 1, 1] and cols.prop_keys == ["color"] and cols.prop_values == ["red"]
    assert cols.born_us == [1_700_000_000_005_000, 1_700_000_000_006_000]
    assert cols.reconsume == [1, 1]


def test_records_at_or_past_the_range_end_are_not_decoded() -> None:
    cols = Columns()
    seen, last = decode_into(cols, record(1) + record(2) + record(3), end_offset=3, accept_tag=None,
                             include_properties=False)
    assert (seen, last, cols.queue_offset) == (2, 2, [1, 2])


def test_tag_expressions_recheck_the_real_tag() -> None:
    accept = tag_filter("TagA || TagC")
    assert accept is not None and accept("TagA") and not accept("TagB") and not accept(None)
    assert tag_filter("*") is None and tag_filter("") is None
    cols = Columns()
    decode_into(cols, record(1) + record(2, tags="TagB"), end_offset=9, accept_tag=accept, include_properties=False)
    assert cols.queue_offset == [1]


def test_zlib_compressed_bodies_are_inflated() -> None:
    cols = Columns()
    decode_into(cols, record(0, body=b"x" * 500), end_offset=9, accept_tag=None, include_properties=False)
    assert cols.body == [b"x" * 500]


@pytest.mark.parametrize("cut", [10, 60, 120])
def test_a_truncated_or_garbled_body_raises_instead_of_yielding_rows(cut: int) -> None:
    data = record(1) + record(2)
    with pytest.raises(CorruptRecord):
        decode_into(Columns(), data[:-cut] if cut != 60 else b"\x00" * 60, end_offset=9, accept_tag=None,
                    include_properties=True)


def test_store_timestamps_lists_offsets_and_store_times() -> None:
    assert store_timestamps(record(4) + record(5)) == [(4, 1_700_000_000_504), (5, 1_700_000_000_505)]


def test_malformed_property_pairs_are_skipped_as_java_skips_them() -> None:
    raw = encode_record(topic=b"t", body=b"b", properties=b"A\x01b\x02\x02junk\x02\x01x\x02C\x01d\x02E\x01")
    cols = Columns()
    decode_into(cols, raw, end_offset=9, accept_tag=None, include_properties=True)
    assert list(zip(cols.prop_keys, cols.prop_values, strict=True)) == [("A", "b"), ("C", "d")]


def test_acl_signature_matches_the_protocol_test_vector() -> None:
    assert signature({"topic": "T", "AccessKey": "ak"}, b"", "sk") == "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="
    cmd = RemotingCommand.request(105, {"topic": "T"})
    sign_request(cmd, AclCredentials("ak", "sk"))
    assert cmd.ext_fields == {"topic": "T", "AccessKey": "ak", "Signature": "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="}


def test_decoded_batches_match_the_arrow_schema_spark_derives() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import to_arrow_schema

    from orbitmq.spark.schema import arrow_schema, spark_schema

    for include in (True, False):
        assert to_arrow_schema(spark_schema(include), timezone="UTC") == arrow_schema(include)
        cols = Columns()
        decode_into(cols, record(1, color="red"), end_offset=9, accept_tag=None, include_properties=include)
        rb = cols.to_record_batch("broker-a", include)
        assert rb.schema == arrow_schema(include)
        row = rb.to_pylist()[0]
        assert row["brokerName"] == "broker-a" and row["body"] == b"hello"
        if include:
            assert row["properties"] == [("color", "red")]


def test_records_with_ipv6_hosts_decode_like_ipv4_ones() -> None:
    raw = encode_record(topic=b"orders", body=b"v6", properties=encode_properties_bytes({"TAGS": "T"}),
                        queue_id=1, queue_offset=9, physical_offset=77, store_timestamp=5_000,
                        born_host="[::1]:5000", store_host="[fe80::1]:10911", reconsume_times=2)
    cols = Columns()
    decode_into(cols, raw + record(10), end_offset=99, accept_tag=None, include_properties=True)
    assert cols.queue_offset == [9, 10] and cols.body == [b"v6", b"hello"] and cols.tags == ["T", "TagA"]
    assert cols.store_us[0] == 5_000_000 and cols.reconsume == [2, 1]
    assert len(cols.msg_id[0]) == 56  # IPv6 offset message id
