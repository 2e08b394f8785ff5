"""Batch and streaming reads against a real `orbitmq dev` and a real local Spark."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import SPARK_WAIT_S, DevCluster, GroupProcess, Sent
from tests.support.procs import eventually

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
    per_queue = Counter((b, q) for b, q, _, _ in sent)
    split = _read(spark, dev, topic, maxRecordsPerPartition="50", includeProperties="false")
    assert split.rdd.getNumPartitions() == sum(-(-n // 50) for n in per_queue.values())
    assert sorted((r.brokerName, r.queueId, r.queueOffset) for r in split.collect()) == [s[:3] for s in sorted(sent)]


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


def test_tag_subexpression_keeps_only_matching_messages_with_signed_requests(spark: Any, dev: DevCluster, produce: Any) -> None:
    topic = dev.new_topic(queues=2)
    produce(topic, [b"a%d" % i for i in range(30)], tags="TagA")
    produce(topic, [b"b%d" % i for i in range(30)], tags="TagB")
    # The dev broker does not check signatures; this shows signed requests are still served.
    df = _read(spark, dev, topic, subExpression="TagB", includeProperties="false", accessKey="ak", secretKey="sk")
    assert sorted(bytes(r.body) for r in df.select("body").collect()) == sorted(b"b%d" % i for i in range(30))


class _Feeder:
    """Keeps sending numbered messages from a thread until stopped; remembers what was stored."""

    def __init__(self, produce: Any, topic: str) -> None:
        self.sent: list[Sent] = []
        self.failures: list[Exception] = []
        self._produce, self._topic = produce, topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        try:
            while not self._stop.is_set():
                self.sent.extend(self._produce(self._topic, [b"m-%d" % (n + i) for i in range(30)], batch=10))
                n += 30
                time.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - handed to the test thread, which fails on it
            self.failures.append(exc)

    def stop(self) -> list[Sent]:
        self._stop.set()
        self._thread.join(30)
        assert not self.failures, self.failures
        return self.sent


def _resume_and_check(spark: Any, dev: DevCluster, topic: str, out: Path, checkpoint: Path, sent: list[Sent]) -> None:
    """Restart the query from its checkpoint until caught up; the sink must hold every message once."""
    restarted = (spark.readStream.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
                 .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "500").load()
                 .selectExpr("brokerName", "queueId", "queueOffset", "body")
                 .writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    restarted.awaitTermination(SPARK_WAIT_S)
    assert restarted.exception() is None
    rows = spark.read.parquet(str(out)).collect()
    counts = Counter((r.brokerName, r.queueId, r.queueOffset) for r in rows)
    assert [k for k, n in counts.items() if n > 1] == []  # no duplicates
    assert sorted((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in rows) == sorted(sent)


def test_streaming_read_writes_every_message_exactly_once_across_a_restart(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path
) -> None:
    topic = dev.new_topic(queues=3)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    feeder = _Feeder(produce, topic)
    query = (spark.readStream.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "120").load()
             .selectExpr("brokerName", "queueId", "queueOffset", "body")
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="200 milliseconds").start())
    try:
        eventually(lambda: query.exception() is not None or (query.lastProgress or {}).get("batchId", -1) >= 3,
                   timeout=SPARK_WAIT_S)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    written = len(feeder.sent)
    eventually(lambda: len(feeder.sent) > written or bool(feeder.failures), timeout=SPARK_WAIT_S)  # more while it is down
    _resume_and_check(spark, dev, topic, out, checkpoint, feeder.stop())


def test_streaming_read_is_exactly_once_after_the_driver_is_killed_mid_stream(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path
) -> None:
    topic = dev.new_topic(queues=2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    feeder = _Feeder(produce, topic)
    child = GroupProcess.start([sys.executable, str(Path(__file__).with_name("stream_child.py")), dev.namesrv,
                                topic, str(out), str(checkpoint)])
    try:
        eventually(lambda: "batch 4" in child.lines or child.popen.poll() is not None,
                   timeout=SPARK_WAIT_S, message="the child query made no progress")
        assert child.popen.poll() is None, "".join(child.lines[-40:])
    finally:
        # SIGKILL the child's whole process group (driver JVM and Python workers): a crash mid-batch.
        child.kill_group()
    _resume_and_check(spark, dev, topic, out, checkpoint, feeder.stop())


def _memory_rows(spark: Any, name: str) -> list[Any]:
    return spark.sql(f"SELECT * FROM {name}").collect()


def test_stream_picks_up_a_topic_created_later_caps_batches_and_reports_group_offsets(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path
) -> None:
    from orbitmq.admin.api import AdminClient
    from orbitmq.client.queue import MessageQueue
    from orbitmq.remoting.loop import run

    first = dev.new_topic(queues=2)
    later = f"{first}_later"
    broker = produce(first, [b"a-%d" % i for i in range(120)], batch=30)[0][0]
    name = f"stream_{first}"
    query = (spark.readStream.format("orbitmq").option("namesrvAddr", dev.namesrv)
             .option("topic", f"{first},{later}").option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "50").option("consumerGroup", f"G_{first}").load()
             .writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        eventually(lambda: len(_memory_rows(spark, name)) == 120, timeout=SPARK_WAIT_S)
        dev.new_topic(queues=1, name=later)  # produce() looks its route up at once
        produce(later, [b"b-%d" % i for i in range(40)])
        eventually(lambda: len(_memory_rows(spark, name)) == 160, timeout=SPARK_WAIT_S)
        produce(first, [b"c-%d" % i for i in range(5)])  # one more batch, so the previous one is committed
        eventually(lambda: len(_memory_rows(spark, name)) == 165, timeout=SPARK_WAIT_S)
        # Progress is recorded just after the sink got the rows.
        eventually(lambda: sum(p["numInputRows"] for p in query.recentProgress) == 165, timeout=SPARK_WAIT_S)
        assert max(p["numInputRows"] for p in query.recentProgress) <= 50

        async def group_offsets() -> int:
            async with AdminClient([dev.namesrv]) as admin:
                total = 0
                for qid in (0, 1):
                    total += await admin.query_consumer_offset(
                        dev.broker, f"G_{first}", MessageQueue(first, broker, qid)) or 0
                return total

        eventually(lambda: run(group_offsets()) >= 120, timeout=SPARK_WAIT_S, message="group offsets were not reported")
    finally:
        query.stop()
    rows = _memory_rows(spark, name)
    assert sorted(bytes(r.body) for r in rows if r.topic == later) == sorted(b"b-%d" % i for i in range(40))


@pytest.mark.parametrize("fail", [True, False])
def test_a_checkpoint_position_past_the_queue_end_is_data_loss_unless_allowed(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path, fail: bool
) -> None:
    topic = dev.new_topic(queues=1)
    sent = produce(topic, [b"x-%d" % i for i in range(10)])
    broker = sent[0][0]
    query = (spark.readStream.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
             .option("startingOffsets", f'{{"{topic}": {{"{broker}:0": 1000}}}}')
             .option("failOnDataLoss", str(fail).lower()).load()
             .writeStream.format("memory").queryName(f"loss_{topic}_{fail}")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    if fail:
        with pytest.raises(Exception, match="set failOnDataLoss=false to continue from 10"):
            query.awaitTermination(SPARK_WAIT_S)
    else:
        query.awaitTermination(SPARK_WAIT_S)
        assert query.exception() is None
        assert _memory_rows(spark, f"loss_{topic}_{fail}") == []


def test_opt_in_filter_pushdown_plans_only_the_selected_queues(spark: Any, dev: DevCluster, produce: Any) -> None:
    topic = dev.new_topic(queues=4)
    sent = produce(topic, [b"p-%d" % i for i in range(80)], batch=10)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = _read(spark, dev, topic, pushFilters="true").where("queueId IN (1, 3) AND body != X'00'")
        assert df.rdd.getNumPartitions() == 2
        got = sorted((r.queueId, r.queueOffset) for r in df.collect())
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    assert got == sorted((q, o) for _, q, o, _ in sent if q in (1, 3))
