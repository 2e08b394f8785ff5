"""Message ids (§5.11) and Java string hashes (§5.10, §7.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common.hashing import index_key_hash, java_string_hash, tag_hash_code
from orbitmq.common.msgid import (
    UniqueIdGenerator,
    create_offset_msg_id,
    format_host,
    parse_host,
    parse_offset_msg_id,
    unique_id_ip,
    unique_id_time_ms,
)


def test_offset_msg_id_of_the_reference_record() -> None:
    assert create_offset_msg_id("10.0.0.1:10911", 4096) == "0A00000100002A9F0000000000001000"
    assert parse_offset_msg_id("0A00000100002A9F0000000000001000") == ("10.0.0.1:10911", 4096)


def test_ipv6_offset_msg_ids_are_56_characters_and_parse_back() -> None:
    msg_id = create_offset_msg_id("[2001:db8::1]:10911", 2**40)
    assert len(msg_id) == 56 and msg_id == msg_id.upper()
    assert parse_offset_msg_id(msg_id) == ("[2001:db8::1]:10911", 2**40)


@pytest.mark.parametrize("bad", ["", "ABC", "0A00000100002A9F000000000000100", "ZZ00000100002A9F0000000000001000"])
def test_malformed_offset_msg_ids_raise_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_offset_msg_id(bad)


def test_hosts_parse_in_bracketed_and_bare_ipv6_forms() -> None:
    assert parse_host("[::1]:80") == parse_host("::1:80") == (b"\0" * 15 + b"\1", 80)
    assert format_host(b"\x0a\0\0\x01", 10911) == "10.0.0.1:10911"
    for bad in ["nohost", "host:80", "1.2.3.4", "1.2.3.4:x"]:
        with pytest.raises(ValueError):
            parse_host(bad)


def test_unique_ids_carry_the_ip_and_differ_from_each_other() -> None:
    gen = UniqueIdGenerator(ip=b"\x0a\x00\x00\x09", pid=0x12345)
    ids = {gen.next() for _ in range(10000)}
    assert len(ids) == 10000
    some = next(iter(ids))
    assert len(some) == 32 and some == some.upper() and some.startswith("0A0000092345")
    assert unique_id_ip(some) == b"\x0a\x00\x00\x09"


def test_unique_id_time_is_recovered_to_the_millisecond() -> None:
    gen = UniqueIdGenerator(ip=b"\x7f\0\0\1")
    now = 1700000000123
    assert unique_id_time_ms(gen.next(now), now_ms=now + 5) == now


def test_ipv6_unique_ids_are_56_characters() -> None:
    assert len(UniqueIdGenerator(ip=bytes(16)).next()) == 56


def test_java_string_hash_matches_known_values() -> None:
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("TagB") == 2598920
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31  # Java's Integer.MIN_VALUE example
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # surrogate pair: two code units


def _reference_hash(text: str) -> int:
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


@given(st.text(max_size=700))
def test_java_string_hash_agrees_with_the_definition(text: str) -> None:
    assert java_string_hash(text) == _reference_hash(text)


def test_tag_hash_code_is_zero_without_tags_and_sign_extended_otherwise() -> None:
    assert tag_hash_code(None) == 0 and tag_hash_code("") == 0
    assert tag_hash_code("TagA") == 2598919
    assert tag_hash_code("polygenelubricants") == -2**31


def test_index_key_hash_is_the_absolute_hash_with_min_value_mapped_to_zero() -> None:
    assert index_key_hash("polygenelubricants") == 0
    negative = next(k for k in (f"some-longer-key-{i}" for i in range(1000)) if java_string_hash(k) < 0)
    assert index_key_hash(negative) == -java_string_hash(negative)
    assert index_key_hash("TagA") == 2598919


@given(st.text(max_size=40), st.text(max_size=600))
def test_prefixed_hash_equals_the_hash_of_the_joined_string(prefix: str, text: str) -> None:
    from orbitmq.common.hashing import java_string_hash_concat

    assert java_string_hash_concat(prefix, text) == java_string_hash(prefix + text)
    assert index_key_hash(text, prefix) == index_key_hash(prefix + text)
