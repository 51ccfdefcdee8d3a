"""The Spark connector's read path against confluent-kafka, on the same records in the same run.

    python -m bench bench_spark                       # 5M x 100 B records, 2 partitions
    python -m bench.bench_spark --records 1000000 --partitions 2 --codec lz4

A fresh broker gets N records of 100 B (JSON-like text, null keys) produced by confluent-kafka.
Then, each in its own process so CPU accounting stays separate:

* confluent: a confluent-kafka (librdkafka) consumer reads every record into pyarrow
  RecordBatches with the Kafka source's columns (key, value, topic, partition, offset, timestamp,
  timestampType), with the fetch settings that keep librdkafka from pausing
  (fetch.queue.backoff.ms=1, 8 MiB per partition fetch);
* decode path: what an executor does in ``read()``: the connector's client fetches and
  ``spark_connector.arrow_records`` decodes straight into RecordBatches of the same schema,
  partitions one after the other;
* spark: a local[2] SparkSession runs ``readStream.format("odradek")`` with
  ``trigger(availableNow=True)`` into the ``noop`` sink; the time is from ``start()`` to the end
  of the query (the session is started before), the CPU that of the JVM and its Python workers.

"per core" is records per CPU-second of the reading process (all its threads); the broker's CPU
is shown apart. The target is decode path >= 1.5x confluent per core. This machine is shared:
quote ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.broker_process import BrokerProcess  # noqa: E402

VALUE_SIZE = 100
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int, *, children: bool = True) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime (waited-for children)
    return ticks / CLOCK_TICKS


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for child in parents.get(p, []):
            out.append(child)
            todo.append(child)
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process's living descendants (and of the children they reaped)."""
    return sum(_proc_cpu(p) for p in _descendants(pid))


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- roles, each run in its own process ----------------------------------------------------------


def role_produce(bootstrap: str, topic: str, partitions: int, records: int, codec: str) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})])[
        topic
    ].result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_048_576,
            "compression.type": codec,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        }
    )
    values = [
        (b'{"user":"user-%06d","page":"/articles/%d","ts":%d,"pad":"' % (i, i % 97, i) + b"x" * 64)[
            : VALUE_SIZE - 2
        ]
        + b'"}'
        for i in range(1024)
    ]
    t0 = time.perf_counter()
    for i in range(records):
        try:
            producer.produce(topic, values[i & 1023], partition=i % partitions)
        except BufferError:
            producer.poll(0.05)
            producer.produce(topic, values[i & 1023], partition=i % partitions)
    left = producer.flush(300)
    return {"seconds": time.perf_counter() - t0, "unflushed": left}


def role_confluent(bootstrap: str, topic: str, partitions: int, records: int) -> dict:
    import pyarrow as pa
    from confluent_kafka import Consumer, TopicPartition

    from spark_connector.arrow_records import ARROW_SCHEMA

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-bench",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 1,
            "queued.max.messages.kbytes": 262_144,
            "max.partition.fetch.bytes": 8_388_608,
            "fetch.max.bytes": 52_428_800,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    ts_type = pa.timestamp("us", tz="UTC")
    c0, t0 = self_cpu(), time.perf_counter()
    n = 0
    deadline = t0 + 600
    while n < records and time.perf_counter() < deadline:
        messages = consumer.consume(100_000, 1.0)
        keys, values, topics, parts, offsets, stamps, types = [], [], [], [], [], [], []
        for m in messages:
            if m.error():
                continue
            keys.append(m.key())
            values.append(m.value())
            topics.append(m.topic())
            parts.append(m.partition())
            offsets.append(m.offset())
            kind, ts = m.timestamp()
            stamps.append(ts * 1000)
            types.append(kind - 1)
        if not offsets:
            continue
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(topics, pa.string()),
                pa.array(parts, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(stamps, ts_type),
                pa.array(types, pa.int32()),
            ],
            schema=ARROW_SCHEMA,
        )
        n += batch.num_rows
    seconds, cpu = time.perf_counter() - t0, self_cpu() - c0
    consumer.close()
    return {"records": n, "seconds": seconds, "cpu": cpu}


def role_decode(bootstrap: str, topic: str, partitions: int, records: int) -> dict:
    from spark_connector.client import ClientConfig, KafkaClient
    from spark_connector.offsets import OffsetRange
    from spark_connector.options import FetchSettings
    from spark_connector.reader import ReadSettings, read_range

    config = ClientConfig.from_bootstrap(bootstrap)
    client = KafkaClient(config)
    tps = [(topic, p) for p in range(partitions)]
    ends = client.latest_offsets(tps)
    settings = ReadSettings(config, FetchSettings(), include_headers=False, fail_on_data_loss=True)
    c0, t0 = self_cpu(), time.perf_counter()
    n = 0
    for tp in tps:
        for batch in read_range(settings, OffsetRange(tp[0], tp[1], 0, ends[tp])):
            n += batch.num_rows
    return {"records": n, "seconds": time.perf_counter() - t0, "cpu": self_cpu() - c0}


def role_spark(bootstrap: str, topic: str, partitions: int, records: int) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import spark_connector

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    checkpoint = tempfile.mkdtemp(prefix="bench-spark-ck-")
    me = os.getpid()
    c0, t0 = tree_cpu(me), time.perf_counter()
    query = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(1800)
    seconds, cpu = time.perf_counter() - t0, tree_cpu(me) - c0
    n = sum(p["numInputRows"] for p in query.recentProgress)
    batches = len([p for p in query.recentProgress if p["numInputRows"]])
    spark.stop()
    return {"records": n, "seconds": seconds, "cpu": cpu, "batches": batches}


ROLES = {
    "produce": role_produce,
    "confluent": role_confluent,
    "decode": role_decode,
    "spark": role_spark,
}


def run_role(role: str, *args: Any) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_spark", "--role", role, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{role} failed ({out.returncode}):\n{out.stderr[-4000:]}")
    result: dict = json.loads(lines[-1])
    return result


# --- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # python -m bench.bench_spark ...
        argv = sys.argv[1:]
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--skip-spark", action="store_true", help="only the two decode paths")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role:
        bootstrap, topic, partitions, records, *extra = args.rest
        result = ROLES[args.role](bootstrap, topic, int(partitions), int(records), *extra)
        print(json.dumps(result), flush=True)
        return

    command = "python -m bench.bench_spark " + " ".join(argv)
    print(f"command: {command.strip()}")
    print(
        f"records: {args.records} x {VALUE_SIZE} B values, {args.partitions} partitions, "
        f"compression {args.codec}; {os.cpu_count()} cores (shared machine)",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-spark-"))
    broker = BrokerProcess(
        tmp / "data", {"log.retention.ms": "-1"}, log_path=tmp / "broker.log"
    ).start()
    try:
        topic = f"bench-spark-{os.getpid()}"
        produced = run_role(
            "produce", broker.bootstrap, topic, args.partitions, args.records, args.codec
        )
        print(
            f"produced with confluent-kafka in {produced['seconds']:.1f} s "
            f"({args.records / produced['seconds']:,.0f} records/s)",
            flush=True,
        )
        rows = []
        for name, role in [("confluent-kafka -> pyarrow", "confluent"), ("decode path", "decode")]:
            b0 = _proc_cpu(broker.pid, children=False)
            r = run_role(role, broker.bootstrap, topic, args.partitions, args.records)
            r["broker_cpu"] = _proc_cpu(broker.pid, children=False) - b0
            rows.append((name, r))
            print(f"  {name}: done", flush=True)
        if not args.skip_spark:
            b0 = _proc_cpu(broker.pid, children=False)
            r = run_role("spark", broker.bootstrap, topic, args.partitions, args.records)
            r["broker_cpu"] = _proc_cpu(broker.pid, children=False) - b0
            rows.append((f"spark availableNow -> noop ({r['batches']} batch)", r))
    finally:
        broker.stop()

    print()
    print(
        f"{'path':<44} {'records':>10} {'wall s':>7} {'records/s':>11} "
        f"{'CPU s':>6} {'records/CPU-s':>14} {'broker CPU s':>13}"
    )
    for name, r in rows:
        print(
            f"{name:<44} {r['records']:>10,} {r['seconds']:>7.2f} "
            f"{r['records'] / r['seconds']:>11,.0f} {r['cpu']:>6.2f} "
            f"{r['records'] / max(r['cpu'], 1e-9):>14,.0f} {r['broker_cpu']:>13.2f}"
        )
    confluent, decode = rows[0][1], rows[1][1]
    ratio = (decode["records"] / decode["cpu"]) / (confluent["records"] / confluent["cpu"])
    verdict = "meets" if ratio >= 1.5 else "MISSES"
    print(f"\ndecode path / confluent-kafka per core: {ratio:.2f}x ({verdict} the 1.5x target)")
    for name, r in rows:
        if r["records"] != args.records:
            print(f"WARNING: {name} read {r['records']} records, expected {args.records}")


if __name__ == "__main__":
    main()
