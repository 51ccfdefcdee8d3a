"""The connector's client and offset side against the real daemon, without a SparkSession: the
stream reader's methods are plain Python, called here as Spark's source process calls them
(admission control, minOffsetsPerTrigger with maxTriggerDelay, availableNow, memoized initial
offsets, new partitions), and reads in many small fetches."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from spark_connector.client import (
    READ_COMMITTED,
    ClientConfig,
    KafkaClient,
    TopicNotFound,
)
from spark_connector.offsets import OffsetRange
from spark_connector.options import FetchSettings, offsets_from_json, parse_source_options
from spark_connector.producer import Producer
from spark_connector.reader import DataLossError, ReadSettings, read_range
from spark_connector.source import OdradekStreamReader
from tests.integration.test_spark_support import create_topic, produce, unique


def records(n: int, partitions: int, start: int = 0) -> list[dict]:
    return [{"value": b"v%d" % i, "partition": i % partitions} for i in range(start, start + n)]


def reader(bootstrap: str, topic: str, **options: str) -> OdradekStreamReader:
    parsed = parse_source_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **options}, streaming=True
    )
    return OdradekStreamReader(parsed)


def total(start: dict, end: dict) -> int:
    a, b = offsets_from_json(start), offsets_from_json(end)
    return sum(b[tp] - a.get(tp, 0) for tp in b)


def test_admission_control_and_memoized_initial_offsets(broker):
    topic = unique("admit")
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, records(300, 3))
    r = reader(broker.bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger="100")
    assert r.getDefaultReadLimit() == ReadMaxRows(100)
    start = r.initialOffset()
    produce(broker.bootstrap, topic, records(30, 3, 300))
    assert r.initialOffset() == start  # asked twice at start: the same answer
    assert json.dumps(start) == json.dumps(start, sort_keys=True)
    end = r.latestOffset(start, ReadMaxRows(100))
    assert total(start, end) == 100
    assert json.dumps(end) == json.dumps(end, sort_keys=True)
    everything = r.latestOffset(end, ReadAllAvailable())  # the engine may override the limit
    assert total(start, everything) == 330
    ranges = r.partitions(start, end)
    assert sum(p.range.size for p in ranges) == 100
    got = [b for p in ranges for batch in r.read(p) for b in batch.column("value").to_pylist()]
    assert len(got) == 100 and len(set(got)) == 100


def test_min_offsets_per_trigger_and_delay(broker):
    topic = unique("minrows")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, records(10, 2))
    r = reader(
        broker.bootstrap,
        topic,
        startingOffsets="earliest",
        minOffsetsPerTrigger="50",
        maxTriggerDelay="1h",
    )
    limit = r.getDefaultReadLimit()
    assert limit == ReadMinRows(50)
    start = r.initialOffset()
    first = r.latestOffset(start, limit)
    assert total(start, first) == 10  # the first batch is never held back (as in Spark)
    produce(broker.bootstrap, topic, records(20, 2, 10))
    assert r.latestOffset(first, limit) == first  # 20 < 50 and the delay has not passed
    produce(broker.bootstrap, topic, records(40, 2, 30))
    assert total(first, r.latestOffset(first, limit)) == 60
    # with a zero delay every trigger runs
    quick = reader(broker.bootstrap, topic, minOffsetsPerTrigger="50", maxTriggerDelay="0s")
    begin = quick.initialOffset()
    quick.latestOffset(begin, quick.getDefaultReadLimit())
    produce(broker.bootstrap, topic, records(2, 2, 70))
    assert total(begin, quick.latestOffset(begin, quick.getDefaultReadLimit())) == 2


def test_available_now_stops_at_the_target_and_new_partitions(broker):
    topic = unique("target")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, records(40, 2))
    r = reader(broker.bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger="15")
    start = r.initialOffset()
    r.prepareForTriggerAvailableNow()
    produce(broker.bootstrap, topic, records(40, 2, 40))  # after the target: not read
    offsets, batches = start, 0
    while True:
        end = r.latestOffset(offsets, r.getDefaultReadLimit())
        if end == offsets:
            break
        assert total(offsets, end) <= 15
        offsets, batches = end, batches + 1
    assert total(start, offsets) == 40 and batches == 3

    # a partition added while a query runs is read from its beginning
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    produce(broker.bootstrap, topic, [{"value": b"new", "partition": 2}])
    live = reader(broker.bootstrap, topic, startingOffsets="earliest")
    end = live.latestOffset(offsets, ReadAllAvailable())
    assert offsets_from_json(end)[(topic, 2)] == 1
    ranges = live.partitions(offsets, end)
    assert OffsetRange(topic, 2, 0, 1) in [p.range for p in ranges]


def test_reads_in_many_small_fetches_and_read_committed(broker):
    topic = unique("small")
    create_topic(broker.bootstrap, topic, 1)
    pad = b"." * 90
    produce(
        broker.bootstrap,
        topic,
        [{"value": b"v%d" % i + pad, "partition": 0} for i in range(2000)],
        **{"batch.size": 2000},
    )
    config = ClientConfig.from_bootstrap(broker.bootstrap)
    for isolation in (0, READ_COMMITTED):
        settings = ReadSettings(
            config,
            FetchSettings(max_partition_fetch_bytes=4096, isolation_level=isolation),
            include_headers=True,
            fail_on_data_loss=True,
        )
        batches = list(read_range(settings, OffsetRange(topic, 0, 7, 1990)))
        assert len(batches) > 10  # many fetches, each decoded on its own
        values = [v for b in batches for v in b.column("value").to_pylist()]
        assert values == [b"v%d" % i + pad for i in range(7, 1990)]
        assert all(b.column("headers").null_count == b.num_rows for b in batches)


def test_data_loss_in_a_read(broker):
    topic = unique("gone")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, records(100, 1))
    from confluent_kafka import TopicPartition

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(topic, 0, 60)]).values():
        f.result(30)
    config = ClientConfig.from_bootstrap(broker.bootstrap)
    strict = ReadSettings(config, FetchSettings(), include_headers=False, fail_on_data_loss=True)
    with pytest.raises(DataLossError, match=r"\[10, 60\)"):
        list(read_range(strict, OffsetRange(topic, 0, 10, 100)))
    relaxed = ReadSettings(config, FetchSettings(), include_headers=False, fail_on_data_loss=False)
    offsets = [
        o
        for b in read_range(relaxed, OffsetRange(topic, 0, 10, 100))
        for o in b["offset"].to_pylist()
    ]
    assert offsets == list(range(60, 100))


def test_producer_refuses_a_missing_topic(broker):
    from spark_connector.options import parse_sink_options

    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap})
    client = KafkaClient(options.client)
    try:
        with pytest.raises(TopicNotFound, match="do not exist"):
            Producer(options, client).append(unique("nope"), None, None, b"x", (), 0)
    finally:
        client.close()


def test_producer_batches_fit_the_topic_limit(broker):
    from spark_connector.options import parse_sink_options

    topic = unique("limit")
    create_topic(broker.bootstrap, topic, 1, **{"max.message.bytes": "600000"})
    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap})
    client = KafkaClient(options.client)
    try:
        producer = Producer(options, client)
        for i in range(3000):  # 3 MB: several batches of at most kafka.batch.size (512 KiB)
            producer.append(topic, 0, None, b"%04d" % i + b"x" * 996, (), 0)
        producer.flush()
        assert producer.sent_records == 3000
        producer.append(topic, 0, None, b"y" * 700_000, (), 0)  # alone, still too large
        with pytest.raises(Exception, match="too large"):
            producer.flush()
    finally:
        client.close()
    settings = ReadSettings(
        ClientConfig.from_bootstrap(broker.bootstrap),
        FetchSettings(),
        include_headers=False,
        fail_on_data_loss=True,
    )
    values = [
        v
        for b in read_range(settings, OffsetRange(topic, 0, 0, 3000))
        for v in b["value"].to_pylist()
    ]
    assert [v[:4] for v in values] == [b"%04d" % i for i in range(3000)]
