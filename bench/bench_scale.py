"""Scale: one broker with 10 vs 10,000 partitions (issue 19).

    python -m bench bench_scale [--partitions 10000] [--records 1000000] [--batch 100]

Workloads, on one standalone broker (a temp log dir), each client in its own process:

* **produce**: ``--records`` 100 B records spread evenly over the topic's partitions with
  confluent-kafka, in batches of ``--batch`` records whatever the partition count
  (``batch.num.messages``, a long ``linger.ms``), on a 10-partition topic and on a
  ``--partitions`` topic: throughput and broker CPU seconds per million records;
* **consume**: a consumer assigned to every partition reads all of it back from offset 0:
  throughput and broker CPU per million records;
* **start-up** of the broker holding the big topic with two segments per partition (the second
  round of records lands after ``segment.ms`` has passed, so every partition rolls once): after
  a clean stop (SIGTERM) and after SIGKILL, the time from process start until the broker
  answers Metadata for the whole topic; then a produce and a fetch on it work. The log dir's
  file counts are printed.

Broker CPU is user+system time from /proc/<pid>/stat. The requests the broker answered during
each workload are printed (from its /metrics). ``--no-startup`` skips the start-up part;
``--profile DIR`` attaches py-spy (the dev extras) to the broker for each produce and consume
workload and writes the stacks of the thread holding the GIL (a thread waiting for it is not
working) as ``NAME.folded`` into DIR (flamegraph.pl and speedscope read them; sampling costs
the broker some CPU: compare figures only between runs without it). Goals (issue 19): CPU per
million records with 10,000 partitions at most 1.5x the 10-partition figure; start-up after
SIGKILL under 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_e2e import cpu_seconds  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402

WORKER = r"""
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap, topic, partitions, count, batch = sys.argv[1:7]
partitions, count, batch = int(partitions), int(count), int(batch)
value = b"v" * 100

if mode == "create":
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300000})
    admin.create_topics([NewTopic(topic, partitions, 1, config={"segment.ms": "20000"})],
                        request_timeout=300)[topic].result(300)
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


def start_timed(proc: BrokerProcess, topic: str, partitions: int) -> float:
    """Seconds from process start until Metadata answers for the whole topic."""
    t0 = time.perf_counter()
    proc.start(timeout=600)
    while not metadata_ready(proc.bootstrap, topic, partitions):
        if time.perf_counter() - t0 > 600:
            raise RuntimeError("the broker did not serve the topic within 600 s")
        time.sleep(0.05)
    return time.perf_counter() - t0


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


def counted(before: dict[str, float], after: dict[str, float]) -> str:
    diff = {k: v - before.get(k, 0.0) for k, v in after.items()}
    return ", ".join(f"{k} {v:,.0f}" for k, v in sorted(diff.items(), key=lambda kv: -kv[1]) if v)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")
    ap.add_argument("--profile", type=Path, help="write py-spy stacks into this dir")
    if argv is None:
        argv = sys.argv[1:]
    args = ap.parse_args(argv)
    print("command: python -m bench bench_scale " + " ".join(argv))
    tmp = Path(tempfile.mkdtemp(prefix="odradek-scale-"))
    data = tmp / "data"
    settings = {
        "num.partitions": "1",
        "socket.request.max.bytes": str(200 * 1024 * 1024),
        "message.max.bytes": str(16 * 1024 * 1024),
        "metrics.port": str(free_port()),
    }
    metrics_port = int(settings["metrics.port"])
    proc = BrokerProcess(data, settings, log_path=tmp / "broker.log")
    rows: list[tuple[str, float, float, float]] = []
    requests: list[tuple[str, str]] = []
    try:
        proc.start(timeout=600)
        for n in (10, args.partitions):
            topic = f"scale-{n}"
            worker("create", proc.bootstrap, topic, n, 0, args.batch)
            r0 = request_counts(metrics_port)
            c0 = cpu_seconds(proc.pid)
            with profiled(proc.pid, args.profile, f"produce-{n}"):
                prod = worker("produce", proc.bootstrap, topic, n, args.records, args.batch)
            c1 = cpu_seconds(proc.pid)
            r1 = request_counts(metrics_port)  # the scrape's CPU is left out of both
            c1_ = cpu_seconds(proc.pid)
            with profiled(proc.pid, args.profile, f"consume-{n}"):
                cons = worker("consume", proc.bootstrap, topic, n, prod["records"], args.batch)
            c2 = cpu_seconds(proc.pid)
            r2 = request_counts(metrics_port)
            requests.append((f"produce, {n} partitions", counted(r0, r1)))
            requests.append((f"consume, {n} partitions", counted(r1, r2)))
            m = prod["records"] / 1e6
            rows.append(
                (f"produce, {n} partitions", prod["records"] / prod["seconds"], (c1 - c0) / m, 0)
            )
            rows.append(
                (f"consume, {n} partitions", cons["records"] / cons["seconds"], (c2 - c1_) / m, 0)
            )
        print(f"\n{args.records:,} x 100 B records, batches of {args.batch} records")
        print(f"{'workload':<30}{'records/s':>12}{'broker CPU s / M records':>28}")
        for label, rps, cpu, _ in rows:
            print(f"{label:<30}{rps:>12,.0f}{cpu:>28.2f}")
        print("\nrequests the broker answered during each workload (its /metrics):")
        for label, counts in requests:
            print(f"  {label:<28}{counts}")
        for kind in ("produce", "consume"):
            small = next(r for r in rows if r[0] == f"{kind}, 10 partitions")
            big = next(r for r in rows if r[0] == f"{kind}, {args.partitions} partitions")
            print(f"{kind}: CPU per M records, {args.partitions} vs 10 partitions: "
                  f"{big[2] / small[2]:.2f}x (goal <= 1.5x)")  # fmt: skip

        if args.no_startup:
            return
        # a second segment for every partition of the big topic: segment.ms (20 s) passes
        big_topic = f"scale-{args.partitions}"
        time.sleep(21)
        worker("produce", proc.bootstrap, big_topic, args.partitions, args.partitions, 1)
        counts = file_counts(data)
        print(f"\nlog dir: {json.dumps(dict(sorted(counts.items())))}")

        proc.stop(timeout=600)
        clean = start_timed(proc, big_topic, args.partitions)
        ok_clean = produce_and_fetch_one(proc.bootstrap, big_topic, args.partitions - 1)
        time.sleep(2)
        proc.kill()
        killed = start_timed(proc, big_topic, args.partitions)
        ok_killed = produce_and_fetch_one(proc.bootstrap, big_topic, 0)
        print(f"\nstart-up with {args.partitions} partitions (2 segments each), until Metadata "
              "answers for every partition:")  # fmt: skip
        print(f"  after a clean stop: {clean:6.1f} s (produce + fetch after: {ok_clean})")
        print(f"  after SIGKILL:      {killed:6.1f} s (produce + fetch after: {ok_killed}; "
              "goal < 10 s)")  # fmt: skip
    finally:
        proc.stop(timeout=600)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
