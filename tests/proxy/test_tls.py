"""TLS on the gRPC port: the official RocketMQ 5 clients with TLS on and off against each
`tls.server.mode`, the permissive port's first-byte front, and bad first bytes.

The official clients verify the server against the system's CAs; grpc (C core and grpc-js) reads
extra roots from GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, which the tests point at a CA of their own or at
the throwaway certificate `orbitmq dev` presents.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from orbitmq.client import LitePullConsumer, Producer
from orbitmq.proxy import tls as tls_front
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from orbitmq.proxy.tls import FirstByteFront, grpc_tls
from orbitmq.remoting.certs import issue, make_ca
from orbitmq.remoting.tls import TlsMode, TlsSettings
from tests.client.helpers import create_topic
from tests.support.dev import unique_names
from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(90)

HERE = Path(__file__).resolve().parent
PY_CLIENT = HERE / "tls_py_client.py"
NODE_CLIENT = HERE / "tls_node_client.js"
NODE_MODULES = HERE.parent / "interop" / "node_modules"
MD = [("x-mq-client-id", "tls-test@1@0@x"), ("x-mq-language", "PYTHON"), ("x-mq-namespace", "")]


@dataclass
class Node:
    process: ServerProcess
    root: Path
    namesrv: str
    proxy: str
    roots: Path  # what a client trusts for the gRPC port's certificate
    remoting_tls: TlsSettings | None = None


def start_dev(root: Path, conf: str) -> ServerProcess:
    (root / "broker.conf").write_text(conf)
    process = start_server(orbitmq_command(
        "dev", "--store", str(root / "store"), "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1",
        "--console", "off", "--no-metrics", "--grpc-port", "0", "-c", str(root / "broker.conf"),
    ), listeners=2, cwd=str(root), env={"HOME": str(root)})
    eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
    return process


def proxy_of(process: ServerProcess) -> str:
    return next(x for x in process.output if x.startswith("proxy listening on ")).split()[-1]


def small_store() -> str:
    return "mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=60000\n"


@pytest.fixture(scope="module")
def permissive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """`orbitmq dev` as it comes: no tls.* settings at all."""
    root = tmp_path_factory.mktemp("grpc-permissive")
    process = start_dev(root, small_store())
    try:
        proxy = proxy_of(process)
        host, _, port = proxy.rpartition(":")
        roots = root / "presented.pem"  # the throwaway certificate the port presents
        roots.write_text(ssl.get_server_certificate((host, int(port)), timeout=10))
        yield Node(process, root, process.addresses[0], proxy, roots)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def enforcing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """Every port of the node TLS-only, with a certificate of the test's CA."""
    root = tmp_path_factory.mktemp("grpc-enforcing")
    ca = make_ca()
    server = issue(ca, "orbitmq", hosts=("127.0.0.1", "localhost"))
    (root / "ca.pem").write_bytes(ca.cert_pem)
    (root / "server.pem").write_bytes(server.cert_pem)
    (root / "server.key").write_bytes(server.key_pem)
    process = start_dev(root, small_store() + (
        "tls.server.mode=enforcing\ntls.enable=true\n"
        f"tls.server.certPath={root / 'server.pem'}\ntls.server.keyPath={root / 'server.key'}\n"
        f"tls.client.trustCertPath={root / 'ca.pem'}\n"
    ))
    try:
        yield Node(process, root, process.addresses[0], proxy_of(process), root / "ca.pem",
                   TlsSettings.client(trust_cert_path=str(root / "ca.pem")))
    finally:
        process.stop()


@pytest.fixture(scope="module")
def disabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """`tls.server.mode=disabled` said in so many words: the gRPC port too serves plain text only."""
    root = tmp_path_factory.mktemp("grpc-disabled")
    process = start_dev(root, small_store() + "tls.server.mode=disabled\n")
    try:
        yield Node(process, root, process.addresses[0], proxy_of(process), root / "none.pem")
    finally:
        process.stop()


async def make_topic(node: Node) -> str:
    topic, pg, _ = unique_names("gtls")
    async with Producer(pg, namesrv_addr=node.namesrv, tls=node.remoting_tls) as producer:
        await create_topic(producer, topic, 2)
    return topic


async def pull_bodies(node: Node, topic: str, n: int) -> list[bytes]:
    _, _, group = unique_names("gtls")
    consumer = LitePullConsumer(group, namesrv_addr=node.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                tls=node.remoting_tls)
    consumer.subscribe(topic, "*")
    await consumer.start()
    got: list[bytes] = []
    try:
        end = time.monotonic() + 20
        while len(got) < n and time.monotonic() < end:
            got.extend(m.body for m in await consumer.poll(timeout=2) or [])
    finally:
        await consumer.shutdown()
    return got


def run_client(command: list[str], node: Node, timeout: float = 60) -> dict[str, Any]:
    env = dict(os.environ, HOME=str(node.root), GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=str(node.roots),
               NODE_PATH=str(NODE_MODULES))
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(node.root),
                          check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{command} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    return result


def python_client(node: Node, topic: str, mode: str, body: str) -> dict[str, Any]:
    if importlib.util.find_spec("rocketmq") is None:
        pytest.skip("rocketmq-python-client is not installed (the test extra)")
    return run_client([sys.executable, str(PY_CLIENT), node.proxy, topic, mode, body], node)


def node_client(node: Node, topic: str, mode: str, body: str) -> dict[str, Any]:
    node_bin = shutil.which("node")
    if node_bin is None or not (NODE_MODULES / "rocketmq-client-nodejs" / "package.json").exists():
        pytest.skip("node or rocketmq-client-nodejs is not installed (./run test installs them)")
    return run_client([node_bin, str(NODE_CLIENT), node.proxy, topic, mode, body], node)


async def query_route(node: Node, *, secure: bool, timeout: float = 5) -> int:
    """One QueryRoute over a raw grpc channel; the status code, or raises grpc.aio.AioRpcError."""
    creds = grpc.ssl_channel_credentials(root_certificates=node.roots.read_bytes()) if secure else None
    async with (grpc.aio.secure_channel(node.proxy, creds) if creds else grpc.aio.insecure_channel(node.proxy)) as ch:
        req = spb.QueryRouteRequest()
        req.topic.name = "TBW102"
        resp = await sgrpc.MessagingServiceStub(ch).QueryRoute(req, metadata=MD, timeout=timeout)
        return int(resp.status.code)


# --- the official clients against each mode ------------------------------------------------------------


async def test_dev_serves_tls_and_plain_clients_side_by_side(permissive: Node) -> None:
    topic = await make_topic(permissive)
    with_tls, plain = await asyncio.gather(
        asyncio.to_thread(python_client, permissive, topic, "tls", "over tls"),
        asyncio.to_thread(python_client, permissive, topic, "plain", "in plain text"),
    )
    assert with_tls["ok"] and plain["ok"], (with_tls, plain)
    assert sorted(await pull_bodies(permissive, topic, 2)) == [b"in plain text", b"over tls"]


async def test_the_nodejs_client_with_its_defaults_and_with_tls(permissive: Node) -> None:
    topic = await make_topic(permissive)
    default = await asyncio.to_thread(node_client, permissive, topic, "default", "node default")
    with_tls = await asyncio.to_thread(node_client, permissive, topic, "tls", "node tls")
    assert default["ok"] and with_tls["ok"], (default, with_tls)
    assert sorted(await pull_bodies(permissive, topic, 2)) == [b"node default", b"node tls"]


async def test_enforcing_serves_tls_and_refuses_plain_text(enforcing: Node) -> None:
    topic = await make_topic(enforcing)
    with_tls = await asyncio.to_thread(python_client, enforcing, topic, "tls", "enforced")
    assert with_tls["ok"], with_tls
    assert await pull_bodies(enforcing, topic, 1) == [b"enforced"]
    plain = await asyncio.to_thread(python_client, enforcing, topic, "plain", "refused")
    assert not plain["ok"], plain
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await query_route(enforcing, secure=False)
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE


async def test_disabled_refuses_tls_at_once_and_serves_plain_text(disabled: Node) -> None:
    topic = await make_topic(disabled)
    disabled.roots.write_bytes(make_ca().cert_pem)  # anything: no certificate will be presented
    with_tls = await asyncio.to_thread(python_client, disabled, topic, "tls", "refused")
    assert not with_tls["ok"], with_tls
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await query_route(disabled, secure=True, timeout=20)
    # Refused at the handshake: not DEADLINE_EXCEEDED, a client left waiting.
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE, refused.value
    plain = await asyncio.to_thread(python_client, disabled, topic, "plain", "plain")
    assert plain["ok"], plain


# --- bad input ------------------------------------------------------------------------------------------


async def closed_by_server(addr: str, first: bytes, *, hang_up: bool = False) -> None:
    """Send `first`; then hang up ourselves, or wait (bounded) until the server closes."""
    host, _, port = addr.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(first)
    await writer.drain()
    if hang_up:
        writer.close()
        return
    try:
        await asyncio.wait_for(reader.read(), timeout=20)  # until EOF: the port closed it
    finally:
        writer.close()


CLIENT_HELLO_START = bytes.fromhex("16030100c4010000c00303") + os.urandom(20)


@pytest.mark.parametrize("mode", ["permissive", "enforcing"])
async def test_bad_first_bytes_do_not_stop_the_port(mode: str, request: pytest.FixtureRequest) -> None:
    node: Node = request.getfixturevalue(mode)
    host, _, port = node.proxy.rpartition(":")
    silent = socket.create_connection((host, int(port)))  # says nothing while the others run
    try:
        await closed_by_server(node.proxy, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await closed_by_server(node.proxy, b"\x16\x03\x01\x00\x05hello" + os.urandom(64))  # a record, no hello
        await closed_by_server(node.proxy, os.urandom(256).replace(b"\x16", b"\x17"))
        await closed_by_server(node.proxy, CLIENT_HELLO_START, hang_up=True)  # gone mid-handshake
        await closed_by_server(node.proxy, b"\x16", hang_up=True)
        assert await query_route(node, secure=True) == 20000
        if mode == "permissive":
            assert await query_route(node, secure=False) == 20000
    finally:
        silent.close()
    assert await query_route(node, secure=True) == 20000


# --- orbitmq proxy --------------------------------------------------------------------------------------


async def test_the_proxy_command_takes_the_grpc_ports_tls_settings(permissive: Node, tmp_path: Path) -> None:
    process = start_server(orbitmq_command(
        "proxy", "-n", permissive.namesrv, "--port", "0", "-D", "tls.server.mode=enforcing",
        "-D", "tls.test.mode.enable=true",
    ), listeners=0, cwd=str(tmp_path))
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
        proxy = proxy_of(process)
        host, _, port = proxy.rpartition(":")
        roots = tmp_path / "presented.pem"
        roots.write_text(ssl.get_server_certificate((host, int(port)), timeout=10))
        node = Node(process, tmp_path, permissive.namesrv, proxy, roots)
        assert await query_route(node, secure=True) == 20000
        with pytest.raises(grpc.aio.AioRpcError):
            await query_route(node, secure=False)
    finally:
        process.stop()


def test_the_proxy_command_refuses_enforcing_without_a_certificate(tmp_path: Path) -> None:
    done = subprocess.run(orbitmq_command("proxy", "-n", "127.0.0.1:1", "--port", "0", "-D", "tls.server.mode=enforcing"),
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path), check=False)
    assert done.returncode == 2
    assert "tls.server.certPath" in done.stderr and "Traceback" not in done.stderr


# --- the pieces -----------------------------------------------------------------------------------------


def test_an_encrypted_key_is_handed_to_grpc_decrypted(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    pair = issue(make_ca(), "orbitmq")
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    (tmp_path / "server.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    (tmp_path / "server.pem").write_bytes(pair.cert_pem)
    settings = TlsSettings(server_mode=TlsMode.ENFORCING, server_cert_path=str(tmp_path / "server.pem"),
                           server_key_path=str(tmp_path / "server.key"), server_key_password="secret")
    chain, plain_key = settings.server_pem()
    assert chain == pair.cert_pem and b"ENCRYPTED" not in plain_key
    assert serialization.load_pem_private_key(plain_key, password=None).public_key() == key.public_key()
    assert grpc_tls(settings).credentials is not None
    assert grpc_tls(None).credentials is None


class Echo(asyncio.Protocol):
    """A stand-in for a grpc listener: answers every chunk with `tag` + the chunk."""

    def __init__(self, tag: bytes) -> None:
        self.tag = tag
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(self.tag + data)


async def test_the_front_routes_by_first_byte_and_passes_bytes_untouched() -> None:
    loop = asyncio.get_running_loop()
    tls_side = await loop.create_server(lambda: Echo(b"T"), "127.0.0.1", 0)
    plain_side = await loop.create_server(lambda: Echo(b""), "127.0.0.1", 0)
    gone = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    gone_port = gone.sockets[0].getsockname()[1]
    gone.close()
    await gone.wait_closed()
    front = FirstByteFront("127.0.0.1", 0, ("127.0.0.1", tls_side.sockets[0].getsockname()[1]),
                           ("127.0.0.1", plain_side.sockets[0].getsockname()[1]))
    front.first_byte_timeout = 0.5
    port = await front.bind()
    await front.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x16hello")
        assert await reader.readexactly(7) == b"T\x16hello"
        writer.close()

        # A large transfer both ways through the plain side (flow control on both legs).
        big = os.urandom(4 * 1024 * 1024)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"P" + big)
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(1 + len(big)), timeout=30) == b"P" + big
        writer.close()

        # A client that half-closes still gets its answer; then both legs close.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x16bye")
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), timeout=10) == b"T\x16bye"
        writer.close()

        # Silent: closed after the first-byte timeout.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), timeout=10) == b""
        writer.close()

        # A listener that is gone: the client is closed, the front goes on.
        front.plain_target = ("127.0.0.1", gone_port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"PRI * HTTP/2.0")
        assert await asyncio.wait_for(reader.read(), timeout=10) == b""
        writer.close()

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x16again")
        assert await reader.readexactly(7) == b"T\x16again"
        for _ in range(200):  # the earlier connections are forgotten as they close
            if len(front._links) == 1:
                break
            await asyncio.sleep(0.05)
        assert len(front._links) == 1
    finally:
        await front.close()
        tls_side.close()
        plain_side.close()
    assert await asyncio.wait_for(reader.read(), timeout=10) == b""  # close() ends open connections
    writer.close()


async def test_the_permissive_front_stops_reading_a_client_whose_listener_takes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener that reads nothing makes the front stop reading its client, also when the first
    burst (read before the listener connection was up) already filled the relay's buffer: the
    front holds a bounded amount, it does not buffer whatever the client goes on sending."""
    loop = asyncio.get_running_loop()
    held: list[asyncio.Transport] = []

    class Sink(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            transport.pause_reading()
            held.append(transport)

    made = tls_front._Outbound.connection_made

    def small_send_buffer(self: tls_front._Outbound, transport: asyncio.BaseTransport) -> None:
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        made(self, transport)

    # The relay's socket to the listener takes little, so the first burst alone fills its buffer.
    monkeypatch.setattr(tls_front._Outbound, "connection_made", small_send_buffer)
    sink_sock = socket.socket()
    sink_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sink_sock.bind(("127.0.0.1", 0))
    sink = await loop.create_server(Sink, sock=sink_sock)
    sink_port = sink.sockets[0].getsockname()[1]
    front = FirstByteFront("127.0.0.1", 0, ("127.0.0.1", sink_port), ("127.0.0.1", sink_port))
    port = await front.bind()
    await front.start()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    first = b"P" + bytes(256 * 1024 - 1)
    sent = 0
    with contextlib.suppress(BlockingIOError):
        while sent < len(first):  # the first burst, in the socket before the front reads it
            sent += sock.send(first[sent:])
    _reader, writer = await asyncio.open_connection(sock=sock)
    total = 64 * 1024 * 1024

    async def flood() -> None:
        writer.write(first[sent:])
        chunk = bytes(1024 * 1024)
        for _ in range(total // len(chunk)):
            writer.write(chunk)
            await writer.drain()

    task = asyncio.create_task(flood())
    try:
        link = await _eventually_async(lambda: next(iter(front._links), None))
        await _eventually_async(lambda: task.done() or (
            link.outbound is not None and link.transport is not None and not link.transport.is_reading()))
        assert not task.done(), "the front read everything the client sent into its relay buffer"
        assert link.outbound is not None and link.outbound.get_write_buffer_size() <= 4 * 1024 * 1024
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        writer.close()
        for transport in held:
            transport.close()
        await front.close()
        sink.close()


async def _eventually_async(probe: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


def test_the_proxy_command_refuses_a_define_without_a_value(tmp_path: Path) -> None:
    done = subprocess.run(orbitmq_command("proxy", "-n", "127.0.0.1:1", "--port", "0", "-D", "tls.server.mode"),
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path), check=False)
    assert done.returncode == 2
    assert "-D tls.server.mode: expected KEY=VALUE" in done.stderr and "Traceback" not in done.stderr
