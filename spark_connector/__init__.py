"""Odradek's Spark connector: a Kafka source and sink for PySpark's Python Data Source API.

Usage::

    import spark_connector
    spark_connector.register(spark)        # the short name "odradek"
    df = (spark.readStream.format("odradek")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "pageviews")
          .load())

The options and the schema are those of Spark's built-in Kafka connector (``format("kafka")``);
see docs/spark.md. It speaks the Kafka protocol, so it works against any Kafka-compatible
cluster. Importing this package does not import pyspark; :func:`register` and the data source
classes do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SHORT_NAME", "OdradekDataSource", "register"]

SHORT_NAME = "odradek"


def register(spark: Any) -> None:
    """Registers the data source with ``spark`` (a SparkSession) under ``odradek``."""
    from spark_connector.source import OdradekDataSource

    spark.dataSource.register(OdradekDataSource)


def __getattr__(name: str) -> Any:
    if name == "OdradekDataSource":
        from spark_connector.source import OdradekDataSource

        return OdradekDataSource
    raise AttributeError(name)
