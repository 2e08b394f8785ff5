"""A NameServer, a master and a slave as real processes, and the requests HA tests send."""

from __future__ import annotations

import os
from pathlib import Path

from orbitmq.common import jsonbody
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.support.procs import ServerProcess, orbitmq_command, start_server

BROKER_NAME = "broker-ha"
#: Small CommitLog files keep the files the tests compare small.
FILE_SIZE = 256 * 1024


def start_namesrv(tmp_path: Path) -> ServerProcess:
    return start_server(
        orbitmq_command("namesrv", "--listen", "127.0.0.1:0", "--kv-config-path", str(tmp_path / "kvConfig.json"))
    )


def broker_conf(tmp_path: Path, name: str, namesrv: str, role: str, **extra: str) -> Path:
    """Write `<name>.conf` for a broker of BROKER_NAME with its store in `<tmp_path>/<name>`."""
    values = {
        "brokerClusterName": "HaCluster",
        "brokerName": BROKER_NAME,
        "brokerId": "1" if role == "SLAVE" else "0",
        "brokerRole": role,
        "listenHost": "127.0.0.1",
        "brokerIP1": "127.0.0.1",
        "listenPort": "0",
        "namesrvAddr": namesrv,
        "storePathRootDir": str(tmp_path / name),
        "mappedFileSizeCommitLog": str(FILE_SIZE),
        "slaveReadEnable": "true",
        "haSendHeartbeatInterval": "1000",
    }
    values.update(extra)
    path = tmp_path / f"{name}.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def start_broker(conf: Path) -> ServerProcess:
    return start_server(orbitmq_command("broker", "-c", str(conf)))


def commit_log(tmp_path: Path, name: str) -> bytes:
    """The bytes of the first CommitLog file of store `name` (empty when it does not exist yet)."""
    path = tmp_path / name / "commitlog" / f"{0:020d}"
    if not os.path.exists(path):
        return b""
    return path.read_bytes()


async def call(
    client: RemotingClient, addr: str, code: int, fields: dict[str, str] | None = None, body: bytes | None = None
) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, fields, body), 10.0)


async def topic_names(client: RemotingClient, addr: str) -> set[str]:
    response = await call(client, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    return set(jsonbody.loads(response.body_bytes())["topicConfigTable"])


async def route_broker_ids(client: RemotingClient, namesrv: str, topic: str) -> dict[int, str]:
    """brokerId -> address of BROKER_NAME in the topic's route ({} when there is none)."""
    response = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if response.code != 0:
        return {}
    route = jsonbody.loads(response.body_bytes())
    for data in route["brokerDatas"]:
        if data["brokerName"] == BROKER_NAME:
            return {int(k): v for k, v in jsonbody.int_keys(data["brokerAddrs"]).items()}
    return {}
