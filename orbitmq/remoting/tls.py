"""TLS settings under RocketMQ's `tls.*` keys, and the `ssl.SSLContext`s they make.

No sockets here: `TlsSettings.from_properties` reads the keys (and the file
named by `tls.config.file`), `server_tls()` and `client_context()` build the
contexts the servers and clients hand to asyncio.

RocketMQ's keys and what they mean here:

    tls.server.mode              disabled | permissive | enforcing (server ports)
    tls.enable                   true: outgoing connections use TLS (clients, broker -> namesrv, HA slave)
    tls.test.mode.enable         client: no verification of the server; server without a
                                 certificate: a throwaway self-signed one
    tls.server.need.client.auth  none | optional | require (mutual TLS)
    tls.server.certPath / keyPath / keyPassword      the server's PEM chain and key
    tls.server.authClient        verify client certificates against tls.server.trustCertPath
    tls.server.trustCertPath     PEM CA file for client certificates
    tls.client.certPath / keyPath / keyPassword      the client's PEM chain and key (mutual TLS)
    tls.client.authServer        verify the server against tls.client.trustCertPath
    tls.client.trustCertPath     PEM CA file for server certificates (empty: the system's CAs)
    tls.config.file              a properties file holding any of the keys above

Deliberate differences from RocketMQ 4.9, all toward refusing rather than trusting:
TLS is off unless `tls.server.mode` / `tls.enable` say otherwise (RocketMQ's
server default is permissive); `tls.test.mode.enable` defaults to false (RocketMQ:
true, which trusts any server); `tls.client.authServer` defaults to true
(RocketMQ: false); a server that asks for client certificates always verifies
them, so it needs `tls.server.trustCertPath`; and `tls.config.file` is read only
when named (RocketMQ also looks at /etc/rocketmq/tls.properties). As in
RocketMQ, values in `tls.config.file` win over the same keys given directly,
except `tls.server.mode` and `tls.enable`. Host names are not checked against
certificates (RocketMQ does not either; brokers are addressed by IP).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orbitmq.common.javaprops import parse_properties
from orbitmq.errors import ConfigError

#: The first byte of every TLS record that opens a connection (a handshake record).
TLS_HANDSHAKE_BYTE = 0x16


class TlsMode(str, enum.Enum):
    """How a server port treats TLS (RocketMQ's TlsMode)."""

    DISABLED = "disabled"
    #: Both TLS and plain connections on the same port, told apart by their first byte.
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


class ClientAuth(str, enum.Enum):
    """Whether a server asks connecting clients for a certificate (Netty's ClientAuth)."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


@dataclass(frozen=True)
class ServerTls:
    """What a listener needs: the context, and whether plain connections are still served."""

    context: ssl.SSLContext
    permissive: bool


@dataclass(frozen=True)
class TlsSettings:
    """The `tls.*` settings of one process; defaults refuse rather than trust (module docstring)."""

    server_mode: TlsMode = TlsMode.DISABLED
    enable: bool = False
    test_mode: bool = False
    server_need_client_auth: ClientAuth = ClientAuth.NONE
    server_key_path: str = ""
    server_key_password: str = field(default="", repr=False)
    server_cert_path: str = ""
    server_auth_client: bool = False
    server_trust_cert_path: str = ""
    client_key_path: str = ""
    client_key_password: str = field(default="", repr=False)
    client_cert_path: str = ""
    client_auth_server: bool = True
    client_trust_cert_path: str = ""
    config_file: str = ""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsSettings:
        """Settings from `tls.*` keys (other keys raise ConfigError); reads `tls.config.file` if given."""
        values = _convert_all(props)
        config_file = values.get("config_file", "")
        if config_file:
            assert isinstance(config_file, str)
            file_values = _convert_all(_read_file(config_file), source=config_file)
            for key in ("server_mode", "enable", "config_file"):  # RocketMQ ignores these in the file
                file_values.pop(key, None)
            values.update(file_values)
        return cls(**values)

    @classmethod
    def client(
        cls,
        *,
        trust_cert_path: str = "",
        cert_path: str = "",
        key_path: str = "",
        key_password: str = "",
        test_mode: bool = False,
    ) -> TlsSettings:
        """Client-side settings in Python terms: TLS on, the server verified against `trust_cert_path`
        (the system's CAs when empty) unless `test_mode`; `cert_path`/`key_path` for mutual TLS."""
        return cls(
            enable=True, test_mode=test_mode, client_trust_cert_path=trust_cert_path,
            client_cert_path=cert_path, client_key_path=key_path, client_key_password=key_password,
        )

    def with_properties(self, props: Mapping[str, str]) -> TlsSettings:
        """A copy with `props` (tls.* keys) applied on top."""
        return dataclasses.replace(self, **_convert_all(props))

    def to_properties(self, *, reveal_passwords: bool = False) -> dict[str, str]:
        """The settings under RocketMQ's keys, key passwords left out (they are never reported)
        unless `reveal_passwords` (a config file written back) and set."""
        out: dict[str, str] = {}
        for key, (name, _) in _KEYS.items():
            if name.endswith("_password") and not (reveal_passwords and getattr(self, name)):
                continue
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return out

    # --- contexts ------------------------------------------------------------------

    def server_tls(self) -> ServerTls | None:
        """The listeners' TLS, or None when `tls.server.mode` is disabled. Raises ConfigError when
        a file cannot be loaded or the settings contradict each other."""
        if self.server_mode is TlsMode.DISABLED:
            return None
        return ServerTls(self.server_context(), permissive=self.server_mode is TlsMode.PERMISSIVE)

    def server_context(self) -> ssl.SSLContext:
        """A server-side context from the tls.server.* settings."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _harden(ctx)
        if self.server_cert_path:
            _load_chain(ctx, self.server_cert_path, self.server_key_path, self.server_key_password, "tls.server")
        elif self.test_mode:
            from orbitmq.remoting.certs import throwaway_server_pem  # needs the cryptography package

            cert, key = throwaway_server_pem()
            _load_chain_pem(ctx, cert, key)
        else:
            raise ConfigError(
                "tls.server.mode is not disabled but tls.server.certPath is not set "
                "(or set tls.test.mode.enable=true for a throwaway self-signed certificate)"
            )
        need = self.server_client_auth()
        if need is not ClientAuth.NONE:
            if not self.server_trust_cert_path:
                raise ConfigError(
                    f"tls.server.need.client.auth={need.value} needs tls.server.trustCertPath: "
                    "client certificates are always verified"
                )
            _load_trust(ctx, self.server_trust_cert_path, "tls.server.trustCertPath")
            ctx.verify_mode = ssl.CERT_REQUIRED if need is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
        return ctx

    def server_pem(self) -> tuple[bytes, bytes]:
        """(certificate chain, unencrypted private key) as PEM, for servers that take key material
        rather than an `ssl.SSLContext` (the gRPC port): the tls.server.* files, or with
        `tls.test.mode.enable` and no certificate a throwaway self-signed pair. Call `server_context()`
        first to have the files and settings checked with its messages."""
        if not self.server_cert_path:
            if not self.test_mode:
                raise ConfigError("tls.server.certPath is not set (or set tls.test.mode.enable=true)")
            from orbitmq.remoting.certs import throwaway_server_pem

            return throwaway_server_pem()
        chain = _read_bytes(self.server_cert_path, "tls.server.certPath")
        key = _read_bytes(self.server_key_path, "tls.server.keyPath") if self.server_key_path else chain
        if self.server_key_password or b"ENCRYPTED" in key:
            from orbitmq.remoting.certs import decrypt_key_pem

            key = decrypt_key_pem(key, self.server_key_password, "tls.server.keyPath")
        return chain, key

    def server_client_auth(self) -> ClientAuth:
        """Whether the server ports ask for client certificates (`tls.server.authClient=true` with
        `need.client.auth=none` means `require`)."""
        need = self.server_need_client_auth
        if need is ClientAuth.NONE and self.server_auth_client:
            need = ClientAuth.REQUIRE
        return need

    def client_context(self) -> ssl.SSLContext | None:
        """The context for outgoing connections, or None when `tls.enable` is false."""
        if not self.enable:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        _harden(ctx)
        ctx.check_hostname = False  # brokers are reached by IP; the chain is what is verified
        if self.test_mode or not self.client_auth_server:
            ctx.verify_mode = ssl.CERT_NONE
        elif self.client_trust_cert_path:
            _load_trust(ctx, self.client_trust_cert_path, "tls.client.trustCertPath")
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self.client_cert_path:
            _load_chain(ctx, self.client_cert_path, self.client_key_path, self.client_key_password, "tls.client")
        return ctx


def split_tls_properties(props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the `tls.*` keys, the rest) of `props`."""
    tls: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, value in props.items():
        (tls if key.startswith("tls.") else rest)[key] = value
    return tls, rest


# --- keys ------------------------------------------------------------------------------


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _str(text: str) -> str:
    return text


def _mode(text: str) -> TlsMode:
    try:
        return TlsMode(text.lower())
    except ValueError:
        raise ValueError("expected disabled, permissive or enforcing") from None


def _client_auth(text: str) -> ClientAuth:
    try:
        return ClientAuth(text.lower() or "none")
    except ValueError:
        raise ValueError("expected none, optional or require") from None


_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "tls.server.mode": ("server_mode", _mode),
    "tls.enable": ("enable", _bool),
    "tls.test.mode.enable": ("test_mode", _bool),
    "tls.server.need.client.auth": ("server_need_client_auth", _client_auth),
    "tls.server.keyPath": ("server_key_path", _str),
    "tls.server.keyPassword": ("server_key_password", _str),
    "tls.server.certPath": ("server_cert_path", _str),
    "tls.server.authClient": ("server_auth_client", _bool),
    "tls.server.trustCertPath": ("server_trust_cert_path", _str),
    "tls.client.keyPath": ("client_key_path", _str),
    "tls.client.keyPassword": ("client_key_password", _str),
    "tls.client.certPath": ("client_cert_path", _str),
    "tls.client.authServer": ("client_auth_server", _bool),
    "tls.client.trustCertPath": ("client_trust_cert_path", _str),
    "tls.config.file": ("config_file", _str),
}

#: Every key TlsSettings reads.
TLS_KEYS = frozenset(_KEYS)
#: The keys a client (producer, consumer, admin, Spark) uses; the tls.server.* ones serve listeners.
CLIENT_TLS_KEYS = frozenset(k for k in _KEYS if not k.startswith("tls.server."))


def _convert_all(props: Mapping[str, str], *, source: str = "") -> dict[str, Any]:
    where = f"{source}: " if source else ""
    values: dict[str, Any] = {}
    for key, raw in props.items():
        spec = _KEYS.get(key.strip())
        if spec is None:
            raise ConfigError(f"{where}unknown TLS key {key} (known: {', '.join(sorted(_KEYS))})")
        name, parse = spec
        try:
            values[name] = parse(str(raw).strip())
        except ValueError as exc:
            raise ConfigError(f"{where}{key}={raw!r}: {exc}") from None
    return values


def _read_file(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            return parse_properties(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"tls.config.file {path}: cannot read it ({exc})") from None


# --- context helpers -------------------------------------------------------------------


def _harden(ctx: ssl.SSLContext) -> None:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # No renegotiation: a record written is encrypted at once, never held back for a handshake.
    ctx.options |= ssl.OP_NO_RENEGOTIATION


def _load_chain(ctx: ssl.SSLContext, cert_path: str, key_path: str, password: str, prefix: str) -> None:
    try:
        ctx.load_cert_chain(cert_path, key_path or None, password or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{prefix}.certPath {cert_path} / {prefix}.keyPath {key_path or '(in the cert file)'}: "
                          f"cannot load the certificate and key ({_reason(exc)})") from None


def _load_chain_pem(ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    # load_cert_chain reads files only: write the throwaway pair to a private temporary folder.
    with tempfile.TemporaryDirectory(prefix="orbitmq-tls-") as folder:
        cert_file, key_file = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        for path, data in ((cert_file, cert_pem), (key_file, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert_file, key_file)


def _read_bytes(path: str, key: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"{key} {path}: cannot read it ({_reason(exc)})") from None


def _load_trust(ctx: ssl.SSLContext, path: str, key: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{key} {path}: cannot load trusted certificates ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__
