"""Every send mode delivers intact messages, and lookups find them (against `orbitmq dev`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from orbitmq.client import ConsumeFromWhere, Message, Producer, PushConsumer, SendStatus, hash_selector
from orbitmq.client.queue import MessageQueue
from orbitmq.errors import MessageValidationError
from tests.client.helpers import Collector, create_topic, retry_until_ok, wait_until

pytestmark = pytest.mark.timeout(60)


def make(topic: str, i: int, size: int = 16) -> Message:
    body = (f"m{i}-".encode() * size)[: max(size, 8)]
    return Message(topic, body, tags=f"Tag{i % 3}", keys=[f"k{i}", f"common{i % 2}"], properties={"idx": str(i)})


async def test_every_send_mode_delivers_every_message_intact(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic)
        sent: dict[str, Message] = {}

        def remember(msg: Message) -> Message:
            sent[msg.properties["idx"]] = msg
            return msg

        result = await producer.send(remember(make(topic, 0)))
        assert result.status is SendStatus.SEND_OK
        assert result.msg_id == sent["0"].unique_key and result.offset_msg_id
        assert await producer.send_async(remember(make(topic, 1)))
        seen: list[object] = []
        done = asyncio.Event()
        def on_done(result: object, exc: BaseException | None) -> None:
            seen.append(result or exc)
            done.set()

        producer.send_async(remember(make(topic, 2)), on_done)
        await asyncio.wait_for(done.wait(), 10)
        assert seen and getattr(seen[0], "status", None) is SendStatus.SEND_OK
        await producer.send_oneway(remember(make(topic, 3)))
        batch = [remember(make(topic, i)) for i in range(4, 12)]
        batch_result = await producer.send(batch)
        assert batch_result.msg_id.split(",") == [m.unique_key for m in batch]
        ordered = await producer.send(remember(make(topic, 12)), selector=hash_selector, arg=7)
        assert ordered.message_queue.queue_id == 7 % 4
        big = remember(make(topic, 13, size=10_000))  # compressed on the wire, restored on consumption
        await producer.send(big)

    collector = Collector()
    consumer = PushConsumer(cg, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_listener(collector)
    await consumer.start()
    try:
        await wait_until(lambda: len({m.properties["idx"] for m in collector.msgs}) == len(sent))
    finally:
        await consumer.shutdown()
    for got in collector.msgs:
        want = sent[got.properties["idx"]]
        assert got.body == want.body
        assert got.tags == want.tags
        assert got.keys == want.keys
        assert got.user_properties.get("idx") == want.properties["idx"]
        assert got.msg_id == want.unique_key
        assert got.topic == topic


async def test_queries_find_messages_by_id_key_offset_and_time(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        before = int(time.time() * 1000)
        results = [await producer.send(Message(topic, f"q{i}".encode(), keys=[f"key-{i}"])) for i in range(5)]
        mq = results[0].message_queue
        assert isinstance(mq, MessageQueue)

        by_id = await producer.view_message(results[2].offset_msg_id)
        assert by_id.body == b"q2"
        by_unique = await producer.view_message(results[3].msg_id, topic)
        assert by_unique.body == b"q3"

        async def keyed() -> list[bytes]:
            found = await producer.query_message(topic, "key-4", 32, before - 1000, int(time.time() * 1000) + 1000)
            return [m.body for m in found]

        hits: list[bytes] = []
        deadline = time.monotonic() + 10
        while not hits and time.monotonic() < deadline:  # the index may trail the append briefly
            hits = await keyed()
            if not hits:
                await asyncio.sleep(0.1)
        assert hits == [b"q4"]

        assert await producer.max_offset(mq) == results[-1].queue_offset + 1
        assert await producer.min_offset(mq) == 0
        earliest = await producer.earliest_msg_store_time(mq)
        assert before - 5000 <= earliest <= int(time.time() * 1000) + 5000
        assert await producer.search_offset(mq, earliest) == results[0].queue_offset
        queues = await producer.fetch_publish_message_queues(topic)
        assert queues == [mq]


async def test_bad_messages_are_refused_before_sending(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    async with Producer(pg, namesrv_addr=namesrv, max_message_size=1024) as producer:
        with pytest.raises(MessageValidationError):
            await producer.send(Message("bad topic", b"x"))
        with pytest.raises(MessageValidationError):
            await producer.send(Message(topic, b"x" * 1025))
        with pytest.raises(MessageValidationError):
            await producer.send([Message(topic, b"x"), Message(topic + "b", b"y")])


async def test_a_large_list_goes_out_as_several_batches(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    async with Producer(pg, namesrv_addr=namesrv, max_message_size=64 * 1024) as producer:
        await create_topic(producer, topic)
        msgs = [Message(topic, bytes([i % 256]) * 4000) for i in range(40)]
        results = await producer.send_batches(msgs)
        assert len(results) > 1
        assert sum(len(r.msg_id.split(",")) for r in results) == 40


async def test_a_dead_nameserver_in_the_list_is_skipped(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    # Port 1 on loopback refuses connections at once; the client moves on to the next NameServer.
    async with Producer(pg, namesrv_addr=f"127.0.0.1:1;{namesrv}") as producer:
        await create_topic(producer, topic)
        result = await producer.send(Message(topic, b"via the second nameserver"))
        assert result.status is SendStatus.SEND_OK


async def test_sending_to_a_new_topic_creates_it_from_the_template(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        # No create_topic: the first send goes by TBW102's route and the broker creates the topic.
        first = await producer.send(Message(topic, b"first"))
        assert first.status is SendStatus.SEND_OK

        async def has_route() -> None:
            if await producer.instance.update_route(topic) is None:
                raise MessageValidationError("no route yet")

        await retry_until_ok(has_route)
        queues = await producer.fetch_publish_message_queues(topic)
        assert len(queues) == 4  # the producer's defaultTopicQueueNums
