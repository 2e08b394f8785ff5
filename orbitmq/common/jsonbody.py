"""fastjson-compatible JSON bodies (protocol reference §4.1, §4.2, §7.5).

Java RocketMQ writes its bodies with fastjson, which departs from JSON in
ways peers depend on:

* maps keyed by numbers are written with bare keys: ``{0:"10.0.0.1:10911"}``;
* maps keyed by objects write the key as an object:
  ``{{"brokerName":"b","queueId":0,"topic":"T"}:42}``;
* its parser also takes unquoted field names and single-quoted strings.

Reading: `loads` tries orjson first and falls back to a lenient parser only
when that fails. Bare numeric keys come back as `int` keys, quoted ones as
`str`; `int_keys` normalizes either. A map with object keys comes back as an
`ObjectKeyMap` (a list of ``(key_dict, value)`` pairs, since dicts cannot be
dict keys).

Writing: a dict with `int` keys marks a numerically keyed map, and an
`ObjectKeyMap` marks an object-keyed one. Maps are written with their keys
sorted, except a `JavaHashMap`, written in the order Java's `HashMap` iterates
its keys (what fastjson prints for a `HashMap` field).

* `dumps` — standard compact JSON, keys sorted (orjson; int keys quoted).
* `dumps_legacy` — fastjson's compact form: bare numeric keys, object keys.
* `dumps_route_standard` — the 4.9.4+ standard route form (§4.2).
* `dumps_pretty` — fastjson's pretty form for config files (tab indent).

The fastjson writers omit None values, as fastjson omits null fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from orbitmq.common.hashing import java_string_hash
from orbitmq.common.lenientjson import JsonBodyError, JsonValue, ObjectKeyMap, parse


class JavaHashMap(dict[Any, Any]):
    """A map the fastjson writers print in `java.util.HashMap`'s iteration order.

    `JavaHashMap.of(pairs)` orders the entries as a default-sized HashMap holding them
    (inserted in the given order) iterates them: by bucket `(h ^ h >>> 16) & (capacity - 1)`,
    then by insertion, with the capacity grown by doubling from 16 past 0.75 load. Keys are
    str (`String.hashCode`) or int (`Long.hashCode`).
    """

    @classmethod
    def of(cls, pairs: Iterable[tuple[Any, Any]], concurrent: bool = False) -> JavaHashMap:
        items = list(dict(pairs).items())
        return cls(items[i] for i in java_hash_order([k for k, _ in items], concurrent=concurrent))


def java_hash_order(
    keys: Sequence[Any], hash_of: Callable[[Any], int] | None = None, concurrent: bool = False,
) -> list[int]:
    """Indexes of distinct `keys` (inserted in this order) in the order a default-sized
    `java.util.HashMap`/`HashSet` iterates them; `hash_of` gives a key's Java `hashCode()`
    (default: `String.hashCode` for str, `Long.hashCode` for int). `concurrent`: a
    `ConcurrentHashMap`'s bucket order (it doubles its table once it holds 0.75 of it, not more);
    keys sharing a bucket are taken in insertion order."""
    hash_fn = hash_of or _java_key_hash
    capacity = 16
    while len(keys) > capacity * 3 // 4 or (concurrent and len(keys) >= capacity * 3 // 4):
        capacity *= 2

    def bucket(i: int) -> int:
        h = hash_fn(keys[i]) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(range(len(keys)), key=lambda i: (bucket(i), i))


def _java_key_hash(key: Any) -> int:
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, int) and not isinstance(key, bool):
        value = key & 0xFFFFFFFFFFFFFFFF
        return (value ^ (value >> 32)) & 0xFFFFFFFF  # Long.hashCode
    raise TypeError(f"cannot order a {type(key).__name__} key as Java's HashMap does")


# --- reading ----------------------------------------------------------------------


def loads(data: bytes | bytearray | memoryview | str) -> JsonValue:
    """Parse a JSON body from Java or any SDK.

    Standard JSON takes the orjson fast path. Anything else goes through the
    lenient parser, which accepts fastjson's bare numeric keys, object keys,
    unquoted field names, single-quoted strings and trailing commas. Raises
    `JsonBodyError` for text neither accepts.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonBodyError("body is not UTF-8", exc.start) from exc
    return parse(text)


def object_key_items(value: ObjectKeyMap | Mapping[Any, Any] | None) -> list[tuple[dict[str, Any], Any]]:
    """The ``(key_object, value)`` pairs of an object-keyed map however it arrived.

    Accepts an `ObjectKeyMap`, an empty or missing map (an empty object-keyed
    map reads back as ``{}``), and a map whose string keys hold JSON objects
    (how some SDKs write such keys). Raises `JsonBodyError` for other keys.
    """
    if value is None:
        return []
    if isinstance(value, ObjectKeyMap):
        return list(value)
    pairs: list[tuple[dict[str, Any], Any]] = []
    for k, v in value.items():
        key = loads(k) if isinstance(k, str) and k.lstrip().startswith("{") else None
        if not isinstance(key, dict):
            raise JsonBodyError(f"map key {k!r} is not an object", 0)
        pairs.append((key, v))
    return pairs


def int_keys(mapping: Mapping[Any, Any]) -> dict[int, Any]:
    """A numerically keyed map read in either form (``{0:..}`` or ``{"0":..}``) with int keys."""
    return {int(k): v for k, v in mapping.items()}


# --- writing ----------------------------------------------------------------------


def dumps(obj: JsonValue) -> bytes:
    """Standard compact JSON with sorted keys (int keys written as quoted strings).

    None values are written as null; omit them beforehand where Java would.
    Keys sort as strings (``"10"`` before ``"2"``); use `dumps_route_standard`
    for numeric order. An `ObjectKeyMap` has no standard form: orjson would
    write it as a list of pairs, so this raises TypeError for one instead.
    """
    return orjson.dumps(
        obj, default=_standard_default,
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS,
    )


def _standard_default(obj: Any) -> Any:
    # OPT_PASSTHROUGH_SUBCLASS sends subclasses of builtins here, so an
    # ObjectKeyMap (a list subclass) cannot slip out as a list of pairs.
    if isinstance(obj, ObjectKeyMap):
        raise TypeError("an ObjectKeyMap has no standard JSON form; use dumps_legacy")
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, dict):
        return dict(obj)
    if isinstance(obj, (list, tuple)):
        return list(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_NON_ASCII_OR_ESCAPE = re.compile(r'[\x00-\x1f"\\\x7f-\U0010ffff]')
_SHORT = {"\"": "\\\"", "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT.get(ch) or f"\\u{ord(ch):04X}"


def _escape_browser(m: re.Match[str]) -> str:
    ch = m.group()
    short = _SHORT.get(ch)
    if short:
        return short
    code = ord(ch)
    if code == 0x7F:
        return ch
    if code > 0xFFFF:  # UTF-16 surrogate pair, as Java holds it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def _quote(s: str) -> str:
    """fastjson's default string form: raw non-ASCII, control characters escaped."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_control, s) + '"'


def _quote_ascii(s: str) -> str:
    """The browser-compatible form: every non-ASCII character as an upper-case \\u escape."""
    return '"' + _NON_ASCII_OR_ESCAPE.sub(_escape_browser, s) + '"'


def _scalar(obj: Any, quote: Callable[[str], str]) -> str:
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if obj is None:
        return "null"
    if isinstance(obj, str):
        return quote(obj)
    if isinstance(obj, int):
        return str(int(obj))
    if isinstance(obj, float):
        if math.isnan(obj) or math.isinf(obj):
            return "null"  # fastjson writes NaN and infinities as null
        return repr(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def _sorted_items(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    items = [(k, v) for k, v in mapping.items() if v is not None]
    if isinstance(mapping, JavaHashMap):
        return items
    # Bean fields are alphabetical in fastjson; map order is free, so sorting
    # keeps output deterministic. Numeric keys sort numerically.
    items.sort(key=lambda kv: (0, kv[0], "") if isinstance(kv[0], int) else (1, 0, str(kv[0])))
    return items


def _write_compact(obj: Any, out: list[str], quote: Callable[[str], str], bare_numbers: bool) -> None:
    if isinstance(obj, ObjectKeyMap):
        out.append("{")
        for i, (k, v) in enumerate(obj):
            if i:
                out.append(",")
            _write_compact(k, out, quote, bare_numbers)
            out.append(":")
            _write_compact(v, out, quote, bare_numbers)
        out.append("}")
    elif isinstance(obj, Mapping):
        out.append("{")
        for i, (k, v) in enumerate(_sorted_items(obj)):
            if i:
                out.append(",")
            if isinstance(k, bool) or not isinstance(k, (int, str)):
                raise TypeError(f"cannot write a {type(k).__name__} map key")
            if isinstance(k, int):
                out.append(str(k) if bare_numbers else f'"{k}"')
            else:
                out.append(quote(k))
            out.append(":")
            _write_compact(v, out, quote, bare_numbers)
        out.append("}")
    elif isinstance(obj, (list, tuple, set, frozenset)):
        out.append("[")
        for i, item in enumerate(sorted(obj, key=_set_order) if isinstance(obj, (set, frozenset)) else obj):
            if i:
                out.append(",")
            _write_compact(item, out, quote, bare_numbers)
        out.append("]")
    else:
        out.append(_scalar(obj, quote))


def _set_order(item: Any) -> tuple[str, str]:
    return (type(item).__name__, repr(item))


def dumps_legacy(obj: JsonValue) -> bytes:
    """fastjson's compact form: int-keyed maps with bare keys, `ObjectKeyMap` keys as objects.

    Non-ASCII characters are written raw (UTF-8), control characters escaped.
    """
    out: list[str] = []
    _write_compact(obj, out, _quote, True)
    return "".join(out).encode()


def dumps_route_standard(obj: JsonValue) -> bytes:
    """The standard route form of §4.2: keys quoted and sorted (numeric keys numerically),
    non-ASCII characters as ``\\u`` escapes with upper-case hex."""
    out: list[str] = []
    _write_compact(obj, out, _quote_ascii, False)
    return "".join(out).encode()


def dumps_pretty(obj: JsonValue) -> bytes:
    """fastjson's PrettyFormat, used for topics.json, consumerOffset.json and the like.

    A string-keyed map (or bean) puts each entry on its own line, indented
    with tabs; a number-keyed map keeps its entries on the line of its ``{``
    and only its closing ``}`` goes on a new line; lists put each item on its
    own line. Empty maps and lists are ``{}`` and ``[]``.
    """
    out: list[str] = []
    _write_pretty(obj, out, 0)
    return "".join(out).encode()


def _newline(out: list[str], indent: int) -> None:
    out.append("\n" + "\t" * indent)


def _write_pretty(obj: Any, out: list[str], indent: int) -> None:
    if isinstance(obj, ObjectKeyMap):
        entries: Iterable[tuple[Any, Any]] = list(obj)
    elif isinstance(obj, Mapping):
        entries = _sorted_items(obj)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=_set_order) if isinstance(obj, (set, frozenset)) else list(obj)
        if not items:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(items):
            if i:
                out.append(",")
            _newline(out, indent + 1)
            _write_pretty(item, out, indent + 1)
        _newline(out, indent)
        out.append("]")
        return
    else:
        out.append(_scalar(obj, _quote))
        return
    entries = list(entries)
    out.append("{")
    for i, (k, v) in enumerate(entries):
        if i:
            out.append(",")
        if isinstance(k, str):
            _newline(out, indent + 1)
            out.append(_quote(k))
        elif isinstance(k, int) and not isinstance(k, bool):
            out.append(str(k))
        else:
            _write_pretty(k, out, indent + 1)
        out.append(":")
        _write_pretty(v, out, indent + 1)
    if entries:
        _newline(out, indent)
    out.append("}")


__all__ = [
    "JavaHashMap",
    "JsonBodyError",
    "ObjectKeyMap",
    "dumps",
    "dumps_legacy",
    "dumps_pretty",
    "dumps_route_standard",
    "int_keys",
    "java_hash_order",
    "loads",
    "object_key_items",
]
