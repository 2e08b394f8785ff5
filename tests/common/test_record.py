"""The stored-record codec against the protocol reference's byte vectors, plus round trips."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import record
from orbitmq.common.message import Message
from orbitmq.common.record import (
    BLANK_MAGIC,
    UnsupportedCompression,
    body_crc,
    check_record,
    decode_batch,
    decode_record,
    encode_batch,
    encode_blank_into,
    encode_record,
    encode_record_into,
    iter_batch_items,
    iter_records,
    record_size,
)
from orbitmq.common.sysflag import COMPRESSED, COMPRESSION_LZ4, COMPRESSION_ZLIB
from orbitmq.errors import CorruptRecord

# §5.1 annotated example, byte for byte.
ANNOTATED = bytes.fromhex(
    "0000006a" "daa320a7" "3610a686" "00000001" "00000000" "0000000000000005" "0000000000001000" "00000000"
    "0000018bcfe56800" "0a000002" "0000c350" "0000018bcfe5687b" "0a000001" "00002a9f" "00000000"
    "0000000000000000" "00000005" "68656c6c6f" "01" "54" "0009" "544147530154616741"
)

ANNOTATED_FIELDS: dict = {
    "topic": b"T", "body": b"hello", "properties": b"TAGS\x01TagA", "queue_id": 1, "queue_offset": 5,
    "physical_offset": 4096, "born_timestamp": 1700000000000, "born_host": "10.0.0.2:50000",
    "store_timestamp": 1700000000123, "store_host": "10.0.0.1:10911",
}


def test_annotated_record_encodes_byte_for_byte() -> None:
    assert encode_record(**ANNOTATED_FIELDS) == ANNOTATED


def test_annotated_record_decodes_every_field() -> None:
    m = decode_record(ANNOTATED)
    assert (m.topic, m.body, m.properties, m.tags) == ("T", b"hello", {"TAGS": "TagA"}, "TagA")
    assert (m.queue_id, m.queue_offset, m.commit_log_offset, m.store_size) == (1, 5, 4096, 106)
    assert (m.born_timestamp, m.born_host) == (1700000000000, "10.0.0.2:50000")
    assert (m.store_timestamp, m.store_host) == (1700000000123, "10.0.0.1:10911")
    assert m.body_crc == 907060870 == body_crc(b"hello")
    assert m.offset_msg_id == m.msg_id == "0A00000100002A9F0000000000001000"
    assert (m.sys_flag, m.reconsume_times, m.prepared_transaction_offset, m.flag) == (0, 0, 0, 0)


def test_msg_id_is_the_unique_key_when_the_producer_set_one() -> None:
    raw = encode_record(**{**ANNOTATED_FIELDS, "properties": b"UNIQ_KEY\x01ABC"})
    m = decode_record(raw)
    assert m.msg_id == "ABC"
    assert m.offset_msg_id == "0A00000100002A9F0000000000001000"


def test_record_size_matches_the_encoded_length_for_ipv6_hosts() -> None:
    raw = encode_record(**{**ANNOTATED_FIELDS, "born_host": "[::1]:7", "store_host": "[fe80::2]:10911"})
    assert len(raw) == record_size(5, 1, 9, record.BORNHOST_V6 | record.STOREHOST_V6) == 106 + 24
    m = decode_record(raw)
    assert m.born_host == "[::1]:7" and m.store_host == "[fe80::2]:10911"
    assert m.sys_flag & 0x30 == 0x30
    assert len(m.offset_msg_id) == 56


def test_check_record_accepts_a_good_record_and_reports_a_blank_as_zero() -> None:
    assert check_record(ANNOTATED, check_crc=True) == 106
    buf = bytearray(64)
    encode_blank_into(buf, 0, 64)
    assert check_record(buf) == 0
    assert int.from_bytes(buf[4:8], "big", signed=True) == BLANK_MAGIC


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda b: b.__setitem__(slice(4, 8), b"\0\0\0\0"),  # magic
        lambda b: b.__setitem__(slice(0, 4), (107).to_bytes(4, "big")),  # size past the end
        lambda b: b.__setitem__(slice(0, 4), (105).to_bytes(4, "big")),  # size not matching fields
        lambda b: b.__setitem__(88, 0x69),  # body byte: CRC mismatch
    ],
)
def test_check_record_rejects_corrupt_records(corrupt) -> None:  # type: ignore[no-untyped-def]
    buf = bytearray(ANNOTATED)
    corrupt(buf)
    with pytest.raises(CorruptRecord):
        check_record(buf, check_crc=True)


def test_check_record_rejects_a_truncated_record() -> None:
    with pytest.raises(CorruptRecord):
        check_record(ANNOTATED[:50])
    with pytest.raises(CorruptRecord):
        decode_record(ANNOTATED[:105])


def test_iter_records_stops_quietly_at_a_torn_tail() -> None:
    body = ANNOTATED * 3 + ANNOTATED[:40]
    assert [m.queue_offset for m in iter_records(body)] == [5, 5, 5]


def test_compressed_bodies_are_inflated_with_zlib_for_old_and_new_type_bits() -> None:
    text = b"a" * 5000
    for flag in (COMPRESSED, COMPRESSED | COMPRESSION_ZLIB):
        raw = encode_record(**{**ANNOTATED_FIELDS, "body": zlib.compress(text, 5), "sys_flag": flag})
        assert decode_record(raw).body == text
        assert decode_record(raw, decompress=False).body == zlib.compress(text, 5)


def test_lz4_bodies_raise_a_clear_error_instead_of_being_dropped() -> None:
    raw = encode_record(**{**ANNOTATED_FIELDS, "sys_flag": COMPRESSED | COMPRESSION_LZ4})
    with pytest.raises(UnsupportedCompression, match="LZ4"):
        list(iter_records(raw))


def test_encode_refuses_topics_longer_than_a_v1_record_holds() -> None:
    with pytest.raises(ValueError):
        encode_record(**{**ANNOTATED_FIELDS, "topic": b"x" * 128})


def test_encode_record_into_writes_at_an_offset_inside_a_larger_buffer() -> None:
    buf = bytearray(b"\xee" * 300)
    size = encode_record_into(buf, 100, **ANNOTATED_FIELDS)
    assert size == 106
    assert bytes(buf[100:206]) == ANNOTATED
    assert buf[:100] == b"\xee" * 100 and buf[206:] == b"\xee" * 94


# §5.8 example: body "hi", WAIT=true, TAGS=A.
BATCH_ITEM = bytes.fromhex(
    "00000028" "00000000" "00000000" "00000000" "00000002" "6869" "0010" "5741495401747275650254414753" "0141"
)


def test_batch_item_encodes_byte_for_byte() -> None:
    msg = Message(topic="T", body=b"hi", properties={"WAIT": "true", "TAGS": "A"})
    assert encode_batch([msg]) == BATCH_ITEM


def test_batch_body_decodes_into_messages() -> None:
    [msg] = decode_batch(BATCH_ITEM + b"", topic="T")
    assert (msg.topic, msg.body, msg.flag, msg.properties) == ("T", b"hi", 0, {"WAIT": "true", "TAGS": "A"})


def test_a_truncated_batch_item_is_an_error() -> None:
    with pytest.raises(CorruptRecord):
        list(iter_batch_items(BATCH_ITEM[:-1]))
    with pytest.raises(CorruptRecord):
        list(iter_batch_items(BATCH_ITEM + b"\0\0"))


_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=8)
_props = st.dictionaries(_text, _text, max_size=5)
_hosts = st.sampled_from(["10.0.0.2:50000", "127.0.0.1:1", "[::1]:65535", "[2001:db8::5]:9"])


@settings(max_examples=150, deadline=None)
@given(
    topic=st.text("abcXYZ019_-%|", min_size=1, max_size=127),
    body=st.binary(max_size=300),
    props=_props,
    ints=st.tuples(*(st.integers(-(2**31), 2**31 - 1) for _ in range(3))),
    longs=st.tuples(*(st.integers(0, 2**63 - 1) for _ in range(5))),
    born=_hosts,
    store=_hosts,
    sys_flag=st.sampled_from([0, 2, 4, 8, 12]),
)
def test_records_round_trip(topic, body, props, ints, longs, born, store, sys_flag) -> None:  # type: ignore[no-untyped-def]
    from orbitmq.common.properties import encode_properties_bytes

    raw = encode_record(
        topic=topic.encode(), body=body, properties=encode_properties_bytes(props), queue_id=ints[0],
        flag=ints[1], reconsume_times=ints[2], queue_offset=longs[0], physical_offset=longs[1],
        born_timestamp=longs[2], store_timestamp=longs[3], prepared_transaction_offset=longs[4],
        born_host=born, store_host=store, sys_flag=sys_flag,
    )
    assert check_record(raw, check_crc=True) == len(raw)
    m = decode_record(raw)
    assert (m.topic, m.body, m.properties, m.born_host, m.store_host) == (topic, body, props, born, store)
    assert (m.queue_id, m.flag, m.reconsume_times) == ints
    assert (m.queue_offset, m.commit_log_offset, m.born_timestamp, m.store_timestamp) == longs[:4]
    assert m.prepared_transaction_offset == longs[4]
    assert m.sys_flag & 0xF == sys_flag


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=100), _props, st.integers(-(2**31), 2**31 - 1)), max_size=6))
def test_batches_round_trip(items) -> None:  # type: ignore[no-untyped-def]
    msgs = [Message(topic="T", body=b, properties=p, flag=f) for b, p, f in items]
    assert decode_batch(encode_batch(msgs), topic="T") == msgs


def test_batch_items_are_views_into_the_body_without_copies() -> None:
    body = bytearray(BATCH_ITEM * 3)
    items = list(iter_batch_items(body))
    assert len(items) == 3
    body[20] = ord("H")  # the first item's body starts right after its 20-byte head
    assert bytes(items[0].body) == b"Hi" and bytes(items[1].body) == b"hi"
    assert bytes(items[2].properties) == b"WAIT\x01true\x02TAGS\x01A"


def test_decoding_without_body_keeps_every_other_field() -> None:
    m = decode_record(ANNOTATED, with_body=False)
    assert m.body == b"" and m.properties == {"TAGS": "TagA"} and m.store_size == 106 and m.body_crc == 907060870


def test_v2_records_with_a_two_byte_topic_length_are_read() -> None:
    v1 = bytearray(ANNOTATED)
    # v2: same fields, magic 0xDAA320AB, topic length as a short (one byte longer)
    v2 = v1[:4] + bytes.fromhex("daa320ab") + v1[8:93] + b"\x00\x01" + v1[94:]
    v2[0:4] = (len(v2)).to_bytes(4, "big")
    assert check_record(bytes(v2), check_crc=True) == 107
    m = decode_record(bytes(v2))
    assert (m.topic, m.body, m.properties) == ("T", b"hello", {"TAGS": "TagA"})
