"""A CA made by the tests, with a server certificate, a client certificate and a stranger's.

The files live in a temporary folder for the whole session; `Pki` names them.
A `stranger` certificate is signed by a second CA nobody trusts. The
certificates are made with the `cryptography` package (the `test` extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.remoting.certs import CertPair, issue, make_ca
from orbitmq.remoting.loop import loop_factory, uvloop_available


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    stranger_key: Path


def _write(folder: Path, name: str, pair: CertPair) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    key.chmod(0o600)
    return cert, key


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca = make_ca("OrbitMQ tests CA")
    ca_cert, _ = _write(folder, "ca", ca)
    server_cert, server_key = _write(folder, "server", issue(ca, "orbitmq-server"))
    client_cert, client_key = _write(folder, "client", issue(ca, "orbitmq-client"))
    stranger_ca = make_ca("Nobody's CA")
    stranger_cert, stranger_key = _write(folder, "stranger", issue(stranger_ca, "stranger"))
    return Pki(ca_cert, server_cert, server_key, client_cert, client_key, stranger_cert, stranger_key)


BOTH_LOOPS = {"test_remoting_tls.py"}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The in-process TLS tests run on asyncio's loop and on uvloop (the servers' loop when installed):
    their TLS transports are separate implementations. Server processes run on uvloop anyway."""
    factories: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
    if item.path.name in BOTH_LOOPS and uvloop_available():
        factories["uvloop"] = loop_factory(use_uvloop=True)
    return factories
