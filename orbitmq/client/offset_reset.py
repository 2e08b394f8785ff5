"""Bodies of RESET_CONSUMER_CLIENT_OFFSET (§3.11, §4.12): queue -> new offset."""

from __future__ import annotations

from orbitmq.client.offset_store import queue_offsets
from orbitmq.client.queue import MessageQueue
from orbitmq.common.jsonbody import ObjectKeyMap, loads


def parse_reset_body(body: bytes) -> dict[MessageQueue, int]:
    """ResetOffsetBody (object-keyed map) or ResetOffsetBodyForC (list of entries); {} when unreadable."""
    try:
        obj = loads(body)
    except ValueError:
        return {}
    entries = obj.get("offsetTable") if isinstance(obj, dict) else None
    # An ObjectKeyMap is a list of pairs, so tell it apart from ResetOffsetBodyForC's list first.
    if isinstance(entries, list) and not isinstance(entries, ObjectKeyMap):
        return {
            MessageQueue(str(e["topic"]), str(e["brokerName"]), int(e["queueId"])): int(e["offset"])
            for e in entries
            if isinstance(e, dict) and {"topic", "brokerName", "queueId", "offset"} <= set(e)
        }
    try:
        return queue_offsets(entries)
    except ValueError:
        return {}
