"""A streaming query topic -> topic (the orbitmq source into the orbitmq sink) in its own driver, for the
sink's crash test; runs until killed.

    python tests/spark/sink_child.py NAMESRV SOURCE_TOPIC SINK_TOPIC CHECKPOINT

Prints `batch <id>` after each completed micro-batch.
"""

from __future__ import annotations

import sys

from tests.spark.stream_child import report_batches, session


def main() -> None:
    namesrv, source, sink, checkpoint = sys.argv[1:5]
    spark = session("orbitmq-sink-crash-child")
    query = copy_query(spark, namesrv, source, sink, checkpoint, "100").trigger(processingTime="100 milliseconds").start()
    report_batches(query)


def copy_query(spark, namesrv: str, source: str, sink: str, checkpoint: str, per_trigger: str):  # type: ignore[no-untyped-def]
    """The copy both the child and the test's resumed run use: body and source position, to `sink`."""
    return (spark.readStream.format("orbitmq").option("namesrvAddr", namesrv).option("topic", source)
            .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", per_trigger).load()
            .selectExpr("body", "map('src', concat_ws('/', brokerName, queueId, queueOffset)) AS properties")
            .writeStream.format("orbitmq").option("namesrvAddr", namesrv).option("topic", sink)
            .option("checkpointLocation", checkpoint))


if __name__ == "__main__":
    main()
