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
`ObjectKeyMap` marks an object-keyed one.

* `dumps` — standard compact JSON, keys sorted (orjson; int keys quoted).
* `dumps_legacy` — fastjson's compact form: bare numeric keys, object keys.
* `dumps_route_standard` — the 4.9.4+ standard route form (§4.2).
* `dumps_pretty` — fastjson's pretty form for config files (tab indent).

The fastjson writers omit None values, as fastjson omits null fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

JsonValue = Any  # a JSON document: dict / ObjectKeyMap / list / str / int / float / bool / None


class ObjectKeyMap(list[tuple[dict[str, Any], Any]]):
    """A map whose keys are JSON objects, held as ``(key, value)`` pairs in order."""

    def get_by(self, key: Mapping[str, Any]) -> Any:
        """The value whose key equals `key`, or None."""
        for k, v in self:
            if k == key:
                return v
        return None


class JsonBodyError(ValueError):
    """Text that even the lenient parser cannot read; `position` is the character offset."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.position = position


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
    parser = _LenientParser(text)
    value = parser.value()
    parser.skip_ws()
    if parser.pos != len(text):
        raise JsonBodyError("trailing characters after the JSON value", parser.pos)
    return value


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


_WS = re.compile(r"[ \t\n\r\f\v\ufeff]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?[LlFfDd]?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PLAIN = {"\"": re.compile(r'[^"\\]*'), "'": re.compile(r"[^'\\]*")}
_ESCAPES = {"\"": "\"", "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


class _LenientParser:
    """Recursive descent over the text; regexes take whole runs so the loop is per token."""

    __slots__ = ("depth", "pos", "text")

    # Each level costs a few Python frames; 200 leaves room under the default
    # recursion limit and is far deeper than any RocketMQ body.
    _MAX_DEPTH = 200

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def fail(self, message: str) -> JsonBodyError:
        return JsonBodyError(message, self.pos)

    def value(self) -> JsonValue:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of text")
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.array()
        if ch == "\"" or ch == "'":
            return self.string()
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            return self.number(m)
        m = _IDENT.match(self.text, self.pos)
        if m and m.group() in _LITERALS:
            self.pos = m.end()
            return _LITERALS[m.group()]
        raise self.fail(f"unexpected character {ch!r}")

    def number(self, m: re.Match[str]) -> int | float:
        self.pos = m.end()
        text = m.group().rstrip("LlFfDd")
        if m.group(1) or m.group(2) or m.group().endswith(("F", "f", "D", "d")):
            return float(text)
        return int(text)

    def string(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        plain = _PLAIN[quote]
        parts: list[str] = []
        text = self.text
        while True:
            m = plain.match(text, self.pos)
            assert m is not None
            parts.append(m.group())
            self.pos = m.end()
            if self.pos >= len(text):
                raise self.fail("unterminated string")
            ch = text[self.pos]
            if ch == quote:
                self.pos += 1
                return "".join(parts)
            # a backslash escape
            esc = text[self.pos + 1 : self.pos + 2]
            if esc == "u":
                hex4 = text[self.pos + 2 : self.pos + 6]
                if len(hex4) != 4 or not all(c in "0123456789abcdefABCDEF" for c in hex4):
                    raise self.fail("bad \\u escape")
                parts.append(chr(int(hex4, 16)))
                self.pos += 6
            elif esc == "x":
                hex2 = text[self.pos + 2 : self.pos + 4]
                try:
                    parts.append(chr(int(hex2, 16)))
                except ValueError:
                    raise self.fail("bad \\x escape") from None
                self.pos += 4
            elif esc in _ESCAPES:
                parts.append(_ESCAPES[esc])
                self.pos += 2
            else:
                raise self.fail(f"bad escape \\{esc}")

    def key(self) -> Any:
        ch = self.text[self.pos]
        if ch == "\"" or ch == "'":
            return self.string()
        if ch == "{":
            return self.obj()
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            return self.number(m)
        m = _IDENT.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return m.group()
        raise self.fail(f"expected a field name, found {ch!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self._MAX_DEPTH:
            raise self.fail("nesting too deep")
        self.pos += 1

    def obj(self) -> dict[Any, Any] | ObjectKeyMap:
        self.enter()
        pairs: list[tuple[Any, Any]] = []
        object_keys = False
        while True:
            self.skip_ws()
            if self.pos >= len(self.text):
                raise self.fail("unterminated object")
            if self.text[self.pos] == "}":
                self.pos += 1
                break
            k = self.key()
            object_keys = object_keys or isinstance(k, dict)
            self.skip_ws()
            if self.text[self.pos : self.pos + 1] != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            pairs.append((k, self.value()))
            self.skip_ws()
            ch = self.text[self.pos : self.pos + 1]
            if ch == ",":
                self.pos += 1
            elif ch != "}":
                raise self.fail("expected ',' or '}'")
        self.depth -= 1
        if object_keys:
            return ObjectKeyMap(pairs)
        return dict(pairs)

    def array(self) -> list[Any]:
        self.enter()
        items: list[Any] = []
        while True:
            self.skip_ws()
            if self.text[self.pos : self.pos + 1] == "]":
                self.pos += 1
                break
            items.append(self.value())
            self.skip_ws()
            ch = self.text[self.pos : self.pos + 1]
            if ch == ",":
                self.pos += 1
            elif ch != "]":
                raise self.fail("expected ',' or ']'")
        self.depth -= 1
        return items


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
    "JsonBodyError",
    "ObjectKeyMap",
    "dumps",
    "dumps_legacy",
    "dumps_pretty",
    "dumps_route_standard",
    "int_keys",
    "loads",
    "object_key_items",
]
