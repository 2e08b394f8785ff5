"""The topic log handler ships records through a real `orbitmq dev`, and they can be consumed back."""

from __future__ import annotations

import asyncio
import logging

import pytest

from orbitmq.client import PushConsumer
from orbitmq.client.logship import TopicLogHandler
from tests.client.helpers import Collector, wait_until

pytestmark = pytest.mark.timeout(60)


async def test_logged_records_arrive_in_the_topic_with_level_tags_and_logger_properties(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    handler = TopicLogHandler(topic, namesrv_addr=namesrv, group=pg, batch_size=16)
    logger = logging.getLogger(f"shop.{topic}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        for i in range(40):
            logger.log(logging.WARNING if i % 4 == 0 else logging.INFO, "order %d shipped", i)
    finally:
        logger.removeHandler(handler)
        await asyncio.to_thread(handler.close)  # flushes: every record is sent or counted as dropped
    assert (handler.sent, handler.dropped) == (40, 0)

    collector = Collector()
    consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name=f"log-{cg}",
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "WARNING || INFO")
    consumer.register_listener(collector)
    await consumer.start()
    try:
        await wait_until(lambda: len(collector.msgs) >= 40)
    finally:
        await consumer.shutdown()
    assert sorted(m.body for m in collector.msgs) == sorted(f"order {i} shipped".encode() for i in range(40))
    by_body = {m.body: m for m in collector.msgs}
    warning = by_body[b"order 0 shipped"]
    assert warning.tags == "WARNING" and by_body[b"order 1 shipped"].tags == "INFO"
    assert warning.properties["logger"] == f"shop.{topic}"
    assert warning.properties["level"] == "WARNING"
    assert warning.keys == [f"shop.{topic}"]
    assert int(warning.properties["created"]) > 0
