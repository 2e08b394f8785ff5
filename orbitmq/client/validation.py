"""Client-side checks made before anything is sent (RocketMQ's Validators, §5.9, §6.2).

Each check raises `MessageValidationError` (a ValueError) with the wording the
Java client uses, so users of both see the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orbitmq.common import names
from orbitmq.common.message import Message
from orbitmq.errors import MessageValidationError

VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
MAX_MESSAGE_SIZE = 4 * 1024 * 1024

#: Topics a producer may not send to (the broker answers NO_PERMISSION for them too).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)

def check_topic(topic: str) -> None:
    if not topic or not topic.strip():
        raise MessageValidationError("The specified topic is blank")
    if not VALID_NAME.match(topic):
        raise MessageValidationError(
            f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MessageValidationError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")


def check_send_topic(topic: str) -> None:
    check_topic(topic)
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise MessageValidationError(f"Sending message to topic[{topic}] is forbidden.")
    if topic == names.AUTO_CREATE_TOPIC_KEY_TOPIC:
        raise MessageValidationError(f"The topic[{topic}] is conflict with default topic.")


def check_group(group: str) -> None:
    if not group or not group.strip():
        raise MessageValidationError("the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise MessageValidationError(f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.")
    if not VALID_NAME.match(group):
        raise MessageValidationError(
            f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )


def check_message(msg: Message, max_message_size: int = MAX_MESSAGE_SIZE) -> None:
    """A message a producer may send: legal topic, non-empty body within the size limit."""
    if msg is None:
        raise MessageValidationError("the message is null")
    check_send_topic(msg.topic)
    check_body(msg, max_message_size)


def check_body(msg: Message, max_message_size: int = MAX_MESSAGE_SIZE) -> None:
    """A non-empty body within the size limit."""
    if msg.body is None:
        raise MessageValidationError("the message body is null")
    if len(msg.body) == 0:
        raise MessageValidationError("the message body length is zero")
    if len(msg.body) > max_message_size:
        raise MessageValidationError(f"the message body size over max value, MAX: {max_message_size}")


def check_batch(msgs: Iterable[Message]) -> list[Message]:
    """Messages that may travel in one batch: same topic, same WAIT, no delay, no retry topic."""
    batch = list(msgs)
    if not batch:
        raise MessageValidationError("the batch is empty")
    first = batch[0]
    for msg in batch:
        if msg.delay_time_level > 0:
            raise MessageValidationError("TimeDelayLevel is not supported for batching")
        if names.is_retry_topic(msg.topic):
            raise MessageValidationError("Retry Group is not supported for batching")
        if msg.topic != first.topic:
            raise MessageValidationError("The topic of the messages in one batch should be the same")
        if msg.wait_store_msg_ok != first.wait_store_msg_ok:
            raise MessageValidationError("The waitStoreMsgOK of the messages in one batch should the same")
    return batch
