"""Java `String.hashCode` and the hashes RocketMQ derives from it.

RocketMQ puts these hashes on disk and on the wire (tag codes in the
ConsumeQueue and in subscriptions, index slots), so they must match Java bit
for bit: the hash runs over UTF-16 code units with 32-bit signed wrap-around
(protocol reference §5.10, §7.3).

Speed matters here: every stored message with a UNIQ_KEY is hashed for the
index on the append path. The hash of n code units is the dot product
sum(c[i] * 31**(n-1-i)) mod 2**32, which `sum(map(mul, units, weights))`
evaluates in C with the weights of each length cached, instead of a Python
loop per character.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from operator import mul

_MASK32 = 0xFFFFFFFF
_SIGN = 0x8000_0000
_WRAP = 0x1_0000_0000

#: Strings up to this many code units are hashed in one dot product; longer
#: ones in chunks of this size (h(a + b) = h(a) * 31**len(b) + h(b)).
_CHUNK = 512
#: 31**i mod 2**32 for i in 0.._CHUNK.
_POWERS = tuple(pow(31, i, _WRAP) for i in range(_CHUNK + 1))
#: The weights of a string of n units, first unit first: 31**(n-1) .. 31**0.
_WEIGHTS = tuple(_POWERS[n - 1 :: -1] if n else () for n in range(_CHUNK + 1))

_units_unpackers: dict[int, Callable[[bytes], tuple[int, ...]]] = {}


def _utf16_units(text: str) -> bytes | tuple[int, ...]:
    """The UTF-16 code units of `text`: its ASCII bytes when it is ASCII (a code unit each)."""
    if text.isascii():
        return text.encode("ascii")
    data = text.encode("utf-16-be")
    n = len(data) >> 1
    unpack = _units_unpackers.get(n)
    if unpack is None:
        unpack = struct.Struct(f">{n}H").unpack
        if n <= _CHUNK:
            _units_unpackers[n] = unpack
    return unpack(data)


def _unsigned_hash(units: bytes | tuple[int, ...]) -> int:
    """Java's hash of these code units as an unsigned 32-bit value."""
    n = len(units)
    h: int
    if n <= _CHUNK:
        h = sum(map(mul, units, _WEIGHTS[n])) & _MASK32
        return h
    h = 0
    scale = _POWERS[_CHUNK]
    for start in range(0, n, _CHUNK):
        chunk = units[start : start + _CHUNK]
        h = h * (scale if len(chunk) == _CHUNK else _POWERS[len(chunk)]) + sum(map(mul, chunk, _WEIGHTS[len(chunk)]))
        h &= _MASK32
    return h


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: h = 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    h = _unsigned_hash(_utf16_units(text))
    return h - _WRAP if h & _SIGN else h


def _utf16_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-be")) // 2


@lru_cache(maxsize=4096)
def _prefix_hash(prefix: str) -> int:
    return _unsigned_hash(_utf16_units(prefix))


def java_string_hash_concat(prefix: str, text: str) -> int:
    """`java_string_hash(prefix + text)` without hashing `prefix` again.

    The hash is a polynomial, so hash(p + t) = hash(p) * 31**len(t) + hash(t)
    (mod 2**32). Prefixes (``topic#`` for index keys) are few and cached.
    """
    n = _utf16_len(text)
    scale = _POWERS[n] if n <= _CHUNK else pow(31, n, _WRAP)
    h = (_prefix_hash(prefix) * scale + _unsigned_hash(_utf16_units(text))) & _MASK32
    return h - _WRAP if h & _SIGN else h


#: Texts longer than this are never cached: the caches stay small whatever clients send
#: (8,192 distinct 32 KiB tags or keys would otherwise pin 256 MiB).
_CACHED_TEXT_MAX = 256


@lru_cache(maxsize=8192)
def _cached_tag_hash_code(tags: str) -> int:
    return java_string_hash(tags)


def tag_hash_code(tags: str | None) -> int:
    """The ConsumeQueue tags code of a TAGS value: its hash sign-extended to 64 bits; 0 without tags.

    Cached for short values: a topic uses few distinct tags and this runs once per stored message.
    """
    if not tags:
        return 0
    if len(tags) > _CACHED_TEXT_MAX:
        return java_string_hash(tags)
    return _cached_tag_hash_code(tags)


#: Index keys longer than this are split into a head and a `_TAIL`-unit tail.
_SPLIT_AT = 20
_TAIL = 4
_TAIL_WEIGHTS = _WEIGHTS[_TAIL]
_TAIL_SCALE = _POWERS[_TAIL]
#: hash(prefix + head) * 31**_TAIL mod 2**32 by prefix + head; cleared when it grows past _HEADS_MAX.
_head_hashes: dict[str, int] = {}
_HEADS_MAX = 8192


def index_key_hash(key: str, prefix: str = "") -> int:
    """The IndexFile hash of `prefix + key`: |hashCode|, with Integer.MIN_VALUE mapped to 0 (§7.3).

    Pass the ``topic#`` part as `prefix`. Long ASCII keys are hashed as a head
    and a 4-character tail, the head's contribution cached: a UNIQ_KEY is 20
    characters fixed per producer (address, process id, class loader), 8 of
    milliseconds and a 4-character counter, so the keys one producer makes
    within a millisecond differ only in their last 4 characters.
    """
    n = len(key)
    if _SPLIT_AT < n <= _CACHED_TEXT_MAX and key.isascii() and prefix.isascii():
        head = prefix + key[: n - _TAIL]
        scaled = _head_hashes.get(head)
        if scaled is None:
            if len(_head_hashes) >= _HEADS_MAX:
                _head_hashes.clear()
            scaled = _head_hashes[head] = _unsigned_hash(head.encode("ascii")) * _TAIL_SCALE
        tail: int = sum(map(mul, key[n - _TAIL :].encode("ascii"), _TAIL_WEIGHTS))
        h = (scaled + tail) & _MASK32
    elif prefix:
        h = java_string_hash_concat(prefix, key) & _MASK32
    else:
        h = _unsigned_hash(_utf16_units(key))
    # |signed h|: values with the sign bit set are negative; -2**31 has no absolute value and maps to 0.
    if h & _SIGN:
        h = _WRAP - h
        return 0 if h == _SIGN else h
    return h


__all__ = ["index_key_hash", "java_string_hash", "java_string_hash_concat", "tag_hash_code"]
