"""Request signatures the broker and the NameServer verify.

Version 1 is RocketMQ 4.x's (protocol reference 6.10): Base64 HMAC-SHA1 over the
values of every field but Signature, sorted by key and joined without
separators, then the body. It is kept for 4.x clients, and it is malleable:
field names are not signed and values have no boundaries, so an added empty
field, or bytes moved between the last value and the body, verify all the
same. Nothing in it is fresh, so a captured request can be sent again.

Version 2 (OrbitMQ's own clients; `SignatureVersion: 2`) signs an
unambiguous canonical form with HMAC-SHA256:

    ORBITMQ-HMAC-SHA256 \\n
    <request code> \\n
    <field count> \\n
    for each field but Signature, sorted by name (UTF-8 bytes):
        <len(name)>:<name><len(value)>:<value>
    \\n <hex SHA-256 of the body>

The fields include `SignatureTimestamp` (ms since the epoch) and
`SignatureNonce`, which `ReplayGuard` checks: the timestamp within a skew
window of the server's clock, the (access key, nonce) pair never seen before
inside that window. Only `hmac` and `hashlib` primitives are used.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import heapq
import hmac
from collections.abc import Mapping

SIGNATURE = "Signature"
ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
#: Added by the Java client to QUERY_MESSAGE after it may have signed; never part of the content.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"

SIGNATURE_VERSION = "SignatureVersion"
SIGNATURE_TIMESTAMP = "SignatureTimestamp"
SIGNATURE_NONCE = "SignatureNonce"
V2 = "2"
_V2_PREFIX = b"ORBITMQ-HMAC-SHA256\n"
#: Longest nonce accepted: bounds what one entry of the replay cache can hold.
MAX_NONCE_LENGTH = 64


@functools.lru_cache(maxsize=256)
def _keyed(secret_key: str) -> hmac.HMAC:
    """An HMAC-SHA1 primed with the key: copying it skips the key setup on every request."""
    return hmac.new(secret_key.encode("utf-8"), digestmod=hashlib.sha1)


def compute(fields: Mapping[str, str], body: bytes, secret_key: str, skip: frozenset[str]) -> str:
    """Version 1: Base64 HMAC-SHA1 of the values of `fields` minus `skip`, sorted by key, then `body`."""
    # Java's TreeMap orders String keys by UTF-16 units: the same as Python for the ASCII
    # header names, and the only difference (astral characters) cannot occur in them.
    text = "".join(str(v) for k, v in sorted(fields.items()) if k not in skip).encode("utf-8")
    mac = _keyed(secret_key).copy()
    mac.update(text)
    mac.update(body)  # fed separately: no copy of a large body
    return base64.b64encode(mac.digest()).decode("ascii")


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


def _netstring(text: str) -> bytes:
    data = text.encode("utf-8")
    return str(len(data)).encode("ascii") + b":" + data


def canonical_v2(code: int, fields: Mapping[str, str], body: bytes) -> bytes:
    """The bytes version 2 signs (see the module docstring)."""
    items = sorted((str(k).encode("utf-8"), str(v)) for k, v in fields.items() if k != SIGNATURE)
    parts = [_V2_PREFIX, str(int(code)).encode("ascii"), b"\n", str(len(items)).encode("ascii"), b"\n"]
    for name, value in items:
        parts.append(str(len(name)).encode("ascii") + b":" + name)
        parts.append(_netstring(value))
    parts.append(b"\n")
    parts.append(hashlib.sha256(body).hexdigest().encode("ascii"))
    return b"".join(parts)


def compute_v2(code: int, fields: Mapping[str, str], body: bytes, secret_key: str) -> str:
    """Version 2: Base64 HMAC-SHA256 of `canonical_v2`."""
    mac = hmac.new(secret_key.encode("utf-8"), canonical_v2(code, fields, body), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def matches_v2(code: int, fields: Mapping[str, str], body: bytes, secret_key: str, given: str) -> bool:
    wanted = given.encode("utf-8", "replace")
    return hmac.compare_digest(compute_v2(code, fields, body, secret_key).encode("ascii"), wanted)


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
