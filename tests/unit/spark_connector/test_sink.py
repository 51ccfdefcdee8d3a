"""Sink pieces without a broker: Kafka's partitioner hash, schema rules, batch stamping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from protocol.partitioner import default_partition, murmur2
from protocol.records.batch import read_header, validate_batches
from protocol.records.record import SimpleRecord, build_batch, iter_record_batches
from spark_connector.options import OptionError, parse_sink_options
from spark_connector.producer import stamp_batch
from spark_connector.sink import check_sink_schema

OPTS = parse_sink_options({"kafka.bootstrap.servers": "h:1"})
WITH_TOPIC = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t"})


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data):
    # kafka-python returns Java's int as a Python int of the same bits
    theirs = kafka_python_murmur2(bytearray(data))
    assert murmur2(data) & 0xFFFFFFFF == theirs & 0xFFFFFFFF


def test_known_partitions():
    # Values Kafka's Java DefaultPartitioner gives (murmur2 positive, modulo 3).
    for key in (b"", b"a", b"key-1", b"\xff" * 7):
        expected = (kafka_python_murmur2(bytearray(key)) & 0x7FFFFFFF) % 3
        assert default_partition(key, 3) == expected


def schema(*fields: StructField) -> StructType:
    return StructType(list(fields))


HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def test_schema_rules():
    cols = check_sink_schema(
        schema(
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("headers", HEADERS),
            StructField("extra", LongType()),
        ),
        OPTS,
    )
    assert cols.key and cols.key_is_string and not cols.value_is_string
    assert cols.topic_column and cols.partition and cols.headers
    # the topic option overrides the column
    cols = check_sink_schema(
        schema(StructField("value", StringType()), StructField("topic", StringType())), WITH_TOPIC
    )
    assert not cols.topic_column and cols.value_is_string


@pytest.mark.parametrize(
    ("fields", "options", "message"),
    [
        ([StructField("key", BinaryType())], WITH_TOPIC, "needs a 'value' column"),
        ([StructField("value", LongType())], WITH_TOPIC, "string or binary"),
        ([StructField("value", BinaryType())], OPTS, "topic option required"),
        (
            [StructField("value", BinaryType()), StructField("topic", LongType())],
            OPTS,
            "topic attribute must be a string",
        ),
        (
            [StructField("value", BinaryType()), StructField("partition", LongType())],
            WITH_TOPIC,
            "partition attribute must be an int",
        ),
        (
            [StructField("value", BinaryType()), StructField("headers", ArrayType(StringType()))],
            WITH_TOPIC,
            "headers attribute must be",
        ),
    ],
)
def test_schema_errors(fields, options, message):
    with pytest.raises(OptionError, match=message):
        check_sink_schema(schema(*fields), options)


def test_stamp_batch_keeps_a_valid_batch():
    batch = build_batch([SimpleRecord(b"a", b"k"), SimpleRecord(b"b")], compression=3)
    stamped = stamp_batch(batch, 42, 3, 1000)
    header = validate_batches(stamped)[0]  # checks the CRC
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 1000)
    assert read_header(batch).producer_id == -1
    values = [r.value for b in iter_record_batches(stamped) for r in b.records]
    assert values == [b"a", b"b"]
