"""The ``odradek`` sink: a DataFrame's rows into Kafka records, as Spark's Kafka sink does.

Columns (checked at query start, with Spark's rules):

* ``value`` (string or binary) is required; null values are written as null (tombstones);
* ``key`` (string or binary), ``headers`` (``array<struct<key:string,value:binary>>``),
  ``topic`` (string) and ``partition`` (int) are optional; other columns are ignored;
* the ``topic`` option, when given, overrides the ``topic`` column; one of them is required;
* without a partition, a record goes where Kafka's default partitioner would put it: murmur2 of
  the key modulo the partition count, or a sticky random partition for a null key.

Delivery is at least once: a task's ``write`` returns only when every record it was given is
acknowledged (``acks=all`` by default), and Spark retries failed tasks. The producer is
idempotent (InitProducerId, then a sequence number per partition in every batch, kept across
retries) so the broker drops the duplicates that retries after a lost answer would otherwise
write; a producer-id reset (the broker lost our state) re-stamps unacknowledged batches with a new
id. A topic that does not exist is an error, never created.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from spark_connector.client import KafkaClientError, TopicNotFound, shared_client
from spark_connector.options import OptionError, SinkOptions
from spark_connector.producer import Producer, shared_producer

log = logging.getLogger(__name__)

# --- schema --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SinkColumns:
    """Where the sink finds its inputs in the written DataFrame."""

    value_is_string: bool
    key: bool = False
    key_is_string: bool = False
    topic_column: bool = False
    partition: bool = False
    headers: bool = False


def _is_headers_type(dt: DataType) -> bool:
    if not isinstance(dt, ArrayType) or not isinstance(dt.elementType, StructType):
        return False
    fields = dt.elementType.fields
    return (
        len(fields) == 2
        and fields[0].name == "key"
        and isinstance(fields[0].dataType, StringType)
        and fields[1].name == "value"
        and isinstance(fields[1].dataType, BinaryType)
    )


def check_sink_schema(schema: StructType, options: SinkOptions) -> SinkColumns:
    """Spark's Kafka sink rules; raises :class:`OptionError` with what is wrong."""
    fields = {f.name.lower(): f for f in schema.fields}

    def text_or_binary(name: str) -> bool:
        dt = fields[name].dataType
        if isinstance(dt, StringType):
            return True
        if isinstance(dt, BinaryType):
            return False
        raise OptionError(f"the sink's {name} attribute type must be a string or binary, not {dt}")

    if "value" not in fields:
        raise OptionError(
            "the odradek sink needs a 'value' column (string or binary); the DataFrame has "
            + ", ".join(schema.fieldNames())
        )
    value_is_string = text_or_binary("value")
    key = "key" in fields
    key_is_string = text_or_binary("key") if key else False
    topic_column = "topic" in fields
    if topic_column and not isinstance(fields["topic"].dataType, StringType):
        raise OptionError(
            f"the sink's topic attribute must be a string, not {fields['topic'].dataType}"
        )
    if not topic_column and options.topic is None:
        raise OptionError(
            "topic option required when no 'topic' attribute is present; use the 'topic' option "
            "to set a topic"
        )
    partition = "partition" in fields
    if partition and not isinstance(fields["partition"].dataType, IntegerType):
        raise OptionError(
            f"the sink's partition attribute must be an int, not {fields['partition'].dataType}"
        )
    headers = "headers" in fields
    if headers and not _is_headers_type(fields["headers"].dataType):
        raise OptionError(
            "the sink's headers attribute must be array<struct<key:string,value:binary>>, not "
            f"{fields['headers'].dataType.simpleString()}"
        )
    return SinkColumns(
        value_is_string=value_is_string,
        key=key,
        key_is_string=key_is_string,
        topic_column=topic_column and options.topic is None,
        partition=partition,
        headers=headers,
    )


# --- Arrow batches into records ------------------------------------------------------------------


def _as_bytes_list(column: pa.Array) -> list[bytes | None]:
    if pa.types.is_string(column.type):
        column = column.cast(pa.binary())
    elif pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary())
    values: list[bytes | None] = column.to_pylist()
    return values


def write_arrow_batches(
    producer: Producer,
    columns: SinkColumns,
    topic_option: str | None,
    batches: Iterator[pa.RecordBatch],
) -> int:
    """Appends every row of ``batches`` and flushes; returns the number of records written."""
    written = 0
    for rb in batches:
        n = rb.num_rows
        if n == 0:
            continue
        names = {name.lower(): i for i, name in enumerate(rb.schema.names)}
        values = _as_bytes_list(rb.column(names["value"]))
        keys = _as_bytes_list(rb.column(names["key"])) if columns.key else [None] * n
        if columns.topic_column:
            topics = rb.column(names["topic"]).to_pylist()
        else:
            topics = [topic_option] * n
        partitions = rb.column(names["partition"]).to_pylist() if columns.partition else [None] * n
        if columns.headers:
            headers = [
                [(h["key"], h["value"]) for h in row] if row else ()
                for row in rb.column(names["headers"]).to_pylist()
            ]
        else:
            headers = [()] * n
        now_ms = int(time.time() * 1000)
        append = producer.append
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise KafkaClientError(
                    "null topic present in the data; use the 'topic' option to set a topic"
                )
            append(topic, partitions[i], keys[i], values[i], headers[i], now_ms)
        written += n
    producer.flush()
    return written


@dataclass
class OdradekCommitMessage(WriterCommitMessage):
    records: int


class _WriterBase:
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.columns = check_sink_schema(schema, options)
        if options.topic is not None:
            # A clear error at query start, before any task runs.
            client = shared_client(options.client)
            if options.topic not in client.partitions_for([options.topic]):
                raise TopicNotFound([options.topic])

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> OdradekCommitMessage:
        producer = shared_producer(self.options)
        return OdradekCommitMessage(
            write_arrow_batches(producer, self.columns, self.options.topic, iterator)
        )


class OdradekBatchWriter(_WriterBase, DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, OdradekCommitMessage))
        log.info("odradek sink wrote %d records", total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # At least once: what reached the broker stays there.
        pass


class OdradekStreamWriter(_WriterBase, DataSourceStreamArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.records for m in messages if isinstance(m, OdradekCommitMessage))
        log.info("odradek sink: micro-batch %d wrote %d records", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


__all__ = [
    "OdradekBatchWriter",
    "OdradekStreamWriter",
    "Producer",
    "check_sink_schema",
]
