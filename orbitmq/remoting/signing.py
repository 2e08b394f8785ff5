"""Signing requests for plain ACL: what clients, admin tools and brokers send to an ACL server.

    creds = AclCredentials("RocketMQ", "12345678")
    sign_request(cmd, creds)          # adds AccessKey, SecurityToken (if any) and Signature

`SigningRemotingClient` signs each request it sends. Version 1 is RocketMQ
4.x's signature (protocol reference 6.10), understood by every broker. `AclCredentials(..., signature_version=2)` signs with OrbitMQ's
version 2 instead (common/signing.py: field names and lengths, the
request code and the body's SHA-256 under HMAC-SHA256, plus a timestamp and a
fresh nonce, so a captured request cannot be altered or sent again).

Responses sent back to a server are never signed, as in Java.
"""

from __future__ import annotations

import secrets
import ssl
import time
from dataclasses import dataclass

from orbitmq.common.signing import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    SIGNATURE_NONCE,
    SIGNATURE_TIMESTAMP,
    SIGNATURE_VERSION,
    V2,
    signature_v1,
)
from orbitmq.common.signing import signature_v2 as compute_v2
from orbitmq.errors import ConfigError
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient

SECRET_KEY = "SecretKey"
_ONLY_SIGNATURE = frozenset({SIGNATURE})


@dataclass(frozen=True)
class AclCredentials:
    """An access key and its secret (never sent), plus an optional security token."""

    access_key: str
    secret_key: str
    security_token: str | None = None
    signature_version: int = 1

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ConfigError("ACL credentials need both an access key and a secret key")
        if self.signature_version not in (1, 2):
            raise ConfigError(f"signature_version must be 1 or 2, not {self.signature_version!r}")

    @classmethod
    def from_options(
        cls,
        access_key: str | None,
        secret_key: str | None,
        security_token: str | None = None,
        signature_version: int = 1,
    ) -> AclCredentials | None:
        """None when neither key is given; `ConfigError` when only one is."""
        if not access_key and not secret_key:
            return None
        if not access_key or not secret_key:
            raise ConfigError("give both access_key and secret_key, or neither")
        return cls(access_key, secret_key, security_token or None, signature_version)


def signature(ext_fields: dict[str, str], body: bytes, secret_key: str) -> str:
    """Version 1: Base64 HMAC-SHA1 over the values of all fields but Signature, sorted by key, then the body."""
    return signature_v1(ext_fields, body, secret_key, _ONLY_SIGNATURE)


def sign_request(cmd: RemotingCommand, creds: AclCredentials) -> RemotingCommand:
    """Add AccessKey (and SecurityToken) and Signature to `cmd`'s ext fields in place; returns `cmd`.

    With version 2 every call stamps a new timestamp and nonce: a request sent
    again (a retry) is signed again, never replayed.
    """
    fields = cmd.ext_fields
    if fields is None:
        fields = cmd.ext_fields = {}
    fields.pop(SIGNATURE, None)
    fields[ACCESS_KEY] = creds.access_key
    if creds.security_token:
        fields[SECURITY_TOKEN] = creds.security_token
    body = cmd.body_bytes() if cmd.body is not None else b""
    if creds.signature_version == 2:
        fields[SIGNATURE_VERSION] = V2
        fields[SIGNATURE_TIMESTAMP] = str(int(time.time() * 1000))
        fields[SIGNATURE_NONCE] = secrets.token_hex(16)
        fields[SIGNATURE] = compute_v2(cmd.code, fields, body, creds.secret_key)
    else:
        for name in (SIGNATURE_VERSION, SIGNATURE_TIMESTAMP, SIGNATURE_NONCE):
            fields.pop(name, None)
        fields[SIGNATURE] = signature(fields, body, creds.secret_key)
    return cmd


class AclClientRPCHook:
    """The RPC hook that signs every request with `creds` (RocketMQ's AclClientRPCHook)."""

    def __init__(self, creds: AclCredentials) -> None:
        self.creds = creds

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        sign_request(request, self.creds)

    def do_after_response(self, remote_addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
        return None


class SigningRemotingClient(RemotingClient):
    """A `RemotingClient` that signs every request it sends with `creds`: its last RPC hook is
    an `AclClientRPCHook`, so it signs what other hooks added."""

    def __init__(
        self, creds: AclCredentials, *, connect_timeout: float = 3.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(connect_timeout=connect_timeout, ssl_context=ssl_context)
        self.creds = creds
        self.add_rpc_hook(AclClientRPCHook(creds), final=True)


def make_remoting_client(
    creds: AclCredentials | None, *, connect_timeout: float = 3.0, ssl_context: ssl.SSLContext | None = None
) -> RemotingClient:
    """A signing client when `creds` is given, else a plain one; TLS connections with `ssl_context`."""
    if creds is None:
        return RemotingClient(connect_timeout=connect_timeout, ssl_context=ssl_context)
    return SigningRemotingClient(creds, connect_timeout=connect_timeout, ssl_context=ssl_context)
