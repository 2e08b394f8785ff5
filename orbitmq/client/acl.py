"""Client side of plain ACL: the `access_key` / `secret_key` / `signature_version` options.

Producers, consumers and the admin client pass credentials once and the
instance's `SigningRemotingClient` (remoting/signing.py) signs every request:

    creds = AclCredentials("RocketMQ", "12345678")
    sign_request(cmd, creds)          # adds AccessKey, SecurityToken (if any) and Signature
"""

from __future__ import annotations

from orbitmq.client.config import ClientConfig, SecurityOptions
from orbitmq.remoting.signing import (
    ACCESS_KEY,
    SECRET_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    AclCredentials,
    SigningRemotingClient,
    make_remoting_client,
    sign_request,
    signature,
)

__all__ = [
    "ACCESS_KEY", "SECRET_KEY", "SECURITY_TOKEN", "SIGNATURE", "AclCredentials", "SigningRemotingClient",
    "acl_options", "make_remoting_client", "sign_request", "signature",
]


def acl_options(config: ClientConfig) -> SecurityOptions:
    """The ACL, TLS and RPC hook options of `config` (for a helper producer that must sign and
    connect like its owner)."""
    out = SecurityOptions()
    if config.access_key:
        out["access_key"] = config.access_key
    if config.secret_key:
        out["secret_key"] = config.secret_key
    if config.security_token:
        out["security_token"] = config.security_token
    if config.use_tls:
        out["use_tls"] = True
    if config.tls:
        out["tls"] = config.tls
    if config.signature_version != 1:
        out["signature_version"] = config.signature_version
    if config.rpc_hook is not None:  # Java's trace dispatcher takes its owner's RPCHook too
        out["rpc_hook"] = config.rpc_hook
    return out
