"""`orbitmq broker` and `orbitmq dev` as real processes on 127.0.0.1, port 0, temp folders."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from orbitmq.common import jsonbody
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import pull, records, request, send_v2
from tests.support.procs import ServerProcess, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(90)


def start_broker(store: Path, namesrv: str | None = None, conf: Path | None = None) -> ServerProcess:
    args = ["broker", "--listen", "127.0.0.1:0", "--store", str(store)]
    if namesrv:
        args += ["-n", namesrv]
    if conf:
        args += ["-c", str(conf)]
    return start_server(orbitmq_command(*args))


async def route_code(client: RemotingClient, namesrv: str, topic: str) -> int:
    r = await request(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return r.code


async def test_broker_command_serves_registers_and_unregisters_on_sigterm(
    tmp_path: Path, namesrv_process: ServerProcess
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerClusterName=TestCluster\nbrokerName=broker-t\nmapedFileSizeCommitLog=1048576\n")
    broker = start_broker(tmp_path / "store", namesrv_process.addr, conf)
    try:
        assert any("broker broker-t listening on 127.0.0.1:" in line for line in broker.output)
        async with RemotingClient() as client:
            sent = await send_v2(client, broker.addr, "CliTopic", b"hello")
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            got = await pull(client, broker.addr, "CliTopic", "CG", 0, queue_id=int(sent.field("queueId") or 0))
            assert [m.body for m in records(got)] == [b"hello"]
            # The auto-created topic reaches the NameServer with the next registration, soon after the send.
            for _ in range(100):
                route = await request(
                    client, namesrv_process.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "CliTopic"}
                )
                if route.code == ResponseCode.SUCCESS:
                    break
                await asyncio.sleep(0.05)
            assert route.code == ResponseCode.SUCCESS
            data = jsonbody.loads(route.body_bytes())
            assert jsonbody.int_keys(data["brokerDatas"][0]["brokerAddrs"]) == {0: broker.addr}
            assert data["brokerDatas"][0]["cluster"] == "TestCluster"
            assert broker.stop(signal.SIGTERM) == 0
            for _ in range(100):
                if await route_code(client, namesrv_process.addr, "CliTopic") == ResponseCode.TOPIC_NOT_EXIST:
                    break
                await asyncio.sleep(0.05)
            assert await route_code(client, namesrv_process.addr, "CliTopic") == ResponseCode.TOPIC_NOT_EXIST
    finally:
        broker.stop()


async def test_consumer_offsets_survive_a_broker_process_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    broker = start_broker(store)
    try:
        async with RemotingClient() as client:
            topic = {"topic": "T", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
            assert (await request(client, broker.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, topic)).code == 0
            fields = {"consumerGroup": "CG", "topic": "T", "queueId": "1", "commitOffset": "17"}
            assert (await request(client, broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)).code == 0
    finally:
        assert broker.stop(signal.SIGTERM) == 0
    broker = start_broker(store)
    try:
        async with RemotingClient() as client:
            q = await request(
                client, broker.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                {"consumerGroup": "CG", "topic": "T", "queueId": "1"},
            )
            assert q.field("offset") == "17"
    finally:
        broker.stop()


async def test_dev_runs_a_nameserver_and_a_broker_in_one_process(tmp_path: Path) -> None:
    dev = start_server(
        orbitmq_command("dev", "--namesrv-port", "0", "--broker-port", "0", "--store", str(tmp_path / "data")),
        listeners=2,
    )
    try:
        namesrv, broker = dev.addresses
        assert any(line.startswith("store ") and str(tmp_path / "data") in line for line in dev.output)
        async with RemotingClient() as client:
            route = await request(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
            assert route.code == ResponseCode.SUCCESS
            brokers = jsonbody.int_keys(jsonbody.loads(route.body_bytes())["brokerDatas"][0]["brokerAddrs"])
            assert brokers == {0: broker}
            assert (await send_v2(client, broker, "DevTopic", b"x")).code == ResponseCode.SUCCESS
        assert dev.stop(signal.SIGTERM) == 0
        assert (tmp_path / "data" / "config" / "topics.json").exists()
    finally:
        dev.stop()


@pytest.mark.parametrize(
    "args, message",
    [
        (["broker", "--listen", "nonsense"], "HOST:PORT"),
        (["broker", "-c", "/nonexistent/broker.conf"], "cannot read config file"),
        (["dev", "--broker-port", "70000"], "70000"),
    ],
)
def test_bad_flags_exit_with_code_2_and_a_message(args: list[str], message: str) -> None:
    done = subprocess.run(orbitmq_command(*args), check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert message in done.stderr


def test_an_unknown_config_key_exits_with_code_2_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nbrokerNmae=typo\n")
    done = subprocess.run(orbitmq_command("broker", "-c", str(conf)), check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "brokerNmae" in done.stderr
