"""Java `.properties` text: broker.conf, namesrv.properties and the config request bodies.

Sans-IO: text in, an ordered dict out, and back. The reader follows
`java.util.Properties.load` closely enough for config files people write:
`#` and `!` comments, `key=value`, `key: value` and `key value` separators,
backslash line continuations and the common escapes (`\\t`, `\\n`, `\\uXXXX`).
One deliberate difference: trailing white space of a value is dropped (Java
keeps it), so a stray space after `brokerName=broker-a` does not become part
of the name. A malformed `\\u` escape raises ConfigError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from orbitmq.errors import ConfigError

_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def java_long(text: str) -> int:
    """A whole number of a config value by Java's `Long.parseLong` rules (optional sign, ASCII
    digits, 64 bits); ValueError with a remark a user can act on (never Python's own text)."""
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"expected a whole number, got {text!r}")
    value = int(text)
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{text} is out of the 64-bit range")
    return value


def java_int(text: str) -> int:
    """A whole number by Java's `Integer.parseInt` rules (32 bits): RocketMQ's int-typed keys."""
    value = java_long(text)
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"{text} is out of the 32-bit range of this setting")
    return value


def java_double(text: str) -> float:
    """A decimal number of a config value (Java's `Double.parseDouble` for plain decimals)."""
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"expected a number, got {text!r}")
    return float(text)

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """Join continuation lines (an odd number of trailing backslashes)."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                except ValueError:
                    raise ConfigError(f"malformed \\u escape in properties: {text[i:i + 6]!r}") from None
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into a dict; later duplicates win, as in Java."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        if key:
            result[key] = value.strip()
    return result


def format_properties(props: Mapping[str, object], *, sort: bool = True) -> str:
    """Write `key=value` lines, sorted by key unless `sort=False` keeps the mapping's order."""
    lines = []
    for key in sorted(props) if sort else props:
        value = props[key]
        if isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        lines.append(f"{key}={text}")
    return "\n".join(lines) + ("\n" if lines else "")
