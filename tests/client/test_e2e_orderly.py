"""Orderly consumers keep per-key order while members join and leave (against `orbitmq dev`)."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest

from orbitmq.client import ConsumeOrderlyResult, Message, MessageExt, Producer, PushConsumer, hash_selector
from tests.client.helpers import consumed_everything, create_topic, wait_until

pytestmark = pytest.mark.timeout(120)

KEYS = 8
PER_KEY = 30


async def test_orderly_keeps_per_key_order_across_three_consumers_while_one_joins_and_one_leaves(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    seen: dict[str, list[int]] = defaultdict(list)

    def listener(msgs: list[MessageExt]) -> ConsumeOrderlyResult:
        for m in msgs:
            key, seq = m.body.decode().split(":")
            seen[key].append(int(seq))
        return ConsumeOrderlyResult.SUCCESS

    def member(name: str) -> PushConsumer:
        c = PushConsumer(cg, namesrv_addr=namesrv, instance_name=name, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        c.subscribe(topic, "*")
        c.register_orderly_listener(listener)
        return c

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=8)

        async def produce(start: int, stop: int) -> None:
            for seq in range(start, stop):
                for k in range(KEYS):
                    await producer.send(Message(topic, f"key{k}:{seq}".encode()), selector=hash_selector, arg=k)

        first, second, third = member("ord-1"), member("ord-2"), member("ord-3")
        await first.start()
        await second.start()
        await produce(0, 10)
        await third.start()  # joins mid-stream
        await produce(10, 20)
        await wait_until(lambda: sum(len(v) for v in seen.values()) >= KEYS * 12)
        await first.shutdown()  # leaves mid-stream
        await produce(20, PER_KEY)
        try:
            await wait_until(lambda: all(len(set(seen[f"key{k}"])) == PER_KEY for k in range(KEYS)), timeout=60)
            await consumed_everything(second)  # a redelivery still in flight would come before this holds
            await consumed_everything(third)
        finally:
            await second.shutdown()
            await third.shutdown()
    for k in range(KEYS):
        sequence = seen[f"key{k}"]
        # A queue handed over may redeliver from the committed offset, but never out of order:
        # with duplicates removed by keeping first sightings, the order is the send order.
        first_seen = list(dict.fromkeys(sequence))
        assert first_seen == list(range(PER_KEY)), (k, sequence)
        # A redelivery restarts at an earlier point and then proceeds in order again.
        assert all(b == a + 1 or b <= a for a, b in itertools.pairwise(sequence)), (k, sequence)
