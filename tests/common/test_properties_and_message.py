"""Property strings (§5.5) and the Message conveniences."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common.message import Message, MessageExtBrokerInner
from orbitmq.common.properties import append_properties, decode_properties, encode_properties
from orbitmq.errors import MessageValidationError


def test_property_string_of_the_reference_example_decodes() -> None:
    text = "KEYS\x01k1 k2\x02WAIT\x01true\x02TAGS\x01TagA"
    assert decode_properties(text) == {"KEYS": "k1 k2", "WAIT": "true", "TAGS": "TagA"}
    assert encode_properties({"KEYS": "k1 k2", "WAIT": "true", "TAGS": "TagA"}) == text


def test_encoding_skips_none_values_and_leaves_no_trailing_separator() -> None:
    assert encode_properties({"A": "1", "B": None, "C": "3"}) == "A\x011\x02C\x013"
    assert encode_properties({}) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("A\x01", {}),  # empty value
        ("\x01v", {}),  # empty name
        ("AB", {}),  # no separator
        ("A\x01v\x02\x02B\x01w\x02", {"A": "v", "B": "w"}),  # empty segments, trailing separator
        ("A\x01x\x01y", {"A": "x\x01y"}),  # value keeps later 0x01
        ("A\x01old\x02A\x01new", {"A": "new"}),  # later duplicates win
    ],
)
def test_decoding_follows_the_java_rule_for_odd_segments(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


def test_decoding_bytes_replaces_invalid_utf8() -> None:
    assert decode_properties(b"A\x01\xff") == {"A": "\ufffd"}


_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1)


@given(st.dictionaries(_text, _text))
def test_property_strings_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props
    assert decode_properties(encode_properties(props).encode()) == props


def test_batch_level_properties_are_appended_with_one_separator() -> None:
    assert append_properties("A\x011", "CLUSTER\x01c") == "A\x011\x02CLUSTER\x01c"
    assert append_properties("A\x011\x02", "CLUSTER\x01c") == "A\x011\x02CLUSTER\x01c"
    assert append_properties("", "CLUSTER\x01c") == "CLUSTER\x01c"
    assert append_properties("A\x011", "") == "A\x011"


def test_message_keys_accept_a_list_or_a_space_separated_string() -> None:
    m = Message("T")
    m.keys = ["k1", "k2"]
    assert m.properties["KEYS"] == "k1 k2" and m.keys == ["k1", "k2"]
    m.keys = "a  b"
    assert m.keys == ["a", "b"]
    m.keys = None
    assert "KEYS" not in m.properties and m.keys == []


def test_message_delivery_options_default_like_java() -> None:
    m = Message("T", b"x")
    assert m.wait_store_msg_ok is True and m.delay_time_level == 0 and m.tags is None
    m.wait_store_msg_ok = False
    m.delay_time_level = 3
    m.tags = "TagA"
    assert m.properties == {"WAIT": "false", "DELAY": "3", "TAGS": "TagA"}
    m.delay_time_level = 0
    assert "DELAY" not in m.properties
    for raw, expected in [("TRUE", True), ("yes", False), ("", False)]:
        m.properties["WAIT"] = raw
        assert m.wait_store_msg_ok is expected


def test_user_properties_refuse_reserved_names_and_separators() -> None:
    m = Message("T")
    m.put_user_property("color", "red")
    assert m.user_properties == {"color": "red"}
    for name, value in [("TAGS", "x"), ("UNIQ_KEY", "x"), ("", "x"), ("a", ""), ("a\x01", "x"), ("a", "b\x02")]:
        with pytest.raises(MessageValidationError):
            m.put_user_property(name, value)


def test_broker_inner_message_reencodes_its_property_string() -> None:
    m = MessageExtBrokerInner("T", properties={"TAGS": "A"})
    m.refresh_properties_string()
    assert m.properties_string == "TAGS\x01A"
    assert m.transaction_type == 0
    m.sys_flag = 0xC
    assert m.transaction_type == 0xC
