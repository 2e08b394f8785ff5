"""Streaming job: orders topic -> per-minute totals with a watermark -> parquet and the order_stats topic.

    python examples/spark_pipeline/job.py --namesrv 127.0.0.1:9876 --out /tmp/order-stats

Both outputs are separate streaming queries over the same source, each with
its own checkpoint; a restart resumes each where its last committed
micro-batch ended. The parquet output is exactly-once (Spark's file sink
log); the topic output is at-least-once, and every message carries
SPARK_QUERY_ID / SPARK_BATCH_ID / SPARK_PARTITION_ID / SPARK_SEQ properties
for de-duplication.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

import orbitmq.spark

ORDER_SCHEMA = "orderId STRING, customer STRING, amount DOUBLE, ts BIGINT"


def build(spark: SparkSession, namesrv: str, topic: str, max_per_trigger: int) -> DataFrame:
    orders = (
        spark.readStream.format("orbitmq")
        .option("namesrvAddr", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_per_trigger))
        .option("includeProperties", "false")
        .load()
    )
    parsed = orders.select(F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o")).select(
        "o.*", (F.col("o.ts") / 1000).cast("timestamp").alias("orderTime")
    )
    return (
        parsed.withWatermark("orderTime", "1 minute")
        .groupBy(F.window("orderTime", "1 minute"))
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
        .select(F.col("window.start").alias("minute"), "orders", "revenue")
    )


def start(spark: SparkSession, args: argparse.Namespace) -> list[StreamingQuery]:
    """Start the two output queries (parquet, topic) over one definition of the stats."""
    stats = build(spark, args.namesrv, args.topic, args.max_offsets_per_trigger)

    def trigger(writer: DataStreamWriter) -> DataStreamWriter:
        if args.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime="10 seconds")

    to_parquet = trigger(
        stats.writeStream.format("parquet")
        .option("path", os.path.join(args.out, "parquet"))
        .option("checkpointLocation", os.path.join(args.out, "checkpoints", "parquet"))
        .outputMode("append")
    ).start()
    to_topic = trigger(
        stats.select(
            F.to_json(F.struct("minute", "orders", "revenue")).alias("body"),
            F.date_format("minute", "yyyy-MM-dd'T'HH:mm").alias("keys"),
            F.lit("per-minute").alias("tags"),
        )
        .writeStream.format("orbitmq")
        .option("namesrvAddr", args.namesrv)
        .option("topic", args.stats_topic)
        .option("checkpointLocation", os.path.join(args.out, "checkpoints", "topic"))
        .outputMode("append")
    ).start()
    return [to_parquet, to_topic]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--stats-topic", default="order_stats")
    parser.add_argument("--out", default="order-stats", help="folder for parquet output and checkpoints")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=100_000)
    parser.add_argument("--available-now", action="store_true", help="process what exists, then stop")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]").appName("orbitmq-orders-per-minute")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    orbitmq.spark.register(spark)
    queries = start(spark, args)
    try:
        for query in queries:
            query.awaitTermination()
    except KeyboardInterrupt:
        for query in queries:
            query.stop()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
