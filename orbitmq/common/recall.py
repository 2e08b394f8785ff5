"""RocketMQ 5.3's recall handle: what a timed message's send returns and RECALL_MESSAGE takes back.

The handle is the URL-safe Base64 of "v1 <topic> <brokerName> <time ms> <msgId>" (space
separated; msgId is the UNIQ_KEY). Clients read the broker name from it to know where to
send the recall; the broker checks topic, broker and time.
"""

from __future__ import annotations

import base64
import binascii

from orbitmq.errors import BrokerError

#: RocketMQ's ILLEGAL_OPERATION: what 5.3 answers a recall it cannot do.
ILLEGAL_OPERATION = 604
_VERSION_1 = "v1"


def build_recall_handle(topic: str, broker_name: str, deliver_ms: int, uniq_key: str) -> str:
    """RocketMQ 5.3's handle: URL-safe Base64 of "v1 <topic> <brokerName> <time> <msgId>".

    As RocketMQ does, the time is the timer's delivery time plus one millisecond.
    """
    raw = " ".join((_VERSION_1, topic, broker_name, str(deliver_ms + 1), uniq_key))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def parse_recall_handle(handle: str) -> tuple[str, str, int, str]:
    """(topic, broker name, time, message id) of a v1 handle; BrokerError 604 when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4)).decode()
        items = raw.split(" ")
        if items[0] != _VERSION_1 or len(items) < 5:
            raise ValueError(raw)
        return items[1], items[2], int(items[3]), items[4]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BrokerError("recall failed, handle is invalid", code=ILLEGAL_OPERATION) from None
