"""RocketMQ 4.x plain-ACL request signing (protocol reference 6.10).

The remoting client has no request hook, so the Spark connector signs each
request itself just before sending it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from orbitmq.remoting.command import RemotingCommand

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


def signature(ext_fields: dict[str, str], body: bytes, secret_key: str) -> str:
    """Base64 HMAC-SHA1 over the values of every field but Signature, sorted by key, then the body."""
    # Java sorts String keys by UTF-16 code units; for the ASCII names used
    # in headers that is the same as Python's code-point order.
    text = "".join(v for k, v in sorted(ext_fields.items()) if k != SIGNATURE).encode("utf-8")
    mac = hmac.new(secret_key.encode("utf-8"), text + body, hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def sign(cmd: RemotingCommand, access_key: str, secret_key: str, security_token: str | None = None) -> None:
    """Add AccessKey (and SecurityToken) and the Signature to `cmd`'s ext fields, in place."""
    fields = dict(cmd.ext_fields or {})
    fields[ACCESS_KEY] = access_key
    if security_token:
        fields[SECURITY_TOKEN] = security_token
    fields.pop(SIGNATURE, None)
    body = cmd.body
    if body is None:
        raw = b""
    elif isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
    else:
        raw = b"".join(bytes(part) for part in body)
    fields[SIGNATURE] = signature(fields, raw, secret_key)
    cmd.ext_fields = fields
