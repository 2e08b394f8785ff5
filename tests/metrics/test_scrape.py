"""After a known workload the scrape tells what happened: counters equal what was sent and
consumed, lag equals the backlog (against `orbitmq dev`, scraped over HTTP)."""

from __future__ import annotations

import asyncio
import os

import pytest

from orbitmq.client import Message, Producer, PullConsumer, PullStatus
from tests.client.helpers import create_topic, wait_until
from tests.metrics.conftest import metrics_address, scrape
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(90)

SENT = 10
CONSUMED = 4


async def test_counters_and_lag_after_a_known_workload(dev: ServerProcess) -> None:
    namesrv = dev.addresses[0]
    address = metrics_address(dev)
    n = os.getpid()
    topic, pg, cg = f"MT_{n}", f"MPG_{n}", f"MCG_{n}"
    bodies = [f"message-{i}".encode() * (i + 1) for i in range(SENT)]
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        before = await asyncio.to_thread(scrape, address)
        for body in bodies:
            await producer.send(Message(topic, body))
        async with PullConsumer(cg, namesrv_addr=namesrv) as consumer:
            [mq] = await consumer.fetch_subscribe_message_queues(topic)
            offset = 0
            while offset < CONSUMED:
                result = await consumer.pull(mq, "*", offset, CONSUMED - offset)
                assert result.status is PullStatus.FOUND
                offset = result.next_begin_offset
            await consumer.update_consume_offset(mq, offset)
        # Closing the consumer persists its offset; the broker has it once the consumer is gone.

        after = await asyncio.to_thread(scrape, address)
        labels = {"topic": topic}
        assert after.sum("rocketmq_messages_in_total", **labels) == SENT
        assert after.sum("rocketmq_throughput_in_total", **labels) == sum(len(b) for b in bodies)
        assert after.sum("rocketmq_message_size_count", **labels) == SENT
        assert after.sum("rocketmq_message_size_sum", **labels) == sum(len(b) for b in bodies)
        assert after.sum("rocketmq_message_size_bucket", le="1024.0", **labels) == SENT
        out = {"topic": topic, "consumer_group": cg}
        assert after.sum("rocketmq_messages_out_total", **out) == CONSUMED
        assert after.sum("rocketmq_throughput_out_total", **out) > sum(len(b) for b in bodies[:CONSUMED])
        assert after.sum("rocketmq_consumer_lag_messages", **out) == SENT - CONSUMED
        assert after.sum("rocketmq_consumer_ready_messages", **out) == SENT - CONSUMED
        assert after.sum("rocketmq_consumer_inflight_messages", **out) == 0
        assert after.sum("orbitmq_consumer_queue_lag_messages", queue_id="0", **out) == SENT - CONSUMED
        assert after.sum("rocketmq_consumer_lag_latency_milliseconds", **out) > 0
        # Every send was one SEND_MESSAGE(_V2) request answered SUCCESS, and timed.
        sends = sum(
            after.sum("rocketmq_rpc_latency_milliseconds_count", request_code=code, response_code="success")
            - before.sum("rocketmq_rpc_latency_milliseconds_count", request_code=code, response_code="success")
            for code in ("send_message", "send_message_v2")
        )
        assert sends == SENT
        await wait_until(
            lambda: scrape(address).sum("rocketmq_producer_connections") >= 1,
            message="the producer's connection is not counted",
        )
    # The NameServer's families are served by the same endpoint in `orbitmq dev`.
    assert after.sum("orbitmq_namesrv_broker_up", broker_name="broker-a") == 1
    assert after.sum("orbitmq_namesrv_live_brokers") == 1


async def test_lag_follows_the_committed_offset(dev: ServerProcess) -> None:
    namesrv = dev.addresses[0]
    address = metrics_address(dev)
    n = os.getpid()
    topic, pg, cg = f"MLT_{n}", f"MLPG_{n}", f"MLCG_{n}"
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        for i in range(8):
            await producer.send(Message(topic, b"x" * 10))
    async with PullConsumer(cg, namesrv_addr=namesrv) as consumer:
        queues = sorted(await consumer.fetch_subscribe_message_queues(topic), key=lambda q: q.queue_id)
        tops = [await consumer.max_offset(mq) for mq in queues]
        assert sum(tops) == 8
        for mq in queues:
            await consumer.update_consume_offset(mq, 1)
    got = await asyncio.to_thread(scrape, address)
    out = {"topic": topic, "consumer_group": cg}
    assert got.sum("rocketmq_consumer_lag_messages", **out) == 8 - len(queues)
    for mq, top in zip(queues, tops, strict=True):
        assert got.sum("orbitmq_consumer_queue_lag_messages", queue_id=str(mq.queue_id), **out) == max(top - 1, 0)


def test_health_and_root_paths(dev: ServerProcess) -> None:
    import urllib.request

    address = metrics_address(dev)
    with urllib.request.urlopen(f"http://{address}/-/healthy", timeout=10) as response:
        assert response.status == 200
    with urllib.request.urlopen(f"http://{address}/", timeout=10) as response:
        assert b"rocketmq_topic_number" in response.read()


async def test_a_delayed_send_counts_under_the_schedule_topic_and_waits_in_the_backlog(dev: ServerProcess) -> None:
    namesrv = dev.addresses[0]
    address = metrics_address(dev)
    n = os.getpid()
    topic, pg = f"MDT_{n}", f"MDPG_{n}"
    level = 16  # 30 minutes: still waiting when scraped
    labels = {"topic": "SCHEDULE_TOPIC_XXXX", "message_type": "delay", "is_system": "true"}
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        before = await asyncio.to_thread(scrape, address)
        await producer.send(Message(topic, b"later", delay_time_level=level))
    after = await asyncio.to_thread(scrape, address)
    assert after.sum("rocketmq_messages_in_total", **labels) - before.sum("rocketmq_messages_in_total", **labels) == 1
    assert after.sum("rocketmq_messages_in_total", topic=topic) == 0
    waiting = after.sum("orbitmq_delay_backlog_messages", delay_level=str(level))
    assert waiting - before.sum("orbitmq_delay_backlog_messages", delay_level=str(level)) == 1
