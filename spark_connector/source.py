"""The ``odradek`` data source: Spark's Kafka source and sink in the Python Data Source API.

PySpark runs the pieces in different processes (measured with PySpark 4.3):

* the data source's ``__init__`` and ``schema()`` run wherever Spark plans; they only parse
  options, so a bad option fails the query at start;
* one long-lived Python process per streaming query holds the :class:`OdradekStreamReader` for
  the offset side (``initialOffset``, ``latestOffset``, ``partitions``, ``commit``); state kept
  there (the memoized initial offsets, the availableNow target, the trigger-delay clock) is not
  visible to ``read()``;
* executors unpickle a reader and call ``read(partition)``; the partition carries the offset
  range, the reader the settings. Connections are opened lazily there and reused by later tasks
  in the same worker (:func:`spark_connector.client.shared_client`).

``stop()`` is never relied on: Spark kills its Python workers, and nothing here needs a clean
shutdown (offsets live in Spark's checkpoint; the broker drops dead connections).

Offsets are JSON objects ``{"topic": {"partition": offset}}`` built in sorted string order,
because Spark compares offsets as text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from spark_connector.client import KafkaClient, TopicPartition, shared_client
from spark_connector.offsets import OffsetRange, TriggerDelay, plan_ranges, rate_limit
from spark_connector.options import (
    OffsetSpec,
    OptionError,
    SourceOptions,
    Subscription,
    offsets_from_json,
    offsets_to_json,
    parse_sink_options,
    parse_source_options,
)
from spark_connector.reader import ReadSettings, read_range, report_data_loss

log = logging.getLogger(__name__)

SHORT_NAME = "odradek"

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def kafka_schema(include_headers: bool = False) -> StructType:
    """The built-in Kafka source's schema (``headers`` only with ``includeHeaders``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


class OdradekDataSource(DataSource):
    """``spark.readStream.format("odradek")`` / ``df.write.format("odradek")``; the options are
    those of Spark's Kafka source and sink (see docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return kafka_schema(include)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_source_options(self.options, streaming=False)
        _check_schema(schema, options)
        return OdradekBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = parse_source_options(self.options, streaming=True)
        _check_schema(schema, options)
        return OdradekStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_connector.sink import OdradekBatchWriter

        return OdradekBatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_connector.sink import OdradekStreamWriter

        return OdradekStreamWriter(parse_sink_options(self.options), schema)


def _check_schema(schema: StructType, options: SourceOptions) -> None:
    expected = kafka_schema(options.include_headers)
    if schema is not None and schema != expected:
        raise OptionError(
            "the odradek source has a fixed schema and does not accept a user-specified one: "
            f"expected {expected.simpleString()}, got {schema.simpleString()}"
        )


class OffsetRangePartition(InputPartition):
    """One Spark input partition: an offset range of one topic-partition."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__(r)
        self.range = r

    def __repr__(self) -> str:
        r = self.range
        return f"OffsetRangePartition({r.topic}-{r.partition} [{r.from_offset}, {r.until_offset}))"


# --- offsets from options and the cluster --------------------------------------------------------


def discover_partitions(client: KafkaClient, subscription: Subscription) -> list[TopicPartition]:
    """The partitions a subscription covers right now (sorted)."""
    if subscription.kind == "subscribe":
        found = client.partitions_for(subscription.topics)
        return sorted((t, p) for t, ps in found.items() for p in ps)
    if subscription.kind == "subscribePattern":
        topics = client.list_topics()
        return sorted(
            (name, p)
            for name, info in topics.items()
            if not info.internal and subscription.matches(name)
            for p in info.partitions
        )
    found = client.partitions_for(sorted({t for t, _ in subscription.assigned}))
    existing = {(t, p) for t, ps in found.items() for p in ps}
    missing = [tp for tp in subscription.assigned if tp not in existing]
    if missing:
        log.warning("assigned partitions do not exist (yet): %s", missing)
    return sorted(tp for tp in subscription.assigned if tp in existing)


def resolve_offsets(
    client: KafkaClient,
    spec: OffsetSpec,
    tps: Sequence[TopicPartition],
    options: SourceOptions,
    *,
    starting: bool,
) -> dict[TopicPartition, int]:
    """Concrete offsets for ``spec`` on ``tps`` (``starting`` or ending side)."""
    which = "starting" if starting else "ending"
    isolation = options.isolation_level
    if spec.kind == "earliest":
        return client.earliest_offsets(tps)
    if spec.kind == "latest":
        return client.latest_offsets(tps, isolation_level=isolation)
    if spec.kind in ("offsets", "timestamps"):
        given = spec.offset_map
        wanted = set(tps)
        if options.subscription.kind != "assign" and given.keys() != wanted:
            missing = sorted(wanted - given.keys())
            extra = sorted(given.keys() - wanted)
            detail = []
            if missing:
                detail.append("missing " + ", ".join(f"{t}-{p}" for t, p in missing))
            if extra:
                detail.append("unknown " + ", ".join(f"{t}-{p}" for t, p in extra))
            key = f"{which}Offsets" + ("ByTimestamp" if spec.kind == "timestamps" else "")
            raise OptionError(
                f"option '{key}' must name every partition of the subscribed topics "
                f"({'; '.join(detail)})"
            )
        given = {tp: v for tp, v in given.items() if tp in wanted}
    else:
        assert spec.timestamp is not None
        given = dict.fromkeys(tps, spec.timestamp)
    if spec.kind == "offsets":
        earliest = [tp for tp, o in given.items() if o == EARLIEST_TIMESTAMP]
        latest = [tp for tp, o in given.items() if o == LATEST_TIMESTAMP]
        out = dict(given)
        out.update(client.earliest_offsets(earliest))
        out.update(client.latest_offsets(latest, isolation_level=isolation))
        return out
    # by timestamp
    found = client.offsets_for_times(given, isolation_level=isolation)
    out = {}
    missing_ts = [tp for tp, o in found.items() if o is None]
    if missing_ts and starting and options.starting_timestamp_strategy == "error":
        listed = ", ".join(f"{t}-{p} (timestamp {given[(t, p)]})" for t, p in missing_ts)
        raise OptionError(
            f"no record at or after the starting timestamp in {listed}; set "
            "'startingOffsetsByTimestampStrategy' to 'latest' to start at the latest offset "
            "there instead"
        )
    latest_offsets = client.latest_offsets(missing_ts, isolation_level=isolation)
    for tp, offset in found.items():
        out[tp] = offset if offset is not None else latest_offsets[tp]
    return out


def _read_settings(options: SourceOptions) -> ReadSettings:
    return ReadSettings(
        client=options.client,
        fetch=options.fetch,
        include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss,
    )


# --- batch ---------------------------------------------------------------------------------------


class OdradekBatchReader(DataSourceReader):
    """``spark.read.format("odradek")``: offsets resolved when Spark plans the query."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.settings = _read_settings(options)

    def partitions(self) -> list[InputPartition]:
        options = self.options
        client = shared_client(options.client)
        tps = discover_partitions(client, options.subscription)
        start = resolve_offsets(client, options.starting, tps, options, starting=True)
        assert options.ending is not None
        end = resolve_offsets(client, options.ending, tps, options, starting=False)
        for tp in tps:
            if end[tp] < start[tp]:
                raise OptionError(
                    f"the ending offset {end[tp]} of {tp[0]}-{tp[1]} is before its starting "
                    f"offset {start[tp]}"
                )
        ranges = plan_ranges(
            start,
            end,
            min_partitions=options.min_partitions,
            max_records_per_partition=options.max_records_per_partition,
        )
        log.info("batch read of %s: %d ranges", options.subscription.describe(), len(ranges))
        return [OffsetRangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRangePartition):
            # Spark runs one task with a placeholder partition when partitions() is empty.
            return iter(())
        return read_range(self.settings, partition.range)


# --- streaming -----------------------------------------------------------------------------------


class OdradekStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("odradek")`` with admission control and availableNow."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.settings = _read_settings(options)
        self._initial: dict[str, Any] | None = None
        self._target: dict[TopicPartition, int] | None = None
        self._latest: dict[TopicPartition, int] | None = None
        self._delay = (
            TriggerDelay(options.min_offsets_per_trigger, options.max_trigger_delay_ms)
            if options.min_offsets_per_trigger
            else None
        )

    def __getstate__(self) -> dict[str, Any]:
        # Executors need the settings only; the driver-side state stays where it is.
        return {
            "options": self.options,
            "settings": self.settings,
            "_initial": None,
            "_target": None,
            "_latest": None,
            "_delay": None,
        }

    def _client(self) -> KafkaClient:
        return shared_client(self.options.client)

    # -- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        # Spark asks twice at start; the second answer must be the first one.
        if self._initial is None:
            client = self._client()
            tps = discover_partitions(client, self.options.subscription)
            offsets = resolve_offsets(
                client, self.options.starting, tps, self.options, starting=True
            )
            self._initial = offsets_to_json(offsets)
            log.info("initial offsets: %s", self._initial)
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        client = self._client()
        tps = discover_partitions(client, self.options.subscription)
        self._target = client.latest_offsets(tps, isolation_level=self.options.isolation_level)
        log.info("availableNow: reading up to %s", offsets_to_json(self._target))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        client = self._client()
        start_offsets = offsets_from_json(start or {})
        if self._target is not None:
            latest = dict(self._target)
        else:
            tps = discover_partitions(client, self.options.subscription)
            latest = client.latest_offsets(tps, isolation_level=self.options.isolation_level)
        self._latest = latest
        froms = {tp: start_offsets[tp] for tp in latest if tp in start_offsets}
        new = [tp for tp in latest if tp not in start_offsets]
        if new:
            froms.update(client.earliest_offsets(new))
        end = dict(latest)
        if not isinstance(limit, ReadAllAvailable):
            if self._delay is not None and self._target is None:
                available = sum(max(0, latest[tp] - froms[tp]) for tp in latest)
                if not self._delay.admit(available, time.time() * 1000):
                    return start
            if isinstance(limit, ReadMaxRows):
                end = rate_limit(froms, latest, limit.max_rows)
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        options = self.options
        start_offsets = offsets_from_json(start or {})
        end_offsets = offsets_from_json(end or {})
        gone = sorted(set(start_offsets) - set(end_offsets))
        if gone:
            report_data_loss(
                ", ".join(f"{t}-{p}" for t, p in gone)
                + " are gone; some data may have been missed",
                options.fail_on_data_loss,
            )
        froms = {tp: start_offsets[tp] for tp in end_offsets if tp in start_offsets}
        new = [tp for tp in end_offsets if tp not in start_offsets]
        if new:
            earliest = self._client().earliest_offsets(new)
            for tp, offset in earliest.items():
                if offset != 0:
                    report_data_loss(
                        f"added partition {tp[0]}-{tp[1]} starts from {offset} instead of 0; "
                        "some data may have been missed",
                        options.fail_on_data_loss,
                    )
            froms.update(earliest)
        usable = {}
        for tp, until in end_offsets.items():
            if until < froms[tp]:
                report_data_loss(
                    f"partition {tp[0]}-{tp[1]}'s offset went back from {froms[tp]} to {until}; "
                    "some data may have been missed",
                    options.fail_on_data_loss,
                )
                continue
            usable[tp] = until
        ranges = plan_ranges(
            froms,
            usable,
            min_partitions=options.min_partitions,
            max_records_per_partition=options.max_records_per_partition,
        )
        return [OffsetRangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRangePartition):
            # Spark runs one task with a placeholder partition when partitions() is empty.
            return iter(())
        return read_range(self.settings, partition.range)

    def commit(self, end: dict[str, Any]) -> None:
        # Spark's checkpoint holds the offsets; nothing is committed to Kafka.
        pass

    def stop(self) -> None:
        # Rarely called (Spark kills its workers); nothing depends on it.
        pass
