"""OpenTelemetry through the Spark connector: a producer's trace continues past a Spark job.

Spark's Python workers are other processes (no tracer provider there), so the job test checks the
propagation the rows carry; the sink's and source's own spans are checked by running their task
code (`write_rows`, `read_range`) in this process.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.client import Message, MessageExt, Producer, PullConsumer, otel
from orbitmq.common.pull import PullStatus
from tests.spark.conftest import DevCluster

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("pyarrow")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.support.otel import ids

pytestmark = pytest.mark.timeout(180)


async def _send(namesrv: str, topic: str, bodies: list[bytes]) -> None:
    async with Producer("otel_spark_pg", namesrv_addr=namesrv, auto_batch=False) as producer:
        for body in bodies:
            await producer.send(Message(topic, body))


async def _consume(namesrv: str, topic: str, expected: int) -> list[MessageExt]:
    """Pull every message of `topic` and process each under a process span."""
    got: list[MessageExt] = []
    async with PullConsumer("otel_spark_cg", namesrv_addr=namesrv) as consumer:
        deadline = asyncio.get_running_loop().time() + 30
        while len(got) < expected:
            assert asyncio.get_running_loop().time() < deadline
            for mq in await consumer.fetch_subscribe_message_queues(topic):
                result = await consumer.pull(mq, "*", 0, 64)
                if result.status is PullStatus.FOUND:
                    got = [m for m in got if m.queue_id != mq.queue_id] + result.messages
    for msg in got:
        with otel.processing([msg], "otel_spark_cg"):
            pass
    return got


@pytest.mark.spark
def test_a_spark_job_from_topic_to_topic_continues_each_producers_trace(
    spark: Any, dev: DevCluster, spans: InMemorySpanExporter
) -> None:
    source, target = dev.new_topic(queues=1), dev.new_topic(queues=1)
    asyncio.run(_send(dev.namesrv, source, [b"a", b"b", b"c"]))
    sends = {ids(s) for s in spans.get_finished_spans() if s.name == f"send {source}"}
    assert len(sends) == 3
    (spark.read.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", source).load()
     .select("body", "properties")
     .write.format("orbitmq").mode("append").option("namesrvAddr", dev.namesrv).option("topic", target).save())
    msgs = asyncio.run(_consume(dev.namesrv, target, 3))
    assert sorted(m.body for m in msgs) == [b"a", b"b", b"c"]
    processes = [s for s in spans.get_finished_spans() if s.name == f"process {target}"]
    assert {(p.parent.trace_id, p.parent.span_id) for p in processes if p.parent} == sends


def test_the_sink_task_parents_rows_without_context_and_the_source_task_makes_a_receive_span(
    dev: DevCluster, spans: InMemorySpanExporter
) -> None:
    import pyarrow as pa

    from orbitmq.spark.offsets import QueueRef
    from orbitmq.spark.options import parse_sink_options, parse_source_options
    from orbitmq.spark.positions import QueueRange
    from orbitmq.spark.reading import read_range
    from orbitmq.spark.sink import write_rows

    topic = dev.new_topic(queues=1)
    upstream = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    batch = pa.RecordBatch.from_pydict(
        {"body": [b"own", b"plain"], "properties": [[("traceparent", upstream)], None]},
        schema=pa.schema([("body", pa.binary()), ("properties", pa.map_(pa.string(), pa.string()))]),
    )
    options = parse_sink_options({"namesrvaddr": dev.namesrv, "topic": topic})
    assert write_rows(options, iter([batch]), tags={"SPARK_BATCH_ID": "t"}) == 2
    (sink_span,) = [s for s in spans.get_finished_spans() if s.name == f"send {topic}"]
    assert sink_span.kind is SpanKind.PRODUCER
    assert dict(sink_span.attributes or {})["messaging.batch.message_count"] == 1

    source = parse_source_options({"namesrvaddr": dev.namesrv, "topic": topic}, streaming=False)
    rows = [row for rb in read_range(source, QueueRange(QueueRef(topic, dev_broker_name(dev, topic), 0), 0, 2))
            for row in rb.to_pylist()]
    by_body = {row["body"]: dict(row["properties"]) for row in rows}
    assert by_body[b"own"]["traceparent"] == upstream  # a row's own context passes through
    trace_id, span_id = ids(sink_span)
    assert by_body[b"plain"]["traceparent"].split("-")[1:3] == [f"{trace_id:032x}", f"{span_id:016x}"]
    (receive,) = [s for s in spans.get_finished_spans() if s.name == f"receive {topic}"]
    assert receive.kind is SpanKind.CLIENT
    assert dict(receive.attributes or {})["messaging.batch.message_count"] == 2


def dev_broker_name(dev: DevCluster, topic: str) -> str:
    from orbitmq.spark.cluster import Cluster
    from orbitmq.spark.options import ConnectionOptions

    with Cluster(ConnectionOptions(dev.namesrv)) as c:
        return c.route(topic).read_queues[0].broker_name
