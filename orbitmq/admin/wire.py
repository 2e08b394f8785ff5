"""Body decoding for the admin API: fastjson bodies, object-keyed queue maps, records, ids.

Thin on purpose: the formats live in `orbitmq.common`; this module only turns
them into the shapes the admin API hands out and says which malformed input
becomes which error (a peer's bad body is a `BrokerError` with code
SYSTEM_ERROR, never a crash of the command).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orbitmq.client.queue import MessageQueue
from orbitmq.common import jsonbody
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.record import iter_records
from orbitmq.errors import BrokerError, CorruptRecord

_SYSTEM_ERROR = 1

_ids: UniqueIdGenerator | None = None


def bad_body(what: str) -> BrokerError:
    return BrokerError.for_code(_SYSTEM_ERROR, f"unreadable response body: {what}")


def json_object(raw: bytes) -> dict[str, Any]:
    """A fastjson object body (bare numeric keys allowed); {} for an empty body."""
    if not raw:
        return {}
    try:
        value = jsonbody.loads(raw)
    except ValueError as exc:
        raise bad_body(str(exc)) from None
    if not isinstance(value, dict):
        raise bad_body(f"expected a JSON object, got {type(value).__name__}")
    return value


def dump_json(value: Mapping[str, Any]) -> bytes:
    return jsonbody.dumps(dict(value))


def queue_keyed(table: Any) -> list[tuple[MessageQueue, Any]]:
    """The entries of a map keyed by MessageQueue objects (ConsumeStats, TopicStatsTable, ResetOffsetBody).

    fastjson writes the keys as JSON objects; a peer that wrote them as JSON
    text inside quoted keys is accepted too.
    """
    if table is None:
        return []
    pairs: list[tuple[Any, Any]]
    if isinstance(table, (jsonbody.ObjectKeyMap, dict)):
        try:
            pairs = jsonbody.object_key_items(table)
        except ValueError as exc:
            raise bad_body(f"queue key: {exc}") from None
    elif isinstance(table, list):
        # ResetOffsetBodyForC: a list of {topic, brokerName, queueId, offset}.
        pairs = [(item, item.get("offset")) for item in table if isinstance(item, dict)]
    else:
        raise bad_body(f"queue map of type {type(table).__name__}")
    out: list[tuple[MessageQueue, Any]] = []
    for key, value in pairs:
        if not isinstance(key, dict):
            raise bad_body(f"queue key {key!r}")
        try:
            out.append((MessageQueue.from_json(key), value))
        except (KeyError, TypeError, ValueError):
            raise bad_body(f"queue key {key!r}") from None
    return out


def parse_properties(raw: bytes) -> dict[str, str]:
    """`key=value` lines as GET_BROKER_CONFIG returns them; comments skipped.

    Not `common.javaprops`: the broker writes these lines unescaped (Java's
    MixAll.properties2String), so a backslash in a value is literal here, and
    a line without '=' is a malformed answer rather than a key.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_body("broker config is not UTF-8") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise bad_body(f"config line without '=': {line[:60]!r}")
        out[key.strip()] = value.strip()
    return out


def format_properties(settings: Mapping[str, str]) -> bytes:
    for key, value in settings.items():
        if not key or any(c in key for c in "=\n\r") or any(c in value for c in "\n\r"):
            raise ValueError(f"cannot send setting {key!r}={value!r}")
    return "".join(f"{k}={v}\n" for k, v in settings.items()).encode("utf-8")


def decode_messages(raw: bytes) -> list[MessageExt]:
    """Stored records back to back (pull, query and view bodies)."""
    try:
        return list(iter_records(raw))
    except (CorruptRecord, ValueError) as exc:
        raise bad_body(f"message records: {exc}") from None


def new_unique_id() -> str:
    """A UNIQ_KEY in the Java client's layout, from one generator per process."""
    global _ids
    if _ids is None:
        _ids = UniqueIdGenerator()
    return _ids.next()
