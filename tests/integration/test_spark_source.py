"""The odradek source in a real local SparkSession against the real daemon, with data produced
by confluent-kafka: availableNow with maxOffsetsPerTrigger, restarts from a checkpoint, starting
offsets (JSON, timestamps), batch reads with ending offsets, minPartitions, subscribePattern
picking up a new topic, headers and every codec, failOnDataLoss, killed Python workers."""

from __future__ import annotations

import os
import signal
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.test_spark_support import (
    create_topic,
    input_rows,
    produce,
    run_available_now,
    source,
    spark,  # noqa: F401 - fixture
    unique,
)

pytestmark = pytest.mark.spark

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def parquet_rows(spark, path) -> list[tuple]:  # noqa: F811
    rows = spark.read.parquet(str(path)).select("partition", "offset", "key", "value").collect()
    return sorted((r.partition, r.offset, bytes(r.key or b""), bytes(r.value)) for r in rows)


def expected_rows(records) -> list[tuple]:
    per_partition: dict[int, int] = {}
    out = []
    for r in records:
        p = r["partition"]
        offset = per_partition.get(p, 0)
        per_partition[p] = offset + 1
        out.append((p, offset, r.get("key") or b"", r["value"]))
    return sorted(out)


def pageview_records(n: int, partitions: int, start: int = 0) -> list[dict]:
    return [
        {"key": f"k{i}".encode(), "value": f"view-{i}".encode(), "partition": i % partitions}
        for i in range(start, start + n)
    ]


def test_available_now_reads_exactly_once_in_batches_and_restarts(spark, broker, tmp_path):  # noqa: F811
    topic = unique("avail")
    create_topic(broker.bootstrap, topic, 3)
    first = pageview_records(300, 3)
    produce(broker.bootstrap, topic, first)
    df = source(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=70,
    )
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = run_available_now(df, out, checkpoint)
    batches = input_rows(query)
    assert sum(batches) == 300 and len(batches) >= 5 and max(batches) <= 70
    assert parquet_rows(spark, out) == expected_rows(first)

    # More data, then the same query again from its checkpoint: only the new records.
    second = pageview_records(120, 3, start=300)
    produce(broker.bootstrap, topic, second)
    query = run_available_now(df, out, checkpoint)
    batches = input_rows(query)
    assert sum(batches) == 120 and max(batches) <= 70
    assert parquet_rows(spark, out) == expected_rows(first + second)

    # Nothing new: the query ends without a batch.
    query = run_available_now(df, out, checkpoint)
    assert input_rows(query) == []


def test_starting_offsets_json_and_timestamps(spark, broker, tmp_path):  # noqa: F811
    topic = unique("start")
    create_topic(broker.bootstrap, topic, 2)
    base = int(time.time() * 1000) - 3_600_000
    records = [
        {"value": f"v{i}".encode(), "partition": i % 2, "timestamp": base + i * 10}
        for i in range(40)
    ]
    produce(broker.bootstrap, topic, records)

    def offsets_read(**options) -> list[tuple[int, int]]:
        name = unique("q")
        df = source(spark, broker.bootstrap, subscribe=topic, **options)
        run_available_now(df, tmp_path / name / "out", tmp_path / name / "ck")
        rows = spark.read.parquet(str(tmp_path / name / "out")).collect()
        return sorted((r.partition, r.offset) for r in rows)

    # per-partition JSON: partition 0 from offset 15, partition 1 from earliest (-2)
    got = offsets_read(startingOffsets=f'{{"{topic}":{{"0":15,"1":-2}}}}')
    assert got == [(0, o) for o in range(15, 20)] + [(1, o) for o in range(20)]
    # one timestamp for every partition: records 30.. (timestamps base+300..)
    got = offsets_read(startingTimestamp=str(base + 300))
    assert got == sorted((i % 2, i // 2) for i in range(30, 40))
    # per-partition timestamps
    got = offsets_read(startingOffsetsByTimestamp=f'{{"{topic}":{{"0":{base + 360},"1":{base}}}}}')
    assert got == [(0, o) for o in range(18, 20)] + [(1, o) for o in range(20)]


def test_starting_timestamp_beyond_the_data(spark, broker, tmp_path):  # noqa: F811
    topic = unique("late")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [{"value": b"x", "partition": 0}])
    future = int(time.time() * 1000) + 3_600_000
    df = source(spark, broker.bootstrap, stream=False, subscribe=topic, startingTimestamp=future)
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        df.collect()
    df = source(
        spark,
        broker.bootstrap,
        stream=False,
        subscribe=topic,
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert df.count() == 0


def test_batch_read_with_ending_offsets_counts_exactly(spark, broker):  # noqa: F811
    topic = unique("batch")
    create_topic(broker.bootstrap, topic, 3)
    base = int(time.time() * 1000) - 3_600_000
    records = [
        {"value": f"v{i}".encode(), "partition": i % 3, "timestamp": base + i} for i in range(3000)
    ]
    produce(broker.bootstrap, topic, records)
    common = {"subscribe": topic}
    ending = f'{{"{topic}":{{"0":500,"1":-1,"2":10}}}}'
    df = source(spark, broker.bootstrap, stream=False, endingOffsets=ending, **common)
    assert df.count() == 500 + 1000 + 10
    df = source(
        spark,
        broker.bootstrap,
        stream=False,
        startingOffsets=f'{{"{topic}":{{"0":100,"1":-2,"2":5}}}}',
        endingOffsets=ending,
        **common,
    )
    assert df.count() == 400 + 1000 + 5
    got = df.groupBy("partition").agg({"offset": "min"}).collect()
    assert {r[0]: r[1] for r in got} == {0: 100, 1: 0, 2: 5}
    # ending by timestamp: records with timestamp < base + 1500 (offsets 0..499 per partition)
    df = source(spark, broker.bootstrap, stream=False, endingTimestamp=base + 1500, **common)
    assert df.count() == 1500
    # minPartitions splits the ranges; the count stays exact
    df = source(spark, broker.bootstrap, stream=False, minPartitions=8, **common)
    assert df.rdd.getNumPartitions() >= 8
    assert df.count() == 3000
    assert df.select("partition", "offset").distinct().count() == 3000
    df = source(spark, broker.bootstrap, stream=False, maxRecordsPerPartition=400, **common)
    assert df.rdd.getNumPartitions() == 9 and df.count() == 3000
    # the schema is exactly the built-in Kafka source's
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    ts = df.where("offset = 0 and partition = 1").select("timestamp").first()[0]
    assert int(ts.timestamp() * 1000) == base + 1


def test_subscribe_pattern_picks_up_a_topic_created_later(spark, broker):  # noqa: F811
    prefix = unique("pat")
    create_topic(broker.bootstrap, f"{prefix}-a", 2)
    produce(broker.bootstrap, f"{prefix}-a", pageview_records(20, 2))
    df = source(
        spark,
        broker.bootstrap,
        subscribePattern=f"{prefix}-.*",
        startingOffsets="earliest",
    )
    name = unique("pattern").replace("-", "_")
    query = df.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
        assert spark.sql(f"select count(*) from {name}").first()[0] == 20
        create_topic(broker.bootstrap, f"{prefix}-b", 3)
        produce(broker.bootstrap, f"{prefix}-b", pageview_records(30, 3))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            query.processAllAvailable()
            if spark.sql(f"select count(*) from {name} where topic = '{prefix}-b'").first()[0]:
                break
            time.sleep(0.5)
        rows = spark.sql(f"select topic, count(*) from {name} group by topic").collect()
        assert {r[0]: r[1] for r in rows} == {f"{prefix}-a": 20, f"{prefix}-b": 30}
    finally:
        query.stop()


def test_headers_and_every_codec_round_trip(spark, broker):  # noqa: F811
    prefix = unique("codec")
    expected = {}
    for codec in CODECS:
        topic = f"{prefix}-{codec}"
        create_topic(broker.bootstrap, topic, 1)
        records = []
        for i in range(60):
            headers = None
            if i % 3 == 0:
                headers = [("trace", f"t{i}".encode()), ("empty", b""), ("none", None)]
            elif i % 3 == 1:
                headers = [("ключ", b"\x00\xff")]
            records.append(
                {
                    "key": None if i % 5 == 0 else f"k{i}".encode(),
                    "value": None if i % 7 == 0 else (f"{codec}-{i}-" * (i % 9)).encode(),
                    "headers": headers,
                    "partition": 0,
                }
            )
        produce(broker.bootstrap, topic, records, compression=codec)
        expected[topic] = [
            (i, r["key"], r["value"], r["headers"] or None) for i, r in enumerate(records)
        ]
    df = source(
        spark,
        broker.bootstrap,
        stream=False,
        subscribe=",".join(expected),
        includeHeaders="true",
    )
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    got: dict[str, list] = {t: [] for t in expected}
    for r in df.collect():
        headers = None if r.headers is None else [(h.key, h.value) for h in r.headers]
        got[r.topic].append((r.offset, r.key, r.value, headers))
    for topic, rows in expected.items():
        assert sorted(got[topic], key=lambda x: x[0]) == rows, topic


def test_fail_on_data_loss(spark, broker, tmp_path):  # noqa: F811
    topic = unique("loss")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, pageview_records(100, 1))
    df = source(spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest")
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    run_available_now(df, out, checkpoint)
    produce(broker.bootstrap, topic, pageview_records(50, 1, start=100))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 120)]).values():
        future.result(30)
    with pytest.raises(Exception, match="failOnDataLoss"):
        run_available_now(df, out, checkpoint)
    relaxed = source(
        spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", failOnDataLoss="false"
    )
    run_available_now(relaxed, out, checkpoint)
    offsets = sorted(r.offset for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(100)) + list(range(120, 150))


def test_bad_options_fail_the_query_at_start(spark, broker):  # noqa: F811
    with pytest.raises(Exception, match="not valid in streaming"):
        source(spark, broker.bootstrap, subscribe="x", endingOffsets="latest").writeStream.format(
            "noop"
        ).start().awaitTermination(60)
    with pytest.raises(Exception, match="One of the following options"):
        source(spark, broker.bootstrap, stream=False).collect()
    with pytest.raises(Exception, match="does not accept a user-specified"):
        spark.read.format("odradek").schema("value string").option(
            "kafka.bootstrap.servers", broker.bootstrap
        ).option("subscribe", "x").load().collect()


def _python_workers(module: str) -> list[int]:
    """Spark's Python worker processes of this test session that run ``module``: descendants
    of our JVM, found in /proc."""
    procs: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        procs[int(entry)] = (ppid, args)

    def descends_from_our_jvm(pid: int) -> bool:
        seen = 0
        while pid in procs and seen < 50:
            ppid, _ = procs[pid]
            if ppid == os.getpid():
                return "java" in procs[pid][1]
            pid, seen = ppid, seen + 1
        return False

    return [
        pid
        for pid, (_, args) in procs.items()
        if "python" in args and args.endswith(module) and descends_from_our_jvm(pid)
    ]


@pytest.mark.parametrize(
    ("module", "query_survives"),
    [
        ("pyspark.worker", True),  # the executors' readers: their tasks are retried
        ("python_streaming_source_runner", False),  # the source's offset process: Spark stops
    ],
)
def test_killed_python_workers_do_not_lose_or_repeat_records(
    spark,  # noqa: F811
    broker,
    tmp_path,
    module,
    query_survives,
):
    """SIGKILL Spark's Python workers in the middle of an availableNow query: nothing relies on
    stop(), connections are opened again lazily, and (after a restart from the checkpoint when
    Spark gives up on the query) every record is there exactly once."""
    from pyspark.sql.streaming import StreamingQueryListener

    topic = unique("kill")
    create_topic(broker.bootstrap, topic, 2)
    records = pageview_records(400, 2)
    produce(broker.bootstrap, topic, records)
    killed: list[int] = []

    class Killer(StreamingQueryListener):
        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            if event.progress.batchId == 1 and not killed:
                for pid in _python_workers(module):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    except ProcessLookupError:
                        pass

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    listener = Killer()
    spark.streams.addListener(listener)
    df = source(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=50,
    )
    out, checkpoint = tmp_path / "out", tmp_path / "ck"
    try:
        if query_survives:
            query = run_available_now(df, out, checkpoint)
            assert sum(input_rows(query)) == 400
        else:
            with pytest.raises(Exception, match="STREAM_FAILED"):
                run_available_now(df, out, checkpoint)
            run_available_now(df, out, checkpoint)
    finally:
        spark.streams.removeListener(listener)
    assert killed, f"no Python worker running {module} was found"
    assert parquet_rows(spark, out) == expected_rows(records)
