"""minInSyncReplicas is checked before the append: a master with too few in-sync copies refuses
a send with SYSTEM_ERROR ("in-sync replicas not enough", as RocketMQ 5 answers
IN_SYNC_REPLICAS_NOT_ENOUGH) and stores nothing, so no consumer ever sees a refused message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.common.message import Message
from orbitmq.common.record import encode_batch
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic, props, pull, records, send_v1, send_v2
from tests.ha.cluster import start_namesrv
from tests.support.failover import Etcd, FailoverGroup
from tests.support.procs import ServerProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(90)

TOPIC = "MinInSyncTopic"


@pytest.fixture
def lone(tmp_path: Path, etcd: Etcd, procs: list[ServerProcess]) -> Iterator[FailoverGroup]:
    """A group of one replica that asks for two in-sync copies: it becomes master, never enough."""
    namesrv = start_namesrv(tmp_path)
    procs.append(namesrv)
    group = FailoverGroup(tmp_path / "group", etcd.endpoint, namesrv.addr, replicas_count=1,
                          extra={"minInSyncReplicas": "2"})
    try:
        group.start_all()
        yield group
    finally:
        group.stop_all()


async def test_a_send_refused_for_too_few_in_sync_replicas_leaves_nothing_behind(
    lone: FailoverGroup, client: RemotingClient
) -> None:
    master = await asyncio.to_thread(lone.wait_master)
    await create_topic(client, master.addr, TOPIC, queues=1)
    answers: list[RemotingCommand] = []

    async def answered() -> bool:  # SERVICE_NOT_AVAILABLE until the lease is confirmed
        response = await send_v1(client, master.addr, TOPIC, b"single")
        answers.append(response)
        return response.code != ResponseCode.SERVICE_NOT_AVAILABLE

    await until(answered, timeout=30)
    single = answers[-1]
    assert single.code == ResponseCode.SYSTEM_ERROR, single.remark
    assert "in-sync replicas not enough" in (single.remark or "")
    batch = await send_v2(client, master.addr, TOPIC, encode_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")]),
                          props(WAIT="true"), code=RequestCode.SEND_BATCH_MESSAGE)
    assert batch.code == ResponseCode.SYSTEM_ERROR and "in-sync replicas not enough" in (batch.remark or "")
    delayed = await send_v1(client, master.addr, TOPIC, b"later", props(DELAY="1"))
    assert delayed.code == ResponseCode.SYSTEM_ERROR
    # Nothing was stored: the queue is empty and the CommitLog holds no record of any of them.
    response = await pull(client, master.addr, TOPIC, "MinInSyncCheck", 0, max_nums=32)
    assert response.code != ResponseCode.SUCCESS or records(response) == []
    offset = await client.invoke(master.addr, RemotingCommand.request(
        RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"}), 10.0)
    assert offset.code == ResponseCode.SUCCESS and (offset.ext_fields or {}).get("offset") == "0"
    # A send that does not wait for the store is not held to the rule (RocketMQ's needHandleHA).
    unwaited = await send_v1(client, master.addr, TOPIC, b"fire and forget", props(WAIT="false"))
    assert unwaited.code == ResponseCode.SUCCESS
    response = await pull(client, master.addr, TOPIC, "MinInSyncCheck", 0, max_nums=32)
    assert [m.body for m in records(response)] == [b"fire and forget"]
