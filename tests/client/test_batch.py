"""Batch bodies follow §5.8 and large lists split into batches under the size limit."""

from __future__ import annotations

import pytest

from orbitmq.client.batch import encode_batch, item_size, split_batches
from orbitmq.client.message import Message
from orbitmq.client.validation import check_batch
from orbitmq.errors import MessageValidationError


def test_a_batch_item_matches_the_protocol_reference_example() -> None:
    msg = Message("T", b"hi", tags="A")
    msg.properties = {"WAIT": "true", "TAGS": "A"}
    body = b"".join(encode_batch([msg]))
    assert body.hex() == (
        "00000028" "00000000" "00000000" "00000000" "00000002" "6869" "0010" "5741495401747275650254414753" "0141"
    )


def test_split_keeps_order_and_stays_under_the_limit() -> None:
    msgs = [Message("T", bytes([i % 256]) * 1000) for i in range(100)]
    limit = 10 * item_size(msgs[0]) + 5
    batches = list(split_batches(msgs, limit))
    assert [m for b in batches for m in b] == msgs
    assert all(sum(item_size(m) for m in b) <= limit for b in batches)
    assert [len(b) for b in batches] == [10] * 10


def test_split_refuses_a_message_larger_than_any_batch() -> None:
    with pytest.raises(MessageValidationError):
        list(split_batches([Message("T", b"x" * 100)], limit=50))


def test_a_batch_must_share_topic_and_carry_no_delay() -> None:
    with pytest.raises(MessageValidationError):
        check_batch([Message("A", b"1"), Message("B", b"2")])
    with pytest.raises(MessageValidationError):
        check_batch([Message("A", b"1", delay_time_level=2)])
    with pytest.raises(MessageValidationError):
        check_batch([Message("%RETRY%G", b"1")])
    with pytest.raises(MessageValidationError):
        check_batch([Message("A", b"1"), Message("A", b"2", wait_store_msg_ok=False)])
    assert len(check_batch([Message("A", b"1"), Message("A", b"2")])) == 2
