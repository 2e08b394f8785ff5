"""Transactional messages against a real `orbitmq dev`: commit, rollback, checks, crashes, discards."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

from orbitmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    MessageQueue,
    PushConsumer,
    TransactionProducer,
)
from orbitmq.common import names as system_names
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.errors import MessageValidationError, NoPermission, OrbitMQError, QueryNotFound
from tests.client.helpers import Collector, create_topic, wait_until
from tests.support.dev import DevServer, start_dev
from tests.support.procs import eventually
from tests.support.waiting import until
from tests.tx.conftest import BROKER_CONF

pytestmark = pytest.mark.timeout(60)

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


class ScriptedListener:
    """Answers each message by its body: b"commit", b"rollback", b"unknown-then-commit", b"unknown"."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.checked: Counter[str] = Counter()

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        self.executed.append(msg.body.decode())
        return {b"commit": COMMIT, b"rollback": ROLLBACK}.get(msg.body, UNKNOW)

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked[msg.body.decode()] += 1
        return COMMIT if msg.body == b"unknown-then-commit" else UNKNOW


async def checks_settled(producer: TransactionProducer, topic: str) -> None:
    """Wait until the broker's check loop has passed every half message stored so far.

    Its progress is the offset of CID_RMQ_SYS_TRANS on the half queue; once
    that reaches the queue's end, each half message was committed, rolled
    back or given up, and no check can write to a real topic any more.
    """
    instance = producer.instance
    broker_name = (await producer.fetch_publish_message_queues(topic))[0].broker_name
    half = MessageQueue(system_names.TRANS_HALF_TOPIC, broker_name, 0)

    async def settled() -> bool:
        addr = await instance.find_master_addr(broker_name, topic)
        stored = await instance.api.get_max_offset(addr, half)
        try:
            passed = await instance.api.query_consumer_offset(addr, system_names.TRANS_CHECK_GROUP, half)
        except QueryNotFound:
            passed = 0
        return passed >= stored

    await until(settled, timeout=30)


async def all_consumed(producer: TransactionProducer, topic: str, collector: Collector) -> None:
    """Wait until `collector` got as many messages as `topic` holds (the sum of its queues' max offsets)."""
    queues = await producer.fetch_publish_message_queues(topic)

    async def caught_up() -> bool:
        stored = sum([await producer.max_offset(mq) for mq in queues])
        return len(collector.msgs) >= stored

    await until(caught_up, timeout=30)


def push_consumer(namesrv: str, group: str, topic: str, collector: Collector) -> PushConsumer:
    consumer = PushConsumer(group, namesrv_addr=namesrv, instance_name=f"c-{group}",
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    consumer.register_listener(collector)
    return consumer


async def test_committed_message_is_consumed_once_and_rolled_back_one_never(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    listener = ScriptedListener()
    collector = Collector()
    async with TransactionProducer(pg, listener, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        try:
            committed = await producer.send_message_in_transaction(Message(topic, b"commit"))
            rolled_back = await producer.send_message_in_transaction(Message(topic, b"rollback"))
            assert committed.local_transaction_state is COMMIT
            assert rolled_back.local_transaction_state is ROLLBACK
            await wait_until(lambda: len(collector.msgs) >= 1)
            # Once the check loop passed both, a resurrected rollback would be stored in the topic.
            await checks_settled(producer, topic)
            await all_consumed(producer, topic, collector)
        finally:
            await consumer.shutdown()
    assert [m.body for m in collector.msgs] == [b"commit"]
    msg = collector.msgs[0]
    assert msg.msg_id == committed.msg_id
    assert msg.transaction_type == 0x8  # stored as a committed transaction message
    assert msg.prepared_transaction_offset == parse_offset_msg_id(committed.offset_msg_id).commit_log_offset
    assert "TRAN_MSG" not in msg.properties and "REAL_TOPIC" not in msg.properties
    assert listener.checked == Counter()


async def test_unknown_transaction_is_checked_and_resolved_by_the_check_answer(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    listener = ScriptedListener()
    collector = Collector()
    async with TransactionProducer(pg, listener, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        try:
            result = await producer.send_message_in_transaction(Message(topic, b"unknown-then-commit"))
            assert result.local_transaction_state is UNKNOW
            await wait_until(lambda: len(collector.msgs) >= 1, timeout=15)
            await checks_settled(producer, topic)
            await all_consumed(producer, topic, collector)
        finally:
            await consumer.shutdown()
    assert [m.body for m in collector.msgs] == [b"unknown-then-commit"]
    assert collector.msgs[0].msg_id == result.msg_id
    assert listener.checked["unknown-then-commit"] == 1


async def test_transaction_left_unknown_is_given_up_after_the_maximum_checks(
    namesrv: str, names: tuple[str, str, str], dev_server: DevServer
) -> None:
    topic, pg, cg = names
    listener = ScriptedListener()
    collector = Collector()
    async with TransactionProducer(pg, listener, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        try:
            result = await producer.send_message_in_transaction(Message(topic, b"unknown"))
            await wait_until(lambda: any(result.msg_id in line and "discarded" in line
                                         for line in list(dev_server.output)), timeout=20)
            # Given up means never checked again: the loop passes it, and the checks sent before have come.
            await checks_settled(producer, topic)
            await wait_until(lambda: listener.checked["unknown"] >= 3, timeout=10)
            await all_consumed(producer, topic, collector)
        finally:
            await consumer.shutdown()
    assert listener.checked["unknown"] == 3  # transactionCheckMax in the test broker.conf
    assert collector.msgs == []


async def test_producer_that_crashed_mid_transaction_is_checked_through_another_of_its_group(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    listener = ScriptedListener()
    listener.check_local_transaction = _commit_all(listener)  # type: ignore[method-assign]
    collector = Collector()
    async with TransactionProducer(pg, listener, namesrv_addr=namesrv, instance_name="survivor") as survivor:
        await create_topic(survivor, topic, queues=2)
        await survivor.instance.send_heartbeat_to_all()
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.tx.crashing_producer", namesrv, topic, pg,
            stdout=asyncio.subprocess.PIPE, cwd=str(Path(__file__).resolve().parents[2]),
        )
        try:
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), 20)
            assert line.startswith(b"HALF "), line
            uniq = line.split()[1].decode()
            os.kill(child.pid, signal.SIGKILL)  # a crash before END_TRANSACTION
            await asyncio.wait_for(child.wait(), 10)
            await wait_until(lambda: len(collector.msgs) >= 1, timeout=20)
            await checks_settled(survivor, topic)
            await all_consumed(survivor, topic, collector)
        finally:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGKILL)
                await asyncio.wait_for(child.wait(), 10)
            await consumer.shutdown()
    assert [m.body for m in collector.msgs] == [b"from the crashed producer"]
    assert collector.msgs[0].msg_id == uniq
    assert listener.checked["from the crashed producer"] >= 1


def _commit_all(listener: ScriptedListener):  # type: ignore[no-untyped-def]
    def check(msg: MessageExt) -> LocalTransactionState:
        listener.checked[msg.body.decode()] += 1
        return COMMIT
    return check


async def test_delayed_transactional_message_is_refused_before_sending(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, _ = names
    async with TransactionProducer(pg, ScriptedListener(), namesrv_addr=namesrv) as producer:
        with pytest.raises(MessageValidationError, match="cannot be delayed"):
            await producer.send_message_in_transaction(Message(topic, b"x", delay_time_level=2))


async def test_broker_rejecting_transactions_answers_no_permission(tmp_path: Path) -> None:
    server = start_dev(tmp_path / "reject", "rejectTransactionMessage=true\n")
    try:
        listener = ScriptedListener()
        async with TransactionProducer("TXPG_reject", listener, namesrv_addr=server.namesrv) as producer:
            await create_topic(producer, "TX_reject", queues=1)
            with pytest.raises(NoPermission, match="transaction message is forbidden"):
                await producer.send_message_in_transaction(Message("TX_reject", b"commit"))
        assert listener.executed == []
    finally:
        server.stop()


def test_blocking_transaction_producer_commits_a_message_found_by_its_key(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    from orbitmq.client import sync

    topic, pg, _ = names
    with sync.TransactionProducer(pg, ScriptedListener(), namesrv_addr=namesrv, instance_name="sync-tx") as producer:
        result = producer.send_message_in_transaction(Message(topic, b"commit", keys=["order-7"]))
        found: list[MessageExt] = []

        def committed_is_indexed() -> bool:
            try:  # the auto-created topic reaches the NameServer a moment after the send
                found[:] = producer.query_message(topic, "order-7", 8, 0, 2**62)
            except OrbitMQError:
                return False
            return bool(found)

        eventually(committed_is_indexed, timeout=20)
    assert result.local_transaction_state is COMMIT
    assert [m.body for m in found] == [b"commit"]
    assert found[0].transaction_type == 0x8


async def test_end_transaction_is_validated_and_a_repeated_commit_changes_nothing(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    from orbitmq.remoting.codes import RequestCode
    from orbitmq.remoting.command import RemotingCommand

    topic, pg, cg = names
    listener = ScriptedListener()
    collector = Collector()
    async with TransactionProducer(pg, listener, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        result = await producer.send_message_in_transaction(Message(topic, b"unknown"))
        addr = await producer.instance.find_master_addr(result.message_queue.broker_name, topic)
        half_offset = parse_offset_msg_id(result.offset_msg_id).commit_log_offset

        async def end(group: str, table_offset: int, commit_log_offset: int) -> tuple[int, str | None]:
            fields = {"producerGroup": group, "tranStateTableOffset": str(table_offset),
                      "commitLogOffset": str(commit_log_offset), "commitOrRollback": "8", "msgId": result.msg_id}
            answer = await producer.instance.remoting.invoke(
                addr, RemotingCommand.request(RequestCode.END_TRANSACTION, fields), 5)
            return answer.code, answer.remark

        assert await end("someone-else", result.queue_offset, half_offset) == (1, "The producer group wrong")
        assert await end(pg, result.queue_offset + 7, half_offset) == (1, "The transaction state table offset wrong")
        assert await end(pg, result.queue_offset, 10**12) == (1, "Find prepared transaction message failed")
        assert await end(pg, result.queue_offset, half_offset) == (0, None)
        assert await end(pg, result.queue_offset, half_offset) == (0, None)  # already committed: nothing happens
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        try:
            await wait_until(lambda: len(collector.msgs) >= 1)
            await checks_settled(producer, topic)
            await all_consumed(producer, topic, collector)
        finally:
            await consumer.shutdown()
    assert [m.body for m in collector.msgs] == [b"unknown"]


async def test_half_messages_survive_a_broker_crash_and_resolved_ones_stay_resolved(tmp_path: Path) -> None:
    store = tmp_path / "crash"
    server = start_dev(store, BROKER_CONF)
    topic, pg, cg = "TX_crash", "TXPG_crash", "TXCG_crash"
    try:
        first = ScriptedListener()
        async with TransactionProducer(pg, first, namesrv_addr=server.namesrv) as producer:
            await create_topic(producer, topic, queues=1)
            await producer.send_message_in_transaction(Message(topic, b"commit"))
            await producer.send_message_in_transaction(Message(topic, b"unknown-then-commit"))
        server.process.kill()  # SIGKILL: no clean shutdown, no final offset flush
        server = start_dev(store, BROKER_CONF)
        second = ScriptedListener()
        collector = Collector()
        namesrv = server.namesrv
        async with TransactionProducer(pg, second, namesrv_addr=namesrv, instance_name="after-crash") as producer:
            await create_topic(producer, topic, queues=1)
            await producer.instance.send_heartbeat_to_all()
            consumer = push_consumer(namesrv, cg, topic, collector)
            await consumer.start()
            try:
                await wait_until(lambda: len(collector.msgs) >= 2, timeout=20)
                await checks_settled(producer, topic)
                await all_consumed(producer, topic, collector)
            finally:
                await consumer.shutdown()
    finally:
        server.stop()
    assert sorted(m.body for m in collector.msgs) == [b"commit", b"unknown-then-commit"]
    assert second.checked == Counter({"unknown-then-commit": 1})


async def test_a_message_with_its_own_check_immunity_is_checked_after_younger_ordinary_ones(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    order: list[str] = []

    class RecordsChecks(ScriptedListener):
        def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:  # type: ignore[override]
            order.append(msg.body.decode())
            return COMMIT

    collector = Collector()
    async with TransactionProducer(pg, RecordsChecks(), namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        patient = Message(topic, b"immune-for-4s", properties={"CHECK_IMMUNITY_TIME_IN_SECONDS": "4"})
        await producer.send_message_in_transaction(patient)
        await producer.send_message_in_transaction(Message(topic, b"ordinary"))
        consumer = push_consumer(namesrv, cg, topic, collector)
        await consumer.start()
        try:
            await wait_until(lambda: len(collector.msgs) >= 2, timeout=20)
        finally:
            await consumer.shutdown()
    assert order == ["ordinary", "immune-for-4s"]
    assert sorted(m.body for m in collector.msgs) == [b"immune-for-4s", b"ordinary"]
