"""Timed messages from the Python client: Message(delay_ms=...) / Message(deliver_time_ms=...)."""

from __future__ import annotations

import time

import pytest

from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer
from orbitmq.common.properties import TIMER_DELAY_MS, TIMER_DELIVER_MS
from tests.client.helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(60)


def test_the_message_carries_rocketmq5_timer_properties() -> None:
    assert Message("T", b"x", delay_ms=1500).properties[TIMER_DELAY_MS] == "1500"
    assert Message("T", b"x", deliver_time_ms=1_700_000_000_000).properties[TIMER_DELIVER_MS] == "1700000000000"
    with pytest.raises(ValueError, match="not both"):
        Message("T", b"x", delay_ms=1, deliver_time_ms=1_700_000_000_000)
    with pytest.raises(ValueError):
        Message("T", b"x", delay_ms=-1)
    with pytest.raises(ValueError):
        Message("T", b"x", deliver_time_ms=0)


async def test_a_timed_message_arrives_no_earlier_than_asked_and_within_a_second(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    arrivals: dict[bytes, float] = {}

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        for m in msgs:
            arrivals.setdefault(m.body, time.time())
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name="timed-client",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            sent = time.time()
            await producer.send(Message(topic, b"by-delay", delay_ms=1500))
            await producer.send(Message(topic, b"by-time", deliver_time_ms=int((sent + 2.0) * 1000)))
            await producer.send(Message(topic, b"now"))
            await wait_until(lambda: len(arrivals) == 3, timeout=20)
        finally:
            await consumer.shutdown()
    assert arrivals[b"now"] - sent < 1.5
    assert 1.5 <= arrivals[b"by-delay"] - sent < 1.5 + 1.0 + 0.5  # within a second, plus client-side slack
    assert 2.0 - 0.05 <= arrivals[b"by-time"] - sent < 2.0 + 1.0 + 0.5
