"""The odradek sink: DataFrames written to topics (batch and streaming) and read back by a
confluent-kafka consumer; Kafka's default partitioning; idempotent batches (producer id and
sequences, a resent batch is not written twice); clear errors for bad schemas and missing
topics."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from protocol.records.record import iter_record_batches
from spark_connector.client import ClientConfig, KafkaClient
from spark_connector.options import parse_sink_options
from spark_connector.producer import Producer, default_partition
from tests.integration.test_spark_support import (
    consume_all,
    create_topic,
    produce,
    source,
    spark,  # noqa: F401 - fixture
    unique,
)

pytestmark = pytest.mark.spark

HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def write(df, bootstrap: str, **options) -> None:
    writer = df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.mode("append").save()


def raw_batches(bootstrap: str, topic: str, partition: int) -> list:
    """The record batches of a partition as the broker stores them (our client's Fetch)."""
    client = KafkaClient(ClientConfig.from_bootstrap(bootstrap))
    try:
        pending = client.send_fetch(topic, partition, 0, max_bytes=8 << 20)
        fetched = client.receive_fetch(pending)
        return list(iter_record_batches(bytes(fetched.records)))
    finally:
        client.close()


def test_batch_write_with_topic_option_and_default_partitioning(spark, broker):  # noqa: F811
    topic = unique("sink")
    create_topic(broker.bootstrap, topic, 3)
    schema = StructType(
        [
            StructField("key", StringType()),
            StructField("value", StringType()),
            StructField("headers", HEADERS),
            StructField("ignored", IntegerType()),
        ]
    )
    rows = []
    for i in range(200):
        headers = [("n", str(i).encode()), ("none", None)] if i % 4 == 0 else None
        rows.append((f"user-{i % 17}", f"page-{i}", headers, i))
    write(spark.createDataFrame(rows, schema).repartition(3), broker.bootstrap, topic=topic)

    got = consume_all(broker.bootstrap, topic, 3, 200)
    assert len(got) == 200
    by_value = {m.value().decode(): m for m in got}
    assert sorted(by_value) == sorted(f"page-{i}" for i in range(200))
    for key, value, headers, _ in rows:
        m = by_value[value]
        assert m.key() == key.encode()
        assert m.partition() == default_partition(key.encode(), 3)  # as Kafka's Java producer
        assert (m.headers() or None) == headers

    # Idempotent producer: every batch carries a producer id and sequences that add up.
    for partition in range(3):
        batches = raw_batches(broker.bootstrap, topic, partition)
        assert batches and all(b.header.producer_id >= 0 for b in batches)
        by_producer: dict[int, list] = {}
        for b in batches:
            by_producer.setdefault(b.header.producer_id, []).append(b.header)
        for headers_ in by_producer.values():
            expected = 0
            for h in headers_:
                assert h.base_sequence == expected
                expected += h.record_count


def test_batch_write_with_topic_and_partition_columns(spark, broker):  # noqa: F811
    a, b = unique("sink-a"), unique("sink-b")
    create_topic(broker.bootstrap, a, 2)
    create_topic(broker.bootstrap, b, 4)
    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
        ]
    )
    rows = [
        (a if i % 2 else b, (i % 2) if i % 2 else (i % 4), None, None if i == 4 else b"v%d" % i)
        for i in range(100)
    ]
    write(
        spark.createDataFrame(rows, schema), broker.bootstrap, **{"kafka.compression.type": "lz4"}
    )
    got_a = consume_all(broker.bootstrap, a, 2, 50)
    got_b = consume_all(broker.bootstrap, b, 4, 50)
    assert sorted((m.partition(), m.value()) for m in got_a) == sorted(
        (1, b"v%d" % i) for i in range(1, 100, 2)
    )
    assert sorted((m.partition(), m.value() or b"") for m in got_b) == sorted(
        (i % 4, b"" if i == 4 else b"v%d" % i) for i in range(0, 100, 2)
    )
    assert all(m.key() is None for m in got_a + got_b)


def test_streaming_sink_copies_a_topic(spark, broker, tmp_path):  # noqa: F811
    src, dst = unique("copy-src"), unique("copy-dst")
    create_topic(broker.bootstrap, src, 2)
    create_topic(broker.bootstrap, dst, 2)
    produce(
        broker.bootstrap,
        src,
        [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(300)],
    )
    df = source(
        spark, broker.bootstrap, subscribe=src, startingOffsets="earliest", maxOffsetsPerTrigger=120
    ).selectExpr("key", "upper(cast(value as string)) as value")
    query = (
        df.writeStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", dst)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    got = consume_all(broker.bootstrap, dst, 2, 300)
    assert sorted(m.value() for m in got) == sorted(f"V{i}".encode() for i in range(300))
    for m in got:
        assert m.partition() == default_partition(m.key(), 2)


def test_sink_errors_are_clear(spark, broker, tmp_path):  # noqa: F811
    missing = unique("no-such-topic")
    df = spark.createDataFrame([Row(value="x")])
    with pytest.raises(Exception, match=f"'{missing}' do not exist"):
        write(df, broker.bootstrap, topic=missing)
    with pytest.raises(Exception, match="topic option required"):
        write(df, broker.bootstrap)
    with pytest.raises(Exception, match="needs a 'value' column"):
        write(spark.createDataFrame([Row(key="k")]), broker.bootstrap, topic=missing)
    with pytest.raises(Exception, match=f"'{missing}' do not exist"):
        write(spark.createDataFrame([Row(topic=missing, value="x")]), broker.bootstrap)
    # a streaming query into a missing topic fails with its first micro-batch
    existing = unique("sink-src")
    create_topic(broker.bootstrap, existing, 1)
    produce(broker.bootstrap, existing, [{"value": b"x"}])
    stream = source(spark, broker.bootstrap, subscribe=existing, startingOffsets="earliest")
    query = (
        stream.select("value")
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", missing)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="do not exist"):
        query.awaitTermination(120)


def test_resent_batches_are_not_written_twice(broker):
    """A Produce whose answer was lost is sent again with the same sequence: the broker keeps
    one copy (the fault, a lost answer, is made by resending the acknowledged batch)."""
    topic = unique("dedup")
    create_topic(broker.bootstrap, topic, 1)
    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic})
    client = KafkaClient(options.client)
    producer = Producer(options, client)
    try:
        for i in range(10):
            producer.append(topic, 0, None, b"r%d" % i, (), 1_700_000_000_000)
        producer._seal((topic, 0), producer.queues[(topic, 0)])
        batch = producer.queues[(topic, 0)].ready[0]
        producer.flush()
        assert producer.producer_id >= 0 and batch.stamp is not None
        # the same batch again, as a retry after a lost answer would send it
        producer.queues[(topic, 0)].ready.append(batch)
        producer.ready_bytes += len(batch.data)
        producer.flush()
        for i in range(10, 15):
            producer.append(topic, 0, None, b"r%d" % i, (), 1_700_000_000_000)
        producer.flush()
    finally:
        client.close()
    got = consume_all(broker.bootstrap, topic, 1, 15)
    assert [m.value() for m in got] == [b"r%d" % i for i in range(15)]
