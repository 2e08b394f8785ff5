"""Replication between a master and a slave running as real processes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import pull, records, send_v1
from tests.ha.cluster import (
    broker_conf,
    call,
    commit_log,
    route_broker_ids,
    start_broker,
    start_namesrv,
    topic_names,
)
from tests.support.procs import ServerProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

TOPIC = "HaTopic"
RESUMED = re.compile(r"replicating from master \S+ at offset (\d+)")
HA_PORT = re.compile(r"HA service on port (\d+)")


class Cluster:
    def __init__(self, tmp_path: Path, procs: list[ServerProcess], role: str = "ASYNC_MASTER") -> None:
        self.tmp_path = tmp_path
        self.procs = procs
        self.ns = start_namesrv(tmp_path)
        procs.append(self.ns)
        self.master = start_broker(broker_conf(tmp_path, "master", self.ns.addr, role))
        procs.append(self.master)
        self.slave: ServerProcess | None = None

    def start_slave(self) -> str:
        self.slave = start_broker(broker_conf(self.tmp_path, "slave", self.ns.addr, "SLAVE"))
        self.procs.append(self.slave)
        return self.slave.addr

    async def replicated(self) -> bool:
        master_bytes = commit_log(self.tmp_path, "master")
        return bool(master_bytes) and master_bytes == commit_log(self.tmp_path, "slave")


def _body(i: int) -> bytes:
    return os.urandom(16) + f"message {i}".encode()


async def _send_all(client: RemotingClient, addr: str, bodies: list[bytes]) -> None:
    for body in bodies:
        response = await send_v1(client, addr, TOPIC, body)
        assert response.code == ResponseCode.SUCCESS, response.remark


async def _pulled_bodies(client: RemotingClient, addr: str) -> list[bytes]:
    response = await pull(client, addr, TOPIC, "HaGroup", 0, max_nums=64)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return [m.body for m in records(response)]


async def test_messages_sent_to_the_master_appear_byte_identical_in_the_slave_and_pullable_there(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs)
    bodies = [_body(i) for i in range(20)]
    await _send_all(client, cluster.master.addr, bodies[:1])  # the topic exists before the slave's first sync
    slave = cluster.start_slave()
    await _send_all(client, cluster.master.addr, bodies[1:])
    await until(cluster.replicated)
    await until(lambda: _has_topic(client, slave, TOPIC))
    assert await _pulled_bodies(client, slave) == bodies


@pytest.mark.parametrize("how", ["stopped", "killed"])
async def test_the_slave_restarts_and_resumes_replication_from_its_own_max_offset(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient, how: str
) -> None:
    cluster = Cluster(tmp_path, procs)
    bodies = [_body(i) for i in range(10)]
    await _send_all(client, cluster.master.addr, bodies[:5])
    cluster.start_slave()
    await until(cluster.replicated)
    assert cluster.slave is not None
    if how == "killed":
        cluster.slave.kill()
    else:
        assert cluster.slave.stop(timeout=60) == 0  # a clean stop; on a loaded machine it takes seconds
    held = len(commit_log(tmp_path, "slave").rstrip(b"\0"))
    await _send_all(client, cluster.master.addr, bodies[5:])
    slave = cluster.start_slave()
    await until(cluster.replicated)
    restarted = cluster.slave

    async def resumed_at() -> list[int]:
        # The line is read from the process's output by a thread: it may come a moment after the data.
        return [int(m.group(1)) for line in list(restarted.output) if (m := RESUMED.search(line))]

    resumed = await until(resumed_at)
    assert 0 < resumed[0] <= held, "".join(restarted.output)
    await until(lambda: _has_topic(client, slave, TOPIC))
    assert await _pulled_bodies(client, slave) == bodies


async def test_a_slave_replicates_from_its_configured_ha_master_address_without_a_name_server(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs)
    ports = [int(m.group(1)) for line in cluster.master.output if (m := HA_PORT.search(line))]
    assert ports, "".join(cluster.master.output)
    conf = broker_conf(tmp_path, "slave", "", "SLAVE", haMasterAddress=f"127.0.0.1:{ports[0]}")
    procs.append(start_broker(conf))
    await _send_all(client, cluster.master.addr, [_body(i) for i in range(5)])
    await until(cluster.replicated)


async def test_a_sync_master_answers_slave_not_available_without_a_slave_and_send_ok_once_it_acks(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs, role="SYNC_MASTER")
    response = await send_v1(client, cluster.master.addr, TOPIC, b"no slave yet")
    assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE
    assert response.field("msgId"), "the message is stored on the master all the same"
    cluster.start_slave()

    async def sent_ok() -> bool:
        return (await send_v1(client, cluster.master.addr, TOPIC, b"with slave")).code == ResponseCode.SUCCESS

    await until(sent_ok)


async def test_a_sync_master_acknowledges_a_send_only_after_the_slave_has_its_bytes(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs, role="SYNC_MASTER")
    cluster.start_slave()

    async def sent_ok() -> bool:
        return (await send_v1(client, cluster.master.addr, TOPIC, b"warm-up")).code == ResponseCode.SUCCESS

    await until(sent_ok)
    for i in range(10):
        body = _body(i)
        response = await send_v1(client, cluster.master.addr, TOPIC, body)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert body in commit_log(tmp_path, "slave"), f"send {i} was acknowledged before the slave had it"


async def test_the_slave_syncs_topics_consumer_offsets_and_delay_offsets_from_the_master(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs)
    master = cluster.master.addr
    await _send_all(client, master, [b"creates the topic"])
    fields = {"consumerGroup": "HaGroup", "topic": TOPIC, "queueId": "0", "commitOffset": "1"}
    assert (await call(client, master, RequestCode.UPDATE_CONSUMER_OFFSET, fields)).code == ResponseCode.SUCCESS
    slave = cluster.start_slave()

    async def offset_synced() -> bool:
        query = {"consumerGroup": "HaGroup", "topic": TOPIC, "queueId": "0"}
        response = await call(client, slave, RequestCode.QUERY_CONSUMER_OFFSET, query)
        return response.code == ResponseCode.SUCCESS and response.field("offset") == "1"

    await until(offset_synced)
    assert TOPIC in await topic_names(client, slave)
    delay_file = tmp_path / "slave" / "config" / "delayOffset.json"
    await until(lambda: _exists(delay_file))


async def test_a_killed_master_leaves_the_slave_readable_and_listed_in_the_route(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs)
    bodies = [_body(i) for i in range(5)]
    await _send_all(client, cluster.master.addr, bodies[:1])
    slave = cluster.start_slave()
    await _send_all(client, cluster.master.addr, bodies[1:])
    await until(cluster.replicated)
    await until(lambda: _has_topic(client, slave, TOPIC))
    assert set(await until(lambda: route_broker_ids(client, cluster.ns.addr, TOPIC))) >= {0}
    cluster.master.kill()

    async def only_slave_routed() -> bool:
        return await route_broker_ids(client, cluster.ns.addr, TOPIC) == {1: slave}

    await until(only_slave_routed)
    assert await _pulled_bodies(client, slave) == bodies


async def test_a_slave_refuses_sends_with_service_not_available(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    cluster = Cluster(tmp_path, procs)
    slave = cluster.start_slave()
    response = await send_v1(client, slave, TOPIC, b"to the slave")
    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert TOPIC not in await topic_names(client, slave), "a refused send must not create the topic"


async def _has_topic(client: RemotingClient, addr: str, topic: str) -> bool:
    return topic in await topic_names(client, addr)


async def _exists(path: Path) -> bool:
    return path.exists()
