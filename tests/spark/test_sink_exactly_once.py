"""Spark -> OrbitMQ exactly-once: the sink's stable UNIQ_KEYs and `orbitmq dev`'s duplicate window.

A replayed micro-batch (its commit lost, or the driver killed while it ran) sends its rows again
with the ids of its first run, and the broker answers them instead of storing them twice.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import DevCluster, GroupProcess
from tests.spark.sink_child import copy_query
from tests.support.procs import eventually

pytestmark = pytest.mark.spark


def _copied(spark: Any, dev: DevCluster, topic: str) -> Counter[str]:
    """How often each source message (by its position) is stored in the sink topic."""
    rows = spark.read.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic).load().collect()
    return Counter(r.properties["src"] for r in rows)


def _catch_up(spark: Any, dev: DevCluster, source: str, sink: str, checkpoint: Path) -> None:
    query = copy_query(spark, dev.namesrv, source, sink, str(checkpoint), "500").trigger(availableNow=True).start()
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()


def test_a_replayed_micro_batch_stores_nothing_twice(spark: Any, dev: DevCluster, produce: Any, tmp_path: Path) -> None:
    source, sink = dev.new_topic(queues=2), dev.new_topic(queues=2)
    produce(source, [b"r-%d" % i for i in range(300)])
    checkpoint = tmp_path / "checkpoint"
    _catch_up(spark, dev, source, sink, checkpoint)
    commits = sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    assert commits
    # As if the driver died after the sink wrote the last batch, before it was committed (with the
    # checksum file the local file system keeps beside it).
    commits[-1].unlink()
    commits[-1].with_name(f".{commits[-1].name}.crc").unlink(missing_ok=True)
    produce(source, [b"s-%d" % i for i in range(50)])
    _catch_up(spark, dev, source, sink, checkpoint)  # runs the last batch again, then the new rows
    copied = _copied(spark, dev, sink)
    assert len(copied) == 350
    assert [k for k, n in copied.items() if n > 1] == []


def test_killing_the_driver_mid_batch_stores_every_row_once(
    spark: Any, dev: DevCluster, produce: Any, tmp_path: Path
) -> None:
    source, sink = dev.new_topic(queues=2), dev.new_topic(queues=2)
    produce(source, [b"m-%d" % i for i in range(2000)])
    checkpoint = tmp_path / "checkpoint"
    child = GroupProcess.start([sys.executable, str(Path(__file__).with_name("sink_child.py")), dev.namesrv,
                                source, sink, str(checkpoint)])
    try:
        eventually(lambda: "batch 3" in child.lines or child.popen.poll() is not None,
                   timeout=180, message="the child query made no progress")
        assert child.popen.poll() is None, "".join(child.lines[-40:])
    finally:
        child.kill_group()  # SIGKILL of the driver JVM and its Python workers, while batches run
    _catch_up(spark, dev, source, sink, checkpoint)
    copied = _copied(spark, dev, sink)
    assert len(copied) == 2000
    assert [k for k, n in copied.items() if n > 1] == []
