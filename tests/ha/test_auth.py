"""HA port authentication: with haSecret set, a slave must prove it holds the secret before the
master sends any CommitLog byte; without it the stream is RocketMQ's own."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.ha.protocol import (
    CHALLENGE_SIZE,
    PROOF_SIZE,
    TRANSFER_HEADER,
    challenge_nonce,
    encode_challenge,
    encode_proof,
    encode_report,
    proof_ok,
)
from orbitmq.broker.server import Broker
from orbitmq.client.acl import AclCredentials, make_remoting_client
from orbitmq.errors import ConfigError, FrameError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import send_v1
from tests.ha.cluster import broker_conf, commit_log, start_broker, start_namesrv, topic_names
from tests.support.procs import ServerProcess, eventually
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

SECRET = "group-secret-01"
HA_PORT = re.compile(r"HA service on port (\d+)")


def test_the_proof_is_an_hmac_of_the_challenge_with_the_secret() -> None:
    nonce = bytes(range(16))
    proof = encode_proof(SECRET, nonce)
    assert len(proof) == PROOF_SIZE and proof_ok(SECRET, nonce, proof)
    assert not proof_ok("another-secret", nonce, proof)
    assert not proof_ok(SECRET, bytes(16), proof)
    assert challenge_nonce(encode_challenge(nonce)) == nonce
    with pytest.raises(FrameError, match="challenge"):
        challenge_nonce(encode_report(0) * 3)


def test_ha_auth_enable_without_a_secret_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="haAuthEnable"):
        BrokerConfig.from_properties({"haAuthEnable": "true"})
    acl = BrokerConfig.from_properties({"aclEnable": "true", "brokerAccessKey": "brokerKey1",
                                        "brokerSecretKey": "brokerSecret1"})
    assert acl.ha_auth_secret == "brokerSecret1"
    assert BrokerConfig.from_properties({}).ha_auth_secret == ""
    shown = BrokerConfig.from_properties({"haSecret": SECRET}).to_properties()
    assert shown["haSecret"] == "******"


@pytest.fixture
async def master(tmp_path: Path) -> AsyncIterator[tuple[Broker, int]]:
    config = BrokerConfig.from_properties({
        "storePathRootDir": str(tmp_path / "store"), "listenPort": "0", "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1", "haListenPort": "0", "haSecret": SECRET, "fastChannelEnable": "false",
    })
    async with Broker(config) as broker:
        assert broker.replication is not None and broker.replication.master is not None
        assert broker.replication.master.address is not None
        async with RemotingClient() as client:
            response = await send_v1(client, broker.broker_addr, "HaAuthTopic", b"replicated only to friends")
            assert response.code == ResponseCode.SUCCESS, response.remark
        yield broker, broker.replication.master.address[1]


async def _read_all(reader: asyncio.StreamReader) -> bytes:
    data = b""
    while chunk := await asyncio.wait_for(reader.read(1 << 16), 10):
        data += chunk
    return data


async def test_a_slave_without_the_secret_gets_no_commitlog_byte(master: tuple[Broker, int]) -> None:
    broker, port = master
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    # What a plain RocketMQ slave sends: its report, then one every heartbeat interval.
    writer.write(encode_report(0) * 4)
    await writer.drain()
    received = await _read_all(reader)  # until the master closes the connection
    writer.close()
    assert len(received) == CHALLENGE_SIZE and challenge_nonce(received)
    assert broker.replication is not None and broker.replication.master is not None
    assert broker.replication.master.connections == 0


async def test_a_slave_with_a_wrong_secret_is_disconnected_and_one_with_the_secret_is_served(
    master: tuple[Broker, int],
) -> None:
    _, port = master
    for secret, served in (("not-the-secret", False), (SECRET, True)):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        nonce = challenge_nonce(await asyncio.wait_for(reader.readexactly(CHALLENGE_SIZE), 10))
        writer.write(encode_proof(secret, nonce) + encode_report(0))
        await writer.drain()
        if served:
            head = await asyncio.wait_for(reader.readexactly(TRANSFER_HEADER.size), 10)
            offset, size = TRANSFER_HEADER.unpack(head)
            assert offset == 0 and size > 0
        else:
            assert await _read_all(reader) == b""
        writer.close()


async def test_a_slave_with_the_groups_secret_replicates_and_one_without_is_refused(
    tmp_path: Path, procs: list[ServerProcess]
) -> None:
    master = start_broker(broker_conf(tmp_path, "master", "", "ASYNC_MASTER", haSecret=SECRET))
    procs.append(master)
    ports = [int(m.group(1)) for line in master.output if (m := HA_PORT.search(line))]
    assert ports, "".join(master.output)
    async with RemotingClient() as client:
        for i in range(3):
            response = await send_v1(client, master.addr, "HaAuthTopic", f"message {i}".encode())
            assert response.code == ResponseCode.SUCCESS, response.remark
    stranger = start_broker(broker_conf(tmp_path, "stranger", "", "SLAVE", haMasterAddress=f"127.0.0.1:{ports[0]}"))
    procs.append(stranger)
    eventually(lambda: any("failed HA authentication" in line for line in list(master.output)),
               timeout=30, message="the master did not refuse the slave without the secret:\n"
               + "".join(master.output) + "".join(stranger.output))
    assert commit_log(tmp_path, "stranger") == b""
    friend = start_broker(broker_conf(tmp_path, "slave", "", "SLAVE", haMasterAddress=f"127.0.0.1:{ports[0]}",
                                      haSecret=SECRET))
    procs.append(friend)

    async def replicated() -> bool:
        data = commit_log(tmp_path, "master")
        return bool(data) and data == commit_log(tmp_path, "slave")

    await until(replicated)


ACL_YML = """\
accounts:
  - accessKey: adminKey01
    secretKey: adminSecret01
    admin: true
  - accessKey: brokerKey01
    secretKey: brokerSecret01
"""


async def test_with_acl_on_a_slave_replicates_and_syncs_metadata_with_the_brokers_own_account(
    tmp_path: Path, procs: list[ServerProcess]
) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL_YML)
    acl = {"aclEnable": "true", "aclConfigPath": str(acl_file), "brokerAccessKey": "brokerKey01",
           "brokerSecretKey": "brokerSecret01"}
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER", **acl))
    procs.append(master)
    async with make_remoting_client(AclCredentials("adminKey01", "adminSecret01")) as admin:
        response = await send_v1(admin, master.addr, "HaAclTopic", b"only for the group")
        assert response.code == ResponseCode.SUCCESS, response.remark
        slave = start_broker(broker_conf(tmp_path, "slave", ns.addr, "SLAVE", **acl))
        procs.append(slave)

        async def replicated() -> bool:
            data = commit_log(tmp_path, "master")
            return bool(data) and data == commit_log(tmp_path, "slave")

        await until(replicated)  # HA authenticated with brokerSecretKey
        await until(lambda: _has_topic(admin, slave.addr))  # metadata sync signed with the broker's account
    assert not any("failed HA authentication" in line for line in list(master.output))


async def _has_topic(client: RemotingClient, addr: str) -> bool:
    return "HaAclTopic" in await topic_names(client, addr)
