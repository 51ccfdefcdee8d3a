"""Storage at scale on the real broker (issue 19): the active segments' index files are current on
disk while the broker runs (``odradek dump-log`` reads them from another process, as Kafka's
DumpLogSegments reads Kafka's memory-mapped indexes); a broker whose open-file limit is far
below its segment count starts, serves every partition and recovers after SIGKILL (segments
taking no appends open their file only when read); producer snapshots are named after the
segments they start, as Kafka names them. The full-size figures (10,000 partitions) are
``python -m bench bench_scale``'s."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.integration.broker_process import ROOT, BrokerProcess
from tests.support.kafka_clients import consume_from_start, create_topic


def dump_log(*paths: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "broker", "dump-log", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Mismatches" not in out.stderr, out.stderr
    return out.stdout


def test_active_indexes_are_readable_while_the_broker_runs(
    broker: BrokerProcess, topic_name: str
) -> None:
    create_topic(broker.bootstrap, topic_name, 1, **{"index.interval.bytes": "100"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(200):
        producer.produce(topic_name, b"x" * 200, key=str(i).encode())
        producer.flush(10)  # one batch each: an index entry every batch or two
    directory = Path(broker.data_dir) / f"{topic_name}-0"
    index = directory / "00000000000000000000.index"
    timeindex = directory / "00000000000000000000.timeindex"
    # the broker runs and has flushed nothing (log.flush.interval defaults): the entries are in
    # the files because the active segment's indexes are written through their mapping
    entries = [line for line in dump_log(index).splitlines() if line.startswith("offset:")]
    assert len(entries) > 50
    offsets = [int(line.split()[1]) for line in entries]
    assert offsets == sorted(offsets) and offsets[-1] > 150
    times = [line for line in dump_log(timeindex).splitlines() if line.startswith("timestamp:")]
    assert len(times) > 1


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is missing")
def test_a_broker_with_more_segments_than_descriptors(tmp_path: Path) -> None:
    """600 partitions x 2 segments under a limit of 900 open files: the broker starts after a
    clean stop and after SIGKILL, and every partition is read back."""
    partitions = 600
    proc = BrokerProcess(
        tmp_path / "data",
        {"log.segment.open.files.max": "100"},
        wrapper=["prlimit", "--nofile=900"],
    ).start(timeout=120)
    try:
        create_topic(proc.bootstrap, "wide", partitions, **{"segment.ms": "2000"})
        producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 50})
        for round_ in range(2):
            for p in range(partitions):
                producer.produce("wide", f"{round_}".encode(), partition=p)
            assert producer.flush(60) == 0
            if round_ == 0:
                time.sleep(2.5)  # segment.ms passes: the next append to each partition rolls
        logs = list((tmp_path / "data").glob("wide-*/*.log"))
        assert len(logs) == 2 * partitions
        snapshots = list((tmp_path / "data").glob("wide-*/*.snapshot"))
        # a producer snapshot per roll, named after the new segment's base offset (1)
        assert len(snapshots) == partitions
        assert all(s.name == "00000000000000000001.snapshot" for s in snapshots)
        for stop in ("clean", "kill"):
            if stop == "clean":
                proc.stop()
            else:
                proc.kill()
            proc.start(timeout=180)
            got = consume_from_start(
                proc.bootstrap, "wide", partitions, 2 * partitions, timeout=120
            )
            assert sorted((m.partition(), m.offset()) for m in got) == [
                (p, o) for p in range(partitions) for o in (0, 1)
            ]
        assert "Too many open files" not in proc.log()
    finally:
        proc.stop()
        # 1,200 segments: the active ones' preallocated indexes are sparse, but leave nothing
        shutil.rmtree(tmp_path / "data", ignore_errors=True)
