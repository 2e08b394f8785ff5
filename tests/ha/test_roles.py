"""What the broker role changes: where pulls are sent, slow slaves, fresh slaves of a long log."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import pull, records, send_v1
from tests.ha.cluster import FILE_SIZE, broker_conf, start_broker, start_namesrv, topic_names
from tests.support.procs import ServerProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

TOPIC = "RoleTopic"


def _start(procs: list[ServerProcess], conf: Path) -> ServerProcess:
    proc = start_broker(conf)
    procs.append(proc)
    return proc


async def _sync_pair(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> tuple[str, ServerProcess]:
    """A NameServer, a SYNC_MASTER (its address) and its SLAVE, once a send to the master is acked."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = _start(procs, broker_conf(tmp_path, "master", ns.addr, "SYNC_MASTER")).addr
    slave = _start(procs, broker_conf(tmp_path, "slave", ns.addr, "SLAVE"))

    async def sent_ok() -> bool:
        return (await send_v1(client, master, TOPIC, b"acked")).code == ResponseCode.SUCCESS

    await until(sent_ok)
    return master, slave


async def _has_topic(client: RemotingClient, addr: str) -> bool:
    return TOPIC in await topic_names(client, addr)


async def test_a_master_with_slave_reads_sends_a_lagging_consumer_to_the_slave_and_without_them_keeps_it(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    # No memory window: any consumer not at the head counts as reading from disk.
    conf = broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER", accessMessageInMemoryMaxRatio="0")
    master = _start(procs, conf).addr
    for i in range(3):
        assert (await send_v1(client, master, TOPIC, b"m%d" % i)).code == ResponseCode.SUCCESS
    behind = await pull(client, master, TOPIC, "G", 0, max_nums=1)
    assert behind.code == ResponseCode.SUCCESS
    assert behind.field("suggestWhichBrokerId") == "1"
    update = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, b"slaveReadEnable=false\n")
    assert (await client.invoke(master, update, 10.0)).code == ResponseCode.SUCCESS
    no_slave_reads = await pull(client, master, TOPIC, "G", 0, max_nums=1)
    assert no_slave_reads.code == ResponseCode.SUCCESS
    assert no_slave_reads.field("suggestWhichBrokerId") == "0"


async def test_a_slave_without_slave_reads_sends_pulls_back_to_the_master(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = _start(procs, broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER")).addr
    assert (await send_v1(client, master, TOPIC, b"one")).code == ResponseCode.SUCCESS
    slave = _start(procs, broker_conf(tmp_path, "slave", ns.addr, "SLAVE", slaveReadEnable="false")).addr
    await until(lambda: _has_topic(client, slave))
    response = await pull(client, slave, TOPIC, "G", 0)
    assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert response.field("suggestWhichBrokerId") == "0"


async def test_a_sync_master_whose_slave_stops_acking_answers_flush_slave_timeout(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    master, slave = await _sync_pair(tmp_path, procs, client)
    os.kill(slave.pid, signal.SIGSTOP)  # connected, but it reads and acks nothing
    try:
        response = await send_v1(client, master, TOPIC, b"never acked")
    finally:
        os.kill(slave.pid, signal.SIGCONT)
    assert response.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
    assert response.field("msgId"), "the message is stored on the master all the same"


async def test_a_fresh_slave_starts_from_the_masters_newest_file_and_serves_it(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = _start(procs, broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER")).addr
    body = os.urandom(1000)
    sent = FILE_SIZE // 1000 + 10  # more than one CommitLog file
    for _ in range(sent):
        assert (await send_v1(client, master, TOPIC, body)).code == ResponseCode.SUCCESS
    tail = [os.urandom(8) + b"tail %d" % i for i in range(3)]
    for item in tail:
        assert (await send_v1(client, master, TOPIC, item)).code == ResponseCode.SUCCESS
    slave = _start(procs, broker_conf(tmp_path, "slave", ns.addr, "SLAVE")).addr
    await until(lambda: _has_topic(client, slave))

    async def tail_on_slave() -> bool:
        master_file = (tmp_path / "master" / "commitlog" / f"{FILE_SIZE:020d}").read_bytes()
        slave_path = tmp_path / "slave" / "commitlog" / f"{FILE_SIZE:020d}"
        return slave_path.exists() and slave_path.read_bytes() == master_file

    await until(tail_on_slave)
    assert not (tmp_path / "slave" / "commitlog" / f"{0:020d}").exists(), "the older file is not replicated"
    response = await pull(client, slave, TOPIC, "G", sent, max_nums=32)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in records(response)] == tail


async def test_a_sync_masters_own_writes_wait_for_the_slave_too(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    """A message a consumer sends back (a write the broker makes, not a client send) is
    answered only once the slave holds it, as a client send is."""
    master, slave = await _sync_pair(tmp_path, procs, client)
    response = await send_v1(client, master, TOPIC, b"to be returned")
    assert response.code == ResponseCode.SUCCESS
    offset = response.field("msgId")
    assert offset
    back = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": str(int(offset[-16:], 16)), "group": "CG", "delayLevel": "-1", "originMsgId": offset,
        "originTopic": TOPIC, "unitMode": "false",
    })
    os.kill(slave.pid, signal.SIGSTOP)  # connected, but it reads and acks nothing
    try:
        answer = await client.invoke(master, back, 10.0)
    finally:
        os.kill(slave.pid, signal.SIGCONT)
    assert answer.code == ResponseCode.FLUSH_SLAVE_TIMEOUT, (answer.code, answer.remark)
