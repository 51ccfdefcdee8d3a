"""Storage benchmarks: append throughput against a plain sequential write of the same bytes, and
the time to locate the file region for a random offset in a log of 10,000 segments.

Run: ``python -m bench bench_storage`` (or ``make bench``). Figures are printed, never asserted.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from protocol.records.record import RecordBatchBuilder
from storage.config import LogConfig
from storage.loader import load_log
from storage.producer_state import ProducerStateManager

COMMAND = "python -m bench bench_storage"
TOTAL_BYTES = 256 * 1024 * 1024
ROUNDS = 6
SEGMENTS = 10_000
LOOKUPS = 20_000


def _batch(size: int, *, record_size: int = 1024) -> bytearray:
    """A magic-2 batch of about ``size`` bytes (uncompressed records of ``record_size``)."""
    builder = RecordBatchBuilder()
    payload = os.urandom(record_size)
    while builder.size_in_bytes() + record_size + 16 <= size:
        builder.append(payload, key=b"key", timestamp=1_700_000_000_000)
    return bytearray(builder.build())


def _plain_write(path: Path, batch: bytearray, count: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(count):
            os.write(fd, batch)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
    return elapsed


def _storage_append(
    directory: Path, batch: bytearray, count: int, config: LogConfig, producer_state: bool
) -> float:
    log = load_log(directory, config, clock=lambda: 0, had_clean_shutdown=True)
    if producer_state:
        ProducerStateManager.attach(log)
    append = log.append
    start = time.perf_counter()
    for _ in range(count):
        append(batch, leader_epoch=0, now_ms=0)
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed


def bench_append(root: Path) -> None:
    print(
        f"append throughput: {TOTAL_BYTES >> 20} MiB per run, {ROUNDS} rounds, each round one "
        "plain run and one append run back to back (order alternating)"
    )
    print(
        f"{'batch':>34} {'plain write MB/s':>17} {'PartitionLog.append MB/s':>25} "
        f"{'ratio (median of rounds)':>25}"
    )
    cases = (
        ("1 MiB", 1 << 20, LogConfig(), False),
        ("16 KiB", 16 << 10, LogConfig(), False),
        # the broker attaches producer-state tracking (idempotence) to every partition; these
        # batches carry no producer id, so this adds the hook's bookkeeping only
        ("16 KiB, producer state attached", 16 << 10, LogConfig(), True),
        # not the default (it reserves segment.bytes of disk per partition): for comparison
        ("16 KiB, log.preallocate=true", 16 << 10, LogConfig(preallocate=True), False),
    )
    for label, size, config, producer_state in cases:
        batch = _batch(size)
        count = TOTAL_BYTES // len(batch)
        total = count * len(batch)
        plain: list[float] = []
        stored: list[float] = []
        for i in range(ROUNDS):
            for kind in ("plain", "append") if i % 2 == 0 else ("append", "plain"):
                if kind == "plain":
                    plain.append(_plain_write(root / f"plain-{i}.bin", batch, count))
                    os.unlink(root / f"plain-{i}.bin")
                else:
                    directory = root / f"bench-{i}"
                    stored.append(_storage_append(directory, batch, count, config, producer_state))
                    shutil.rmtree(directory)
        ratio = statistics.median(p / s for p, s in zip(plain, stored, strict=True))
        plain_mbs = total / min(plain) / 1e6
        stored_mbs = total / min(stored) / 1e6
        print(f"{label:>34} {plain_mbs:17.0f} {stored_mbs:25.0f} {ratio:25.2f}")


def bench_locate(root: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < SEGMENTS + 1000 and hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, SEGMENTS + 5000), hard))
    config = LogConfig(segment_bytes=16 * 1024)  # ~15 batches of 1 KiB per segment
    directory = root / "locate-0"
    log = load_log(directory, config, clock=lambda: 0, had_clean_shutdown=True)
    batch = _batch(1024, record_size=90)  # 10 records of 90 bytes
    start = time.perf_counter()
    while log.num_segments < SEGMENTS:
        log.append(batch, leader_epoch=0, now_ms=0)
    built = time.perf_counter() - start
    end = log.log_end_offset
    rng = random.Random(42)
    offsets = [rng.randrange(end) for _ in range(LOOKUPS)]
    read = log.read
    for offset in offsets[:1000]:  # warm up (the first touch of a segment loads its indexes)
        read(offset, 1 << 20)
    timings = []
    clock = time.perf_counter_ns
    for offset in offsets:
        t0 = clock()
        region = read(offset, 1 << 20)
        timings.append(clock() - t0)
        assert region is not None
    median_us = statistics.median(timings) / 1000
    p99_us = sorted(timings)[int(len(timings) * 0.99)] / 1000
    print(
        f"locate a region: {log.num_segments} segments, {end} offsets "
        f"(built in {built:.1f} s), {LOOKUPS} random offsets, max_bytes 1 MiB: "
        f"median {median_us:.1f} us, p99 {p99_us:.1f} us"
    )
    log.close()
    # after a restart every inactive segment's indexes load on first use
    log = load_log(directory, config, clock=lambda: 0, had_clean_shutdown=True)
    cold = []
    for offset in offsets[:2000]:
        t0 = clock()
        log.read(offset, 1 << 20)
        cold.append(clock() - t0)
    cold_us = statistics.median(cold) / 1000
    print(f"  the same log just reopened (indexes load on first use): median {cold_us:.1f} us")
    log.close()


def main() -> None:
    print(f"command: {COMMAND}   (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    root = Path(tempfile.mkdtemp(prefix="odradek-bench-storage-"))
    try:
        bench_append(root)
        bench_locate(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
