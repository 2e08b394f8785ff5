"""The example pipeline runs against `orbitmq dev` and produces closed minutes in both outputs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import SPARK_WAIT_S, DevCluster

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline"


def test_example_job_writes_closed_minutes_to_parquet_and_to_a_topic(
    spark: Any, dev: DevCluster, tmp_path: Path
) -> None:
    orders, stats = dev.new_topic(queues=4, prefix="orders"), dev.new_topic(queues=2, prefix="stats")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    feed = subprocess.run(
        [sys.executable, str(EXAMPLE / "feed_orders.py"), "--namesrv", dev.namesrv, "--topic", orders,
         "--seconds", "0.2", "--backfill-minutes", "4"],
        check=False, env=env, capture_output=True, text=True, timeout=60,
    )
    assert feed.returncode == 0, feed.stderr
    # The job's queries run in this test's Spark session (a second JVM would
    # double the test's time); main() only adds the session around them.
    spec = importlib.util.spec_from_file_location("orbitmq_example_job", EXAMPLE / "job.py")
    assert spec is not None and spec.loader is not None
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    args = job.parse_args(["--namesrv", dev.namesrv, "--topic", orders, "--stats-topic", stats,
                           "--out", str(tmp_path), "--available-now"])
    for query in job.start(spark, args):
        query.awaitTermination(SPARK_WAIT_S)
        assert query.exception() is None
    minutes = spark.read.parquet(str(tmp_path / "parquet")).collect()
    assert len(minutes) >= 3 and all(m.orders > 0 for m in minutes)
    published = (spark.read.format("orbitmq").option("namesrvAddr", dev.namesrv).option("topic", stats)
                 .load().collect())
    assert sorted(r.keys for r in published) == sorted(m.minute.strftime("%Y-%m-%dT%H:%M") for m in minutes)
