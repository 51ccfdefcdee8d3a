"""Scale: one broker with 10 vs 10,000 partitions, Odradek beside Apache Kafka (issue 19).

    python -m bench bench_scale [--partitions 10000] [--records 1000000] [--batch 100]
                                [--brokers kafka,odradek] [--kafka-heap 1G] [--segments 1|2]
                                [--consume-repeats 3] [--idle-seconds 20] [--keep-logs DIR]
                                [--no-startup] [--profile DIR]

Brokers (``--brokers``; default both when Kafka's jars are present, else Odradek alone with a
"not run" line): Odradek standalone and Apache Kafka (the newest 4.x, KRaft combined
broker+controller, kafka-server-start's JVM options; bench/targets.py), each with a temp log dir
removed at the end, both with the same settings (200 MB requests, 16 MB batches, one replica).
Both run at once for the throughput rows, each workload against Kafka then Odradek so that
machine drift hits both alike, after an unmeasured warm-up of each (half the records, produced
and consumed: the JVM compiles Kafka's hot paths in its first seconds). Clients are
confluent-kafka, each in its own process.

* **create**: the time each topic takes to create (CreateTopics, then CreatePartitions above
  5,000 as below) until Metadata names a leader for every partition, until a record produced
  to its last partition is acknowledged, and until one produced to every partition is (the
  client retrying meanwhile: Kafka answers and publishes leaders before its broker has made
  the logs, then makes them one after another, so its last partition may be usable long
  before all are); the consume workload reads these records too;
* **produce**: ``--records`` 100 B records spread evenly over the topic's partitions, in
  batches of ``--batch`` records whatever the partition count (``batch.num.messages``, a long
  ``linger.ms``), on a 10-partition topic and on a ``--partitions`` topic: throughput and broker
  CPU seconds per million records;
* **consume**: a consumer assigned to every partition reads all of it back from offset 0:
  throughput and broker CPU per million records, the median of ``--consume-repeats`` reads
  (default 3; a read of 10 partitions lasts about a second, where the consumer's own start
  weighs);
* **idle**: after the workloads, each broker's CPU over ``--idle-seconds`` (default 20) while
  no client runs, holding every topic of the run (the two measured, the warm-up topic,
  ``__consumer_offsets``: the log dir counts printed below): the cost of its periodic work over
  every partition (flushes, checkpoints, retention checks), as a share of one core;
* **start-up** of each broker holding the big topic, alone (the other stopped): after a clean
  stop (SIGTERM) and after SIGKILL, the time from process start until the broker answers
  Metadata for every partition of the topic, and until a produce and a fetch on it work
  (retried until they do), with the broker's CPU seconds meanwhile. With ``--segments 2`` every
  partition has two segments (the topic's ``segment.ms`` is set to 20 s, and a second round of
  records lands after it has passed, so every partition rolls once). Kafka keeps every
  segment's ``.log`` file open: when the open-file limit (raised toward Kafka's recommended
  100,000 where the process may) cannot hold two per partition, the default is one segment, on
  both brokers. The log dirs' file counts and
  each broker's open files are printed. ``--no-startup`` skips this part (for both brokers).

A topic of more than 5,000 partitions is created with 5,000 and grown with CreatePartitions in
steps of 5,000, on both brokers: Kafka's KRaft controller refuses one operation that writes
more than 10,000 metadata records ("Unable to perform excessively large batch operation").

Broker CPU is user+system time from /proc/<pid>/stat. The requests Odradek answered during each
workload are printed (from its /metrics; for a consume, the mean of its reads); Kafka's request
metrics are JMX MBeans, not scraped here, so its counts print as "n/a". ``--profile DIR``
attaches py-spy (the dev extras) to the Odradek broker only (never to Kafka's JVM) for each
produce and consume workload and writes the stacks of the thread holding the GIL (a thread
waiting for it is not working) into DIR as ``produce-N.folded`` and ``consume-N-READ.folded``
(``consume-N.folded`` with one read; flamegraph.pl and speedscope read them; sampling costs
Odradek some CPU: compare figures, Odradek's with Kafka's included, only between runs without
it). Goals (issue 19): CPU per million records with 10,000 partitions at most 1.5x the
10-partition figure; start-up after SIGKILL under 10 s; ahead of Kafka on each row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_e2e import cpu_seconds  # noqa: E402
from bench.targets import choose_brokers, kafka_kraft, raise_file_limit  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402
from tests.support.kafka_reference import KafkaBroker, kraft_version  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

WORKER = r"""
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, NewPartitions, NewTopic)

mode, bootstrap, topic, partitions, count, batch = sys.argv[1:7]
partitions, count, batch = int(partitions), int(count), int(batch)
value = b"v" * 100
STEP = 5000

if mode == "create":
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300000})
    t0 = time.perf_counter()
    n = min(partitions, STEP)
    admin.create_topics([NewTopic(topic, n, 1)], request_timeout=300)[topic].result(300)
    while n < partitions:
        n = min(partitions, n + STEP)
        admin.create_partitions([NewPartitions(topic, n)], request_timeout=300)[topic].result(300)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        known = admin.list_topics(topic, timeout=60).topics[topic].partitions
        if len(known) == partitions and all(p.leader >= 0 for p in known.values()):
            break
        time.sleep(0.2)
    leaders = time.perf_counter() - t0
    # usable: a record produced to the last partition is acknowledged (retried meanwhile)
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "enable.metrics.push": False})
    p.produce(topic, b"first", partition=partitions - 1)
    p.flush(300)
    usable = time.perf_counter() - t0
    # every log made: a record to each partition acknowledged (Kafka publishes leaders, and
    # answers, before its broker has made the logs, then makes them one by one)
    failed = []
    for part in range(partitions):
        p.produce(topic, b"every", partition=part,
                  on_delivery=lambda err, msg: err is not None and failed.append(err))
        p.poll(0)
    p.flush(600)
    print(json.dumps({"leaders": leaders, "usable": usable, "every": time.perf_counter() - t0,
                      "records": partitions + 1, "failed": len(failed)}))
elif mode == "roll-soon":
    # segment.ms 20 s, so that the next records, 20 s on, roll every partition's segment (set
    # only now: the records the create wrote would roll them during the measured produce)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = ConfigResource("TOPIC", topic, incremental_configs=[
        ConfigEntry("segment.ms", "20000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(60)
    print(json.dumps({}))
elif mode == "produce":
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5000,
                  "batch.num.messages": batch, "batch.size": 16 * 1024 * 1024,
                  "queue.buffering.max.messages": 2000000, "queue.buffering.max.kbytes": 2097151,
                  "message.max.bytes": 16000000, "sticky.partitioning.linger.ms": 0,
                  "enable.metrics.push": False})
    produce = p.produce
    per = count // partitions
    t0 = time.perf_counter()
    for i in range(per):
        for part in range(partitions):
            try:
                produce(topic, value, partition=part)
            except BufferError:
                p.poll(0.05)
                produce(topic, value, partition=part)
        p.poll(0)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "records": per * partitions, "unflushed": left}))
elif mode == "consume":
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-c",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 1,
                  "enable.metrics.push": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + 600
    while n < count and time.perf_counter() < deadline:
        n += len(c.consume(10000, 1.0))
    dt = time.perf_counter() - t0
    c.close()
    print(json.dumps({"seconds": dt, "records": n}))
"""


def worker(*args: object, timeout: float = 1800) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if out.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def metadata_ready(bootstrap: str, topic: str, partitions: int) -> bool:
    """Whether the broker answers Metadata for every partition of ``topic`` with a leader."""
    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    from tests.support.raw_client import call, connect

    try:
        with connect(bootstrap, timeout=30) as sock:
            answer = call(sock, MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 9)
    except (OSError, ConnectionError):
        return False
    if not answer.topics or answer.topics[0].error_code != 0:
        return False
    parts = answer.topics[0].partitions
    return len(parts) == partitions and all(p.leader_id >= 0 for p in parts)


def produce_and_fetch_one(bootstrap: str, topic: str, partition: int) -> bool:
    from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from protocol.records.record import SimpleRecord, build_batch
    from tests.support.raw_client import call, connect

    with connect(bootstrap, timeout=60) as sock:
        produced = (
            call(
                sock,
                ProduceRequest(
                    acks=1,
                    timeout_ms=30000,
                    topic_data=[
                        TopicProduceData(
                            name=topic,
                            partition_data=[
                                PartitionProduceData(
                                    index=partition, records=build_batch([SimpleRecord(b"after")])
                                )
                            ],
                        )
                    ],
                ),
                9,
            )
            .responses[0]
            .partition_responses[0]
        )
        if produced.error_code != 0:
            return False
        fetched = call(
            sock,
            FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1,
                topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                    partition=partition, fetch_offset=produced.base_offset,
                    partition_max_bytes=1 << 20)])],
                forgotten_topics_data=[], rack_id="",
            ),
            12,
            2,
        )  # fmt: skip
        p = fetched.responses[0].partitions[0]
        return p.error_code == 0 and bool(p.records)


def file_counts(data: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in data.rglob("*"):
        if path.is_file():
            counts[path.suffix] = counts.get(path.suffix, 0) + 1
    return counts


@contextlib.contextmanager
def profiled(pid: int, out_dir: Path | None, name: str) -> Iterator[None]:
    """py-spy samples every thread of the broker while the block runs (if ``out_dir``)."""
    if out_dir is None:
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    args = [spy, "record", "--pid", str(pid), "--rate", "250", "--nonblocking", "--gil"]
    recorder = subprocess.Popen(
        [*args, "--format", "raw", "--output", str(out_dir / f"{name}.folded")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=120)


def request_counts(metrics_port: int) -> dict[str, float]:
    """Requests answered so far, by request name (``kafka_network_requestmetrics_requests_total``
    summed over versions)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=120) as r:
        text = r.read().decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(
            r'kafka_network_requestmetrics_requests_total\{request="(\w+)".*\} (\S+)', line
        )
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0.0) + float(m.group(2))
    return counts


def counted(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The requests answered between two :func:`request_counts`."""
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}


def counts_text(counts: dict[str, float] | None) -> str:
    if counts is None:
        return "n/a"
    return ", ".join(f"{k} {v:,.0f}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


@dataclass
class Target:
    """One broker under test: Odradek or Apache Kafka, started and stopped alike."""

    name: str
    broker: BrokerProcess | KafkaBroker
    data: Path
    #: Odradek's /metrics port; None for Kafka (its request metrics are JMX MBeans)
    metrics_port: int | None = None

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    @property
    def pid(self) -> int:
        return self.broker.pid

    def start(self) -> None:
        self.broker.start(timeout=900)

    def stop(self) -> int:
        return self.broker.stop(timeout=900)

    def kill(self) -> int:
        return self.broker.kill()

    def request_counts(self) -> dict[str, float] | None:
        """Requests answered so far by name, or None where they are not scraped (Kafka)."""
        return None if self.metrics_port is None else request_counts(self.metrics_port)

    def clean_shutdown_marker(self) -> bool | None:
        """Whether Kafka left its clean-shutdown file (None for Odradek)."""
        if self.name != "kafka":
            return None
        return (self.data / ".kafka_cleanshutdown").exists()


def start_timed(target: Target, topic: str, partitions: int) -> dict[str, float]:
    """Seconds from process start until Metadata answers for the whole topic, and until a
    produce and a fetch on its last partition work (retried until they do); broker CPU."""
    t0 = time.perf_counter()
    target.start()
    while not metadata_ready(target.bootstrap, topic, partitions):
        if time.perf_counter() - t0 > 900:
            raise RuntimeError(f"{target.name} did not serve the topic within 900 s")
        time.sleep(0.05)
    metadata = time.perf_counter() - t0
    while True:
        try:
            if produce_and_fetch_one(target.bootstrap, topic, partitions - 1):
                break
        except (OSError, ConnectionError):
            pass
        if time.perf_counter() - t0 > 900:
            raise RuntimeError(f"{target.name}: no produce and fetch within 900 s")
        time.sleep(0.05)
    served = time.perf_counter() - t0
    return {"metadata": metadata, "served": served, "cpu": cpu_seconds(target.pid)}


def mean_counts(reads: list[dict[str, float]]) -> dict[str, float] | None:
    """The requests of one read, averaged over ``reads`` (None when none were counted)."""
    if not reads:
        return None
    names = dict.fromkeys(k for r in reads for k in r)
    return {k: sum(r.get(k, 0.0) for r in reads) / len(reads) for k in names}


def print_log_dirs(targets: list[Target]) -> None:
    for t in targets:
        print(
            f"{t.name} log dir: {json.dumps(dict(sorted(file_counts(t.data).items())))}; "
            f"open files {open_files(t.pid)}"
        )


def measure_startup(targets: list[Target], big_topic: str, partitions: int, segments: int) -> None:
    """Start-up of each broker holding ``big_topic``, one at a time with the other stopped,
    after a clean stop and after SIGKILL (with a second segment per partition first if
    ``segments`` is 2)."""
    if segments == 2:
        # a second segment for every partition of the big topic: segment.ms (20 s) passes
        for t in targets:
            worker("roll-soon", t.bootstrap, big_topic, partitions, 0, 1)
        time.sleep(21)
        for t in targets:
            worker("produce", t.bootstrap, big_topic, partitions, partitions, 1)
    print_log_dirs(targets)
    for t in targets:
        t.stop()
    startup: dict[str, dict[str, dict[str, float]]] = {}
    for t in targets:
        print(
            f"{t.name}: clean stop left the clean-shutdown marker: {t.clean_shutdown_marker()}",
            flush=True,
        )
        clean = start_timed(t, big_topic, partitions)
        time.sleep(2)
        t.kill()
        killed = start_timed(t, big_topic, partitions)
        startup[t.name] = {"clean stop": clean, "SIGKILL": killed}
        print(f"  {t.name}: {startup[t.name]}; open files {open_files(t.pid)}", flush=True)
        t.stop()
    print(
        f"\nstart-up with {partitions} partitions ({segments} segment(s) each), from "
        "process start (seconds; broker CPU seconds meanwhile):"
    )
    print(
        "| after | broker | Metadata answers for every partition | produce + fetch work "
        "| broker CPU s |"
    )
    print("|---|---|---|---|---|")
    for after in ("clean stop", "SIGKILL"):
        for t in targets:
            s = startup[t.name][after]
            print(
                f"| {after} | {t.name} | {s['metadata']:.1f} s | {s['served']:.1f} s "
                f"| {s['cpu']:.1f} |"
            )
        if len(targets) == 2:
            k, o = startup["kafka"][after], startup["odradek"][after]
            print(
                f"| {after} | Odradek / Kafka time | {_ratio(o['metadata'], k['metadata'])} "
                f"| {_ratio(o['served'], k['served'])} | {_ratio(o['cpu'], k['cpu'])} |"
            )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument(
        "--brokers",
        help="comma-separated: kafka, odradek (default: both when Kafka's jars are present)",
    )
    ap.add_argument(
        "--consume-repeats",
        type=int,
        default=3,
        help="read each topic back this many times per broker; the median is reported",
    )
    ap.add_argument("--kafka-heap", default="1G", help="Kafka's -Xmx and -Xms (default 1G)")
    ap.add_argument(
        "--idle-seconds",
        type=float,
        default=20,
        help="after the workloads, how long to measure each broker's CPU while nothing runs",
    )
    ap.add_argument(
        "--segments",
        type=int,
        choices=(1, 2),
        help="segments per partition for start-up (default 2, or 1 when Kafka runs and the "
        "open-file limit cannot hold 2 per partition)",
    )
    ap.add_argument("--keep-logs", type=Path, help="copy the brokers' own logs here at the end")
    ap.add_argument(
        "--no-startup", action="store_true", help="skip the start-up measurement (both brokers)"
    )
    ap.add_argument(
        "--profile", type=Path, help="write py-spy stacks of the Odradek broker into this dir"
    )
    if argv is None:
        argv = sys.argv[1:]
    args = ap.parse_args(argv)
    print("command: python -m bench bench_scale " + " ".join(argv))
    names, not_run = choose_brokers(args.brokers)
    if not_run:
        print(not_run)
    nofile = raise_file_limit()
    segments = args.segments
    if segments is None:
        # Kafka keeps every segment's .log file open
        roomy = nofile >= 2 * args.partitions + 2000
        segments = 2 if "kafka" not in names or roomy else 1
        if segments == 1 and not args.no_startup:
            print(
                f"open-file limit {nofile}: Kafka cannot hold 2 open segments for each of "
                f"{args.partitions} partitions, so start-up is measured with 1 on both"
            )
    print(
        f"load average before: {os.getloadavg()}; {os.cpu_count()} cores; open-file limit {nofile}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="odradek-scale-"))
    shared = {
        "num.partitions": "1",
        "socket.request.max.bytes": str(200 * 1024 * 1024),
        "message.max.bytes": str(16 * 1024 * 1024),
    }
    targets: list[Target] = []
    for name in names:
        if name == "kafka":
            kafka = kafka_kraft(
                tmp / "kafka",
                {**shared, "replica.fetch.max.bytes": shared["message.max.bytes"]},
                heap=args.kafka_heap,
            )
            targets.append(Target("kafka", kafka, kafka.data))
        else:
            data = tmp / "odradek" / "data"
            data.parent.mkdir(parents=True)
            metrics_port = free_port()
            settings = {**shared, "metrics.port": str(metrics_port)}
            ours = BrokerProcess(data, settings, log_path=tmp / "odradek" / "broker.log")
            targets.append(Target("odradek", ours, data, metrics_port))
    #: (workload, broker) -> (records/s, broker CPU s per M records)
    rows: dict[tuple[str, str], tuple[float, float]] = {}
    #: (workload, broker) -> requests answered by name (None: not scraped)
    requests: dict[tuple[str, str], dict[str, float] | None] = {}
    started = time.perf_counter()
    try:
        for t in targets:
            t.start()
            print(f"{t.name}: pid {t.pid} on {t.bootstrap}", flush=True)
        if any(t.name == "kafka" for t in targets):
            print(f"Kafka {kraft_version()} (KRaft), -Xmx{args.kafka_heap}", flush=True)
        # an unmeasured warm-up on each broker (half the records, produced and consumed): the
        # JVM compiles Kafka's hot paths during its first seconds (as bench_kafka)
        warm = max(args.records // 2, 1000)
        for t in targets:
            worker("create", t.bootstrap, "warm-up", 10, 0, args.batch)
            got = worker("produce", t.bootstrap, "warm-up", 10, warm, args.batch)["records"]
            worker("consume", t.bootstrap, "warm-up", 10, got, args.batch)
        for n in (10, args.partitions):
            topic = f"scale-{n}"
            created: dict[str, int] = {}
            for t in targets:
                made = worker("create", t.bootstrap, topic, n, 0, args.batch)
                print(
                    f"  create, {n} partitions{'':<10} {t.name:<8} {made['leaders']:>8.1f} s until "
                    f"Metadata has every leader, {made['usable']:.1f} s until a record produced "
                    f"to the last partition is acknowledged, {made['every']:.1f} s until one "
                    f"produced to every partition is"
                    + (f" ({made['failed']} failed)" if made["failed"] else ""),
                    flush=True,
                )
                created[t.name] = made["records"]
            produced: dict[str, int] = {}
            for kind in ("produce", "consume"):
                workload = f"{kind}, {n} partitions"
                # produce once (it adds the data the rest reads); read it back
                # --consume-repeats times, each broker in turn, and keep the median
                repeats = 1 if kind == "produce" else args.consume_repeats
                runs: dict[str, list[tuple[float, float]]] = {t.name: [] for t in targets}
                answered: dict[str, list[dict[str, float]]] = {t.name: [] for t in targets}
                for i in range(repeats):
                    for t in targets:
                        r0 = t.request_counts()
                        others = {o.name: cpu_seconds(o.pid) for o in targets if o is not t}
                        c0 = cpu_seconds(t.pid)
                        count = args.records if kind == "produce" else produced[t.name]
                        spied = args.profile if t.name == "odradek" else None
                        stacks = f"{kind}-{n}" if repeats == 1 else f"{kind}-{n}-{i + 1}"
                        with profiled(t.pid, spied, stacks):
                            out = worker(kind, t.bootstrap, topic, n, count, args.batch)
                        cpu = cpu_seconds(t.pid) - c0
                        idle = ", ".join(
                            f"{o.name} idle meanwhile {cpu_seconds(o.pid) - others[o.name]:.1f} s"
                            for o in targets
                            if o is not t
                        )
                        r1 = t.request_counts()  # after the CPU reads: the scrape is left out
                        if r0 is not None and r1 is not None:
                            answered[t.name].append(counted(r0, r1))
                        if kind == "produce":
                            # the records the create added are read back too
                            produced[t.name] = out["records"] + created[t.name]
                        m = out["records"] / 1e6
                        runs[t.name].append((out["records"] / out["seconds"], cpu / m))
                        print(
                            f"  {workload:<28} {t.name:<8} {runs[t.name][-1][0]:>12,.0f} "
                            f"records/s {cpu / m:8.2f} CPU s/M  {idle}",
                            flush=True,
                        )
                for t in targets:
                    rows[workload, t.name] = (
                        statistics.median(r[0] for r in runs[t.name]),
                        statistics.median(r[1] for r in runs[t.name]),
                    )
                    requests[workload, t.name] = mean_counts(answered[t.name])
        # what each broker costs doing nothing, holding every topic of the run (its periodic
        # work over every partition: flushes, checkpoints, retention checks)
        cpu_before = {t.name: cpu_seconds(t.pid) for t in targets}
        time.sleep(args.idle_seconds)
        for t in targets:
            share = (cpu_seconds(t.pid) - cpu_before[t.name]) / args.idle_seconds
            print(
                f"  idle, every topic          {t.name:<8} {share:>12.1%} of a core over "
                f"{args.idle_seconds:g} s",
                flush=True,
            )
        print(f"load average after the workloads: {os.getloadavg()}")
        print(f"\n{args.records:,} x 100 B records, batches of {args.batch} records")
        print(table(rows, [t.name for t in targets], args.partitions))
        kafka_note = (
            "; Kafka: n/a, its request metrics are JMX, not scraped" if "kafka" in names else ""
        )
        print(
            "\nrequests each broker answered during each workload (Odradek: its /metrics, for a "
            f"consume the mean of its reads{kafka_note}):"
        )
        for workload in dict.fromkeys(w for w, _ in rows):
            for t in targets:
                print(f"  {workload:<28} {t.name:<8} {counts_text(requests[workload, t.name])}")

        if args.no_startup:
            print_log_dirs(targets)
            print("start-up: not measured (--no-startup)")
        else:
            measure_startup(targets, f"scale-{args.partitions}", args.partitions, segments)
        print(
            f"\nload average after: {os.getloadavg()}; whole run "
            f"{time.perf_counter() - started:.0f} s"
        )
    finally:
        for t in targets:
            t.stop()
            if args.keep_logs:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                log = t.broker.log_path
                shutil.copyfile(log, args.keep_logs / f"{t.name}.log")
        shutil.rmtree(tmp, ignore_errors=True)


def _ratio(a: float, b: float, unit: str = "") -> str:
    """``a / b`` to two decimals; "n/a" when ``b`` is 0 (too few records for /proc's clock)."""
    return f"{a / b:.2f}{unit}" if b else "n/a"


def table(rows: dict[tuple[str, str], tuple[float, float]], names: list[str], big: int) -> str:
    both = len(names) == 2
    head = "| workload | " + " | ".join(f"{n}: records/s" for n in names)
    head += " | " + " | ".join(f"{n}: broker CPU s / M records" for n in names)
    if both:
        head += " | Odradek / Kafka: records/s | Odradek / Kafka: CPU"
    lines = [head + " |", "|---" * head.count("|") + "|"]
    lines[1] = "|---" * (head.count("|")) + "|"
    for workload in dict.fromkeys(w for w, _ in rows):
        cells = [f"{rows[workload, n][0]:,.0f}" for n in names]
        cells += [f"{rows[workload, n][1]:.2f}" for n in names]
        if both:
            k, o = rows[workload, "kafka"], rows[workload, "odradek"]
            cells += [_ratio(o[0], k[0]), _ratio(o[1], k[1])]
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    lines.append("")
    for kind in ("produce", "consume"):
        for n in names:
            small, large = rows[f"{kind}, 10 partitions", n], rows[f"{kind}, {big} partitions", n]
            lines.append(
                f"{kind}, {n}: CPU per M records, {big} vs 10 partitions: "
                f"{_ratio(large[1], small[1], 'x')} (goal <= 1.5x)"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
