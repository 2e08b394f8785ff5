"""A streaming query in its own Spark driver, for the crash test: topic -> parquet until killed.

    python tests/spark/stream_child.py NAMESRV TOPIC OUT CHECKPOINT

Prints `batch <id>` after each completed micro-batch.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    namesrv, topic, out, checkpoint = sys.argv[1:5]
    spark = session("orbitmq-crash-child")
    query = (spark.readStream.format("orbitmq").option("namesrvAddr", namesrv).option("topic", topic)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100").load()
             .selectExpr("brokerName", "queueId", "queueOffset", "body")
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(processingTime="100 milliseconds").start())
    report_batches(query)


def session(app: str):  # type: ignore[no-untyped-def]
    """A local[2] session on loopback with the orbitmq format registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    import orbitmq.spark

    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    orbitmq.spark.register(spark)
    return spark


def report_batches(query) -> None:  # type: ignore[no-untyped-def]
    """Print `batch <id>` as micro-batches complete, until the query ends (then exit with its error)."""
    last = -1
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != last:
            last = progress["batchId"]
            print(f"batch {last}", flush=True)
        time.sleep(0.05)
    raise SystemExit(f"query ended: {query.exception()}")


if __name__ == "__main__":
    main()
