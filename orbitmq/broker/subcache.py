"""Parsed subscriptions, cached by their text and bounded by the memory they hold.

Pulls repeat the same subscription expression with every request, so the
broker parses each distinct expression once (a tag list into hash codes, a
SQL92 selector into closures) and keeps the result. What a client sends is
not trusted to be small or few: the cache is bounded by an estimate of the
bytes its entries hold as well as by their number, and an expression longer
than `MAX_EXPRESSION_LENGTH` is refused before anything is parsed.

RocketMQ has no explicit limit; its expression travels in a header field, so
the frame size bounds it (16 MiB), and its cache of parsed subscriptions is
per consumer group. Real expressions are a few tags or a short selector: 64 Ki
characters is far above any we have seen and parses in well under 100 ms.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

#: Longest subscription expression (tags or SQL92) a pull, heartbeat or config check may carry.
MAX_EXPRESSION_LENGTH = 64 * 1024
#: Estimated bytes the parsed subscriptions of one broker may hold: thousands of ordinary
#: expressions, but only a handful of maximal ones.
DEFAULT_CACHE_BYTES = 16 << 20
#: Entries kept whatever their size (small expressions still cost a dict slot and a key).
DEFAULT_CACHE_ENTRIES = 4096

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def expression_too_long(expression: str) -> str | None:
    """The remark refusing `expression` for its length, or None when it is short enough."""
    if len(expression) <= MAX_EXPRESSION_LENGTH:
        return None
    return (
        f"subscription expression of {len(expression)} characters exceeds the broker's limit of "
        f"{MAX_EXPRESSION_LENGTH}"
    )


def text_size(text: str) -> int:
    """Bytes a str object holds (header included)."""
    return sys.getsizeof(text)


class BoundedCache(Generic[K, V]):
    """Least recently used entries, evicted once their estimated bytes or their count exceed the bounds.

    The caller states each entry's size when it puts it; an entry larger
    than the whole budget is not kept at all.
    """

    __slots__ = ("_entries", "bytes", "max_bytes", "max_entries")

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        #: Estimated bytes held by the entries now cached.
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: K, value: V, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        if size > self.max_bytes:
            return
        self._entries[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes or len(self._entries) > self.max_entries:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted
