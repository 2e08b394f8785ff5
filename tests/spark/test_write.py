"""Batch and streaming writes into a real `orbitmq dev`, read back with the source."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import SPARK_WAIT_S, DevCluster

pytestmark = pytest.mark.spark


def _read_back(spark: Any, dev: DevCluster, topic: str) -> list[Any]:
    return (spark.read.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic).load()
            .collect())


def test_streaming_writer_delivers_every_row_with_dedup_properties(
    spark: Any, dev: DevCluster, tmp_path: Path
) -> None:
    topic = dev.new_topic(queues=4)
    src = tmp_path / "in"
    src.mkdir()
    expected = []
    for f in range(3):
        lines = [{"body": f"row-{f}-{i}", "keys": f"k{i}", "tags": "T" if i % 2 else None} for i in range(200)]
        expected += [line["body"] for line in lines]
        (src / f"part-{f}.json").write_text("\n".join(json.dumps(line) for line in lines))
    query = (spark.readStream.schema("body STRING, keys STRING, tags STRING").option("maxFilesPerTrigger", 1)
             .json(str(src))
             .writeStream.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", topic)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(SPARK_WAIT_S)
    assert query.exception() is None
    rows = _read_back(spark, dev, topic)
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(expected)
    batch_ids = {r.properties["SPARK_BATCH_ID"] for r in rows}
    assert batch_ids == {"0", "1", "2"}  # one micro-batch per input file
    ids = {(r.properties["SPARK_QUERY_ID"], r.properties["SPARK_BATCH_ID"], r.properties["SPARK_PARTITION_ID"],
            r.properties["SPARK_SEQ"]) for r in rows}
    assert len(ids) == len(rows)  # the properties identify each row
    tagged = [r for r in rows if r.tags == "T"]
    assert len(tagged) == 300 and all(r.keys.startswith("k") for r in rows)


def test_sharding_key_routes_each_key_to_one_queue_in_order(spark: Any, dev: DevCluster) -> None:
    topic = dev.new_topic(queues=4)
    data = [(f"key-{i % 7}", f"{i % 7}:{i:05d}", {"n": str(i)}) for i in range(700)]
    df = spark.createDataFrame(data, "shardingKey STRING, body STRING, properties MAP<STRING,STRING>").coalesce(1)
    (df.write.format("orbitmq").mode("append").option("namesrvAddr", dev.namesrv).option("topic", topic)
     .option("batchSize", "32").save())
    rows = _read_back(spark, dev, topic)
    assert len(rows) == 700
    by_key: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        by_key[bytes(r.body).decode().split(":")[0]].append(r)
    for key, group in by_key.items():
        assert len({(r.brokerName, r.queueId) for r in group}) == 1, key
        in_queue_order = [bytes(r.body).decode() for r in sorted(group, key=lambda r: r.queueOffset)]
        assert in_queue_order == sorted(in_queue_order)  # bodies carry the input sequence
        assert all(r.properties["n"] for r in group)


def test_batch_write_without_topic_fails_on_the_driver(spark: Any, dev: DevCluster) -> None:
    df = spark.createDataFrame([("x",)], "body STRING")
    with pytest.raises(Exception, match="topic column or the topic option"):
        df.write.format("orbitmq").mode("append").option("namesrvAddr", dev.namesrv).save()


def test_a_failed_send_fails_the_job(spark: Any, dev: DevCluster) -> None:
    df = spark.createDataFrame([("x",)], "body STRING")
    with pytest.raises(Exception, match="not known to the name server|TOPIC_NOT_EXIST|topic"):
        (df.write.format("orbitmq").mode("append").option("namesrvAddr", dev.namesrv)
         .option("topic", "no_such_topic_for_spark").option("sendRetries", "0").save())
