"""Natural batching: sends pending together travel as one batch, each keeping its own result and error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from orbitmq.client import Producer, PullConsumer
from orbitmq.client.accumulator import SendAccumulator, coalescable, estimated_item_size, split_result
from orbitmq.client.batch import item_size
from orbitmq.client.message import Message
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SendResult, SendStatus
from orbitmq.errors import BrokerError, ConnectError, MessageValidationError
from tests.client.helpers import create_topic
from tests.support.dev import DevServer, running_dev


def _result(n: int, first_offset: int = 10) -> SendResult:
    return SendResult(SendStatus.SEND_OK, "ignored", ",".join(f"OFF{i}" for i in range(n)),
                      MessageQueue("T", "b", 3), first_offset)


def _msgs(n: int) -> list[Message]:
    msgs = [Message("T", f"m{i}".encode()) for i in range(n)]
    for i, m in enumerate(msgs):
        m.unique_key = f"U{i}"
    return msgs


# --- sans-IO: the accumulator with fake send paths ------------------------------------------------


def test_a_batch_result_is_split_into_one_result_per_message() -> None:
    results = split_result(_result(3), _msgs(3))
    assert [r.msg_id for r in results] == ["U0", "U1", "U2"]
    assert [r.offset_msg_id for r in results] == ["OFF0", "OFF1", "OFF2"]
    assert [r.queue_offset for r in results] == [10, 11, 12]
    assert {r.message_queue for r in results} == {MessageQueue("T", "b", 3)}


def test_the_size_estimate_is_exact_for_ascii_and_never_far_below_otherwise() -> None:
    plain = Message("T", b"x" * 100, tags="TagA", keys=["k1", "k2"])
    plain.unique_key = "U" * 32
    assert estimated_item_size(plain) == item_size(plain)
    assert estimated_item_size(Message("T", b"")) == item_size(Message("T", b""))
    wide = Message("T", b"x", tags="\u00e9\U0001f600" * 10)
    assert item_size(wide) / 4 <= estimated_item_size(wide) <= item_size(wide)


def test_only_plain_messages_are_coalesced() -> None:
    assert coalescable(Message("T", b"x", tags="A", keys=["k"]), 4096)
    assert not coalescable(Message("T", b"x" * 4096), 4096)  # would be compressed on its own
    assert not coalescable(Message("T", b"x", delay_time_level=3), 4096)
    assert not coalescable(Message("%RETRY%G", b"x"), 4096)
    timed = Message("T", b"x")
    timed.properties["TIMER_DELAY_MS"] = "1000"
    assert not coalescable(timed, 4096)
    half = Message("T", b"x")
    half.properties["TRAN_MSG"] = "true"
    assert not coalescable(half, 4096)
    with_user_property = Message("T", b"x")
    with_user_property.put_user_property("order", "42")
    assert coalescable(with_user_property, 4096)


class FakeSends:
    def __init__(self, batch_error: BaseException | None = None) -> None:
        self.batches: list[list[Message]] = []
        self.singles: list[Message] = []
        self.batch_error = batch_error

    async def one(self, msg: Message, timeout: float | None) -> SendResult:
        self.singles.append(msg)
        await asyncio.sleep(0)  # the request is on the wire for at least one loop turn
        return SendResult(SendStatus.SEND_OK, msg.unique_key or "", "single", MessageQueue("T", "b", 0), 1)

    async def batch(self, msgs: list[Message], timeout: float | None) -> SendResult:
        self.batches.append(msgs)
        await asyncio.sleep(0)
        if self.batch_error is not None:
            raise self.batch_error
        return _result(len(msgs))


async def test_a_send_with_nothing_in_flight_goes_at_once_and_the_sends_behind_it_batch() -> None:
    fake = FakeSends()
    acc = SendAccumulator(fake.one, fake.batch)
    results = await asyncio.gather(*(acc.send(m, None) for m in _msgs(5)))
    # The first goes alone at once; the four that started while it was out travel together.
    assert [m.unique_key for m in fake.singles] == ["U0"]
    assert [[m.unique_key for m in b] for b in fake.batches] == [["U1", "U2", "U3", "U4"]]
    assert [r.queue_offset for r in results[1:]] == [10, 11, 12, 13]
    alone = await acc.send(_msgs(1)[0], None)  # one send at a time pays no wait and is never batched
    assert alone.offset_msg_id == "single" and len(fake.batches) == 1


async def test_sends_of_one_loop_turn_become_one_batch_behind_a_send_in_flight() -> None:
    fake = FakeSends()
    answered = asyncio.Event()

    async def slow_one(msg: Message, timeout: float | None) -> SendResult:
        await answered.wait()  # the broker has not answered yet
        return await fake.one(msg, timeout)

    acc = SendAccumulator(slow_one, fake.batch)
    first = asyncio.ensure_future(acc.send(_msgs(1)[0], None))
    await asyncio.sleep(0)  # it is on the wire
    results = await asyncio.gather(*(acc.send(m, None) for m in _msgs(6)[1:]))
    answered.set()
    await first
    assert len(fake.batches) == 1 and [r.queue_offset for r in results] == [10, 11, 12, 13, 14]


async def test_a_full_batch_leaves_at_once_and_the_rest_start_another() -> None:
    fake = FakeSends()
    acc = SendAccumulator(fake.one, fake.batch, batch_max_count=4)
    await asyncio.gather(*(acc.send(m, None) for m in _msgs(10)))
    # U0 at once; then U1-U4 and U5-U8 as full batches; U9 led a batch nobody joined.
    assert [len(b) for b in fake.batches] == [4, 4] and [m.unique_key for m in fake.singles] == ["U0", "U9"]


async def test_a_batch_the_broker_refuses_is_resent_message_by_message() -> None:
    fake = FakeSends(BrokerError.for_code(13, "the batch is too large"))
    acc = SendAccumulator(fake.one, fake.batch)
    results = await asyncio.gather(*(acc.send(m, None) for m in _msgs(4)))
    # U0 went alone; the batch of U1-U3 was refused and each was sent on its own.
    assert [[m.unique_key for m in b] for b in fake.batches] == [["U1", "U2", "U3"]]
    assert [m.unique_key for m in fake.singles] == ["U0", "U1", "U2", "U3"]
    assert [r.msg_id for r in results] == ["U0", "U1", "U2", "U3"]


async def test_a_batch_that_cannot_be_encoded_is_sent_message_by_message() -> None:
    fake = FakeSends(MessageValidationError("the properties of a message exceed 32767 bytes"))
    acc = SendAccumulator(fake.one, fake.batch)
    results = await asyncio.gather(*(acc.send(m, None) for m in _msgs(3)))
    assert len(fake.batches) == 1 and [r.msg_id for r in results] == ["U0", "U1", "U2"]
    assert [m.unique_key for m in fake.singles] == ["U0", "U1", "U2"]


async def test_a_connection_failure_reaches_every_sender_of_the_batch() -> None:
    fake = FakeSends(ConnectError("connection lost"))
    acc = SendAccumulator(fake.one, fake.batch)
    outcomes = await asyncio.gather(*(acc.send(m, None) for m in _msgs(4)), return_exceptions=True)
    # U0 went alone and was answered; the batch behind it failed for all three of its senders.
    assert isinstance(outcomes[0], SendResult) and [m.unique_key for m in fake.singles] == ["U0"]
    assert all(isinstance(o, ConnectError) for o in outcomes[1:])


async def test_linger_joins_sends_started_in_different_turns() -> None:
    fake = FakeSends()
    acc = SendAccumulator(fake.one, fake.batch, linger_ms=50)
    first = asyncio.ensure_future(acc.send(_msgs(1)[0], None))
    for _ in range(3):
        await asyncio.sleep(0)
    second = asyncio.ensure_future(acc.send(_msgs(2)[1], None))
    await asyncio.gather(first, second)
    assert len(fake.batches) == 1 and len(fake.batches[0]) == 2


async def test_close_sends_what_is_pending() -> None:
    fake = FakeSends()
    acc = SendAccumulator(fake.one, fake.batch, linger_ms=60_000)
    futures = [asyncio.ensure_future(acc.send(m, None)) for m in _msgs(2)]
    await asyncio.sleep(0)  # both joined; the leader lingers
    await acc.close()
    await asyncio.sleep(0)
    assert all(f.done() for f in futures) and len(fake.batches) == 1


async def test_a_leader_that_gives_up_does_not_take_the_others_with_it() -> None:
    fake = FakeSends()
    acc = SendAccumulator(fake.one, fake.batch, linger_ms=60_000)
    msgs = _msgs(3)
    sends = [asyncio.ensure_future(acc.send(m, None)) for m in msgs]
    await asyncio.sleep(0)
    sends[0].cancel()  # the leader
    results = await asyncio.gather(*sends[1:])
    assert [r.msg_id for r in results] == ["U1", "U2"]
    assert [[m.unique_key for m in b] for b in fake.batches] == [["U1", "U2"]]


# --- against orbitmq dev ---------------------------------------------------------------------------------


async def test_concurrent_sends_travel_as_one_batch_and_each_message_is_stored_as_sent(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pgroup, cgroup = names
    async with Producer(pgroup, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic)
        msgs = [Message(topic, f"body-{i}".encode(), tags=f"T{i % 3}", keys=[f"k{i}"]) for i in range(64)]
        results = await asyncio.gather(*(producer.send(m) for m in msgs))
    # The first send went at once on its own; the 63 that started while it was out share one queue
    # and consecutive offsets: one batch request stored them.
    batched, batched_msgs = results[1:], msgs[1:]
    assert len({r.message_queue for r in batched}) == 1
    offsets = [r.queue_offset for r in batched]
    assert offsets == list(range(offsets[0], offsets[0] + 63))
    assert [r.msg_id for r in results] == [m.unique_key for m in msgs]
    assert len({r.offset_msg_id for r in results}) == 64 and all("," not in r.offset_msg_id for r in results)
    stored = []
    async with PullConsumer(cgroup, namesrv_addr=namesrv) as consumer:
        offset = offsets[0]
        while len(stored) < 63:
            pulled = await consumer.pull(batched[0].message_queue, "*", offset, 32)
            assert pulled.messages, "the stored batch ended early"
            stored += pulled.messages
            offset = pulled.next_begin_offset
    assert [(m.body, m.tags, m.keys, m.unique_key) for m in stored[:63]] == \
        [(m.body, m.tags, m.keys, m.unique_key) for m in batched_msgs]


async def test_with_auto_batch_off_each_send_is_its_own_request(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pgroup, _ = names
    async with Producer(pgroup, namesrv_addr=namesrv, auto_batch=False) as producer:
        await create_topic(producer, topic)
        results = await asyncio.gather(*(producer.send(Message(topic, b"x")) for _ in range(16)))
    assert len({r.message_queue for r in results}) > 1  # round robin over the queues, one by one


@pytest.fixture
def small_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server whose brokers accept at most 16 KiB per message body (and per batch body)."""
    with running_dev(tmp_path_factory.mktemp("small-broker"), "maxMessageSize=16384\n") as dev:
        yield dev


async def test_a_batch_over_the_brokers_limit_falls_back_to_single_sends(
    small_broker: DevServer, names: tuple[str, str, str]
) -> None:
    topic, pgroup, _ = names
    async with Producer(pgroup, namesrv_addr=small_broker.namesrv) as producer:
        await create_topic(producer, topic)
        msgs = [Message(topic, bytes([i]) * 1000) for i in range(32)]  # ~33 KiB together, 1 KiB each
        results = await asyncio.gather(*(producer.send(m) for m in msgs))
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({(r.message_queue, r.queue_offset) for r in results}) == 32
