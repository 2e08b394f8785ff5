"""X.509 certificates for TLS test setups: a CA, certificates it signs, a throwaway server pair.

Built with the `cryptography` package (the `test` extra installs it); only a
server running with `tls.test.mode.enable=true` and no certificate of its own,
and the tests, need it. Everything is PEM bytes in and out; nothing touches a file.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Any

from orbitmq.errors import ConfigError

#: Validity of every certificate made here; tests and throwaway servers live far shorter.
VALID_DAYS = 30


@dataclass(frozen=True)
class CertPair:
    cert_pem: bytes
    key_pem: bytes


def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:
        raise ConfigError(
            "making a certificate needs the 'cryptography' package (pip install cryptography); "
            "or give tls.server.certPath and tls.server.keyPath"
        ) from None
    return x509


def make_ca(common_name: str = "OrbitMQ test CA") -> CertPair:
    """A self-signed CA certificate and its key."""
    return _make(common_name, issuer=None, ca=True)


def issue(ca: CertPair, common_name: str, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> CertPair:
    """A leaf certificate for `common_name` signed by `ca`, valid for `hosts` (IPs or DNS names),
    usable by a server and by a client (mutual TLS)."""
    return _make(common_name, issuer=ca, ca=False, hosts=hosts)


def throwaway_server_pem() -> tuple[bytes, bytes]:
    """(cert, key) of a self-signed server certificate, for tls.test.mode.enable without a certificate."""
    pair = _make("OrbitMQ throwaway", issuer=None, ca=False, hosts=("127.0.0.1", "localhost"))
    return pair.cert_pem, pair.key_pem


def _make(common_name: str, *, issuer: CertPair | None, ca: bool, hosts: tuple[str, ...] = ()) -> CertPair:
    x509 = _x509()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    signing_key: Any
    if issuer is None:
        issuer_name, signing_key = subject, key
    else:
        issuer_cert = x509.load_pem_x509_certificate(issuer.cert_pem)
        issuer_name = issuer_cert.subject
        signing_key = serialization.load_pem_private_key(issuer.key_pem, password=None)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signing_key.public_key()), critical=False
        )
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                          encipher_only=False, decipher_only=False),
            critical=True,
        )
    else:
        names: list[Any] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    cert = builder.sign(signing_key, hashes.SHA256())
    return CertPair(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def decrypt_key_pem(key_pem: bytes, password: str, key_name: str) -> bytes:
    """An encrypted PEM private key as unencrypted PKCS#8 PEM (for servers that take key bytes and
    no password); `key_name` names the setting in errors."""
    _x509()
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(key_pem, password=password.encode() or None)
    except (ValueError, TypeError) as exc:
        reason = "wrong or missing password" if "password" in str(exc).lower() else "not a PEM private key"
        raise ConfigError(f"{key_name}: cannot decrypt the private key ({reason})") from None
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
