"""A lenient JSON parser for what fastjson accepts and writes (protocol reference §4.1).

Standard parsers reject fastjson's bare numeric keys (``{0:"x"}``) and object
keys (``{{"topic":"T"}:1}``); fastjson also reads unquoted field names,
single-quoted strings and trailing commas. This parser takes all of these.
Bare numeric keys come back as `int`, quoted ones as `str`; a map with object
keys comes back as an `ObjectKeyMap`. `jsonbody.loads` calls it only after
orjson has refused the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orbitmq.errors import OrbitMQError

JsonValue = Any  # a JSON document: dict / ObjectKeyMap / list / str / int / float / bool / None


class ObjectKeyMap(list[tuple[dict[str, Any], Any]]):
    """A map whose keys are JSON objects, held as ``(key, value)`` pairs in order."""

    def get_by(self, key: Mapping[str, Any]) -> Any:
        """The value whose key equals `key`, or None."""
        for k, v in self:
            if k == key:
                return v
        return None


class JsonBodyError(OrbitMQError, ValueError):
    """Text that even the lenient parser cannot read; `position` is the character offset."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.position = position


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


def parse(text: str) -> JsonValue:
    """Parse one JSON value (with fastjson's extensions) filling the whole text.

    Raises `JsonBodyError` with the offending position.
    """
    parser = _LenientParser(text)
    value = parser.value()
    parser.skip_ws()
    if parser.pos != len(text):
        raise JsonBodyError("trailing characters after the JSON value", parser.pos)
    return value
