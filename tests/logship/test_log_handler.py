"""The topic log handler never blocks the application and accounts for every record."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from orbitmq.client.logship import TopicLogHandler


class RecordingSender:
    """A producer stand-in that records batches; it can be told to stall or fail."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False
        self.started = False
        self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def send(self, messages: Any) -> None:
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        if self.fail:
            raise ConnectionError("broker unreachable")
        self.batches.append(list(messages))

    async def shutdown(self) -> None:
        self.stopped = True


def make_logger(handler: logging.Handler, name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger


def test_records_are_shipped_with_level_tag_logger_key_and_properties() -> None:
    sender = RecordingSender()
    handler = TopicLogHandler("LogTopic", producer_factory=lambda: sender)
    logger = make_logger(handler, "app.orders")
    logger.warning("order %s is late", 42)
    handler.flush()
    handler.close()
    logger.removeHandler(handler)

    messages = [m for batch in sender.batches for m in batch]
    assert len(messages) == 1
    msg = messages[0]
    assert msg.topic == "LogTopic"
    assert msg.body == b"order 42 is late"
    assert msg.tags == "WARNING"
    assert msg.keys == ["app.orders"]
    assert msg.get_user_property("logger") == "app.orders"
    assert msg.get_user_property("level") == "WARNING"
    assert sender.started and sender.stopped
    assert handler.sent == 1 and handler.dropped == 0


def test_a_stalled_broker_never_blocks_logging_and_overflow_is_counted() -> None:
    sender = RecordingSender()
    sender.gate.clear()  # every send hangs until released
    handler = TopicLogHandler("LogTopic", capacity=10, batch_size=5, producer_factory=lambda: sender)
    logger = make_logger(handler, "app.stalled")
    for i in range(100):
        logger.info("record %d", i)  # must return at once although nothing is sent
    assert handler.dropped >= 100 - 10 - 5
    sender.gate.set()
    handler.flush()
    handler.close()
    logger.removeHandler(handler)
    shipped = sum(len(b) for b in sender.batches)
    assert shipped + handler.dropped == 100
    assert handler.sent == shipped


def test_a_failing_send_is_retried_then_counted_as_dropped() -> None:
    sender = RecordingSender()
    sender.fail = True
    handler = TopicLogHandler("LogTopic", send_retries=1, producer_factory=lambda: sender)
    logger = make_logger(handler, "app.failing")
    logger.error("lost")
    handler.flush()
    handler.close()
    logger.removeHandler(handler)
    assert handler.sent == 0
    assert handler.dropped == 1


def test_records_logged_after_close_are_dropped_not_raised() -> None:
    sender = RecordingSender()
    handler = TopicLogHandler("LogTopic", producer_factory=lambda: sender)
    handler.close()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "late", None, None)
    handler.emit(record)
    assert handler.dropped == 1


def test_a_tag_option_tags_every_record_instead_of_its_level_name() -> None:
    """RocketMQ's log appenders (logappender's RocketmqLog4jAppender, RocketmqLogbackAppender)
    take a `tag` setting and send every event as `new Message(topic, tag, body)`."""
    sender = RecordingSender()
    handler = TopicLogHandler("LogTopic", tag="orders-app", producer_factory=lambda: sender)
    logger = make_logger(handler, "app.tagged")
    logger.error("disk %s", "full")
    logger.info("fine")
    handler.flush()
    handler.close()
    logger.removeHandler(handler)

    messages = [m for batch in sender.batches for m in batch]
    assert [m.tags for m in messages] == ["orders-app", "orders-app"]
    assert [m.get_user_property("level") for m in messages] == ["ERROR", "INFO"]
    with pytest.raises(ValueError):
        TopicLogHandler("LogTopic", tag="a||b", producer_factory=lambda: sender)
