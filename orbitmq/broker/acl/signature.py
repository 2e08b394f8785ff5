"""The plain-ACL request signature, as the broker recomputes it (protocol reference 6.10)."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Mapping

SIGNATURE = "Signature"
ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
#: Added by the Java client to QUERY_MESSAGE after it may have signed; never part of the content.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


@functools.lru_cache(maxsize=256)
def _keyed(secret_key: str) -> hmac.HMAC:
    """An HMAC-SHA1 primed with the key: copying it skips the key setup on every request."""
    return hmac.new(secret_key.encode("utf-8"), digestmod=hashlib.sha1)


def compute(fields: Mapping[str, str], body: bytes, secret_key: str, skip: frozenset[str]) -> str:
    """Base64 HMAC-SHA1 of the values of `fields` minus `skip`, sorted by key, then `body`."""
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
    """True when `given` is the signature of the request, computed with or without _UNIQUE_KEY_QUERY."""
    wanted = given.encode("utf-8", "replace")
    if hmac.compare_digest(compute(fields, body, secret_key, _WITHOUT_UNIQUE).encode("ascii"), wanted):
        return True
    if UNIQUE_KEY_QUERY not in fields:
        return False
    return hmac.compare_digest(compute(fields, body, secret_key, _WITH_UNIQUE).encode("ascii"), wanted)
