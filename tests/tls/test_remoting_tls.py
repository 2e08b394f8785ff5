"""TLS on a remoting port, in-process over loopback: the three server modes and mutual TLS."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from orbitmq.errors import ConnectError
from orbitmq.remoting.codec import encode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.tls import TlsSettings
from orbitmq.remoting.transport import Peer, RemotingClient, RemotingServer
from tests.tls.conftest import Pki

pytestmark = pytest.mark.timeout(30)

ECHO = 9001


async def echo(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(body=request.body_bytes())


def server_settings(pki: Pki, mode: str, **extra: str) -> TlsSettings:
    return TlsSettings.from_properties({
        "tls.server.mode": mode,
        "tls.server.certPath": str(pki.server_cert),
        "tls.server.keyPath": str(pki.server_key),
        **extra,
    })


@asynccontextmanager
async def serving(settings: TlsSettings) -> AsyncIterator[str]:
    server = RemotingServer("127.0.0.1", 0, tls=settings.server_tls())
    server.register(ECHO, echo)
    host, port = await server.start()
    try:
        yield f"{host}:{port}"
    finally:
        await server.close()


async def round_trip(addr: str, context: ssl.SSLContext | None) -> bytes:
    async with RemotingClient(connect_timeout=5.0, ssl_context=context) as client:
        response = await client.invoke(addr, RemotingCommand.request(ECHO, body=b"ping"), timeout=5.0)
        return response.body_bytes()


def trusting(pki: Pki, *, cert_path: str = "", key_path: str = "") -> ssl.SSLContext:
    context = TlsSettings.client(trust_cert_path=str(pki.ca), cert_path=cert_path, key_path=key_path).client_context()
    assert context is not None
    return context


async def test_enforcing_port_serves_a_tls_client_that_verifies_the_server(pki: Pki) -> None:
    async with serving(server_settings(pki, "enforcing")) as addr:
        assert await round_trip(addr, trusting(pki)) == b"ping"


async def test_enforcing_port_refuses_a_plain_client(pki: Pki) -> None:
    async with serving(server_settings(pki, "enforcing")) as addr:
        with pytest.raises(ConnectError):
            await round_trip(addr, None)


async def test_permissive_port_serves_tls_and_plain_clients_side_by_side(pki: Pki) -> None:
    async with serving(server_settings(pki, "permissive")) as addr:
        results = await asyncio.gather(round_trip(addr, trusting(pki)), round_trip(addr, None))
        assert results == [b"ping", b"ping"]


async def test_permissive_port_drops_a_connection_that_never_speaks_when_closed(pki: Pki) -> None:
    async with serving(server_settings(pki, "permissive")) as addr:
        host, port = addr.split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        assert await round_trip(addr, None) == b"ping"  # a silent connection blocks nobody
    assert await asyncio.wait_for(reader.read(), 5.0) == b""
    writer.close()


async def test_disabled_port_fails_a_tls_client(pki: Pki) -> None:
    async with serving(TlsSettings()) as addr:
        with pytest.raises(ConnectError):
            await round_trip(addr, trusting(pki))


async def test_client_refuses_a_server_its_trust_file_does_not_vouch_for(pki: Pki) -> None:
    settings = TlsSettings.from_properties({
        "tls.server.mode": "enforcing",
        "tls.server.certPath": str(pki.stranger_cert),
        "tls.server.keyPath": str(pki.stranger_key),
    })
    async with serving(settings) as addr:
        with pytest.raises(ConnectError, match="TLS handshake"):
            await round_trip(addr, trusting(pki))
        # tls.test.mode.enable: no verification, as RocketMQ's test mode.
        assert await round_trip(addr, TlsSettings.client(test_mode=True).client_context()) == b"ping"


@pytest.mark.parametrize("need", ["require", "optional"])
async def test_mutual_tls_serves_a_certificate_of_the_trusted_ca_and_refuses_one_of_another(
    pki: Pki, need: str
) -> None:
    settings = server_settings(pki, "enforcing", **{
        "tls.server.need.client.auth": need, "tls.server.trustCertPath": str(pki.ca)})
    async with serving(settings) as addr:
        client = trusting(pki, cert_path=str(pki.client_cert), key_path=str(pki.client_key))
        assert await round_trip(addr, client) == b"ping"
        stranger = trusting(pki, cert_path=str(pki.stranger_cert), key_path=str(pki.stranger_key))
        with pytest.raises(ConnectError):
            await round_trip(addr, stranger)


async def test_required_client_auth_refuses_a_client_without_a_certificate(pki: Pki) -> None:
    settings = server_settings(pki, "permissive", **{
        "tls.server.need.client.auth": "require", "tls.server.trustCertPath": str(pki.ca)})
    async with serving(settings) as addr:
        with pytest.raises(ConnectError):
            await round_trip(addr, trusting(pki))


async def test_optional_client_auth_serves_a_client_without_a_certificate(pki: Pki) -> None:
    settings = server_settings(pki, "enforcing", **{
        "tls.server.need.client.auth": "optional", "tls.server.trustCertPath": str(pki.ca)})
    async with serving(settings) as addr:
        assert await round_trip(addr, trusting(pki)) == b"ping"


async def test_failed_handshakes_leave_no_connection_behind(pki: Pki) -> None:
    server = RemotingServer("127.0.0.1", 0, tls=server_settings(pki, "enforcing").server_tls())
    host, port = await server.start()
    try:
        for _ in range(3):
            with pytest.raises(ConnectError):
                await round_trip(f"{host}:{port}", None)
        assert server.peers == []
    finally:
        await asyncio.wait_for(server.close(), 2.0)


async def test_a_plain_frame_on_an_enforcing_port_is_never_decoded(pki: Pki) -> None:
    seen: list[int] = []

    async def record(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        seen.append(request.code)
        return request.response()

    server = RemotingServer("127.0.0.1", 0, tls=server_settings(pki, "enforcing").server_tls())
    server.register(ECHO, record)
    host, port = await server.start()
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"".join(encode(RemotingCommand.request(ECHO))))
        assert await asyncio.wait_for(reader.read(), 5.0) == b""  # closed, nothing answered
        writer.close()
    finally:
        await server.close()
    assert seen == []
