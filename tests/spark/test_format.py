"""The format as Spark sees it: registration, schema, and option errors before any task runs."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_registered_format_reports_the_documented_schema(spark: Any) -> None:
    from orbitmq.spark.schema import source_ddl

    df = spark.read.format("orbitmq").option("namesrvAddr", "127.0.0.1:1").option("topic", "t").load()
    got = ", ".join(f"{f.name} {f.dataType.simpleString().upper()}" for f in df.schema.fields)
    assert got == source_ddl(True)
    narrow = (spark.read.format("orbitmq").option("namesrvAddr", "127.0.0.1:1").option("topic", "t")
              .option("includeProperties", "false").load())
    assert "properties" not in narrow.columns


def test_a_bad_option_fails_the_read_with_a_message_naming_it(spark: Any) -> None:
    reader = spark.read.format("orbitmq").option("namesrvAddr", "127.0.0.1:1").option("topic", "t")
    with pytest.raises(Exception, match="maxOffsetsPerTrigger applies to streaming reads only"):
        reader.option("maxOffsetsPerTrigger", "5").load().collect()


def test_the_sink_refuses_unknown_columns_before_sending(spark: Any) -> None:
    df = spark.createDataFrame([("x", "y")], "body STRING, shardKey STRING")
    with pytest.raises(Exception, match="does not know column"):
        df.write.format("orbitmq").mode("append").option("namesrvAddr", "127.0.0.1:1").option("topic", "t").save()
