"""Reading request header fields (extFields) and answering bad requests.

Handlers read the few fields they need with these helpers. A missing or
malformed field raises a `BrokerError` (errors.py) carrying RocketMQ's code
and a remark naming the field; the connection answers every `BrokerError` a
handler raises in one place (`remoting.connection`), so bad input never
reaches the store and never becomes an unexplained SYSTEM_ERROR.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from orbitmq.common import jsonbody, names
from orbitmq.errors import SystemError_
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.header_base import INT32, parse_field

HandlerFn = Callable[[RemotingCommand, Peer], Awaitable[RemotingCommand | None]]


class Registry(Protocol):
    """Where handler classes register themselves: the remoting server, or the broker's
    wrapper around it that tracks in-flight requests for a draining shutdown."""

    def register(self, code: int, handler: HandlerFn) -> None: ...

    def on_disconnect(self, callback: Callable[[Peer], None]) -> None: ...


def text(request: RemotingCommand, name: str) -> str:
    """A required string field."""
    value = request.field(name)
    if value is None or value == "":
        raise SystemError_(f"the custom field <{name}> is null")
    return value


def optional_text(request: RemotingCommand, name: str, default: str | None = None) -> str | None:
    value = request.field(name)
    return default if value is None or value == "" else value


def integer(request: RemotingCommand, name: str, default: int | None = None) -> int:
    """A required (or defaulted) integer field, by Java's rules and range for the field (`parse_field`).

    A malformed or out-of-range value raises `HeaderError`, answered SYSTEM_ERROR with its remark.
    """
    value = request.field(name)
    if value is None or value == "":
        if default is not None:
            return default
        raise SystemError_(f"the custom field <{name}> is null")
    if len(value) < 10 and value.isdigit() and value.isascii():
        return int(value)  # the common case, in range for any width
    return parse_field(value, name)


def boolean(request: RemotingCommand, name: str, default: bool = False) -> bool:
    """A boolean field: "true" case-insensitively, anything else false (Boolean.parseBoolean)."""
    value = request.field(name)
    if value is None or value == "":
        return default
    return value.lower() == "true"


# --- names -------------------------------------------------------------------------
#
# Every topic or group name a request carries passes RocketMQ's rules before it is
# looked up, created or stored: `^[%|a-zA-Z0-9_-]+$`, at most 127 characters for a
# topic and 255 for a group (names.py). A refused name is answered SYSTEM_ERROR
# with RocketMQ's remark, so a name such as `../x` never reaches a table, a file
# or a path.


#: Names already found legal, so that the pull and offset paths check a known name with one
#: set lookup; bounded (emptied when full) so that a stream of distinct names cannot grow it.
_LEGAL_TOPICS: set[str] = set()
_LEGAL_GROUPS: set[str] = set()
_LEGAL_CACHE_MAX = 4096


def legal_topic(value: str) -> str:
    """`value` when it is a legal topic name; else SYSTEM_ERROR with RocketMQ's remark."""
    return value if value in _LEGAL_TOPICS else _checked(value, names.validate_topic, _LEGAL_TOPICS)


def legal_group(value: str) -> str:
    """`value` when it is a legal group name; else SYSTEM_ERROR with RocketMQ's remark."""
    return value if value in _LEGAL_GROUPS else _checked(value, names.validate_group, _LEGAL_GROUPS)


def _checked(value: str, validate: Callable[[str], str | None], known: set[str]) -> str:
    problem = validate(value)
    if problem is not None:
        raise SystemError_(problem)
    if len(known) >= _LEGAL_CACHE_MAX:
        known.clear()
    known.add(value)
    return value


def topic_field(request: RemotingCommand, name: str = "topic") -> str:
    """A required topic-name field."""
    return legal_topic(text(request, name))


def group_field(request: RemotingCommand, name: str) -> str:
    """A required group-name field."""
    return legal_group(text(request, name))


def optional_topic_field(request: RemotingCommand, name: str = "topic") -> str | None:
    value = optional_text(request, name)
    return None if value is None else legal_topic(value)


def optional_group_field(request: RemotingCommand, name: str) -> str | None:
    value = optional_text(request, name)
    return None if value is None else legal_group(value)


# --- numbers with a meaning ----------------------------------------------------------

#: A queue or CommitLog offset is a Java long that is never negative.
MAX_OFFSET = (1 << 63) - 1


def offset_value(value: int, name: str) -> int:
    """`value` when it is an offset (0..2^63-1); else SYSTEM_ERROR naming the field."""
    if not 0 <= value <= MAX_OFFSET:
        raise SystemError_(f"{name} {value} is out of range, an offset is 0..{MAX_OFFSET}")
    return value


def queue_id_of(value: int, topic: str, queue_nums: int) -> int:
    """`value` when the topic has that queue (0 <= id < queue_nums); else SYSTEM_ERROR."""
    if not 0 <= value < queue_nums:
        raise SystemError_(f"queueId[{value}] is illegal, topic[{topic}] has {queue_nums} queues")
    return value


# --- JSON bodies ---------------------------------------------------------------------
#
# A body of the wrong shape (`null`, `[]`, a string where an object belongs) is
# answered SYSTEM_ERROR naming what was expected, as a Java broker answers a
# body it cannot decode; it never reaches a handler as an attribute error.


def json_body(request: RemotingCommand) -> Any:
    """The request body as JSON (fastjson-tolerant); SYSTEM_ERROR when absent or unreadable."""
    body = request.body_bytes()
    if not body:
        raise SystemError_("request body is empty")
    try:
        return jsonbody.loads(body)
    except ValueError as exc:
        raise SystemError_(f"request body is not valid JSON: {exc}") from None


def json_object(request: RemotingCommand, what: str) -> dict[str, Any]:
    """The request body, which must be a JSON object (`what` names it in the remark)."""
    data = json_body(request)
    if not isinstance(data, dict):
        raise SystemError_(f"{what} body must be a JSON object, not {_json_kind(data)}")
    return data


def objects_in(data: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    """`data[key]`: absent or null is an empty list; else it must be a list of objects."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise SystemError_(f"{what}.{key} must be a list of JSON objects")
    return value


def string_in(data: dict[str, Any], key: str, what: str) -> str:
    """`data[key]` as a string: absent or null is ""; a number is written as Java would; else refused."""
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, (bool, dict, list)):
        raise SystemError_(f"{what}.{key} must be a string, not {_json_kind(value)}")
    return str(value)


_DECIMAL = re.compile(r"-?[0-9]{1,20}")


def is_json_integer(value: Any, bounds: tuple[int, int] = INT32) -> bool:
    """An integer within `bounds`, written as a JSON number or as a decimal string (fastjson
    reads both; the Go client writes tag codes as strings)."""
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and bounds[0] <= value <= bounds[1]


def integer_in(data: dict[str, Any], key: str, what: str, bounds: tuple[int, int] = INT32) -> None:
    """Check `data[key]` (when present and not null) is an integer within `bounds`; else
    SYSTEM_ERROR naming the field."""
    value = data.get(key)
    if value is not None and not is_json_integer(value, bounds):
        raise SystemError_(f"{what}.{key} must be an integer in {bounds[0]}..{bounds[1]}")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
