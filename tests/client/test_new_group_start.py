"""Where a new consumer group starts on a queue whose history is no longer in memory."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from orbitmq.client import Producer, PushConsumer
from orbitmq.client.message import Message
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic, request, send_v2
from tests.broker.test_messaging import make_config
from tests.client.helpers import Collector, retry_until_ok, wait_until
from tests.ha.cluster import broker_conf, start_broker, start_namesrv
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(90)

TOPIC = "LongHistory"


async def _query(client: RemotingClient, addr: str, group: str) -> tuple[int, str | None]:
    r = await request(client, addr, RequestCode.QUERY_CONSUMER_OFFSET,
                      {"consumerGroup": group, "topic": TOPIC, "queueId": "0"})
    return r.code, r.field("offset") if r.code == ResponseCode.SUCCESS else None


async def test_no_committed_offset_answers_zero_only_while_message_zero_is_in_memory(
    tmp_path: Path, client: RemotingClient
) -> None:
    """ConsumerManageProcessor.queryConsumerOffset: with no committed offset, 0 only when the
    queue's min offset is 0 and DefaultMessageStore.checkInDiskByConsumeOffset(topic, queue, 0)
    is false (the message lies within accessMessageInMemoryMaxRatio of the CommitLog head);
    QUERY_NOT_FOUND otherwise."""
    async with Broker(make_config(tmp_path / "roomy")) as roomy:
        await create_topic(client, roomy.broker_addr, TOPIC, queues=1)
        assert await _query(client, roomy.broker_addr, "NewGroup") == (ResponseCode.SUCCESS, "0")  # empty queue
        for i in range(3):
            assert (await send_v2(client, roomy.broker_addr, TOPIC, b"m%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
        assert await _query(client, roomy.broker_addr, "NewGroup") == (ResponseCode.SUCCESS, "0")
    # A memory window of 0%: every message behind the head counts as on disk.
    async with Broker(make_config(tmp_path / "tight", accessMessageInMemoryMaxRatio="0")) as tight:
        await create_topic(client, tight.broker_addr, TOPIC, queues=1)
        for i in range(3):
            assert (await send_v2(client, tight.broker_addr, TOPIC, b"m%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
        code, _ = await _query(client, tight.broker_addr, "NewGroup")
        assert code == ResponseCode.QUERY_NOT_FOUND


@pytest.mark.parametrize("where", ["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"])
async def test_a_new_group_on_a_topic_past_the_memory_window_starts_where_consume_from_where_says(
    tmp_path: Path, procs: list[ServerProcess], where: str
) -> None:
    """RebalancePushImpl.computePullFromWhere reads QUERY_NOT_FOUND (-1) as "no offset" and
    then applies CONSUME_FROM_LAST_OFFSET / CONSUME_FROM_TIMESTAMP; a 0 from the broker would
    replay the whole history (ConsumerManageProcessor answers 0 only for history in memory)."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    procs.append(start_broker(broker_conf(tmp_path, "broker", ns.addr, "ASYNC_MASTER",
                                          accessMessageInMemoryMaxRatio="0")))
    producer = Producer("HistoryPG", namesrv_addr=ns.addr)
    await producer.start()
    consumer: PushConsumer | None = None
    try:
        async def create() -> None:
            await producer.create_topic("TBW102", TOPIC, 1)

        await retry_until_ok(create)
        old = [b"old %d" % i for i in range(5)]
        for body in old:
            await producer.send(Message(TOPIC, body))
        # A day ahead: the search lands on the newest stored message (the last old one).
        tomorrow = time.strftime("%Y%m%d%H%M%S", time.localtime(time.time() + 86_400))
        collector = Collector()
        consumer = PushConsumer("HistoryCG", namesrv_addr=ns.addr, consume_from_where=where,
                                consume_timestamp=tomorrow, instance_name=f"hist-{where}")
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(collector)
        await consumer.start()
        # The start offset is taken once the queue is assigned; send until something arrives.
        deadline = time.monotonic() + 30
        sent = 0
        while not collector.msgs:
            assert time.monotonic() < deadline, "the new group consumed nothing"
            await producer.send(Message(TOPIC, b"new %d" % sent))
            sent += 1
            with contextlib.suppress(AssertionError):
                await wait_until(lambda: bool(collector.msgs), timeout=1.0)
    finally:
        if consumer is not None:
            await consumer.shutdown()
        await producer.shutdown()
    replayed = collector.bodies() & set(old)
    allowed = {old[-1]} if where == "CONSUME_FROM_TIMESTAMP" else set()
    assert replayed <= allowed, f"the new group replayed history: {sorted(replayed)}"
