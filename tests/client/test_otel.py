"""OpenTelemetry tracing: one trace from the producer through the broker to the consumer.

Spans go to the SDK's in-memory exporter through a provider given to OrbitMQ alone
(`otel.set_tracer_provider`), so the rest of the suite runs untraced.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.client import (
    ConsumeResult,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PushConsumer,
    otel,
)
from orbitmq.common.pull import PullStatus
from tests.client.helpers import Collector, create_topic, wait_until

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.support.otel import ids, memory_tracing

pytestmark = pytest.mark.timeout(90)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def traceparent_of(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def push_consumer(namesrv: str, group: str, topic: str, listener: Any, **options: Any) -> PushConsumer:
    c = PushConsumer(group, namesrv_addr=namesrv, instance_name=f"otel-{group}",
                     consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options)
    c.subscribe(topic, "*")
    c.register_listener(listener)
    return c


async def pull_all(consumer: PullConsumer, topic: str, expected: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    offsets: dict[Any, int] = {}
    deadline = asyncio.get_running_loop().time() + 20
    while len(got) < expected:
        assert asyncio.get_running_loop().time() < deadline, f"pulled {len(got)} of {expected}"
        for mq in await consumer.fetch_subscribe_message_queues(topic):
            result = await consumer.pull(mq, "*", offsets.get(mq, 0), 32)
            if result.status is PullStatus.FOUND:
                got += result.messages
                offsets[mq] = result.next_begin_offset
    return got


async def test_a_single_send_and_its_push_consumption_are_one_trace(
    namesrv: str, names: tuple[str, str, str], spans: InMemorySpanExporter
) -> None:
    topic, pg, cg = names
    seen_in_listener: list[tuple[int, int]] = []

    def collector_with_context(msgs: list[MessageExt]) -> ConsumeResult:
        # A sync listener runs on a worker thread, inside the process span.
        ctx = trace.get_current_span().get_span_context()
        seen_in_listener.append((ctx.trace_id, ctx.span_id))
        return collector(msgs)

    collector = Collector()
    async with Producer(pg, namesrv_addr=namesrv, auto_batch=False) as producer:
        await create_topic(producer, topic, queues=2)
        spans.clear()
        result = await producer.send(Message(topic, b"hello", tags="TagA", keys=["order-1"]))
        consumer = push_consumer(namesrv, cg, topic, collector_with_context)
        await consumer.start()
        try:
            await wait_until(lambda: len(collector.msgs) == 1)
            await wait_until(lambda: len(named(spans, f"process {topic}")) == 1)
        finally:
            await consumer.shutdown()
    (send,) = named(spans, f"send {topic}")
    assert send.kind is SpanKind.PRODUCER
    attrs = dict(send.attributes or {})
    assert attrs["messaging.system"] == "rocketmq"
    assert attrs["messaging.operation.type"] == "send"
    assert attrs["messaging.destination.name"] == topic
    assert attrs["messaging.rocketmq.client_group"] == pg
    assert attrs["messaging.message.id"] == result.msg_id
    assert attrs["messaging.rocketmq.message.tag"] == "TagA"
    assert attrs["messaging.rocketmq.message.keys"] == ("order-1",)
    assert attrs["server.address"] == "127.0.0.1" and isinstance(attrs["server.port"], int)
    (msg,) = collector.msgs
    assert msg.properties["traceparent"] == traceparent_of(send)  # carried through the broker's store
    (process,) = named(spans, f"process {topic}")
    assert process.kind is SpanKind.CONSUMER
    assert process.parent is not None and (process.parent.trace_id, process.parent.span_id) == ids(send)
    assert [(link.context.trace_id, link.context.span_id) for link in process.links] == [ids(send)]
    assert seen_in_listener == [ids(process)]
    pattrs = dict(process.attributes or {})
    assert pattrs["messaging.operation.type"] == "process"
    assert pattrs["messaging.rocketmq.client_group"] == cg
    assert pattrs["messaging.message.id"] == result.msg_id


async def test_natural_batching_keeps_one_trace_per_message_and_links_the_batch(
    namesrv: str, names: tuple[str, str, str], spans: InMemorySpanExporter
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv, linger_ms=50) as producer:
        await create_topic(producer, topic, queues=1)
        spans.clear()
        results = await asyncio.gather(*(producer.send(Message(topic, f"m{i}".encode())) for i in range(5)))
        sends = [s for s in named(spans, f"send {topic}") if s.kind is SpanKind.PRODUCER]
        (batch,) = [s for s in named(spans, f"send {topic}") if s.kind is SpanKind.CLIENT]
        assert len(sends) == 5
        assert dict(batch.attributes or {})["messaging.batch.message_count"] == 5
        assert {(link.context.trace_id, link.context.span_id) for link in batch.links} == {ids(s) for s in sends}
        assert {dict(s.attributes or {})["messaging.message.id"] for s in sends} == {r.msg_id for r in results}
        async with PullConsumer(cg, namesrv_addr=namesrv, instance_name=f"otel-{cg}") as consumer:
            msgs = await pull_all(consumer, topic, 5)
            for msg in msgs:
                with otel.processing([msg], cg):
                    pass
    by_id = {dict(s.attributes or {})["messaging.message.id"]: s for s in sends}
    receives = named(spans, f"receive {topic}")
    assert receives and all(s.kind is SpanKind.CLIENT for s in receives)
    linked = {(link.context.trace_id, link.context.span_id) for s in receives for link in s.links}
    assert linked == {ids(s) for s in sends}
    for msg in msgs:
        assert msg.properties["traceparent"] == traceparent_of(by_id[msg.msg_id])
    processes = named(spans, f"process {topic}")
    assert len(processes) == 5
    assert {(p.parent.trace_id, p.parent.span_id) for p in processes if p.parent} == {ids(s) for s in sends}


async def test_an_explicit_batch_gets_create_spans_and_a_linked_send(
    namesrv: str, names: tuple[str, str, str], spans: InMemorySpanExporter
) -> None:
    topic, pg, cg = names
    collector = Collector()
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        spans.clear()
        await producer.send([Message(topic, f"b{i}".encode()) for i in range(3)])
        consumer = push_consumer(namesrv, cg, topic, collector, consume_message_batch_max_size=3,
                                 pull_batch_size=3)
        await consumer.start()
        try:
            await wait_until(lambda: len(collector.msgs) == 3)
            await wait_until(lambda: len(named(spans, f"process {topic}")) >= 1)
        finally:
            await consumer.shutdown()
    creates = named(spans, f"create {topic}")
    (send,) = named(spans, f"send {topic}")
    assert len(creates) == 3 and all(c.kind is SpanKind.PRODUCER for c in creates)
    assert send.kind is SpanKind.CLIENT
    assert dict(send.attributes or {})["messaging.batch.message_count"] == 3
    assert {(link.context.trace_id, link.context.span_id) for link in send.links} == {ids(c) for c in creates}
    # Several messages in one listener call: a process span of its own, linked to each message's context.
    linked = {(link.context.trace_id, link.context.span_id)
              for p in named(spans, f"process {topic}") for link in p.links}
    assert linked == {ids(c) for c in creates}


async def test_a_oneway_send_and_a_lite_pull_poll_are_linked(
    namesrv: str, names: tuple[str, str, str], spans: InMemorySpanExporter
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv, auto_batch=False) as producer:
        await create_topic(producer, topic, queues=1)
        spans.clear()
        await producer.send_oneway(Message(topic, b"lite"))
    (send,) = named(spans, f"send {topic}")
    consumer = LitePullConsumer(cg, namesrv_addr=namesrv, instance_name=f"otel-{cg}",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    await consumer.start()
    try:
        got: list[MessageExt] = []
        while not got:
            got = await consumer.poll(timeout=20)
    finally:
        await consumer.shutdown()
    (receive,) = named(spans, f"receive {topic}")
    assert [(link.context.trace_id, link.context.span_id) for link in receive.links] == [ids(send)]
    assert dict(receive.attributes or {})["messaging.batch.message_count"] == 1


async def test_untraced_messages_carry_no_context_and_their_consumption_starts_a_new_trace(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    collector = Collector()
    async with Producer(pg, namesrv_addr=namesrv) as producer:  # no tracer provider: tracing is off
        await create_topic(producer, topic, queues=1)
        assert otel.tracer() is None
        await producer.send(Message(topic, b"plain"))
    consumer = push_consumer(namesrv, cg, topic, collector)
    with memory_tracing() as exporter:
        try:
            await consumer.start()
            await wait_until(lambda: len(collector.msgs) == 1)
            await wait_until(lambda: len(named(exporter, f"process {topic}")) == 1)
        finally:
            await consumer.shutdown()
    (msg,) = collector.msgs
    assert "traceparent" not in msg.properties and "tracestate" not in msg.properties
    (process,) = named(exporter, f"process {topic}")
    assert process.parent is None and not process.links


async def test_without_the_api_nothing_is_added(monkeypatch: pytest.MonkeyPatch, spans: InMemorySpanExporter,
                                                namesrv: str, names: tuple[str, str, str]) -> None:
    topic, pg, _ = names
    monkeypatch.setattr(otel, "INSTALLED", False)  # as when opentelemetry-api is not importable
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        msg = Message(topic, b"x")
        await producer.send(msg)
    assert "traceparent" not in msg.properties
    assert spans.get_finished_spans() == ()


async def test_a_failed_consumption_marks_the_process_span_and_message_trace_still_works(
    namesrv: str, names: tuple[str, str, str], spans: InMemorySpanExporter
) -> None:
    from tests.tx.test_trace import _admin

    topic, pg, cg = names
    calls: list[MessageExt] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        calls.extend(msgs)
        return ConsumeResult.RECONSUME_LATER if len(calls) == 1 else ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv, enable_msg_trace=True) as producer:
        await create_topic(producer, topic, queues=1)
        spans.clear()
        result = await producer.send(Message(topic, b"twice", keys=["k"]))
        consumer = push_consumer(namesrv, cg, topic, listener, enable_msg_trace=True)
        await consumer.start()
        try:
            await wait_until(lambda: len(calls) == 2, timeout=40)
            await wait_until(lambda: len(named(spans, f"process {topic}")) == 2)
        finally:
            await consumer.shutdown()
    (send,) = named(spans, f"send {topic}")
    first, second = sorted(named(spans, f"process {topic}"), key=lambda s: s.start_time or 0)
    assert not first.status.is_ok and second.status.is_ok
    # The redelivered copy (through the retry topic) still carries the producer's context.
    assert {(p.parent.trace_id, p.parent.span_id) for p in (first, second) if p.parent} == {ids(send)}
    assert not any("RMQ_SYS_" in s.name or "%RETRY%" in s.name for s in spans.get_finished_spans())
    lines: list[str] = []
    for _ in range(40):
        code, out, _ = await _admin(namesrv, "queryMsgTraceById", "-i", result.msg_id)
        lines = out.splitlines()
        if code == 0 and any(line.startswith("Pub") for line in lines) and \
                sum(line.startswith("SubAfter") for line in lines) >= 2:
            break
        await asyncio.sleep(0.25)
    assert any(line.startswith("Pub") for line in lines)
    assert sum(line.startswith("SubAfter") for line in lines) >= 2


_LATER_PROVIDER = (
    "from opentelemetry import trace\n"
    "from opentelemetry.sdk.trace import TracerProvider\n"
    "from orbitmq.client import otel\n"
    "assert otel.tracer() is None\n"
    "trace.set_tracer_provider(TracerProvider())\n"
    "assert otel.tracer() is not None\n"
)
_NOT_INSTALLED = (
    "import sys\n"
    "sys.modules['opentelemetry'] = None  # as if the otel extra were not installed\n"
    "from orbitmq.client import Producer, PushConsumer, otel\n"
    "import orbitmq.client.lite_pull_consumer, orbitmq.client.pull_consumer, orbitmq.client.listener\n"
    "assert not otel.INSTALLED and otel.tracer() is None\n"
)


@pytest.mark.parametrize("script", [_LATER_PROVIDER, _NOT_INSTALLED], ids=["provider-set-later", "api-missing"])
def test_in_a_fresh_interpreter_tracing_follows_the_api_and_the_global_provider(script: str) -> None:
    """Off until the application sets its global provider, on after; off and importable without the API."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script + "print('ok')\n"], check=False, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
