"""The conf/ templates (RocketMQ's layout: broker.conf, 2m-noslave, 2m-2s-async, 2m-2s-sync,
plain_acl.yml, tools.yml) start real brokers; each test copies the files and gives ports and
folders of its own on the command line (`--listen 127.0.0.1:0 --store DIR`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.common import jsonbody
from orbitmq.common.javaprops import parse_properties
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import request, send_v2
from tests.support.procs import ServerProcess, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(120)

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture
def brokers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    try:
        yield started
    finally:
        for server in reversed(started):
            server.stop()


def start_template(template: Path, tmp_path: Path, namesrv: str, *extra: str) -> ServerProcess:
    copy = tmp_path / template.parent.name / template.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, copy)
    store = tmp_path / "stores" / f"{template.parent.name}-{template.stem}"
    return start_server(orbitmq_command("broker", "-c", str(copy), "-n", namesrv, "--listen", "127.0.0.1:0",
                                        "--store", str(store), *extra))


async def cluster_members(namesrv: str) -> dict[str, dict[int, str]]:
    async with RemotingClient() as client:
        info = await request(client, namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
    table = jsonbody.loads(info.body_bytes())["brokerAddrTable"]
    return {name: jsonbody.int_keys(data["brokerAddrs"]) for name, data in table.items()}


async def wait_for_members(namesrv: str, want: dict[str, set[int]]) -> dict[str, dict[int, str]]:
    deadline = time.monotonic() + 30
    while True:
        members = await cluster_members(namesrv)
        if {name: set(ids) for name, ids in members.items()} == want:
            return members
        assert time.monotonic() < deadline, f"cluster is {members}, want {want}"
        await asyncio.sleep(0.1)


def test_every_template_is_a_valid_config() -> None:
    files = sorted(CONF.glob("**/*.properties")) + [CONF / "broker.conf"]
    assert len(files) == 11
    for path in files:
        props = parse_properties(path.read_text())
        done = subprocess.run(orbitmq_command("broker", "-c", str(path), "-p"), check=False, capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0, (path, done.stderr)
        printed = parse_properties(done.stdout)
        for key, value in props.items():
            assert printed[key] == value, (path, key)


async def test_broker_conf_starts(tmp_path: Path, namesrv_process: ServerProcess,
                                  brokers: list[ServerProcess]) -> None:
    brokers.append(start_template(CONF / "broker.conf", tmp_path, namesrv_process.addr))
    await wait_for_members(namesrv_process.addr, {"broker-a": {0}})


async def test_2m_noslave_starts_two_masters(tmp_path: Path, namesrv_process: ServerProcess,
                                             brokers: list[ServerProcess]) -> None:
    for name in ("broker-a", "broker-b"):
        brokers.append(start_template(CONF / "2m-noslave" / f"{name}.properties", tmp_path, namesrv_process.addr))
    members = await wait_for_members(namesrv_process.addr, {"broker-a": {0}, "broker-b": {0}})
    async with RemotingClient() as client:
        sent = await send_v2(client, members["broker-b"][0], "TplTopic", b"x")
        assert sent.code == ResponseCode.SUCCESS, sent.remark


@pytest.mark.parametrize("layout", ["2m-2s-async", "2m-2s-sync"])
async def test_2m_2s_starts_two_groups_and_the_slaves_replicate(layout: str, tmp_path: Path,
                                                                namesrv_process: ServerProcess,
                                                                brokers: list[ServerProcess]) -> None:
    for name in ("broker-a", "broker-a-s", "broker-b", "broker-b-s"):
        brokers.append(start_template(CONF / layout / f"{name}.properties", tmp_path, namesrv_process.addr))
    members = await wait_for_members(namesrv_process.addr, {"broker-a": {0, 1}, "broker-b": {0, 1}})
    async with RemotingClient() as client:
        for group in ("broker-a", "broker-b"):
            master, slave = members[group][0], members[group][1]
            # A SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave has connected.
            deadline = time.monotonic() + 30
            while True:
                sent = await send_v2(client, master, "TplTopic", b"replicated")
                if sent.code == ResponseCode.SUCCESS:
                    break
                assert time.monotonic() < deadline, f"{layout} {group}: {sent.code} {sent.remark}"
                await asyncio.sleep(0.2)
            offset = int(sent.field("queueOffset") or 0)
            queue_id = int(sent.field("queueId") or 0)
            deadline = time.monotonic() + 30
            while True:
                fields = {"topic": "TplTopic", "queueId": str(queue_id)}
                got = await request(client, slave, RequestCode.GET_MAX_OFFSET, fields)
                if got.code == ResponseCode.SUCCESS and int(got.field("offset") or 0) > offset:
                    break
                assert time.monotonic() < deadline, f"{layout} {group}: the slave has not replicated"
                await asyncio.sleep(0.1)


async def test_plain_acl_yml_guards_the_broker_and_tools_yml_signs_mqadmin(
    tmp_path: Path, namesrv_process: ServerProcess, brokers: list[ServerProcess]
) -> None:
    acl = tmp_path / "plain_acl.yml"
    shutil.copyfile(CONF / "plain_acl.yml", acl)
    conf = tmp_path / "acl-broker.conf"
    conf.write_text((CONF / "broker.conf").read_text() + f"aclEnable=true\naclConfigPath={acl}\n")
    brokers.append(start_server(orbitmq_command("broker", "-c", str(conf), "-n", namesrv_process.addr, "--listen",
                                                "127.0.0.1:0", "--store", str(tmp_path / "acl-store"))))
    broker = brokers[-1].addr
    home = tmp_path / "rocketmq_home"
    (home / "conf").mkdir(parents=True)
    shutil.copyfile(CONF / "tools.yml", home / "conf" / "tools.yml")
    clean = {k: v for k, v in os.environ.items() if k not in ("ROCKETMQ_HOME", "ORBITMQ_ACCESS_KEY", "ORBITMQ_SECRET_KEY")}

    def mqadmin(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "orbitmq", "admin", "updateTopic", "-b", broker, "-t", "AclTpl",
                               "-n", namesrv_process.addr],
                              check=False, capture_output=True, text=True, timeout=30, env={**clean, **env})

    unsigned = await asyncio.to_thread(mqadmin, {})
    assert unsigned.returncode != 0 and "NameServer" not in unsigned.stderr, unsigned.stderr
    signed = await asyncio.to_thread(mqadmin, {"ROCKETMQ_HOME": str(home)})
    assert signed.returncode == 0, signed.stderr
    async with RemotingClient() as client:
        anonymous = await send_v2(client, broker, "TopicTest", b"x")
        assert anonymous.code != ResponseCode.SUCCESS
