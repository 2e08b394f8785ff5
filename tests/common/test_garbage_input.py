"""Bad bytes get the codecs' own errors, never a stray exception (a server must survive any input)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common.jsonbody import JsonBodyError, loads
from orbitmq.common.properties import decode_properties
from orbitmq.common.record import check_record, decode_record, iter_batch_items, iter_records
from orbitmq.errors import CorruptRecord
from tests.common.test_record import ANNOTATED, BATCH_ITEM


def _mutations(seed: bytes) -> st.SearchStrategy[bytes]:
    """The seed with some bytes overwritten and maybe cut short: near-valid input finds more paths."""
    return st.tuples(
        st.lists(st.tuples(st.integers(0, len(seed) - 1), st.integers(0, 255)), max_size=6),
        st.integers(0, len(seed)),
    ).map(lambda spec: _apply(seed, *spec))


def _apply(seed: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    out = bytearray(seed)
    for pos, value in edits:
        out[pos] = value
    return bytes(out[:cut])


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=200), _mutations(ANNOTATED), _mutations(ANNOTATED * 2)))
def test_record_decoding_of_garbage_raises_only_corrupt_record(data: bytes) -> None:
    for call in (lambda: decode_record(data), lambda: check_record(data, check_crc=True)):
        try:
            call()
        except CorruptRecord:
            pass
    try:
        list(iter_records(data))
    except CorruptRecord:  # only the unsupported-compression subclass escapes iter_records
        pass


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=100), _mutations(BATCH_ITEM * 2)))
def test_batch_splitting_of_garbage_raises_only_corrupt_record(data: bytes) -> None:
    try:
        for item in iter_batch_items(data):
            decode_properties(item.properties)
    except CorruptRecord:
        pass


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.text(alphabet="{}[]:,'\"\\ 0123456789abeflnrstu.-+E", max_size=40),
    st.binary(max_size=40),
))
def test_json_parsing_of_garbage_raises_only_json_body_error(data: str | bytes) -> None:
    try:
        loads(data)
    except JsonBodyError:
        pass
