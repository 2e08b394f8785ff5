"""OrbitMQ's own client against a master and its slave: it pulls where the master says, and
from the slave once the master is gone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from orbitmq.client import PullConsumer, PullStatus
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import send_v1
from tests.ha.cluster import broker_conf, commit_log, start_broker, start_namesrv, topic_names
from tests.support.procs import ServerProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

TOPIC = "FailoverTopic"


async def _pair(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient, bodies: list[bytes], **master_extra: str
) -> tuple[str, ServerProcess, str]:
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER", **master_extra))
    procs.append(master)
    for body in bodies:
        assert (await send_v1(client, master.addr, TOPIC, body)).code == ResponseCode.SUCCESS
    slave = start_broker(broker_conf(tmp_path, "slave", ns.addr, "SLAVE"))
    procs.append(slave)

    async def ready() -> bool:
        replicated = commit_log(tmp_path, "master") == commit_log(tmp_path, "slave")
        return replicated and TOPIC in await topic_names(client, slave.addr)

    await until(ready)
    return ns.addr, master, slave.addr


async def test_the_client_follows_the_masters_suggestion_and_pulls_from_the_slave(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    bodies = [b"suggested %d" % i for i in range(4)]
    # No memory window on the master: a consumer behind the head is sent to the slave.
    ns, master, _ = await _pair(tmp_path, procs, client, bodies, accessMessageInMemoryMaxRatio="0")
    async with PullConsumer("FailoverGroup", namesrv_addr=ns) as consumer:
        mq = next(q for q in await consumer.fetch_subscribe_message_queues(TOPIC) if q.queue_id == 0)
        first = await consumer.pull(mq, "*", 0, 1)
        assert first.status is PullStatus.FOUND
        assert first.suggest_which_broker_id == 1
        os.kill(master.pid, signal.SIGSTOP)  # only the slave can answer the next pull now
        try:
            rest = await consumer.pull(mq, "*", first.next_begin_offset, 32, timeout=5.0)
        finally:
            os.kill(master.pid, signal.SIGCONT)
    assert rest.status is PullStatus.FOUND
    assert [m.body for m in first.messages + rest.messages] == bodies


async def test_the_client_reads_from_the_slave_once_the_master_is_killed(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    bodies = [b"survivor %d" % i for i in range(4)]
    ns, master, _ = await _pair(tmp_path, procs, client, bodies)
    master.kill()
    async with PullConsumer("FailoverGroup", namesrv_addr=ns) as consumer:
        mq = next(q for q in await consumer.fetch_subscribe_message_queues(TOPIC) if q.queue_id == 0)
        result = await consumer.pull(mq, "*", 0, 32)
    assert result.status is PullStatus.FOUND
    assert [m.body for m in result.messages] == bodies
