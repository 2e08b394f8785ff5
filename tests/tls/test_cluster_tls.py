"""A NameServer, a SYNC_MASTER and its slave as real processes, every port under TLS.

The settings come as RocketMQ users write them: `tls.server.mode` in the
namesrv properties and broker.conf, the rest in a `tls.config.file`. The
Python client, the admin CLI and the brokers' own connections (registration,
HA, metadata sync) all connect with TLS and a client certificate of the CA
the tests made (conftest.py).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer, SendStatus
from orbitmq.errors import ConnectError, OrbitMQError
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.tls import TlsSettings
from orbitmq.remoting.transport import RemotingClient
from orbitmq.spark.cluster import Cluster
from orbitmq.spark.options import parse_source_options
from tests.ha.cluster import BROKER_NAME, broker_conf, commit_log, start_broker
from tests.support.procs import ServerProcess, orbitmq_command, start_server
from tests.support.waiting import until
from tests.tls.conftest import Pki

pytestmark = pytest.mark.timeout(90)

TOPIC = "TlsTopic"
HA_PORT = re.compile(r"HA service on port (\d+)")
VIP_PORT = re.compile(r"VIP channel of broker \S+ serves on \S+:(\d+)")


def tls_properties(tmp_path: Path, pki: Pki, need_client_auth: str) -> Path:
    """A tls.config.file for servers and the brokers' own connections (mutual TLS both ways)."""
    values = {
        "tls.test.mode.enable": "false",
        "tls.server.need.client.auth": need_client_auth,
        "tls.server.certPath": pki.server_cert,
        "tls.server.keyPath": pki.server_key,
        "tls.server.trustCertPath": pki.ca,
        "tls.client.certPath": pki.client_cert,
        "tls.client.keyPath": pki.client_key,
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": pki.ca,
    }
    path = tmp_path / f"tls-{need_client_auth}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def client_tls(pki: Pki) -> dict[str, str]:
    """The Python client's tls= option: trust the CA, present the client certificate."""
    return {"tls.client.trustCertPath": str(pki.ca), "tls.client.certPath": str(pki.client_cert),
            "tls.client.keyPath": str(pki.client_key)}


def context(pki: Pki, *, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = TlsSettings.client(trust_cert_path=str(pki.ca), cert_path=str(cert or ""), key_path=str(key or "")) \
        .client_context()
    assert ctx is not None
    return ctx


def start_namesrv(tmp_path: Path, mode: str, tls_file: Path) -> ServerProcess:
    props = tmp_path / "namesrv.properties"
    props.write_text(f"tls.server.mode={mode}\ntls.config.file={tls_file}\n")
    return start_server(orbitmq_command(
        "namesrv", "--listen", "127.0.0.1:0", "--kv-config-path", str(tmp_path / "kvConfig.json"), "-c", str(props)))


def port_in(proc: ServerProcess, pattern: re.Pattern[str]) -> int:
    ports = [int(m.group(1)) for line in list(proc.output) if (m := pattern.search(line))]
    assert ports, "".join(proc.output)
    return ports[0]


async def refused(addr: str, ssl_context: ssl.SSLContext | None) -> bool:
    """True when a GET_BROKER_CLUSTER_INFO to `addr` over such a connection gets no answer."""
    async with RemotingClient(connect_timeout=5.0, ssl_context=ssl_context) as client:
        try:
            await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5.0)
        except ConnectError:
            return True
    return False


class EnforcingCluster:
    def __init__(self, tmp_path: Path, pki: Pki, procs: list[ServerProcess]) -> None:
        tls_file = tls_properties(tmp_path, pki, "require")
        self.ns = start_namesrv(tmp_path, "enforcing", tls_file)
        procs.append(self.ns)
        # The HA challenge (haAuthEnable) runs inside the TLS connection: both protections at once.
        tls_keys = {"tls.server.mode": "enforcing", "tls.enable": "true", "tls.config.file": str(tls_file),
                    "haAuthEnable": "true", "haSecret": "ha-secret-of-the-group"}
        self.master = start_broker(broker_conf(
            tmp_path, "master", self.ns.addr, "SYNC_MASTER", fastListenPort="0", **tls_keys))
        procs.append(self.master)
        self.slave = start_broker(broker_conf(tmp_path, "slave", self.ns.addr, "SLAVE", **tls_keys))
        procs.append(self.slave)


@pytest.fixture
async def enforcing(tmp_path: Path, pki: Pki, procs: list[ServerProcess]) -> AsyncIterator[EnforcingCluster]:
    yield EnforcingCluster(tmp_path, pki, procs)


async def test_sends_are_acknowledged_by_the_slave_and_consumed_all_over_tls(
    enforcing: EnforcingCluster, pki: Pki, tmp_path: Path
) -> None:
    async with Producer("TlsProducer", namesrv_addr=enforcing.ns.addr, tls=client_tls(pki)) as producer:
        # The route appears once the master registered over TLS; a SYNC_MASTER answers SEND_OK only
        # after its slave, connected to the HA port over TLS, acknowledged the message.
        async def first_send_acked() -> bool:
            try:
                await producer.create_topic("TBW102", TOPIC, 2)
                result = await producer.send(Message(TOPIC, b"first"))
            except OrbitMQError:
                return False
            return result.status is SendStatus.SEND_OK

        await until(first_send_acked, timeout=30)
        for i in range(20):
            result = await producer.send(Message(TOPIC, f"tls-{i}".encode()))
            assert result.status is SendStatus.SEND_OK

    received: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        received.extend(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer("TlsConsumer", namesrv_addr=enforcing.ns.addr, tls=client_tls(pki),
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        async def all_received() -> bool:
            return len(set(received)) == 21

        await until(all_received, timeout=30)
    finally:
        await consumer.shutdown()
    assert set(received) == {b"first", *(f"tls-{i}".encode() for i in range(20))}

    async def replicated() -> bool:
        master = commit_log(tmp_path, "master")
        return bool(master) and master == commit_log(tmp_path, "slave")

    await until(replicated)


async def test_enforcing_ports_refuse_plain_clients_and_clients_without_a_trusted_certificate(
    enforcing: EnforcingCluster, pki: Pki
) -> None:
    vip = f"127.0.0.1:{port_in(enforcing.master, VIP_PORT)}"
    ports = [enforcing.ns.addr, enforcing.master.addr, vip, enforcing.slave.addr]
    good = context(pki, cert=pki.client_cert, key=pki.client_key)
    for addr in ports:
        assert not await refused(addr, good), addr
        assert await refused(addr, None), f"plain client served on {addr}"
        assert await refused(addr, context(pki)), f"client without certificate served on {addr}"
        stranger = context(pki, cert=pki.stranger_cert, key=pki.stranger_key)
        assert await refused(addr, stranger), f"client of an unknown CA served on {addr}"


async def test_enforcing_ha_port_sends_nothing_to_a_plain_connection(enforcing: EnforcingCluster) -> None:
    ha_port = port_in(enforcing.master, HA_PORT)
    reader, writer = await asyncio.open_connection("127.0.0.1", ha_port)
    try:
        writer.write((0).to_bytes(8, "big"))  # a slave's first report: "I hold nothing"
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 15.0) == b""  # closed without a CommitLog byte
    finally:
        writer.close()


async def test_admin_cli_connects_with_tls_options(enforcing: EnforcingCluster, pki: Pki, tmp_path: Path) -> None:
    tls_file = tls_properties(tmp_path, pki, "require")

    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "orbitmq", "admin", *args, "clusterList", "-n", enforcing.ns.addr]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    def registered() -> bool:
        return BROKER_NAME in admin("--tlsConfigFile", str(tls_file)).stdout

    await until(lambda: asyncio.to_thread(registered), timeout=30)
    by_defines = admin("-D", f"tls.client.trustCertPath={pki.ca}", "-D", f"tls.client.certPath={pki.client_cert}",
                       "-D", f"tls.client.keyPath={pki.client_key}")
    assert by_defines.returncode == 0 and BROKER_NAME in by_defines.stdout, by_defines.stderr
    plain = admin()
    assert plain.returncode == 1 and BROKER_NAME not in plain.stdout


async def test_permissive_ports_serve_plain_and_tls_clients(tmp_path: Path, pki: Pki, procs: list[ServerProcess]) -> None:
    tls_file = tls_properties(tmp_path, pki, "none")
    ns = start_namesrv(tmp_path, "permissive", tls_file)
    procs.append(ns)
    # The broker itself registers in plain TCP (tls.enable off): the permissive NameServer takes it.
    master = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER",
                                      **{"tls.server.mode": "permissive", "tls.config.file": str(tls_file)}))
    procs.append(master)
    bodies: list[bytes] = []
    async with Producer("PlainProducer", namesrv_addr=ns.addr, instance_name="plain") as plain, \
            Producer("TlsProducer", namesrv_addr=ns.addr, instance_name="tls",
                     tls={"tls.client.trustCertPath": str(pki.ca)}) as secure:
        async def created() -> bool:
            try:
                await plain.create_topic("TBW102", TOPIC, 2)
                await plain.send(Message(TOPIC, b"probe"))
            except OrbitMQError:
                return False
            return True

        await until(created, timeout=30)
        for producer, name in ((plain, "plain"), (secure, "tls")):
            for i in range(5):
                body = f"{name}-{i}".encode()
                assert (await producer.send(Message(TOPIC, body))).status is SendStatus.SEND_OK
                bodies.append(body)
    assert not await refused(master.addr, None)
    assert not await refused(master.addr, context(pki))


async def test_dev_serves_both_ports_with_tls_to_the_python_client_and_the_spark_connection(
    tmp_path: Path, pki: Pki, procs: list[ServerProcess]
) -> None:
    conf = tmp_path / "dev.conf"
    conf.write_text(f"tls.server.mode=enforcing\ntls.enable=true\n"
                    f"tls.config.file={tls_properties(tmp_path, pki, 'optional')}\n")
    dev = start_server(orbitmq_command("dev", "--store", str(tmp_path / "store"), "--namesrv-port", "0",
                                       "--broker-port", "0", "-c", str(conf)), listeners=2)
    procs.append(dev)
    namesrv, broker = dev.addresses
    for addr in (namesrv, broker):
        assert await refused(addr, None), addr
    async with Producer("DevProducer", namesrv_addr=namesrv, tls={"tls.client.trustCertPath": str(pki.ca)}) as p:
        async def sent() -> bool:
            try:
                await p.create_topic("TBW102", TOPIC, 1)
                return (await p.send(Message(TOPIC, b"dev"))).status is SendStatus.SEND_OK
            except OrbitMQError:
                return False

        await until(sent, timeout=30)

    # The Spark source's connection (the same client tls.* keys, as Spark options) reads it back.
    def spark_read(options: dict[str, str]) -> bytes:
        source = parse_source_options({"namesrvAddr": namesrv, "topic": TOPIC, **options}, streaming=False)
        with Cluster(source.connection) as cluster:
            queue = cluster.route(TOPIC).read_queues[0]
            return bytes(cluster.pull(queue, 0, 32, group="SparkTls").message_binary or b"")

    assert b"dev" in await asyncio.to_thread(spark_read, {"tls.client.trustCertPath": str(pki.ca)})
    with pytest.raises(ConnectError):
        await asyncio.to_thread(spark_read, {})


async def test_orbitmq_proxy_reaches_an_enforcing_cluster_over_tls(
    enforcing: EnforcingCluster, pki: Pki, tmp_path: Path, procs: list[ServerProcess]
) -> None:
    """RocketMQ 5 clients (plain gRPC to the front) on a cluster whose every port wants TLS."""
    import grpc

    from orbitmq.proxy.pb import definition_pb2 as pb
    from orbitmq.proxy.pb import service_pb2 as spb
    from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
    from tests.support.procs import eventually

    async with Producer("TlsGrpcAdmin", namesrv_addr=enforcing.ns.addr, tls=client_tls(pki)) as admin:
        async def made() -> bool:
            try:
                await admin.create_topic("TBW102", "TlsGrpcTopic", 2)
                return await admin.instance.update_route("TlsGrpcTopic") is not None
            except OrbitMQError:
                return False

        await until(made, timeout=30)
    proxy = start_server(orbitmq_command("proxy", "--namesrv", enforcing.ns.addr, "--port", "0",
                                         "--tlsConfigFile", str(tls_properties(tmp_path, pki, "require"))),
                         listeners=0)
    procs.append(proxy)
    eventually(lambda: any(x.startswith("proxy listening on ") for x in proxy.output), timeout=30)
    addr = next(x for x in proxy.output if x.startswith("proxy listening on ")).split()[-1]
    m = pb.Message(body=b"over tls")
    m.topic.name = "TlsGrpcTopic"
    m.system_properties.message_id = "TLSGRPC0001"
    m.system_properties.message_type = pb.NORMAL
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = sgrpc.MessagingServiceStub(channel)
        sent = await stub.SendMessage(spb.SendMessageRequest(messages=[m]), metadata=[("x-mq-client-id", "tls@1")],
                                      timeout=20)
    assert sent.status.code == pb.OK, sent.status
