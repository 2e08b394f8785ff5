"""Batch and streaming reads against a real `orbitmq dev` and a real local Spark."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import DevCluster, Sent

pytestmark = pytest.mark.spark


def _read(spark: Any, dev: DevCluster, topic: str, **options: str) -> Any:
    reader = spark.read.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_of_a_known_set_returns_exactly_those_rows(spark: Any, dev: DevCluster, produce: Any) -> None:
    topic = dev.new_topic(queues=4)
    sent = produce(topic, [f"order-{i}".encode() for i in range(300)], tags="TagA", keys="k1 k2", batch=40)
    df = _read(spark, dev, topic)
    assert df.rdd.getNumPartitions() == 4  # one input partition per queue
    rows = df.collect()
    got = sorted((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in rows)
    assert got == sorted(sent)
    first = rows[0]
    assert first.topic == topic and first.tags == "TagA" and first.keys == "k1 k2"
    assert first.msgId and first.reconsumeTimes == 0
    assert first.storeTimestamp >= first.bornTimestamp
    assert len({r.msgId for r in rows}) == 300


def test_batch_read_honours_offset_ranges_and_store_time_bounds(spark: Any, dev: DevCluster, produce: Any) -> None:
    topic = dev.new_topic(queues=1)
    early = produce(topic, [b"early-%d" % i for i in range(20)])
    time.sleep(0.05)  # store times are milliseconds: make the boundary unambiguous
    cut_ms = int(time.time() * 1000)
    time.sleep(0.05)
    late = produce(topic, [b"late-%d" % i for i in range(10)])
    broker = early[0][0]
    ranged = _read(spark, dev, topic, startingOffsets=f'{{"{topic}": {{"{broker}:0": 5}}}}',
                   endingOffsets=f'{{"{topic}": {{"{broker}:0": 8}}}}')
    assert sorted(r.queueOffset for r in ranged.collect()) == [5, 6, 7]
    after = _read(spark, dev, topic, startingTimestamp=str(cut_ms))
    assert sorted(bytes(r.body) for r in after.collect()) == sorted(s[3] for s in late)
    before = _read(spark, dev, topic, endingTimestamp=str(cut_ms))
    assert before.count() == len(early)


def test_tag_subexpression_keeps_only_matching_messages(spark: Any, dev: DevCluster, produce: Any) -> None:
    topic = dev.new_topic(queues=2)
    produce(topic, [b"a%d" % i for i in range(30)], tags="TagA")
    produce(topic, [b"b%d" % i for i in range(30)], tags="TagB")
    df = _read(spark, dev, topic, subExpression="TagB", includeProperties="false")
    assert sorted(bytes(r.body) for r in df.select("body").collect()) == sorted(b"b%d" % i for i in range(30))


def test_streaming_read_writes_every_message_exactly_once_across_a_restart(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path
) -> None:
    topic = dev.new_topic(queues=3)
    sent: list[Sent] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_producing() -> None:
        n = 0
        try:
            while not stop.is_set():
                sent.extend(produce(topic, [b"m-%d" % (n + i) for i in range(30)], batch=10))
                n += 30
                time.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - handed to the test thread, which fails on it
            failures.append(exc)

    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start() -> Any:
        return (spark.readStream.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
                .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "120").load()
                .selectExpr("brokerName", "queueId", "queueOffset", "body")
                .writeStream.format("parquet").option("path", str(out))
                .option("checkpointLocation", str(checkpoint)))

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    query = start().trigger(processingTime="200 milliseconds").start()
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress is None or query.lastProgress["batchId"] < 3) and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
        assert query.lastProgress is not None and query.lastProgress["batchId"] >= 3
    finally:
        query.stop()
    time.sleep(0.5)  # keep writing while the query is down
    stop.set()
    producer.join(30)
    assert not failures, failures
    restarted = start().trigger(availableNow=True).start()
    restarted.awaitTermination(120)
    assert restarted.exception() is None
    rows = spark.read.parquet(str(out)).collect()
    counts = Counter((r.brokerName, r.queueId, r.queueOffset) for r in rows)
    assert [k for k, n in counts.items() if n > 1] == []  # no duplicates
    assert sorted((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in rows) == sorted(sent)
