"""Poison messages and dead letters, end to end against `orbitmq dev`.

Orderly retry policy (a poison message reaches the DLQ after N attempts and
its queue moves on in order), per-message retry choices of concurrent
listeners (a delay in ms served by the timer, give-up straight to the DLQ),
and the DLQ tools (browse with the error text, dry-run, resend twice stores
once, export), including a broker killed and restarted between two resends.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from orbitmq.admin import dlq
from orbitmq.admin.api import AdminClient
from orbitmq.client import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyResult,
    ConsumeResult,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from orbitmq.common import properties as mc
from orbitmq.errors import OrbitMQError
from tests.client.helpers import create_topic, wait_until
from tests.support.dev import start_dev, steady_port
from tests.support.procs import orbitmq_command

pytestmark = pytest.mark.timeout(120)

T = TypeVar("T")


async def dead_letters(namesrv: str, group: str, count: int, timeout: float = 30.0) -> list[dlq.DeadLetter]:
    """The group's dead letters once there are `count` of them (the DLQ route appears shortly after)."""
    deadline = time.monotonic() + timeout
    async with AdminClient([namesrv]) as admin:
        while True:
            try:
                letters = await dlq.browse(admin, group)
            except OrbitMQError:
                letters = []
            if len(letters) >= count or time.monotonic() > deadline:
                return letters
            await asyncio.sleep(0.1)


async def admin_cli(namesrv: str, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *orbitmq_command("admin", *args, "-n", namesrv),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def copies_in(namesrv: str, topic: str) -> list[MessageExt]:
    """Records of `topic` that are resent dead letters."""
    async with AdminClient([namesrv]) as admin:
        records = await dlq._read_all(admin, topic)
    return [m for _, m in records if mc.ORBITMQ_DLQ_ORIGIN in m.properties]


async def consume(
    namesrv: str, names: tuple[str, str, str], listener: Callable[..., Any], messages: list[Message],
    until: Callable[[], Awaitable[T]], *, queues: int = 1, orderly: bool = False, **options: Any,
) -> T:
    """Send `messages` to a new topic, consume it from the start with `listener` and return `until()`."""
    topic, pg, cg = names
    consumer = PushConsumer(cg, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                            **options)
    consumer.subscribe(topic, "*")
    if orderly:
        consumer.register_orderly_listener(listener)
    else:
        consumer.register_listener(listener)
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=queues)
        for msg in messages:
            await producer.send(msg)
        await consumer.start()
        try:
            return await until()
        finally:
            await consumer.shutdown()


def condition(predicate: Callable[[], bool]) -> Callable[[], Awaitable[None]]:
    return lambda: wait_until(predicate, timeout=30)


async def test_orderly_poison_message_goes_to_the_dlq_after_n_attempts_and_the_queue_moves_on_in_order(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, _, cg = names
    consumed: list[str] = []
    attempts: dict[str, int] = {}

    def listener(msgs: list[MessageExt]) -> ConsumeOrderlyResult:
        for m in msgs:
            body = m.body.decode()
            attempts[body] = attempts.get(body, 0) + 1
            if body == "m3":
                raise ValueError("cannot parse m3")
            consumed.append(body)
        return ConsumeOrderlyResult.SUCCESS

    await consume(namesrv, names, listener, [Message(topic, f"m{i}".encode()) for i in range(10)],
                  condition(lambda: len(set(consumed)) == 9), orderly=True,
                  orderly_max_attempts=3, orderly_backoff_ms=50, orderly_backoff_max_ms=200)
    assert list(dict.fromkeys(consumed)) == [f"m{i}" for i in range(10) if i != 3]
    assert attempts["m3"] == 3
    letters = await dead_letters(namesrv, cg, 1)
    assert len(letters) == 1
    letter = letters[0]
    assert letter.msg.body == b"m3"
    assert letter.original_topic == topic
    assert letter.attempts == 3
    assert "ValueError: cannot parse m3" in letter.error


async def test_orderly_listener_may_send_a_batch_to_the_dlq_at_once(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, _, cg = names
    consumed: list[str] = []

    def listener(msgs: list[MessageExt], context: ConsumeOrderlyContext) -> ConsumeOrderlyResult:
        if msgs[0].body == b"bad":
            context.send_to_dlq = True
            return ConsumeOrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        consumed.extend(m.body.decode() for m in msgs)
        return ConsumeOrderlyResult.SUCCESS

    # Without a policy the default (RocketMQ's: retry forever) would keep "bad" at the head.
    await consume(namesrv, names, listener, [Message(topic, body.encode()) for body in ("a", "bad", "b")],
                  condition(lambda: "b" in consumed), orderly=True)
    assert consumed == ["a", "b"]
    letters = await dead_letters(namesrv, cg, 1)
    assert [d.msg.body for d in letters] == [b"bad"]
    assert letters[0].attempts == 1


async def test_concurrent_listener_delay_in_ms_is_served_by_the_timer(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic = names[0]
    seen: list[float] = []

    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        seen.append(time.monotonic())
        if len(seen) == 1:
            context.next_delay_ms = 2_000
            return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.CONSUME_SUCCESS

    await consume(namesrv, names, listener, [Message(topic, b"later")], condition(lambda: len(seen) >= 2))
    waited = seen[1] - seen[0]
    # Asked for 2 s: not earlier; and well before the nearest delay level (5 s) or the broker's
    # default first retry (level 3, 10 s) that a send-back without the timer would take.
    assert 1.9 <= waited < 4.8, waited


async def test_concurrent_listener_gives_up_on_one_message_straight_to_the_dlq(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, _, cg = names
    deliveries: list[bytes] = []

    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        for m in msgs:
            deliveries.append(m.body)
            if m.body == b"hopeless":
                context.give_up(m)
        return ConsumeResult.CONSUME_SUCCESS

    letters = await consume(namesrv, names, listener, [Message(topic, b"fine"), Message(topic, b"hopeless")],
                            lambda: dead_letters(namesrv, cg, 1), queues=2)
    assert [d.msg.body for d in letters] == [b"hopeless"]
    assert letters[0].error == "listener gave up on it"
    assert letters[0].original_topic == topic
    assert deliveries.count(b"hopeless") == 1  # never retried


async def poison_to_dlq(namesrv: str, topic: str, pg: str, cg: str, bodies: list[str]) -> None:
    """Send `bodies` (key = body) and let a consumer that raises send every one to the DLQ."""
    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        context.send_to_dlq = True
        raise RuntimeError(f"boom on {msgs[0].body.decode()}")

    letters = await consume(namesrv, (topic, pg, cg), listener,
                            [Message(topic, body.encode(), keys=body) for body in bodies],
                            lambda: dead_letters(namesrv, cg, len(bodies)), queues=2)
    assert sorted(d.msg.body.decode() for d in letters) == sorted(bodies)


async def test_dlq_tools_browse_dry_run_resend_twice_and_export(
    namesrv: str, names: tuple[str, str, str], tmp_path: Path
) -> None:
    topic, pg, cg = names
    await poison_to_dlq(namesrv, topic, pg, cg, ["d1", "d2", "d3"])

    code, out, _ = await admin_cli(namesrv, "queryDlq", "-g", cg)
    assert code == 0
    assert "RuntimeError: boom on d1" in out and "3 dead letter(s)" in out

    code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", cg, "-k", "d2", "--dry-run")
    assert (code, out.strip()) == (0, "matched 1, would resend 1, skipped 0 (resent before)")
    assert await copies_in(namesrv, topic) == []

    code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", cg, "-s", "KEYS IN ('d1', 'd2')")
    assert (code, out.strip()) == (0, "matched 2, resent 2, skipped 0 (resent before)")
    code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", cg)
    assert (code, out.strip()) == (0, "matched 3, resent 1, skipped 2 (resent before)")
    code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", cg)
    assert (code, out.strip()) == (0, "matched 3, resent 0, skipped 3 (resent before)")
    copies = await copies_in(namesrv, topic)
    assert sorted(m.body for m in copies) == [b"d1", b"d2", b"d3"]
    assert all(mc.ORBITMQ_LAST_ERROR not in m.properties and m.keys == [m.body.decode()] for m in copies)

    target = tmp_path / "dlq.jsonl"
    code, out, _ = await admin_cli(namesrv, "exportDlq", "-g", cg, "-k", "d3", "-o", str(target))
    assert code == 0 and "exported 1" in out
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row["body"], row["originalTopic"], row["error"], row["resent"]) == (
        "d3", topic, "RuntimeError: boom on d3", True)
    assert row["attempts"] == 1 and row["keys"] == ["d3"] and row["deadTimestamp"] >= row["bornTimestamp"]


async def test_dlq_commands_refuse_bad_input_with_exit_code_2(namesrv: str) -> None:
    code, _, err = await admin_cli(namesrv, "resendDlq", "-g", "G1", "-s", "a >")
    assert code == 2 and "-s" in err
    code, _, err = await admin_cli(namesrv, "queryDlq", "-g", "G1", "-b", "yesterday")
    assert code == 2 and "bad time" in err
    code, _, err = await admin_cli(namesrv, "exportDlq", "-g", "G1", "-o", "/nonexistent-dir/x.jsonl")
    assert code == 2 and "cannot write" in err
    code, _, err = await admin_cli(namesrv, "queryDlq", "-g", "G1", "-b", "2000", "-e", "1000")
    assert code == 2 and "time range" in err


async def test_resend_is_idempotent_across_a_broker_restart(tmp_path: Path) -> None:
    # Ports below the ephemeral range: no client connection takes them while the broker is down.
    ports = {"namesrv_port": steady_port(), "broker_port": steady_port()}
    server = start_dev(tmp_path, **ports)
    namesrv = server.namesrv
    try:
        await poison_to_dlq(namesrv, "RestartDlqTopic", "rdlq_pg", "rdlq_cg", ["r1", "r2"])
        code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", "rdlq_cg", "-i", "missing-id")
        assert (code, out.strip()) == (0, "matched 0, resent 0, skipped 0 (resent before)")
        code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", "rdlq_cg")
        assert (code, out.strip()) == (0, "matched 2, resent 2, skipped 0 (resent before)")

        server.process.kill()
        server = start_dev(tmp_path, **ports)

        letters = await dead_letters(namesrv, "rdlq_cg", 2)
        assert all(d.resent and d.error.startswith("RuntimeError: boom on") for d in letters)
        code, out, _ = await admin_cli(namesrv, "resendDlq", "-g", "rdlq_cg")
        assert (code, out.strip()) == (0, "matched 2, resent 0, skipped 2 (resent before)")
        assert sorted(m.body for m in await copies_in(namesrv, "RestartDlqTopic")) == [b"r1", b"r2"]
    finally:
        server.stop()


async def test_resend_skips_a_copy_already_in_the_target_even_without_its_marker(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """A resend that stopped between its send and its marker: the next one finds the copy by UNIQ_KEY."""
    topic, pg, cg = names
    await poison_to_dlq(namesrv, topic, pg, cg, ["u1"])
    async with AdminClient([namesrv]) as admin:
        (letter,) = await dlq.browse(admin, cg)
        addr, queue = await admin.pick_write_queue(topic)
        await admin.send_with_properties(addr, queue, b"u1", dlq.resend_properties(cg, letter))

        async def report() -> dlq.ResendReport:
            return await dlq.resend(admin, cg, dlq.Selection())

        # The index is built just after the store; wait until the copy is findable.
        uniq = dlq.resend_unique_key(cg, letter.original_id)
        await wait_until_async(lambda: admin.query_message(addr, topic, uniq, unique_key=True))
        result = await report()
    assert (result.matched, result.resent, result.skipped) == (1, 0, 1)
    assert len(await copies_in(namesrv, topic)) == 1


async def wait_until_async(probe, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met")
        await asyncio.sleep(0.05)


async def test_ack_index_retries_only_the_messages_after_it(namesrv: str, names: tuple[str, str, str]) -> None:
    topic = names[0]
    calls: list[list[bytes]] = []

    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        calls.append([m.body for m in msgs])
        if len(calls) == 1:
            context.ack_index = 0  # only the first one is done
            context.next_delay_ms = 0  # the rest at once
        return ConsumeResult.CONSUME_SUCCESS

    await consume(namesrv, names, listener, [Message(topic, body) for body in (b"a1", b"a2", b"a3")],
                  condition(lambda: sum(len(c) for c in calls) >= 5), consume_message_batch_max_size=3)
    assert calls[0] == [b"a1", b"a2", b"a3"]
    assert sorted(b for c in calls[1:] for b in c) == [b"a2", b"a3"]


async def test_the_dead_letter_shows_the_error_of_its_last_attempt(namesrv: str, names: tuple[str, str, str]) -> None:
    topic, _, cg = names
    calls: list[int] = []

    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        calls.append(msgs[0].reconsume_times)
        if len(calls) == 1:
            context.next_delay_ms = 0
            raise KeyError("first attempt")
        context.delay_level_when_next_consume = -1  # RocketMQ's way of giving up
        return ConsumeResult.RECONSUME_LATER

    letters = await consume(namesrv, names, listener, [Message(topic, b"twice")],
                            lambda: dead_letters(namesrv, cg, 1))
    assert calls == [0, 1]
    assert [(d.error, d.attempts) for d in letters] == [("listener gave up on it", 2)]


async def test_orderly_without_auto_commit_a_rollback_consumes_the_uncommitted_messages_again(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic = names[0]
    calls: list[bytes] = []

    def listener(msgs: list[MessageExt], context: ConsumeOrderlyContext) -> ConsumeOrderlyResult:
        calls.extend(m.body for m in msgs)
        context.auto_commit = False
        context.suspend_current_queue_time_millis = 10
        if len(calls) == 2:
            return ConsumeOrderlyResult.ROLLBACK  # "a" was consumed but not committed: both come again
        return ConsumeOrderlyResult.COMMIT if len(calls) >= 4 else ConsumeOrderlyResult.SUCCESS

    await consume(namesrv, names, listener, [Message(topic, b"a"), Message(topic, b"b")],
                  condition(lambda: len(calls) >= 4), orderly=True)
    assert calls[:4] == [b"a", b"b", b"a", b"b"]
