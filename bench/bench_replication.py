"""Replication benchmark: three local brokers on a real ZooKeeper, confluent-kafka clients.

    python -m bench bench_replication [--records N] [--repeats R]

In one run, on the same cluster, alternating (so machine drift hits both alike):

* throughput: N x 100 B records (6 partitions, linger.ms=5, batch.size=1 MiB) to a topic with
  replication factor 1 and acks=1, and to one with replication factor 3, min.insync.replicas=2
  and acks=all (idempotent); records/s and the brokers' CPU seconds per million records;
* produce latency at 1,000 records/s for 10 s (1 KiB records, default client settings, so
  linger.ms=5; the time from produce() to the delivery report, after a warm-up record: an
  idempotent librdkafka producer spends its first ~500 ms acquiring a producer id), p50 and
  p99, for the same two configurations;
* how much of the replicated bytes left the leaders by ``sendfile`` (their
  ``odradek_sendfile_bytes_total`` against the bytes the followers' logs grew by).

The three brokers and ZooKeeper share this machine's cores with the clients, so the RF=3 row
pays for three copies on the same CPUs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_e2e import cpu_seconds  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402
from tests.support.ports import free_port  # noqa: E402
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

WORKER = r"""
import json, sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap, topic, rf, acks, count = sys.argv[1:7]
rf, count = int(rf), int(count)
if mode == "create":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"} if rf == 3 else {}
    admin.create_topics([NewTopic(topic, 6, rf, config=config)])[topic].result(30)
    time.sleep(2)
    print(json.dumps({}))
elif mode == "produce":
    conf = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
            "batch.size": 1048576, "queue.buffering.max.messages": 2000000,
            "queue.buffering.max.kbytes": 2097151, "delivery.report.only.error": True}
    if acks == "all":
        conf["enable.idempotence"] = True
    p = Producer(conf)
    value = b"x" * 100
    errors = []
    cb = lambda err, msg: errors.append(str(err)) if err else None
    t0 = time.perf_counter()
    for i in range(count):
        try:
            p.produce(topic, value, on_delivery=cb)
        except BufferError:
            p.poll(0.01)
            p.produce(topic, value, on_delivery=cb)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "unflushed": left, "errors": len(errors)}))
elif mode == "latency":
    seconds, rate = 10, 1000
    conf = {"bootstrap.servers": bootstrap, "acks": acks}
    if acks == "all":
        conf["enable.idempotence"] = True
    p = Producer(conf)
    p.produce(topic, b"warm-up", partition=0)
    p.flush(30)
    lat = []
    pad = b"x" * 1024
    def cb(err, msg, sent):
        if err is None:
            lat.append((time.perf_counter() - sent) * 1000)
    start = time.perf_counter()
    for i in range(seconds * rate):
        target = start + i / rate
        while (now := time.perf_counter()) < target:
            time.sleep(min(target - now, 0.001))
            p.poll(0)
        sent = time.perf_counter()
        p.produce(topic, pad, partition=i % 6, on_delivery=lambda e, m, s=sent: cb(e, m, s))
        p.poll(0)
    p.flush(30)
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
    print(json.dumps({"p50_ms": q(0.5), "p99_ms": q(0.99), "delivered": len(lat)}))
"""


def worker(*args: object) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, *map(str, args)], capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def sendfile_bytes(metrics_port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    for line in text.decode().splitlines():
        if line.startswith("odradek_sendfile_bytes_total"):
            return float(line.split()[-1])
    return 0.0


def log_bytes(brokers: list[BrokerProcess], topic: str) -> int:
    total = 0
    for b in brokers:
        for path in Path(b.data_dir).glob(f"{topic}-*/*.log"):
            total += path.stat().st_size
    return total


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-repl-"))
    zk = ZooKeeperServer(tmp / "zk").start()
    connect = zk.chroot_connect()
    brokers: list[BrokerProcess] = []
    ports = []
    try:
        for i in (1, 2, 3):
            port = free_port()
            ports.append(port)
            brokers.append(
                BrokerProcess(
                    tmp / f"b{i}" / "data",
                    {
                        "broker.id": str(i),
                        "zookeeper.connect": connect,
                        "metrics.port": str(port),
                        "offsets.topic.replication.factor": "3",
                    },
                    log_path=tmp / f"b{i}.log",
                ).start()
            )
        boot = ",".join(b.bootstrap for b in brokers)
        print(f"command: python -m bench bench_replication --records {args.records}")
        print(f"records: {args.records} x 100 B, 6 partitions, 3 brokers, repeats {args.repeats}")
        runs: dict[str, list[dict]] = {"rf1-acks1": [], "rf3-acksall": []}
        for r in range(args.repeats):
            for name, rf, acks in (("rf1-acks1", 1, "1"), ("rf3-acksall", 3, "all")):
                topic = f"bench-{name}-{r}-{time.time_ns()}"
                worker("create", boot, topic, rf, acks, 0)
                sent0 = sum(sendfile_bytes(p) for p in ports)
                cpu0 = sum(cpu_seconds(b.pid) for b in brokers)
                prod = worker("produce", boot, topic, rf, acks, args.records)
                time.sleep(1)  # followers catch up
                cpu1 = sum(cpu_seconds(b.pid) for b in brokers)
                sent1 = sum(sendfile_bytes(p) for p in ports)
                # the followers' copies: all bytes on disk minus the leaders' one copy
                total = log_bytes(brokers, topic)
                replicated = total - total // rf if rf > 1 else 0
                lat_topic = f"lat-{name}-{r}-{time.time_ns()}"
                worker("create", boot, lat_topic, rf, acks, 0)
                lat = worker("latency", boot, lat_topic, rf, acks, 0)
                runs[name].append(
                    {
                        "rps": args.records / prod["seconds"],
                        "errors": prod["errors"] + prod["unflushed"],
                        "cpu_per_million": (cpu1 - cpu0) / (args.records / 1e6),
                        "sendfile_share": (sent1 - sent0) / replicated if replicated else None,
                        **lat,
                    }
                )
        print(f"\n{'configuration':<24}{'rec/s':>12}{'cpu s/M':>10}{'p50 ms':>9}{'p99 ms':>9}"
              f"{'errors':>8}")  # fmt: skip
        for name, results in runs.items():
            med = lambda k, rs=results: statistics.median(r[k] for r in rs)  # noqa: E731
            print(
                f"{name:<24}{med('rps'):>12,.0f}{med('cpu_per_million'):>10.2f}"
                f"{med('p50_ms'):>9.2f}{med('p99_ms'):>9.2f}"
                f"{sum(r['errors'] for r in results):>8}"
            )
        ratio = statistics.median(r["rps"] for r in runs["rf3-acksall"]) / statistics.median(
            r["rps"] for r in runs["rf1-acks1"]
        )
        share = statistics.median(r["sendfile_share"] for r in runs["rf3-acksall"])
        print(f"\nacks=all RF=3 / acks=1 RF=1 throughput: {ratio:.2f}")
        print(f"replicated bytes sent by sendfile: {share:.0%} (headers are encoded apart)")
    finally:
        for b in brokers:
            b.stop()
        zk.stop()


if __name__ == "__main__":
    main()
