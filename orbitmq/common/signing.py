"""Request signature forms shared by the clients that sign and the servers that verify.

Version 1 is RocketMQ 4.x's (protocol reference 6.10); version 2 is
OrbitMQ's own. Both use only the standard library's `hmac` and `hashlib`.

Version 2 signs, with HMAC-SHA256 and the account's secret key, the bytes

    ORBITMQ-HMAC-SHA256 \\n
    <request code> \\n
    <field count> \\n
    for each field but Signature, sorted by the UTF-8 bytes of its name:
        <len(name)>:<name><len(value)>:<value>       (lengths in UTF-8 bytes)
    \\n <hex SHA-256 of the body>

so no two different requests have the same signed bytes: names are signed,
every name and value has its length, the body has its own digest, and the
request code is part of it. The fields include SignatureVersion (2),
SignatureTimestamp (ms since the epoch) and SignatureNonce, which the server
checks against replays.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Mapping

SIGNATURE = "Signature"
ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
SIGNATURE_VERSION = "SignatureVersion"
SIGNATURE_TIMESTAMP = "SignatureTimestamp"
SIGNATURE_NONCE = "SignatureNonce"
V2 = "2"
_V2_PREFIX = b"ORBITMQ-HMAC-SHA256\n"


@functools.lru_cache(maxsize=256)
def _keyed_sha1(secret_key: str) -> hmac.HMAC:
    """An HMAC-SHA1 primed with the key: copying it skips the key setup on every request."""
    return hmac.new(secret_key.encode("utf-8"), digestmod=hashlib.sha1)


def signature_v1(fields: Mapping[str, str], body: bytes, secret_key: str, skip: frozenset[str]) -> str:
    """Base64 HMAC-SHA1 of the values of `fields` minus `skip`, sorted by key and joined, then `body`."""
    # Java's TreeMap orders String keys by UTF-16 units: the same as Python for the ASCII
    # header names, and the only difference (astral characters) cannot occur in them.
    text = "".join(str(v) for k, v in sorted(fields.items()) if k not in skip).encode("utf-8")
    mac = _keyed_sha1(secret_key).copy()
    mac.update(text)
    mac.update(body)  # fed separately: no copy of a large body
    return base64.b64encode(mac.digest()).decode("ascii")


def _sized(data: bytes) -> bytes:
    return str(len(data)).encode("ascii") + b":" + data


def canonical_v2(code: int, fields: Mapping[str, str], body: bytes) -> bytes:
    """The bytes version 2 signs (see the module docstring)."""
    items = sorted((str(k).encode("utf-8"), str(v).encode("utf-8")) for k, v in fields.items() if k != SIGNATURE)
    parts = [_V2_PREFIX, str(int(code)).encode("ascii"), b"\n", str(len(items)).encode("ascii"), b"\n"]
    for name, value in items:
        parts.append(_sized(name))
        parts.append(_sized(value))
    parts.append(b"\n")
    parts.append(hashlib.sha256(body).hexdigest().encode("ascii"))
    return b"".join(parts)


def signature_v2(code: int, fields: Mapping[str, str], body: bytes, secret_key: str) -> str:
    """Base64 HMAC-SHA256 of `canonical_v2`."""
    mac = hmac.new(secret_key.encode("utf-8"), canonical_v2(code, fields, body), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")
