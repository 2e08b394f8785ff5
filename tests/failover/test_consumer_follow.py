"""A push consumer follows a failover without waiting for its route poll: SIGKILL the master of a
three-replica group; the consumer's failed pulls make it look the route up again, so messages
written to the new master are consumed. Its route poll is set far beyond the test's length, so
only that lookup can have brought it there (no timing is asserted)."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer, SendStatus
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic
from tests.support.failover import FailoverGroup
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(150)

TOPIC = "FailoverFollowTopic"
#: Upper bound, on a loaded machine, from the master's death to the consumer having what the new
#: master took; far below the consumer's route poll, so the poll cannot be what brought it there.
FOLLOW_BOUND_S = 60.0
ROUTE_POLL_MS = 600_000


async def _in_sync(group: FailoverGroup) -> bool:
    state = (await asyncio.to_thread(group.state)).state
    return state is not None and len(state.sss) == len(group.replicas)


async def test_push_consumer_reaches_the_new_master_before_its_route_poll(
    group: FailoverGroup, client: RemotingClient
) -> None:
    first = await asyncio.to_thread(group.wait_master)
    for replica in group.replicas:
        await create_topic(client, replica.addr, TOPIC, queues=2)
    await until(lambda: _in_sync(group), timeout=30)  # a replica may take over

    consumed: set[bytes] = set()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        consumed.update(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    async def has(bodies: set[bytes]) -> bool:
        return bodies <= consumed

    # Its own client instance: the producer's route refreshes must not help the consumer along.
    push = PushConsumer("FollowPush", namesrv_addr=group.namesrv, instance_name="follow-consumer",
                        consume_from_where="CONSUME_FROM_FIRST_OFFSET", poll_name_server_interval_ms=ROUTE_POLL_MS)
    push.subscribe(TOPIC, "*")
    push.register_listener(listener)
    async with Producer("FollowProducer", namesrv_addr=group.namesrv, instance_name="follow-producer") as producer:
        await push.start()  # its route poll runs now and next in 10 min
        try:
            before = {b"before-%d" % i for i in range(8)}
            for body in sorted(before):
                assert (await producer.send(Message(TOPIC, body))).status is SendStatus.SEND_OK
            await until(lambda: has(before), timeout=10)  # pulling from the first master

            killed_at = time.monotonic()
            first.kill()
            new = await asyncio.to_thread(group.wait_master, first, FOLLOW_BOUND_S)
            after: set[bytes] = set()

            async def sent(body: bytes) -> bool:
                try:  # the producer's first sends may still go to the dead master
                    return (await producer.send(Message(TOPIC, body))).status is SendStatus.SEND_OK
                except Exception:  # noqa: BLE001 - retried until the bound
                    return False

            for i in range(8):
                body = b"after-%d" % i
                remaining = FOLLOW_BOUND_S - (time.monotonic() - killed_at)
                await until(functools.partial(sent, body), timeout=max(remaining, 0.1), interval=0.2)
                after.add(body)
            remaining = FOLLOW_BOUND_S - (time.monotonic() - killed_at)
            await until(lambda: has(after), timeout=max(remaining, 0.1))
        finally:
            await push.shutdown()
    assert new is not first
