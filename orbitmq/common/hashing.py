"""Java `String.hashCode` and the hashes RocketMQ derives from it.

RocketMQ puts these hashes on disk and on the wire (tag codes in the
ConsumeQueue and in subscriptions, index slots), so they must match Java bit
for bit: the hash runs over UTF-16 code units with 32-bit signed wrap-around
(protocol reference §5.10, §7.3).
"""

from __future__ import annotations

import operator
from functools import lru_cache

_MASK32 = 0xFFFFFFFF

# 31**i mod 2**32: the hash is sum(c[i] * 31**(n-1-i)) mod 2**32, which
# `sum(map(mul, ...))` evaluates in C, about a third faster than a Python loop.
_POWERS_LIMIT = 512
_POWERS = [pow(31, i, 1 << 32) for i in range(_POWERS_LIMIT)]


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: h = 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    # ASCII code points are their own UTF-16 code units; skip the transcoding.
    units: bytes | list[int] = text.encode("ascii") if text.isascii() else _utf16_units(text.encode("utf-16-be"))
    n = len(units)
    if n <= _POWERS_LIMIT:
        h = sum(map(operator.mul, units, _POWERS[n - 1 :: -1] if n else ())) & _MASK32
    else:
        h = 0
        for c in units:
            h = (31 * h + c) & _MASK32
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def _utf16_units(data: bytes) -> list[int]:
    return [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]


def _utf16_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-be")) // 2


@lru_cache(maxsize=4096)
def _prefix_hash(prefix: str) -> int:
    return java_string_hash(prefix) & _MASK32


def java_string_hash_concat(prefix: str, text: str) -> int:
    """`java_string_hash(prefix + text)` without hashing `prefix` again.

    The hash is a polynomial, so hash(p + t) = hash(p) * 31**len(t) + hash(t)
    (mod 2**32). Prefixes (``topic#`` for index keys) are few and cached.
    """
    prefix_h = _prefix_hash(prefix)
    n = _utf16_len(text)
    scale = _POWERS[n] if n < _POWERS_LIMIT else pow(31, n, 1 << 32)
    h = (prefix_h * scale + java_string_hash(text)) & _MASK32
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


@lru_cache(maxsize=8192)
def tag_hash_code(tags: str | None) -> int:
    """The ConsumeQueue tags code of a TAGS value: its hash sign-extended to 64 bits; 0 without tags.

    Cached: a topic uses few distinct tags and this runs once per stored message.
    """
    if not tags:
        return 0
    return java_string_hash(tags)


def index_key_hash(key: str, prefix: str = "") -> int:
    """The IndexFile hash of `prefix + key`: |hashCode|, with Integer.MIN_VALUE mapped to 0 (§7.3).

    Pass the ``topic#`` part as `prefix` to have its hash cached.
    """
    h = java_string_hash_concat(prefix, key) if prefix else java_string_hash(key)
    if h == -0x8000_0000:
        return 0
    return -h if h < 0 else h


__all__ = ["index_key_hash", "java_string_hash", "java_string_hash_concat", "tag_hash_code"]
