"""Client-side validation refuses what RocketMQ's Validators refuse, before any I/O."""

from __future__ import annotations

import pytest

from orbitmq.client.config import ConsumeFromWhere, ConsumerConfig, MessageModel, ProducerConfig, from_kwargs
from orbitmq.client.message import Message
from orbitmq.client.validation import check_group, check_message, check_topic
from orbitmq.errors import ConfigError, MessageValidationError


@pytest.mark.parametrize("topic", ["", "  ", "a b", "a/b", "../x", "x" * 128, "täg"])
def test_illegal_topics_are_refused(topic: str) -> None:
    with pytest.raises(MessageValidationError):
        check_topic(topic)


@pytest.mark.parametrize("topic", ["T", "a-b_c", "%RETRY%G", "x" * 127, "a|b"])
def test_legal_topics_pass(topic: str) -> None:
    check_topic(topic)


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "TBW102"])
def test_system_topics_cannot_be_sent_to(topic: str) -> None:
    with pytest.raises(MessageValidationError, match="forbidden|conflict"):
        check_message(Message(topic, b"x"))


def test_empty_and_oversized_bodies_are_refused() -> None:
    with pytest.raises(MessageValidationError, match="zero"):
        check_message(Message("T", b""))
    with pytest.raises(MessageValidationError, match="over max"):
        check_message(Message("T", b"x" * 11), max_message_size=10)
    check_message(Message("T", b"x" * 10), max_message_size=10)


def test_groups_follow_the_name_rules() -> None:
    for bad in ["", "a b", "g" * 256]:
        with pytest.raises(MessageValidationError):
            check_group(bad)
    check_group("CG_1")


def test_reserved_property_names_are_refused_at_construction() -> None:
    with pytest.raises(MessageValidationError):
        Message("T", b"x", properties={"UNIQ_KEY": "1"})


def test_message_constructor_sets_tags_keys_and_user_properties() -> None:
    msg = Message("T", b"x", tags="TagA", keys=["k1", "k2"], properties={"color": "red"})
    assert msg.tags == "TagA"
    assert msg.keys == ["k1", "k2"]
    assert msg.user_properties == {"color": "red"}
    assert msg.wait_store_msg_ok


def test_configs_accept_rocketmq_enum_names_and_refuse_unknown_options() -> None:
    cfg = from_kwargs(ConsumerConfig, group="CG", message_model="BROADCASTING",
                      consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    assert cfg.message_model is MessageModel.BROADCASTING
    assert cfg.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    with pytest.raises(ConfigError):
        from_kwargs(ProducerConfig, group="PG", retry_times=3)
    with pytest.raises(ConfigError):
        from_kwargs(ConsumerConfig, message_model="SOMETIMES")
