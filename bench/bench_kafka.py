"""Apache Kafka and Odradek side by side on this machine, the same workloads in one run (issue 15).

    python -m bench bench_kafka                       # everything (several minutes)
    python -m bench bench_kafka --records 200000 --skip-e2e    # a quicker look

Brokers: Kafka 3.9 in ZooKeeper mode (tests/reference/versions.mk; `make reference-kafka` fetches
it) with the heap and GC options of Kafka's kafka-server-start (-Xmx1G -Xms1G, G1), on a real
ZooKeeper; Odradek standalone with its defaults (`odradek serve`). Both on free loopback ports,
message.max.bytes raised to 2 MB for the 1 MB rows, everything else default.

Workloads, after an unmeasured warm-up of each broker (half the records, produced and consumed:
the JVM compiles Kafka's hot paths in its first seconds), each run against Kafka then Odradek
before the next, so machine drift hits both alike:

* Kafka's own kafka-producer-perf-test: N x 100 B records (default 1M) at full speed, to 1 and
  10 partitions, acks=1 and acks=all; 1 MB records (200) with acks=1;
* Kafka's own kafka-consumer-perf-test reading back what each 100 B run wrote;
* Kafka's own EndToEndLatency (one record at a time, acks=1) and the 1k records/s latency
  workload of bench_e2e (confluent-kafka: p50 and p99);
* bench_e2e's confluent-kafka workloads (produce, consume, consume with tuned fetch queues; 1 and
  6 partitions, no compression and lz4).

For each row: throughput on each broker, the ratio Odradek / Kafka (above 1: Odradek is ahead;
for latencies, below 1 is ahead), and each broker's CPU seconds per million records (user+system
of the broker process, /proc/<pid>/stat, during that workload). The clients run on the same
2 cores: the figures are this machine's, and the ratios are what to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bench_e2e  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402
from tests.support.kafka_reference import (  # noqa: E402
    KafkaBroker,
    reference_missing,
    tool_class,
    tool_command,
    zk_version,
)
from tests.support.zookeeper import ZooKeeperServer, zookeeper_missing  # noqa: E402

#: Kafka's kafka-server-start.sh defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_JVM_OPTS = (
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
BIG_MESSAGES = {"message.max.bytes": "2000000", "replica.fetch.max.bytes": "2000000"}
#: Both brokers as Kafka's sample config/server.properties sets up a single node: no initial
#: rebalance delay (kafka-consumer-perf-test's time includes joining its group).
SHARED = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    **BIG_MESSAGES,
}


@dataclass
class Broker:
    name: str
    bootstrap: str
    pid: int

    def cpu(self) -> float:
        return bench_e2e.cpu_seconds(self.pid)


@dataclass
class Row:
    workload: str
    unit: str
    records: int
    values: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    #: for latencies a smaller figure is better
    lower_is_better: bool = False

    def ratio(self) -> float | None:
        kafka, ours = self.values.get("kafka"), self.values.get("odradek")
        if not kafka or ours is None:
            return None
        return ours / kafka


def run_java(version: str, script: str, *args: str, timeout: float = 900) -> str:
    proc = subprocess.run(
        tool_command(version, tool_class(version, script), *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    bench_e2e.worker("create", bootstrap, topic, partitions, "none", 0)


def producer_perf(
    version: str, broker: Broker, topic: str, records: int, size: int, acks: str
) -> dict[str, float]:
    out = run_java(
        version,
        "kafka-producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={broker.bootstrap}",
        f"acks={acks}",
        "max.request.size=2000000",
    )
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    m = re.search(
        r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency.*?"
        r"([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th",
        last,
    )
    assert m, last
    return {
        "rps": float(m.group(1)),
        "MBps": float(m.group(2)),
        "avg_ms": float(m.group(3)),
        "p50_ms": float(m.group(4)),
        "p99_ms": float(m.group(6)),
    }


def consumer_perf(version: str, broker: Broker, topic: str, records: int) -> dict[str, float]:
    out = run_java(
        version,
        "kafka-consumer-perf-test",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--messages",
        str(records),
        "--group",
        f"perf-{uuid.uuid4().hex[:6]}",
        "--timeout",
        "120000",
    )
    header, values = None, None
    for line in out.splitlines():
        if line.startswith("start.time"):
            header = [h.strip() for h in line.split(",")]
        elif header and line.strip():
            values = [v.strip() for v in line.split(",")]
    assert header and values, out
    row = dict(zip(header, values, strict=False))
    return {"rps": float(row["nMsg.sec"]), "MBps": float(row["MB.sec"])}


def end_to_end_latency(version: str, broker: Broker, topic: str, count: int) -> dict[str, float]:
    out = run_java(version, "kafka-e2e-latency", broker.bootstrap, topic, str(count), "1", "100")
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    pct = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    assert avg and pct, out
    return {
        "avg_ms": float(avg.group(1)),
        "p50_ms": float(pct.group(1)),
        "p99_ms": float(pct.group(2)),
    }


def measure(
    rows: list[Row],
    brokers: list[Broker],
    make: Any,
    workload: str,
    unit: str,
    records: int,
    key: str,
    lower_is_better: bool = False,
    cpu_records: int | None = None,
) -> None:
    row = Row(workload, unit, records, lower_is_better=lower_is_better)
    for broker in brokers:
        c0 = broker.cpu()
        result = make(broker)
        row.values[broker.name] = result[key]
        row.cpu[broker.name] = (broker.cpu() - c0) / max(cpu_records or records, 1) * 1e6
        print(f"  {workload:55s} {broker.name:8s} {result[key]:12.3f} {unit}", flush=True)
    rows.append(row)


def _figure(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def _cpu(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def table(rows: list[Row]) -> str:
    lines = [
        "| workload | Kafka | Odradek | Odradek / Kafka "
        "| broker CPU s per M records: Kafka | Odradek |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r.ratio()
        verdict = ""
        if ratio is not None:
            ahead = ratio < 1 if r.lower_is_better else ratio > 1
            verdict = "" if ahead else " (behind)"
        lines.append(
            f"| {r.workload} ({r.unit}) | {_figure(r.values.get('kafka'))} | "
            f"{_figure(r.values.get('odradek'))} | "
            f"{'' if ratio is None else f'{ratio:.2f}'}{verdict} | "
            f"{_cpu(r.cpu.get('kafka'))} | {_cpu(r.cpu.get('odradek'))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000, help="records per 100 B row")
    ap.add_argument("--big-records", type=int, default=200, help="records in the 1 MB row")
    ap.add_argument("--latency-records", type=int, default=10_000, help="EndToEndLatency count")
    ap.add_argument("--skip-e2e", action="store_true", help="skip bench_e2e's workloads")
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)

    version = zk_version()
    reason = reference_missing(version) or zookeeper_missing()
    if reason:
        print(f"bench_kafka: not run: {reason}")
        return
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-kafka-"))
    print(
        f"command: python -m bench bench_kafka {' '.join(sys.argv[1:] if argv is None else argv)}"
    )
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores")
    zookeeper = ZooKeeperServer(tmp / "zookeeper").start()
    kafka = KafkaBroker(
        tmp / "kafka",
        version,
        zookeeper_connect=zookeeper.chroot_connect("bench"),
        overrides={"num.partitions": "1", **SHARED},
        jvm_opts=KAFKA_JVM_OPTS,
    )
    ours = BrokerProcess(tmp / "odradek" / "data", dict(SHARED))
    (tmp / "odradek").mkdir()
    rows: list[Row] = []
    try:
        kafka.start()
        ours.start()
        brokers = [
            Broker("kafka", kafka.bootstrap, kafka.pid),
            Broker("odradek", ours.bootstrap, ours.pid),
        ]
        print(
            f"Kafka {version} (pid {kafka.pid}) on {kafka.bootstrap}; "
            f"Odradek (pid {ours.pid}) on {ours.bootstrap}"
        )
        run_id = uuid.uuid4().hex[:6]
        n = args.records
        # a warm-up on each broker first, not measured: the JVM compiles Kafka's hot paths
        # during its first seconds, and a long-running Kafka is what a user meets
        for b in brokers:
            topic = f"warm-up-{b.name}-{run_id}"
            create_topic(b.bootstrap, topic, 10)
            producer_perf(version, b, topic, max(n // 2, 1000), 100, "1")
            consumer_perf(version, b, topic, max(n // 2, 1000))
        for partitions in (1, 10):
            for acks in ("1", "all"):
                topic = f"perf-{partitions}p-acks{acks}-{run_id}"
                for b in brokers:
                    create_topic(b.bootstrap, topic, partitions)
                measure(
                    rows,
                    brokers,
                    lambda b, t=topic, a=acks: producer_perf(version, b, t, n, 100, a),
                    f"kafka-producer-perf-test {n:,} x 100 B, {partitions} partition(s), "
                    f"acks={acks}",
                    "records/s",
                    n,
                    "rps",
                )
                if acks == "1":
                    measure(
                        rows,
                        brokers,
                        lambda b, t=topic: consumer_perf(version, b, t, n),
                        f"kafka-consumer-perf-test {n:,} x 100 B, {partitions} partition(s)",
                        "records/s",
                        n,
                        "rps",
                    )
        topic = f"perf-big-{run_id}"
        for b in brokers:
            create_topic(b.bootstrap, topic, 1)
        measure(
            rows,
            brokers,
            lambda b: producer_perf(version, b, topic, args.big_records, 1_000_000, "1"),
            f"kafka-producer-perf-test {args.big_records} x 1 MB, acks=1",
            "MB/s",
            args.big_records,
            "MBps",
        )
        topic = f"e2e-latency-{run_id}"
        for b in brokers:
            create_topic(b.bootstrap, topic, 1)
        measure(
            rows,
            brokers,
            lambda b: end_to_end_latency(version, b, topic, args.latency_records),
            f"EndToEndLatency {args.latency_records:,} x 100 B, one at a time: average",
            "ms",
            args.latency_records,
            "avg_ms",
            lower_is_better=True,
        )
        if not args.skip_e2e:
            topic = f"latency-{run_id}"
            for b in brokers:
                create_topic(b.bootstrap, topic, 1)
            results: dict[str, dict[str, Any]] = {}

            def latency(b: Broker) -> dict[str, float]:
                results[b.name] = bench_e2e.worker("latency", b.bootstrap, topic, 1, "none", 0)
                return results[b.name]

            measure(
                rows,
                brokers,
                latency,
                "confluent-kafka 1k records/s x 1 KiB, 10 s: p50",
                "ms",
                10_000,
                "p50_ms",
                lower_is_better=True,
            )
            rows.append(
                Row(
                    "confluent-kafka 1k records/s x 1 KiB, 10 s: p99",
                    "ms",
                    10_000,
                    {k: v["p99_ms"] for k, v in results.items()},
                    lower_is_better=True,
                )
            )
            suites = {
                b.name: bench_e2e.run_suite(b.name, b.bootstrap, b.pid, n, f"{b.name}-{run_id}")
                for b in brokers
            }
            for key in suites["kafka"]:
                if key == "latency":
                    continue
                for metric, label in (
                    ("produce_rps", "produce"),
                    ("consume_rps", "consume"),
                    ("consume_tuned_rps", "consume, tuned fetch queue"),
                ):
                    cpu_key = metric.replace("_rps", "_broker_cpu_s")
                    rows.append(
                        Row(
                            f"bench_e2e confluent-kafka {key}: {label}",
                            "records/s",
                            n,
                            {name: s[key][metric] for name, s in suites.items()},
                            {name: s[key][cpu_key] / n * 1e6 for name, s in suites.items()},
                        )
                    )
    finally:
        ours.stop()
        kafka.stop()
        zookeeper.stop()
    print(f"load average after: {os.getloadavg()}")
    print()
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps([r.__dict__ for r in rows], indent=1))
