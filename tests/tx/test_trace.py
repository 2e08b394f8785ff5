"""Message trace: the record format, and a message's send and consumption read back with queryMsgTraceById."""

from __future__ import annotations

import asyncio
import sys

import pytest

from orbitmq.client import Message, Producer, PushConsumer
from orbitmq.client.trace import (
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode,
    encode,
    trace_keys,
)
from tests.client.helpers import Collector, create_topic, wait_until

pytestmark = pytest.mark.timeout(60)


def test_send_record_has_java_field_order_and_reads_back() -> None:
    bean = TraceBean(msg_id="ID1", topic="T", tags="TagA", keys="k1 k2", store_host="10.0.0.1:10911",
                     body_length=5, offset_msg_id="OFF1")
    ctx = TraceContext(TraceType.PUB, 1700000000000, "PG", [bean], cost_ms=3)
    text = encode(ctx)
    assert text.split("\x01") == ["Pub", "1700000000000", "DefaultRegion", "PG", "T", "ID1", "TagA", "k1 k2",
                                  "10.0.0.1:10911", "5", "3", "0", "OFF1", "true\x02"]
    (back,) = decode(text)
    assert back.beans[0] == bean and back.cost_ms == 3 and back.success and back.group == "PG"
    assert trace_keys(ctx) == {"ID1", "k1", "k2"}


def test_consume_records_write_null_for_missing_keys_and_keep_their_request_id() -> None:
    beans = [TraceBean(msg_id="A", retry_times=2), TraceBean(msg_id="B")]
    before = TraceContext(TraceType.SUB_BEFORE, 5, "CG", beans, request_id="R1")
    after = TraceContext(TraceType.SUB_AFTER, 9, "CG", beans, cost_ms=4, success=False, request_id="R1",
                         context_code=int(ConsumeReturnType.EXCEPTION))
    text = encode(before) + encode(after)
    assert text.split("\x02")[0].split("\x01") == ["SubBefore", "5", "DefaultRegion", "CG", "R1", "A", "2", "null"]
    assert text.split("\x02")[2].split("\x01") == ["SubAfter", "R1", "A", "4", "false", "null", "2", "9", "CG"]
    records = decode(text)
    assert [(r.trace_type, r.beans[0].msg_id) for r in records] == [
        (TraceType.SUB_BEFORE, "A"), (TraceType.SUB_BEFORE, "B"), (TraceType.SUB_AFTER, "A"), (TraceType.SUB_AFTER, "B")]
    assert records[0].beans[0].keys is None and records[0].beans[0].retry_times == 2
    assert records[2].context_code == ConsumeReturnType.EXCEPTION and not records[2].success


def test_records_of_unknown_types_or_cut_short_are_skipped() -> None:
    assert decode("Bogus\x01x\x02Pub\x01only\x02") == []
    end = TraceContext(TraceType.END_TRANSACTION, 1, "PG", [TraceBean(
        msg_id="M", topic="T", msg_type=MessageType.TRANS_HALF, transaction_id="M",
        transaction_state="COMMIT_MESSAGE", from_transaction_check=True)])
    (back,) = decode(encode(end))
    assert back.beans[0].transaction_state == "COMMIT_MESSAGE" and back.beans[0].from_transaction_check


async def _admin(namesrv: str, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orbitmq", "admin", *args, "-n", namesrv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("own_topic", [False, True], ids=["system-trace-topic", "user-trace-topic"])
async def test_trace_of_a_message_lists_its_send_and_its_consumption(
    namesrv: str, names: tuple[str, str, str], own_topic: bool
) -> None:
    topic, pg, cg = names
    trace_topic = f"{topic}_TRACE" if own_topic else None
    options = {"enable_msg_trace": True, "trace_topic": trace_topic}
    collector = Collector()
    async with Producer(pg, namesrv_addr=namesrv, instance_name=f"tp-{pg}", **options) as producer:  # type: ignore[arg-type]
        await create_topic(producer, topic, queues=1)
        if trace_topic:
            await create_topic(producer, trace_topic, queues=1)
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name=f"tc-{cg}",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options)  # type: ignore[arg-type]
        consumer.subscribe(topic, "*")
        consumer.register_listener(collector)
        await consumer.start()
        try:
            result = await producer.send(Message(topic, b"traced", tags="TagT", keys=["order-9"]))
            await wait_until(lambda: len(collector.msgs) == 1)
        finally:
            await consumer.shutdown()  # flushes the consumer's trace records
    args = ["queryMsgTraceById", "-i", result.msg_id] + (["-t", trace_topic] if trace_topic else [])
    lines: list[str] = []

    async def traced() -> bool:
        code, out, _ = await _admin(namesrv, *args)
        lines[:] = out.splitlines()
        return code == 0 and sum(line.startswith(("Pub", "SubBefore", "SubAfter")) for line in lines) == 3

    for _ in range(40):  # trace messages are indexed as soon as they are stored; allow for routes
        if await traced():
            break
        await asyncio.sleep(0.25)
    assert lines and lines[0].startswith("#Type")
    pub = next(line for line in lines if line.startswith("Pub"))
    before = next(line for line in lines if line.startswith("SubBefore"))
    after = next(line for line in lines if line.startswith("SubAfter"))
    assert pg in pub and "success" in pub and f"topic={topic}" in pub and result.offset_msg_id in pub
    assert cg in before and "retryTimes=0" in before
    assert cg in after and "success" in after
    assert [line.split()[0] for line in lines[1:]] == ["Pub", "SubBefore", "SubAfter"]


async def test_query_of_a_message_without_trace_fails_with_exit_code_one(namesrv: str) -> None:
    code, _, err = await _admin(namesrv, "queryMsgTraceById", "-i", "0" * 32)
    assert code == 1
    assert "no trace of message" in err


async def test_trace_of_a_transactional_message_shows_its_half_send_and_how_it_ended(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    from orbitmq.client import LocalTransactionState, TransactionProducer

    class Commits:
        def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

        def check_local_transaction(self, msg: object) -> LocalTransactionState:
            return LocalTransactionState.COMMIT_MESSAGE

    topic, pg, _ = names
    async with TransactionProducer(pg, Commits(), namesrv_addr=namesrv, enable_msg_trace=True) as producer:
        await create_topic(producer, topic, queues=1)
        result = await producer.send_message_in_transaction(Message(topic, b"tx"))
    lines: list[str] = []
    for _ in range(40):
        code, out, _ = await _admin(namesrv, "queryMsgTraceById", "-i", result.msg_id)
        lines = out.splitlines()
        if code == 0 and len(lines) == 3:
            break
        await asyncio.sleep(0.25)
    assert [line.split()[0] for line in lines[1:]] == ["Pub", "EndTransaction"]
    assert "COMMIT_MESSAGE" in lines[2] and "fromCheck=false" in lines[2]


class FakeTraceProducer:
    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def send(self, msg: Message) -> None:
        self.sent.append(msg)

    async def shutdown(self) -> None:
        self.stopped = True


async def test_dispatcher_batches_records_into_keyed_messages_and_counts_what_does_not_fit() -> None:
    from orbitmq.client.trace_dispatch import TraceDispatcher

    fake = FakeTraceProducer()
    groups: list[str] = []
    dispatcher = TraceDispatcher(lambda group: groups.append(group) or fake, "MyTrace", capacity=3,
                                 max_message_bytes=80)
    for i in range(5):
        bean = TraceBean(msg_id=f"ID{i}", topic="T", keys=f"k{i}")
        dispatcher.append(TraceContext(TraceType.PUB, 1, "PG", [bean]))
    assert dispatcher.dropped == 2  # the buffer holds 3; appending never waits
    assert await dispatcher.flush(5)
    await dispatcher.close()
    assert groups == ["_INNER_TRACE_PRODUCER-MyTrace"]  # one producer, made on the first batch
    assert fake.stopped
    assert all(m.topic == "MyTrace" for m in fake.sent)
    assert len(fake.sent) == 3  # an 80-byte message holds one record
    records = [r for m in fake.sent for r in decode(m.body.decode())]
    assert [r.beans[0].msg_id for r in records] == ["ID0", "ID1", "ID2"]
    for m in fake.sent:
        ids = {r.beans[0].msg_id for r in decode(m.body.decode())}
        assert ids | {f"k{i[2:]}" for i in ids} == set(m.keys)


async def test_closing_the_dispatcher_waits_for_a_batch_already_in_flight() -> None:
    from orbitmq.client.trace_dispatch import TraceDispatcher

    class SlowTraceProducer(FakeTraceProducer):
        def __init__(self) -> None:
            super().__init__()
            self.sending = asyncio.Event()
            self.release = asyncio.Event()

        async def send(self, msg: Message) -> None:
            self.sending.set()
            await self.release.wait()  # the batch has left the buffer but is not sent yet
            await super().send(msg)

    slow = SlowTraceProducer()
    dispatcher = TraceDispatcher(lambda group: slow, "MyTrace", linger_s=0)
    dispatcher.append(TraceContext(TraceType.SUB_BEFORE, 1, "CG", [TraceBean(msg_id="ID0", topic="T")]))
    await asyncio.wait_for(slow.sending.wait(), 5)
    closing = asyncio.ensure_future(dispatcher.close())
    # Runs after close() took its first step: a close that cancelled the batch in flight has done so by now.
    asyncio.get_running_loop().call_soon(slow.release.set)
    await asyncio.wait_for(closing, 5)
    assert [r.beans[0].msg_id for m in slow.sent for r in decode(m.body.decode())] == ["ID0"]
    assert dispatcher.dropped == 0
