"""Consumers whose listener fails: redelivery through %RETRY%, then the dead-letter queue (orbitmq dev).

The dev broker runs the delay table "1s 2s 3s", so every broker-chosen retry
(level 3 + reconsume times, capped at the last level) waits 3 s.
"""

from __future__ import annotations

from collections import Counter

import pytest

from orbitmq.client import (
    ConsumeOrderlyResult,
    ConsumeResult,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
)
from tests.client.helpers import consumed_everything, create_topic, retry_until_ok, wait_until

pytestmark = pytest.mark.timeout(90)


async def dlq_queues(reader: PullConsumer, group: str) -> list[MessageQueue]:
    """The queues of the group's DLQ; the broker creates it with the first dead letter and registers it
    with the NameServer just after (as RocketMQ does), so ask until the route is there."""
    found: list[MessageQueue] = []

    async def routed() -> None:
        found[:] = await reader.fetch_subscribe_message_queues(f"%DLQ%{group}")

    await retry_until_ok(routed)
    return found


async def test_a_failing_message_returns_with_its_reconsume_times_then_lands_in_the_dlq_only(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    seen: list[tuple[bytes, int, str | None, str]] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        for m in msgs:
            seen.append((m.body, m.reconsume_times, m.properties.get("ORIGIN_MESSAGE_ID"), m.topic))
        body = msgs[0].body
        if body == b"flaky" and msgs[0].reconsume_times < 2:
            return ConsumeResult.RECONSUME_LATER
        if body == b"poison":
            raise RuntimeError("this message always fails")
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name="retry-e2e", max_reconsume_times=2,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            flaky = await producer.send(Message(topic, b"flaky"))
            await producer.send(Message(topic, b"poison"))
            await wait_until(lambda: Counter(b for b, *_ in seen)[b"poison"] >= 3, timeout=30)
            await wait_until(lambda: Counter(b for b, *_ in seen)[b"flaky"] >= 3, timeout=30)
            # Every stored delivery done: the poison's last failure went to the DLQ, not the retry topic.
            await consumed_everything(consumer)
        finally:
            await consumer.shutdown()

        flaky_runs = [(rt, origin, t) for b, rt, origin, t in seen if b == b"flaky"]
        assert [rt for rt, _, _ in flaky_runs] == [0, 1, 2]
        assert all(t == topic for _, _, t in flaky_runs)  # the original topic, restored from RETRY_TOPIC
        assert flaky_runs[1][1] is not None and flaky_runs[1][1] == flaky_runs[2][1]
        assert [rt for b, rt, _, _ in seen if b == b"poison"] == [0, 1, 2]
        assert flaky.msg_id

        dlq = PullConsumer(cg + "_DLQ", namesrv_addr=namesrv, instance_name="dlq-reader")
        await dlq.start()
        try:
            queues = await dlq_queues(dlq, cg)
            assert len(queues) == 1
            result = await dlq.pull(next(iter(queues)), "*", 0, 32)
        finally:
            await dlq.shutdown()
        assert [(m.body, m.reconsume_times) for m in result.messages] == [(b"poison", 3)]


async def test_an_orderly_consumer_retries_locally_then_dead_letters_and_moves_on(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    seen: list[tuple[bytes, int]] = []

    def listener(msgs: list[MessageExt]) -> ConsumeOrderlyResult:
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        if msgs[0].body == b"stuck":
            return ConsumeOrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyResult.SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name="orderly-dlq", max_reconsume_times=2,
                                suspend_current_queue_time_ms=200, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_orderly_listener(listener)
        await consumer.start()
        try:
            await producer.send(Message(topic, b"stuck"))
            await producer.send(Message(topic, b"next"))
            await wait_until(lambda: (b"next", 0) in seen, timeout=20)
        finally:
            await consumer.shutdown()

        # Consumed locally 1 + 2 times, in order, before the next message of the queue.
        assert seen == [(b"stuck", 0), (b"stuck", 1), (b"stuck", 2), (b"next", 0)]
        dlq = PullConsumer(cg + "_DLQ", namesrv_addr=namesrv, instance_name="orderly-dlq-reader")
        await dlq.start()
        try:
            queues = await dlq_queues(dlq, cg)
            result = await dlq.pull(next(iter(queues)), "*", 0, 32)
        finally:
            await dlq.shutdown()
        assert [m.body for m in result.messages] == [b"stuck"]
        assert result.messages[0].properties["RETRY_TOPIC"] == topic
