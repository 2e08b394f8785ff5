"""Recall, cancel, list and reschedule timed messages through `orbitmq dev`, the Python client
and `orbitmq admin`, with the server restarted between the cancel and the due time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from orbitmq.admin.cli import admin_group
from orbitmq.client import ConsumeResult, Message, MessageExt, Producer, PushConsumer
from tests.client.helpers import create_topic, wait_until
from tests.support.dev import start_dev

pytestmark = pytest.mark.timeout(120)


async def admin(*args: str) -> str:
    result = await asyncio.to_thread(CliRunner().invoke, admin_group, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def test_recalled_and_cancelled_timers_never_arrive_across_a_restart(tmp_path: Path) -> None:
    dev = start_dev(tmp_path)
    topic = "TimerCancelDev"
    try:
        async with Producer("PG_timer_dev", namesrv_addr=dev.namesrv) as producer:
            await create_topic(producer, topic, queues=1)
            due = int(time.time() * 1000) + 2_000
            recalled = await producer.send(Message(topic, b"recalled", deliver_time_ms=due))
            cancelled = await producer.send(Message(topic, b"cancelled", deliver_time_ms=due))
            sentinel = await producer.send(Message(topic, b"sentinel", deliver_time_ms=due + 500))
            assert recalled.recall_handle and sentinel.recall_handle
            assert await producer.recall_message(topic, recalled.recall_handle) == recalled.msg_id
            await admin("cancelTimerMessage", "-n", dev.namesrv, "-t", topic, "-i", cancelled.msg_id)
    finally:
        dev.stop()
    dev = start_dev(tmp_path)
    arrived: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        arrived.extend(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    try:
        listed = await admin("listTimerMessages", "-n", dev.namesrv, "-t", topic)
        consumer = PushConsumer("CG_timer_dev", namesrv_addr=dev.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            # Timers arrive in time order: once the later sentinel is here, the others would be too.
            await wait_until(lambda: b"sentinel" in arrived, timeout=30)
        finally:
            await consumer.shutdown()
        assert arrived == [b"sentinel"]
        assert cancelled.msg_id not in listed and recalled.msg_id not in listed
    finally:
        dev.stop()


async def test_admin_lists_and_reschedules_pending_timers(tmp_path: Path) -> None:
    dev = start_dev(tmp_path)
    topic = "TimerRescheduleDev"
    arrived: list[bytes] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        arrived.extend(m.body for m in msgs)
        return ConsumeResult.CONSUME_SUCCESS

    try:
        async with Producer("PG_timer_dev2", namesrv_addr=dev.namesrv) as producer:
            await create_topic(producer, topic, queues=1)
            base = int(time.time() * 1000)
            late = await producer.send(Message(topic, b"late", deliver_time_ms=base + 50_000))
            soon = await producer.send(Message(topic, b"soon", deliver_time_ms=base + 40_000))
            listed = await admin("listTimerMessages", "-n", dev.namesrv, "-t", topic)
            assert listed.index(soon.msg_id) < listed.index(late.msg_id)
            await admin("rescheduleTimerMessage", "-n", dev.namesrv, "-t", topic, "-i", late.msg_id,
                        "-d", str(int(time.time() * 1000) + 300))
            consumer = PushConsumer("CG_timer_dev2", namesrv_addr=dev.namesrv,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            consumer.subscribe(topic, "*")
            consumer.register_listener(listener)
            await consumer.start()
            try:
                await wait_until(lambda: arrived == [b"late"], timeout=20)
            finally:
                await consumer.shutdown()
            listed = await admin("listTimerMessages", "-n", dev.namesrv, "-t", topic)
            assert soon.msg_id in listed and late.msg_id not in listed
            missing = await asyncio.to_thread(
                CliRunner().invoke, admin_group,
                ["cancelTimerMessage", "-n", dev.namesrv, "-t", topic, "-i", late.msg_id],
            )
            assert missing.exit_code == 1 and "no pending timed message" in missing.output
    finally:
        dev.stop()
