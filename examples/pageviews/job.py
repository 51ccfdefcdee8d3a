"""Views per page per minute, from the ``pageviews`` topic, with Spark Structured Streaming.

Website activity tracking (Kafka's documentation, "Use Cases"): page views flow into Kafka
(examples/pageviews/produce.py); this job reads them with the ``odradek`` source, counts views
per page in one-minute event-time windows (a watermark closes a window once events are two
minutes past its end), and writes every closed window twice:

* as parquet files under ``--output-dir`` (for the offline side: reports, the warehouse), and
* as JSON records to the ``--output-topic`` topic, keyed by page (for the online side)::

      {"window_start": "2026-01-01T10:00:00.000Z", "window_end": "2026-01-01T10:01:00.000Z",
       "page": "/articles/3", "views": 42}

Each output is its own streaming query with its own checkpoint, so each is exactly once for
parquet and at least once for the topic. Run it standalone (``--trigger availableNow`` processes
what is there and stops; the default runs every 10 seconds until stopped)::

    python examples/pageviews/job.py --bootstrap localhost:9092 --output-dir /tmp/pageviews

The bootstrap servers also come from ``$ODRADEK_BOOTSTRAP`` or ``$KAFKA_BOOTSTRAP_SERVERS``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

EVENT_SCHEMA = "page string, user string, ts long, referrer string, agent string"


def default_bootstrap() -> str:
    return os.environ.get("ODRADEK_BOOTSTRAP") or os.environ.get(
        "KAFKA_BOOTSTRAP_SERVERS", "localhost:9092"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default=default_bootstrap())
    parser.add_argument("--input-topic", default="pageviews")
    parser.add_argument("--output-topic", default="pageview-counts")
    work = Path(tempfile.gettempdir()) / "pageviews"
    parser.add_argument("--output-dir", default=str(work / "counts"))
    parser.add_argument("--checkpoint-dir", default=str(work / "checkpoints"))
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--watermark", default="2 minutes")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument(
        "--trigger", default="10 seconds", help="'availableNow' or a processing-time interval"
    )
    parser.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[*]"))
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the broker")
    return parser.parse_args(argv)


def pageview_counts(spark: Any, args: argparse.Namespace) -> Any:
    """The windowed counts: window_start, window_end, page, views."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input_topic)
        .option("startingOffsets", args.starting_offsets)
    )
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    events = (
        reader.load()
        .select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
        .select("e.*")
        .where(F.col("page").isNotNull() & F.col("ts").isNotNull())
        .withColumn("event_time", F.timestamp_millis("ts"))
    )
    return (
        events.withWatermark("event_time", args.watermark)
        .groupBy(F.window("event_time", "1 minute"), "page")
        .count()
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "page",
            F.col("count").alias("views"),
        )
    )


def _trigger(writer: Any, trigger: str) -> Any:
    if trigger.replace("_", "").lower() == "availablenow":
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=trigger)


def start_queries(spark: Any, args: argparse.Namespace) -> list[Any]:
    """Starts the parquet query and the topic query; returns them."""
    from pyspark.sql import functions as F

    counts = pageview_counts(spark, args)
    checkpoints = Path(args.checkpoint_dir)
    to_parquet = _trigger(
        counts.writeStream.format("parquet")
        .outputMode("append")
        .option("path", args.output_dir)
        .option("checkpointLocation", str(checkpoints / "parquet")),
        args.trigger,
    ).start()
    as_records = counts.select(
        F.col("page").alias("key"),
        F.to_json(
            F.struct(
                F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("window_start"),
                F.date_format("window_end", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("window_end"),
                "page",
                "views",
            )
        ).alias("value"),
    )
    to_topic = _trigger(
        as_records.writeStream.format("odradek")
        .outputMode("append")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.output_topic)
        .option("checkpointLocation", str(checkpoints / "topic")),
        args.trigger,
    ).start()
    return [to_parquet, to_topic]


def prepare_topics(args: argparse.Namespace) -> None:
    """Waits for the broker and creates the output topic if needed (the sink never creates
    topics)."""
    from spark_connector.client import BrokerUnavailable, ClientConfig, KafkaClient

    client = KafkaClient(ClientConfig.from_bootstrap(args.bootstrap, client_id="pageviews-job"))
    deadline = time.monotonic() + args.wait
    try:
        while True:
            try:
                client.create_topic(args.output_topic, 3)
                return
            except BrokerUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Spark's Python workers must run this interpreter (it has spark_connector installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_connector

    prepare_topics(args)
    spark = (
        SparkSession.builder.master(args.master)
        .appName("pageviews")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    spark_connector.register(spark)
    queries = start_queries(spark, args)
    print(
        f"pageviews: {args.input_topic} -> {args.output_dir} and {args.output_topic} "
        f"(trigger {args.trigger})",
        flush=True,
    )
    failed = None
    try:
        if args.trigger.replace("_", "").lower() == "availablenow":
            for query in queries:
                query.awaitTermination()
        else:
            spark.streams.awaitAnyTermination()  # runs until stopped, or one query fails
    except KeyboardInterrupt:
        pass
    finally:
        for query in queries:
            if query.isActive:
                query.stop()
            failed = failed or query.exception()
        spark.stop()
    if failed is not None:
        print(f"pageviews: a query failed: {failed}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
