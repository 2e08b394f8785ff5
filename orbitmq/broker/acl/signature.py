"""Request signatures the broker and the NameServer verify.

Version 1 is RocketMQ 4.x's (protocol reference 6.10): Base64 HMAC-SHA1 over the
values of every field but Signature, sorted by key and joined without
separators, then the body. It is kept for 4.x clients, and it is malleable:
field names are not signed and values have no boundaries, so an added empty
field, or bytes moved between the last value and the body, verify all the
same. Nothing in it is fresh, so a captured request can be sent again.

Version 2 (OrbitMQ's own clients; `SignatureVersion: 2`) signs an
unambiguous canonical form with HMAC-SHA256 (common/signing.py).
Its fields include `SignatureTimestamp` (ms since the epoch) and
`SignatureNonce`, which `ReplayGuard` checks: the timestamp within a skew
window of the server's clock, the (access key, nonce) pair never seen before
inside that window. Only `hmac` and `hashlib` primitives are used.
"""

from __future__ import annotations

import heapq
import hmac
from collections.abc import Mapping

from orbitmq.common.signing import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    SIGNATURE_NONCE,
    SIGNATURE_TIMESTAMP,
    SIGNATURE_VERSION,
    V2,
    signature_v1,
    signature_v2,
)

__all__ = [
    "ACCESS_KEY", "SECURITY_TOKEN", "SIGNATURE", "SIGNATURE_NONCE", "SIGNATURE_TIMESTAMP", "SIGNATURE_VERSION",
    "V2", "ReplayGuard", "compute", "matches", "matches_v2",
]

#: Added by the Java client to QUERY_MESSAGE after it may have signed; never part of the content.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
#: Longest nonce accepted: bounds what one entry of the replay cache can hold.
MAX_NONCE_LENGTH = 64


#: Version 1, as the broker recomputes it.
compute = signature_v1


_WITHOUT_UNIQUE = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})
_WITH_UNIQUE = frozenset({SIGNATURE})


def matches(fields: Mapping[str, str], body: bytes, secret_key: str, given: str) -> bool:
    """Version 1: True when `given` is the signature, computed with or without _UNIQUE_KEY_QUERY."""
    wanted = given.encode("utf-8", "replace")
    if hmac.compare_digest(compute(fields, body, secret_key, _WITHOUT_UNIQUE).encode("ascii"), wanted):
        return True
    if UNIQUE_KEY_QUERY not in fields:
        return False
    return hmac.compare_digest(compute(fields, body, secret_key, _WITH_UNIQUE).encode("ascii"), wanted)


def matches_v2(code: int, fields: Mapping[str, str], body: bytes, secret_key: str, given: str) -> bool:
    wanted = given.encode("utf-8", "replace")
    return hmac.compare_digest(signature_v2(code, fields, body, secret_key).encode("ascii"), wanted)


class ReplayGuard:
    """Refuses a version 2 request whose timestamp is off by more than `window_ms`, or whose
    (access key, nonce) was already accepted inside the window.

    Memory is bounded: at most `max_entries` nonces are kept. When the cache is
    full the oldest entry is dropped and its timestamp becomes a floor: a request
    stamped at or before the floor is refused as too old, so a dropped nonce
    can never be replayed. Owned by the event loop that checks requests.
    """

    def __init__(self, window_ms: int = 300_000, max_entries: int = 100_000) -> None:
        self.window_ms = window_ms
        self.max_entries = max_entries
        self._seen: set[tuple[str, str]] = set()
        self._by_time: list[tuple[int, str, str]] = []
        self._floor = -1

    def __len__(self) -> int:
        return len(self._seen)

    def admit(self, access_key: str, timestamp_text: str | None, nonce: str | None, now_ms: int) -> str | None:
        """None when the request is fresh (and remember it); otherwise why it is refused."""
        if not nonce or len(nonce) > MAX_NONCE_LENGTH:
            return f"{SIGNATURE_NONCE} is missing or longer than {MAX_NONCE_LENGTH} characters"
        if not timestamp_text or not timestamp_text.isascii() or not timestamp_text.isdigit():
            return f"{SIGNATURE_TIMESTAMP} is missing or not a number"
        timestamp = int(timestamp_text)
        if abs(now_ms - timestamp) > self.window_ms:
            return f"{SIGNATURE_TIMESTAMP} {timestamp} is more than {self.window_ms} ms away from the server's clock"
        self._expire(now_ms)
        if timestamp <= self._floor:
            return f"{SIGNATURE_TIMESTAMP} {timestamp} is older than the replay cache keeps; sign again"
        key = (access_key, nonce)
        if key in self._seen:
            return f"a request with {SIGNATURE_NONCE} {nonce} was already accepted (replay)"
        if len(self._seen) >= self.max_entries:
            ts, ak, old = heapq.heappop(self._by_time)
            self._seen.discard((ak, old))
            self._floor = max(self._floor, ts)
            if timestamp <= self._floor:
                return f"{SIGNATURE_TIMESTAMP} {timestamp} is older than the replay cache keeps; sign again"
        self._seen.add(key)
        heapq.heappush(self._by_time, (timestamp, access_key, nonce))
        return None

    def _expire(self, now_ms: int) -> None:
        limit = now_ms - self.window_ms
        heap = self._by_time
        while heap and heap[0][0] < limit:
            _, ak, nonce = heapq.heappop(heap)
            self._seen.discard((ak, nonce))
