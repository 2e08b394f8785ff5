"""Consumers that start while their master is down read from the slave."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.client import LitePullConsumer, PullConsumer, PushConsumer
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import send_v1
from tests.client.helpers import Collector, wait_until
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

pytestmark = pytest.mark.timeout(90)

TOPIC = "MasterDownTopic"
BODIES = [b"kept %d" % i for i in range(6)]
COMMITTED = 3


async def _slave_only(tmp_path: Path, procs: list[ServerProcess], client: RemotingClient) -> str:
    """A master and slave holding BODIES in queue 0 and OldGroup's offset COMMITTED; then the
    master is killed. Returns the NameServer address once the route lists only the slave."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER"))
    procs.append(master)
    for body in BODIES:
        assert (await send_v1(client, master.addr, TOPIC, body)).code == ResponseCode.SUCCESS
    fields = {"consumerGroup": "OldGroup", "topic": TOPIC, "queueId": "0", "commitOffset": str(COMMITTED)}
    assert (await call(client, master.addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)).code == ResponseCode.SUCCESS
    slave = start_broker(broker_conf(tmp_path, "slave", ns.addr, "SLAVE"))
    procs.append(slave)

    async def ready() -> bool:
        if commit_log(tmp_path, "master") != commit_log(tmp_path, "slave"):
            return False
        if TOPIC not in await topic_names(client, slave.addr):
            return False
        query = {"consumerGroup": "OldGroup", "topic": TOPIC, "queueId": "0"}
        return (await call(client, slave.addr, RequestCode.QUERY_CONSUMER_OFFSET, query)).field("offset") == str(COMMITTED)

    await until(ready, timeout=30)
    master.kill()

    async def only_slave() -> bool:
        return await route_broker_ids(client, ns.addr, TOPIC) == {1: slave.addr}

    await until(only_slave, timeout=30)
    return ns.addr


async def test_push_lite_pull_and_pull_consumers_started_while_the_master_is_down_read_from_the_slave(
    tmp_path: Path, procs: list[ServerProcess], client: RemotingClient
) -> None:
    """RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker asks MQClientInstance.findBrokerAddressInAdmin
    (any broker of the group, the slave when the master is gone) after refreshing the route, so a
    consumer started while its master is down takes its queues and consumes from the slave: an
    existing group from its committed offset, a new group as consumeFromWhere says."""
    ns = await _slave_only(tmp_path, procs, client)

    old = Collector()
    existing = PushConsumer("OldGroup", namesrv_addr=ns, instance_name="down-old",
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    existing.subscribe(TOPIC, "*")
    existing.register_listener(old)
    new = Collector()
    fresh = PushConsumer("NewGroup", namesrv_addr=ns, instance_name="down-new",
                         consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    fresh.subscribe(TOPIC, "*")
    fresh.register_listener(new)
    await existing.start()
    await fresh.start()
    try:
        await wait_until(lambda: len(old.msgs) >= len(BODIES) - COMMITTED and len(new.msgs) >= len(BODIES), 30)
    finally:
        await existing.shutdown()
        await fresh.shutdown()
    assert sorted(m.body for m in old.msgs) == BODIES[COMMITTED:]
    assert sorted(m.body for m in new.msgs) == BODIES

    lite = LitePullConsumer("OldLiteGroup", namesrv_addr=ns, instance_name="down-lite",
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    lite.subscribe(TOPIC, "*")
    await lite.start()
    polled: list[bytes] = []
    try:
        while len(polled) < len(BODIES):
            batch = await lite.poll(timeout=5.0)
            assert batch, f"lite pull consumer got {len(polled)} of {len(BODIES)} messages"
            polled.extend(m.body for m in batch)
    finally:
        await lite.shutdown()
    assert sorted(polled) == BODIES

    async with PullConsumer("OldGroup", namesrv_addr=ns, instance_name="down-pull") as puller:
        mq = next(q for q in await puller.fetch_subscribe_message_queues(TOPIC) if q.queue_id == 0)
        # OldGroup's push consumer committed its progress to the slave (updateConsumeOffsetToBroker
        # also goes through findBrokerAddressInAdmin) when it shut down.
        assert await puller.fetch_consume_offset(mq, from_store=True) == len(BODIES)
