"""Which failed sends the producer tries again on another broker: the exception's class
decides (`retriable`, errors.py), one table for the whole project. Without sockets: the
attempt itself is replaced by a fake that fails as told."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from orbitmq.client.message import Message
from orbitmq.client.producer import Producer
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SendResult, SendStatus
from orbitmq.client.routes import TopicPublishInfo
from orbitmq.errors import (
    BrokerError,
    ConnectError,
    MessageIllegal,
    NoBuyerId,
    NoRouteError,
    NotInCurrentUnit,
    OrbitMQError,
    SystemBusy,
    SystemError_,
)

#: RocketMQ 5's DefaultMQProducer.retryResponseCodes: 4.x's six plus SYSTEM_BUSY.
PRODUCER_RETRY_CODES = {1, 2, 14, 16, 17, 204, 205}


class FakeInstance:
    def __init__(self) -> None:
        self.info = TopicPublishInfo([MessageQueue("T", broker, 0) for broker in ("a", "b", "c")])
        #: Topics whose route the producer asked to look up again at once.
        self.refreshed: list[str] = []

    def refresh_route_soon(self, topic: str) -> None:
        self.refreshed.append(topic)

    async def publish_info(self, topic: str, default_topic: str, default_queue_nums: int) -> TopicPublishInfo:
        return self.info


def producer_failing_with(*errors: OrbitMQError) -> tuple[Producer, list[str]]:
    """A producer whose attempts raise `errors` in turn, then succeed; returns it and the brokers tried."""
    producer = Producer("PG", namesrv_addr="127.0.0.1:1", retry_times_when_send_failed=2)
    producer._instance = FakeInstance()  # type: ignore[assignment]
    tried: list[str] = []
    pending = list(errors)

    async def attempt(batch: bool, msgs: list[Message], mq: MessageQueue, *rest: Any) -> SendResult:
        tried.append(mq.broker_name)
        if pending:
            raise pending.pop(0)
        return SendResult(SendStatus.SEND_OK, "id", "offset-id", mq, 0)

    producer._attempt = attempt  # type: ignore[method-assign]
    return producer, tried


def test_every_code_the_producer_retries_has_a_retriable_class_and_no_other_code_does() -> None:
    codes = set(range(400))
    retriable = {code for code in codes if BrokerError.for_code(code).retriable}
    assert retriable == PRODUCER_RETRY_CODES
    assert type(BrokerError.for_code(204)) is NoBuyerId
    assert type(BrokerError.for_code(205)) is NotInCurrentUnit
    assert type(BrokerError.for_code(2, "busy")) is SystemBusy
    assert BrokerError.for_code(2, "busy").remark == "busy"
    assert BrokerError.for_code(399).code == 399 and type(BrokerError.for_code(399)) is BrokerError
    assert SystemBusy("x").code == 2 and MessageIllegal("y").code == 13
    for error in (BrokerError.for_code(2, "busy"), BrokerError.for_code(399, "odd")):
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), copy.code, copy.remark, str(copy)) == (type(error), error.code, error.remark, str(error))


@pytest.mark.parametrize("code", sorted(PRODUCER_RETRY_CODES))
async def test_a_retriable_broker_answer_is_tried_again_on_another_broker(code: int) -> None:
    producer, tried = producer_failing_with(BrokerError.for_code(code, "refused"))
    result = await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)
    assert result.status is SendStatus.SEND_OK
    assert len(tried) == 2 and tried[0] != tried[1]


async def test_system_busy_is_retried_as_its_class_says() -> None:
    producer, tried = producer_failing_with(SystemBusy("[TIMEOUT_CLEAN_QUEUE]broker busy"))
    assert (await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)).status is SendStatus.SEND_OK
    assert len(tried) == 2


@pytest.mark.parametrize("error", [MessageIllegal("too big"), BrokerError.for_code(26, "no group")])
async def test_a_final_broker_answer_is_raised_at_once(error: BrokerError) -> None:
    producer, tried = producer_failing_with(error)
    with pytest.raises(type(error)):
        await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)
    assert len(tried) == 1


@pytest.mark.parametrize("error", [ConnectError("gone"), NoRouteError("The broker[a] not exist")])
async def test_connection_failures_and_a_broker_missing_from_the_route_are_retried(error: OrbitMQError) -> None:
    producer, tried = producer_failing_with(error)
    assert (await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)).status is SendStatus.SEND_OK
    assert len(tried) == 2


@pytest.mark.parametrize(("error", "refreshed"), [
    (ConnectError("gone"), ["T"]),  # a broker gone (its master died): the route may name a new master
    (BrokerError.for_code(14, "not a confirmed master"), ["T"]),  # a fenced or deposed master
    (SystemBusy("[TIMEOUT_CLEAN_QUEUE]broker busy"), []),
])
async def test_a_gone_broker_or_a_non_master_makes_the_route_be_looked_up_again(
    error: OrbitMQError, refreshed: list[str]
) -> None:
    producer, _ = producer_failing_with(error)
    assert (await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)).status is SendStatus.SEND_OK
    assert producer._instance.refreshed == refreshed  # type: ignore[union-attr]


async def test_the_last_error_is_raised_when_every_attempt_fails() -> None:
    producer, tried = producer_failing_with(SystemError_("1"), SystemBusy("2"), SystemError_("3"))
    with pytest.raises(SystemError_, match="3"):
        await producer._send(Message("T", b"x"), None, None, None, 3.0, 2)
    assert len(tried) == 3
