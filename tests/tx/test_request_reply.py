"""Request-reply against a real `orbitmq dev`: a consumer answers, callers wait, time out, or pick queues."""

from __future__ import annotations

import asyncio
from typing import Self

import pytest

from orbitmq.client import (
    ConsumeResult,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    RequestReplyTimeout,
    create_reply_message,
)
from orbitmq.errors import BrokerError, ClientError, OrbitMQError
from tests.client.helpers import create_topic
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


class Responder:
    """A push consumer that answers every request with `reply:<body>` through its own producer."""

    def __init__(self, namesrv: str, group: str, topic: str) -> None:
        self.producer = Producer(f"{group}_replier", namesrv_addr=namesrv, instance_name=f"r-{group}")
        self.consumer = PushConsumer(group, namesrv_addr=namesrv, instance_name=f"r-{group}",
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        self.consumer.subscribe(topic, "*")
        self.consumer.register_listener(self.answer)
        self.requests: list[MessageExt] = []

    async def answer(self, msgs: list[MessageExt]) -> ConsumeResult:
        for msg in msgs:
            self.requests.append(msg)
            await self.producer.send(create_reply_message(msg, b"reply:" + msg.body))
        return ConsumeResult.CONSUME_SUCCESS

    async def __aenter__(self) -> Self:
        await self.producer.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.shutdown()
        await self.producer.shutdown()


async def test_request_returns_the_reply_a_consumer_sends(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv, instance_name="requester") as requester:
        await create_topic(requester, topic, queues=2)
        client_id = requester.instance.client_id
        async with Responder(namesrv, cg, topic) as responder:
            reply = await requester.request(Message(topic, b"ping", tags="ask"), timeout=10)
            second = await requester.request(Message(topic, b"again"), timeout=10)
    assert reply.body == b"reply:ping"
    assert second.body == b"reply:again"
    request = responder.requests[0]
    assert reply.properties["CORRELATION_ID"] == request.properties["CORRELATION_ID"]
    assert request.properties["REPLY_TO_CLIENT"] == client_id
    assert request.properties["TTL"] == "10000"
    assert reply.properties["MSG_TYPE"] == "reply"
    assert "PUSH_REPLY_TIME" in reply.properties and "ARRIVE_TIME" in reply.properties
    assert reply.topic == "DefaultCluster_REPLY_TOPIC"


async def test_request_to_a_chosen_queue_and_with_a_callback(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv, instance_name="requester-q") as requester:
        await create_topic(requester, topic, queues=4)
        async with Responder(namesrv, cg, topic) as responder:
            queues = await requester.fetch_publish_message_queues(topic)
            target = MessageQueue(topic, queues[0].broker_name, 3)
            by_queue = await requester.request(Message(topic, b"q3"), timeout=10, queue=target)
            by_selector = await requester.request(
                Message(topic, b"sel"), timeout=10, selector=lambda mqs, msg, arg: mqs[arg], arg=1)
            got: list[tuple[MessageExt | None, BaseException | None]] = []
            done = asyncio.Event()

            def callback(reply: MessageExt | None, exc: BaseException | None) -> None:
                got.append((reply, exc))
                done.set()

            requester.request_async(Message(topic, b"cb"), callback, timeout=10)
            await asyncio.wait_for(done.wait(), 15)
    assert by_queue.body == b"reply:q3"
    assert by_selector.body == b"reply:sel"
    assert got[0][1] is None and got[0][0] is not None and got[0][0].body == b"reply:cb"
    queue_of = {m.body: m.queue_id for m in responder.requests}
    assert queue_of[b"q3"] == 3 and queue_of[b"sel"] == 1


async def test_request_nobody_answers_times_out_with_a_clear_error(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, _ = names
    async with Producer(pg, namesrv_addr=namesrv, instance_name="requester-t") as requester:
        await create_topic(requester, topic, queues=1)
        with pytest.raises(RequestReplyTimeout, match="wait reply message timeout, 800 ms"):
            await requester.request(Message(topic, b"anyone?"), timeout=0.8)
        assert len(requester.instance.replies) == 0


async def test_reply_to_a_message_that_is_not_a_request_is_refused() -> None:
    plain = MessageExt(topic="T", body=b"x", properties={"CLUSTER": "DefaultCluster"})
    with pytest.raises(ClientError, match="REPLY_TO_CLIENT"):
        create_reply_message(plain, b"y")
    with pytest.raises(ClientError, match="CLUSTER"):
        create_reply_message(MessageExt(topic="T"), b"y")


async def test_reply_for_a_requester_that_is_gone_is_refused_with_a_remark(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    from orbitmq.client import MessageExt as Ext

    _, pg, _ = names
    request = Ext(topic="T", properties={"CLUSTER": "DefaultCluster", "REPLY_TO_CLIENT": "10.9.9.9@gone",
                                         "CORRELATION_ID": "c-1", "TTL": "3000"})
    async with Producer(pg, namesrv_addr=namesrv, retry_times_when_send_failed=0) as responder:
        with pytest.raises(BrokerError, match="channel of <10.9.9.9@gone> not found"):
            await responder.send(create_reply_message(request, b"too late"))


def test_blocking_producer_request_waits_for_the_reply(namesrv: str, names: tuple[str, str, str]) -> None:
    from orbitmq.client import sync
    from orbitmq.client.sync import background_loop

    topic, pg, cg = names
    responder = Responder.__new__(Responder)

    async def start_responder() -> None:
        Responder.__init__(responder, namesrv, cg, topic)
        await responder.__aenter__()

    async def stop_responder() -> None:
        await responder.__aexit__()

    with sync.Producer(pg, namesrv_addr=namesrv, instance_name="sync-requester") as requester:
        requester.create_topic("TBW102", topic, 1)

        def routed() -> bool:
            try:  # the broker registers the new topic with the NameServer a moment later
                return bool(requester.fetch_publish_message_queues(topic))
            except OrbitMQError:
                return False

        eventually(routed, timeout=20)
        asyncio.run_coroutine_threadsafe(start_responder(), background_loop()).result(30)
        try:
            reply = requester.request(Message(topic, b"blocking"), timeout=15)
        finally:
            asyncio.run_coroutine_threadsafe(stop_responder(), background_loop()).result(30)
    assert reply.body == b"reply:blocking"
