"""OrbitMQ topics as a Spark data source: `format("orbitmq")` for read, readStream, write, writeStream.

Install the optional extra (`pip install 'orbitmq[spark]'`, pyspark >= 4.2
and pyarrow) in the interpreter Spark's Python workers run (set
PYSPARK_PYTHON to it), then::

    import orbitmq.spark
    orbitmq.spark.register(spark)
    df = (spark.read.format("orbitmq")
          .option("namesrvAddr", "127.0.0.1:9876")
          .option("topic", "orders")
          .load())

Rows (see `schema.SOURCE_COLUMNS`): topic, brokerName, queueId, queueOffset,
msgId, tags, keys, properties, body, bornTimestamp, storeTimestamp,
reconsumeTimes. Options, offsets JSON and delivery semantics are described
in the modules `options`, `offsets`, `source` and `sink`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitmq.errors import ConfigError
from orbitmq.spark.schema import source_ddl

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMAT", "register", "source_ddl"]

FORMAT = "orbitmq"

#: The Python data source API gained admission control (read limits) and
#: Trigger.AvailableNow support in 4.2; the streaming reader relies on both.
MIN_PYSPARK = (4, 2)


def register(spark: SparkSession) -> None:
    """Make `format("orbitmq")` available in `spark` (registration is per session).

    Raises ConfigError when the installed pyspark is older than 4.2.
    """
    import pyspark

    version = tuple(int(p) for p in pyspark.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_PYSPARK:
        raise ConfigError(f"orbitmq.spark needs pyspark >= 4.2, found {pyspark.__version__}")
    from orbitmq.spark.source import OrbitMQDataSource

    spark.dataSource.register(OrbitMQDataSource)
