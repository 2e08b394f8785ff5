"""The row layout of an OrbitMQ topic in Spark: one row per message.

The column order is part of the data source's contract: `read()` yields Arrow
batches whose schema must equal, field for field, the Arrow form Spark derives
from this schema (`int32` for INT, `timestamp[us, UTC]` for TIMESTAMP, plain
`binary`, every field nullable), so `arrow_schema()` and `spark_schema()` are
built from the same table below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark and pyarrow are an optional extra; import them only when used.
    import pyarrow as pa
    from pyspark.sql.types import StructType

#: (column, Spark SQL type) in row order. `properties` is dropped when the
#: source is read with includeProperties=false.
SOURCE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "STRING"),
    ("brokerName", "STRING"),
    ("queueId", "INT"),
    ("queueOffset", "BIGINT"),
    ("msgId", "STRING"),
    ("tags", "STRING"),
    ("keys", "STRING"),
    ("properties", "MAP<STRING,STRING>"),
    ("body", "BINARY"),
    ("bornTimestamp", "TIMESTAMP"),
    ("storeTimestamp", "TIMESTAMP"),
    ("reconsumeTimes", "INT"),
)

#: Columns the sink understands, with the Spark types it accepts for each.
SINK_COLUMNS: dict[str, tuple[str, ...]] = {
    "topic": ("string",),
    "body": ("binary", "string"),
    "keys": ("string",),
    "tags": ("string",),
    "properties": ("map<string,string>",),
    "shardingKey": ("string",),
}


def source_columns(include_properties: bool) -> list[tuple[str, str]]:
    """The (name, SQL type) pairs of the source schema, in row order."""
    return [(n, t) for n, t in SOURCE_COLUMNS if include_properties or n != "properties"]


def source_ddl(include_properties: bool = True) -> str:
    """The source schema as a DDL string, e.g. for documentation or `spark.read.schema(...)`."""
    return ", ".join(f"{n} {t}" for n, t in source_columns(include_properties))


def spark_schema(include_properties: bool = True) -> StructType:
    """The source schema as a Spark StructType (needs pyspark, not a running session)."""
    from pyspark.sql import types as T

    kinds = {
        "STRING": T.StringType(),
        "INT": T.IntegerType(),
        "BIGINT": T.LongType(),
        "BINARY": T.BinaryType(),
        "TIMESTAMP": T.TimestampType(),
        "MAP<STRING,STRING>": T.MapType(T.StringType(), T.StringType(), valueContainsNull=True),
    }
    return T.StructType([T.StructField(n, kinds[t], nullable=True) for n, t in source_columns(include_properties)])


def arrow_schema(include_properties: bool = True) -> pa.Schema:
    """The Arrow schema `read()` must produce: equal to Spark's `to_arrow_schema(spark_schema(), 'UTC')`."""
    import pyarrow as pa

    kinds = {
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "BINARY": pa.binary(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "MAP<STRING,STRING>": pa.map_(pa.string(), pa.string()),
    }
    return pa.schema([pa.field(n, kinds[t], nullable=True) for n, t in source_columns(include_properties)])
