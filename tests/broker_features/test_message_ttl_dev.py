"""Message TTLs through `orbitmq dev` and the Python client: `Message(..., ttl_ms=...)`."""

from __future__ import annotations

import time

import pytest

from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer
from orbitmq.common.properties import TTL_MS
from tests.client.helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(60)


def test_the_message_carries_the_ttl_property() -> None:
    assert Message("T", b"x", ttl_ms=1500).properties[TTL_MS] == "1500"
    with pytest.raises(ValueError):
        Message("T", b"x", ttl_ms=0)


async def test_a_message_not_consumed_before_its_ttl_is_never_delivered(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    arrived: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        arrived.extend(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        await producer.send(Message(topic, b"expires", ttl_ms=300))
        await producer.send(Message(topic, b"keeps", ttl_ms=600_000))
        deadline = time.time() + 0.5
        await wait_until(lambda: time.time() > deadline, timeout=5)  # the TTL passes unconsumed
        consumer = PushConsumer(cg, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            await producer.send(Message(topic, b"sentinel"))
            await wait_until(lambda: b"sentinel" in arrived, timeout=20)
        finally:
            await consumer.shutdown()
    assert arrived == [b"keeps", b"sentinel"]
