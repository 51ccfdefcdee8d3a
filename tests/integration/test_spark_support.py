"""Shared pieces of the Spark connector tests (no tests here): one local SparkSession for the
whole test session, topics and data made with confluent-kafka, and helpers to run streaming
queries with ``trigger(availableNow=True)``.

Modules import the fixtures they use (``from tests.integration.test_spark_support import
spark``); ``SparkSession.builder.getOrCreate()`` makes every importer share one JVM.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.support import kafka_clients

QUERY_TIMEOUT_S = 180


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Workers must run this venv's python (it has spark_connector installed), not the system's.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import spark_connector

    session = (
        SparkSession.builder.master("local[2,3]")  # 3 attempts per task: killed workers retry
        .appName("odradek-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_connector.register(session)
    yield session
    session.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, **config: str) -> None:
    config.setdefault("retention.ms", "-1")  # test timestamps may be far in the past
    kafka_clients.create_topic(bootstrap, name, partitions, **config)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[dict[str, Any]],
    *,
    compression: str = "none",
    **config: Any,
) -> int:
    """Each record: value, and optionally key, partition, timestamp, headers."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "compression.type": compression,
            "acks": "all",
            **config,
        }
    )
    errors: list[Any] = []
    count = 0
    for r in records:
        kwargs = {k: r[k] for k in ("key", "partition", "timestamp", "headers") if k in r}
        while True:
            try:
                producer.produce(
                    topic,
                    value=r.get("value"),
                    on_delivery=lambda err, _msg: errors.append(err) if err else None,
                    **kwargs,
                )
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
    assert producer.flush(60) == 0
    assert errors == []
    return count


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[Any]:
    return kafka_clients.consume_from_start(
        bootstrap, topic, partitions, expected, timeout=60, group_id=unique("reader")
    )


def source(spark: Any, bootstrap: str, *, stream: bool = True, **options: Any) -> Any:
    reader = spark.readStream if stream else spark.read
    reader = reader.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def run_available_now(df: Any, out: Path, checkpoint: Path, *, fmt: str = "parquet") -> Any:
    """Runs ``df`` with ``trigger(availableNow=True)`` into ``out`` until it ends; returns the
    finished query (its ``recentProgress`` lists the micro-batches)."""
    writer = (
        df.writeStream.format(fmt)
        .queryName(unique("q").replace("-", "_"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    if fmt != "noop":
        writer = writer.option("path", str(out))
    query = writer.start()
    finished = query.awaitTermination(QUERY_TIMEOUT_S)
    if not finished:
        query.stop()
        raise AssertionError(f"availableNow query did not finish in {QUERY_TIMEOUT_S} s")
    if query.exception() is not None:
        raise query.exception()
    return query


def input_rows(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
