"""Message property names (RocketMQ's `MessageConst`) and the property string codec.

A message's properties travel and are stored as one string (protocol reference
§5.5): ``name 0x01 value 0x02 name 0x01 value`` with no trailing separator.
Decoding follows the Java rule exactly so that a string Java accepts yields
the same map here, and a string Java silently skips parts of is skipped the
same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"

KEYS: Final = "KEYS"
TAGS: Final = "TAGS"
WAIT_STORE_MSG_OK: Final = "WAIT"
DELAY_TIME_LEVEL: Final = "DELAY"
RETRY_TOPIC: Final = "RETRY_TOPIC"
REAL_TOPIC: Final = "REAL_TOPIC"
REAL_QUEUE_ID: Final = "REAL_QID"
TRANSACTION_PREPARED: Final = "TRAN_MSG"
PRODUCER_GROUP: Final = "PGROUP"
MIN_OFFSET: Final = "MIN_OFFSET"
MAX_OFFSET: Final = "MAX_OFFSET"
BUYER_ID: Final = "BUYER_ID"
ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
TRANSFER_FLAG: Final = "TRANSFER_FLAG"
CORRECTION_FLAG: Final = "CORRECTION_FLAG"
MQ2_FLAG: Final = "MQ2_FLAG"
RECONSUME_TIME: Final = "RECONSUME_TIME"
MSG_REGION: Final = "MSG_REGION"
TRACE_SWITCH: Final = "TRACE_ON"
UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
INSTANCE_ID: Final = "INSTANCE_ID"
CORRELATION_ID: Final = "CORRELATION_ID"
MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
MESSAGE_TTL: Final = "TTL"
REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
CLUSTER: Final = "CLUSTER"
MESSAGE_TYPE: Final = "MSG_TYPE"
INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"

#: Added as a *user* property by the 4.9.7 producer when a send result carries
#: a transaction id; not reserved.
TRANSACTION_ID: Final = "__transactionId__"
START_DELIVER_TIME: Final = "__STARTDELIVERTIME"
# Timed messages (RocketMQ 5's names): an absolute delivery time, or a delay from receipt.
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
#: OrbitMQ's own: a message's time-to-live in ms from its store time (broker/expiry.py).
TTL_MS: Final = "ORBITMQ_TTL_MS"
# OrbitMQ's dead-letter bookkeeping (not RocketMQ names; other clients carry them as user properties).
#: The last consumer exception text of a message sent back for retry or to the DLQ (truncated).
ORBITMQ_LAST_ERROR: Final = "ORBITMQ_LAST_ERROR"
#: How many times the message had been delivered when it was sent back (orderly retries are local).
ORBITMQ_ATTEMPTS: Final = "ORBITMQ_ATTEMPTS"
#: On a message resent from a DLQ: the dead letter's original message id (admin resendDlq).
ORBITMQ_DLQ_ORIGIN: Final = "ORBITMQ_DLQ_ORIGIN"
#: On a marker record in a DLQ: the original ids (one per line in the body) resent already.
ORBITMQ_DLQ_RESENT_MARKER: Final = "ORBITMQ_DLQ_RESENT_MARKER"
#: Longest ORBITMQ_LAST_ERROR kept, in characters.
LAST_ERROR_MAX_CHARS: Final = 1024


def error_text(text: str) -> str:
    """`text` made fit for a property value: separators replaced, cut to LAST_ERROR_MAX_CHARS."""
    text = text.replace(NAME_VALUE_SEPARATOR, " ").replace(PROPERTY_SEPARATOR, " ")
    if len(text) > LAST_ERROR_MAX_CHARS:
        text = text[: LAST_ERROR_MAX_CHARS - 3] + "..."
    return text

#: Separator between keys inside the KEYS property.
KEY_SEPARATOR: Final = " "

#: Names a user property may not take (the set the Java client's
#: `putUserProperty` checks, §5.6). The three broker-side counters and
#: INNER_MULTI_DISPATCH are not in it.
RESERVED_NAMES: Final[frozenset[str]] = frozenset(
    {
        KEYS, TAGS, WAIT_STORE_MSG_OK, DELAY_TIME_LEVEL, RETRY_TOPIC, REAL_TOPIC, REAL_QUEUE_ID,
        TRANSACTION_PREPARED, PRODUCER_GROUP, MIN_OFFSET, MAX_OFFSET, BUYER_ID, ORIGIN_MESSAGE_ID,
        TRANSFER_FLAG, CORRECTION_FLAG, MQ2_FLAG, RECONSUME_TIME, MSG_REGION, TRACE_SWITCH,
        UNIQ_CLIENT_MESSAGE_ID_KEYIDX, MAX_RECONSUME_TIMES, CONSUME_START_TIMESTAMP, INSTANCE_ID,
        CORRELATION_ID, MESSAGE_REPLY_TO_CLIENT, MESSAGE_TTL, REPLY_MESSAGE_ARRIVE_TIME,
        PUSH_REPLY_TIME, CLUSTER, MESSAGE_TYPE, INNER_MULTI_QUEUE_OFFSET,
    }
)

#: The store format keeps the property string's length in a signed short.
MAX_PROPERTIES_BYTES: Final = 32767


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Encode a property map as RocketMQ's property string.

    Pairs whose value is None are skipped, as Java does. The result has no
    trailing separator. Names and values must not contain 0x01 or 0x02; the
    caller validates user input (see `Message.put_user_property`).
    """
    return PROPERTY_SEPARATOR.join(
        [f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in properties.items() if value is not None]
    )


def encode_properties_bytes(properties: Mapping[str, str | None]) -> bytes:
    """`encode_properties` as UTF-8 bytes, the form records and batch items carry."""
    return encode_properties(properties).encode()


def decode_properties(text: str | bytes | bytearray | memoryview) -> dict[str, str]:
    """Decode a property string by Java's rule.

    The string is split on 0x02; a segment is kept only when its first 0x01
    leaves a non-empty name before it and a non-empty value after it (the
    value may itself contain 0x01). Later duplicates win. Bytes are decoded
    as UTF-8 with replacement characters for invalid sequences, as Java's
    `new String(bytes, UTF_8)` does.
    """
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8", "replace")
    result: dict[str, str] = {}
    if not text:
        return result
    for segment in text.split(PROPERTY_SEPARATOR):
        name, _, value = segment.partition(NAME_VALUE_SEPARATOR)
        if name and value:
            result[name] = value
    return result


def append_properties(own: str, extra: str) -> str:
    """Join two property strings with one separator when both are non-empty.

    Used where the broker appends batch-level properties after an item's own
    ones (§5.8).
    """
    if not own:
        return extra
    if not extra:
        return own
    if own.endswith(PROPERTY_SEPARATOR):
        return own + extra
    return own + PROPERTY_SEPARATOR + extra
