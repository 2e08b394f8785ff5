"""Bodies of RESET_CONSUMER_CLIENT_OFFSET (§3.11, §4.12): queue -> new offset."""

from __future__ import annotations

import orjson

from orbitmq.client.offset_store import decode_offset_table
from orbitmq.client.queue import MessageQueue


def parse_reset_body(body: bytes) -> dict[MessageQueue, int]:
    """ResetOffsetBody (object-keyed map) or ResetOffsetBodyForC (list of entries)."""
    text = body.decode("utf-8", "replace")
    try:
        table = decode_offset_table(text)
        if table:
            return table
    except ValueError:
        pass
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    entries = obj.get("offsetTable") if isinstance(obj, dict) else None
    if not isinstance(entries, list):
        return {}
    return {
        MessageQueue(str(e["topic"]), str(e["brokerName"]), int(e["queueId"])): int(e["offset"])
        for e in entries
        if isinstance(e, dict) and {"topic", "brokerName", "queueId", "offset"} <= set(e)
    }
