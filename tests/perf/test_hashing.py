"""The fast Java string hashes agree with the definition, whatever the key's shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common import hashing
from orbitmq.common.hashing import index_key_hash, java_string_hash, java_string_hash_concat
from orbitmq.common.msgid import UniqueIdGenerator


def reference_hash(text: str) -> int:
    """Java's String.hashCode, one UTF-16 code unit at a time."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def reference_index_hash(text: str) -> int:
    h = reference_hash(text)
    return 0 if h == -(2**31) else abs(h)


@given(st.text(min_size=500, max_size=1600))
def test_strings_longer_than_one_chunk_hash_as_java_does(text: str) -> None:
    assert java_string_hash(text) == reference_hash(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=64), st.text(max_size=12))
def test_index_hash_of_a_prefixed_key_agrees_with_the_definition(key: str, prefix: str) -> None:
    assert index_key_hash(key, prefix) == reference_index_hash(prefix + key)
    assert index_key_hash(prefix + key) == reference_index_hash(prefix + key)


@given(st.text(min_size=21, max_size=80), st.sampled_from(["", "T#", "Topic\u00e9#", "%RETRY%g#"]))
def test_long_keys_with_any_characters_hash_as_the_joined_string(key: str, prefix: str) -> None:
    assert index_key_hash(key, prefix) == reference_index_hash(prefix + key)
    assert java_string_hash_concat(prefix, key) == reference_hash(prefix + key)


def test_unique_keys_of_one_producer_hash_right_when_their_heads_are_cached() -> None:
    ids = UniqueIdGenerator()
    keys = [ids.next() for _ in range(300)]
    for _ in range(2):  # the second pass reads every head from the cache
        for key in keys:
            assert index_key_hash(key, "BenchTopic#") == reference_index_hash("BenchTopic#" + key)


def test_the_head_cache_stays_bounded_and_correct_after_it_is_cleared() -> None:
    limit = hashing._HEADS_MAX
    keys = [f"{i:020d}-tail-suffix" for i in range(limit + 50)]
    for key in keys:
        assert index_key_hash(key, "t#") == reference_index_hash("t#" + key)
    assert len(hashing._head_hashes) <= limit


def test_the_integer_min_value_key_maps_to_zero_on_every_path() -> None:
    assert reference_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0
    assert index_key_hash("lubricants", "polygene") == 0
    long_key = "\0" * 5 + "polygenelubricants"  # leading NULs add nothing: a long key with the same hash
    assert reference_hash(long_key) == -(2**31)
    assert index_key_hash(long_key) == 0
    assert index_key_hash(long_key[3:], "\0\0\0") == 0
