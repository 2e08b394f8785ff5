"""Throughput of the Spark connector on local[2] against a local `orbitmq dev`.

    python -m bench.spark [--messages 1000000] [--size 100] [--queues 4] [--rounds 1]

Measures, in rows per second of wall time:
  * batch write: spark.range -> 100-byte bodies -> format("orbitmq") (also loads the topic);
  * batch read -> count();
  * batch read -> parquet.
The source always yields Arrow RecordBatches (the installed Spark's Python
data source supports them); there is no tuple path to compare against.
Start-up of Spark and of the server is not timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.support.procs import orbitmq_command, start_server


def _create_topic(namesrv: str, broker: str, topic: str, queues: int) -> None:
    from orbitmq.admin.api import AdminClient
    from orbitmq.admin.models import TopicConfig
    from orbitmq.errors import OrbitMQError
    from orbitmq.remoting.loop import run
    from orbitmq.spark.cluster import Cluster
    from orbitmq.spark.options import ConnectionOptions

    async def create() -> None:
        async with AdminClient([namesrv]) as admin:
            await admin.create_topic(broker, TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues))

    run(create())
    deadline = time.monotonic() + 60
    last: Exception | None = None
    with Cluster(ConnectionOptions(namesrv)) as c:
        while True:
            try:
                if len(c.route(topic, refresh=True).read_queues) == queues:
                    return
            except OrbitMQError as exc:  # not routed yet; retried until the deadline
                last = exc
            if time.monotonic() > deadline:
                raise SystemExit(f"topic {topic} never got a route: {last}")
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="body bytes")
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="read rounds (the write runs once)")
    args = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    work = Path(tempfile.mkdtemp(prefix="orbitmq-bench-spark-"))
    server = start_server(
        orbitmq_command("dev", "--store", str(work / "store"), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1"),
        listeners=2, timeout=60,
    )
    try:
        namesrv = next(ln for ln in server.output if "namesrv listening on" in ln).split()[-1]
        broker = next(ln for ln in server.output if "broker" in ln and "listening on" in ln).split()[-1]
        topic = f"bench_{uuid.uuid4().hex[:8]}"
        _create_topic(namesrv, broker, topic, args.queues)
        run_spark(namesrv, topic, args, work)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_spark(namesrv: str, topic: str, args: argparse.Namespace, work: Path) -> None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import orbitmq.spark

    spark = (
        SparkSession.builder.master("local[2]").appName("orbitmq-bench")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    orbitmq.spark.register(spark)
    n = args.messages
    results: list[tuple[str, float]] = []
    try:
        body = F.rpad(F.col("id").cast("string"), args.size, "x").cast("binary").alias("body")
        df = spark.range(0, n, numPartitions=args.queues).select(body)
        started = time.perf_counter()
        (df.write.format("orbitmq").mode("append").option("namesrvAddr", namesrv).option("topic", topic)
         .option("batchSize", "512").save())
        results.append(("batch write", time.perf_counter() - started))

        def source() -> object:
            return spark.read.format("orbitmq").option("namesrvAddr", namesrv).option("topic", topic).load()

        for r in range(args.rounds):
            started = time.perf_counter()
            count = source().count()  # type: ignore[attr-defined]
            results.append((f"batch read -> count() [{r + 1}]", time.perf_counter() - started))
            if count != n:
                raise SystemExit(f"read {count} rows, expected {n}")
            out = work / f"parquet-{r}"
            started = time.perf_counter()
            source().write.parquet(str(out))  # type: ignore[attr-defined]
            results.append((f"batch read -> parquet [{r + 1}]", time.perf_counter() - started))
        written = spark.read.parquet(str(work / "parquet-0")).count()
        if written != n:
            raise SystemExit(f"parquet holds {written} rows, expected {n}")
    finally:
        gateway = SparkContext._gateway
        spark.stop()
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
    load = os.getloadavg()[0]
    print(f"\n{n:,} messages of {args.size} B, {args.queues} queues, local[2], load average {load:.1f}")
    for name, secs in results:
        print(f"  {name:32s} {secs:7.2f} s  {n / secs:12,.0f} rows/s")


if __name__ == "__main__":
    main()
