"""Storage interchange with Apache Kafka 3.9 (issue 15): Odradek writes Kafka's on-disk format and
Kafka's ZooKeeper layout, so each can take over the other's log directories and ZooKeeper chroot.

- Kafka's ``kafka.tools.DumpLogSegments`` (kafka-dump-log) reads every segment, index, time index
  and producer snapshot Odradek wrote (every codec, a compacted topic, an idempotent producer,
  ``__consumer_offsets``) with ``--deep-iteration``, ``--index-sanity-check`` and
  ``--verify-index-only``, reports no error, and prints the same batches and records as
  ``odradek dump-log``; after a SIGKILL of the writer too, on the files as it left them, where
  it accepts exactly what Kafka's recovery would (a torn tail and unchecked indexes only in the
  segments recovery re-reads).
- Odradek writes, stops (cleanly, or SIGKILL), and Kafka 3.9 starts on the same log directory and
  chroot: it serves every record (offsets, keys, values, headers) and the group's committed
  offsets; and the reverse, Kafka writing and Odradek serving. After a SIGKILL the reader
  recovers the writer's unclean logs.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.broker_process import ROOT, BrokerProcess
from tests.support.kafka_reference import KafkaBroker, run_tool, tool_class, zk_version
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
GROUP = "interchange-group"
TXN_TOPIC = "transactional"
#: (records, committed?) per transaction
TXN_ROUNDS = ((40, True), (25, False), (15, True))
WORKLOAD_TOPICS = {*(f"codec-{c}" for c in CODECS), "compacted", "idempotent", TXN_TOPIC}
COMMITS = (("codec-none", 0, 50), ("codec-none", 1, 60), ("idempotent", 2, 7))
#: Settings both brokers share: a short ZooKeeper session (a SIGKILLed writer's ephemeral
#: registration goes soon; 2 s proved too short on a loaded CI machine, where Kafka lost its
#: session in the middle of the workload and shut down), few offsets partitions, a busy cleaner.
SHARED = {
    "broker.id": "0",
    "zookeeper.session.timeout.ms": "6000",
    "offsets.topic.num.partitions": "5",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.backoff.ms": "500",
}


@dataclass
class Site:
    """One log directory and ZooKeeper chroot, written by one broker and read by the other."""

    home: Path
    chroot: str

    @property
    def data(self) -> Path:
        return self.home / "data"

    def odradek(self, overrides: dict[str, str] | None = None) -> BrokerProcess:
        (self.home / "odradek").mkdir(exist_ok=True)
        return BrokerProcess(
            self.data,
            {"zookeeper.connect": self.chroot, **SHARED, **(overrides or {})},
            log_path=self.home / "odradek" / "broker.log",
        ).start()

    def kafka(self) -> KafkaBroker:
        return KafkaBroker(
            self.home / "kafka",
            zk_version(),
            zookeeper_connect=self.chroot,
            log_dirs=self.data,
            overrides={k: v for k, v in SHARED.items() if k != "broker.id"},
        ).start()

    def wait_unregistered(self, timeout: float = 60.0) -> None:
        """Until the stopped writer's ephemeral znodes are gone (its session expired)."""
        zk = KazooClient(hosts=self.chroot)
        zk.start(timeout=10)
        try:
            deadline = time.monotonic() + timeout
            while zk.exists("/brokers/ids/0") or zk.exists("/controller"):
                assert time.monotonic() < deadline, "the writer's registration did not expire"
                time.sleep(0.1)
        finally:
            zk.stop()
            zk.close()


def write_workload(bootstrap: str) -> None:
    """Every codec, a compacted topic with small segments (returns once the writer's cleaner has
    compacted its rolled segments, so the reader gets cleaned segments), an idempotent producer,
    transactions (committed and aborted), commits."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(f"codec-{c}", 2, 1) for c in CODECS]
    topics.append(
        NewTopic(
            "compacted",
            1,
            1,
            config={
                "cleanup.policy": "compact",
                "segment.bytes": "2048",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.ms": "100",
            },
        )
    )
    topics.append(NewTopic("idempotent", 3, 1))
    topics.append(NewTopic(TXN_TOPIC, 1, 1))
    for future in admin.create_topics(topics).values():
        future.result(60)
    for codec in CODECS:
        producer = Producer(
            {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5}
        )
        for i in range(120):
            producer.produce(
                f"codec-{codec}",
                key=b"k%d" % i,
                value=(b"%s-%d" % (codec.encode(), i)) * 3,
                headers=[("h", b"%d" % i)],
                partition=i % 2,
            )
        assert producer.flush(60) == 0
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for generation in range(6):
        for k in range(20):
            producer.produce("compacted", key=b"key-%d" % k, value=b"generation-%d" % generation)
        assert producer.flush(60) == 0
        time.sleep(0.15)  # segment.ms: the next generation starts a new segment
    wait_for(
        lambda: len(_read_partition(bootstrap, "compacted", 0)) < 6 * 20,
        "the writer's cleaner to compact the rolled segments of 'compacted'",
        timeout=60,
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2}
    )
    for i in range(200):
        producer.produce("idempotent", key=b"%d" % i, value=b"idempotent-%d" % i)
    assert producer.flush(60) == 0
    transactional = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "interchange-txn", "linger.ms": 2}
    )
    transactional.init_transactions(60)
    for n, (count, commit) in enumerate(TXN_ROUNDS):
        transactional.begin_transaction()
        for i in range(count):
            transactional.produce(TXN_TOPIC, key=b"%d" % n, value=b"round-%d-%d" % (n, i))
        # the records reach the log before the end, so an abort leaves aborted records there
        assert transactional.flush(60) == 0
        if commit:
            transactional.commit_transaction(60)
        else:
            transactional.abort_transaction(60)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in COMMITS], asynchronous=False)
    consumer.close()


def _read_partition(bootstrap: str, topic: str, partition: int) -> list[Any]:
    """(offset, key, value) of every record of one partition, from its start to its high
    watermark."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "interchange-probe", "fetch.wait.max.ms": 50}
    )
    try:
        tp = TopicPartition(topic, partition)
        low, high = consumer.get_watermark_offsets(tp, timeout=30)
        consumer.assign([TopicPartition(topic, partition, low)])
        records: list[Any] = []
        deadline = time.monotonic() + 60
        while high > low and (not records or records[-1][0] < high - 1):
            assert time.monotonic() < deadline, f"reading {topic}-{partition} to {high}"
            records += [
                (m.offset(), m.key(), m.value())
                for m in consumer.consume(1000, 0.2)
                if not m.error()
            ]
        return records
    finally:
        consumer.close()


def _topics_with_leaders(bootstrap: str, expected: set[str]) -> Any:
    """The cluster's topics once ``expected`` are all there with a leader for every partition
    (a broker taking over after an unclean stop learns them a moment after it registers)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def ready() -> Any:
        topics = admin.list_topics(timeout=60).topics
        if not expected <= set(topics):
            return None
        for name in expected:
            parts = topics[name].partitions.values()
            if topics[name].error is not None or any(p.leader < 0 for p in parts):
                return None
        return topics

    return wait_for(ready, f"topics {sorted(expected)} with leaders", timeout=120)


def read_everything(bootstrap: str) -> dict[str, Any]:
    """Every record of every topic (offset, key, value, headers) and the group's commits."""
    topics = _topics_with_leaders(bootstrap, WORKLOAD_TOPICS)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "interchange-reader",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    out: dict[str, Any] = {}
    try:
        ranges = {}
        for topic in sorted(t for t in topics if not t.startswith("__") and t != TXN_TOPIC):
            for partition in sorted(topics[topic].partitions):
                ranges[(topic, partition)] = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=60
                )
        records: dict[tuple[str, int], list[Any]] = {tp: [] for tp in ranges}
        consumer.assign([TopicPartition(t, p, low) for (t, p), (low, _) in ranges.items()])
        waiting = {tp for tp, (low, high) in ranges.items() if high > low}
        deadline = time.monotonic() + 120
        while waiting:
            assert time.monotonic() < deadline, f"still reading {sorted(waiting)}"
            for message in consumer.consume(1000, 0.2):
                if message.error():
                    continue
                tp = (message.topic(), message.partition())
                records[tp].append(
                    (message.offset(), message.key(), message.value(), message.headers())
                )
                if message.offset() >= ranges[tp][1] - 1:
                    waiting.discard(tp)
        for (topic, partition), (low, high) in ranges.items():
            out[f"{topic}-{partition}"] = (low, high, records[(topic, partition)])
    finally:
        consumer.close()
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        committed = group.committed([TopicPartition(t, p) for t, p, _ in COMMITS], timeout=60)
    finally:
        group.close()
    out["committed"] = sorted((c.topic, c.partition, c.offset) for c in committed)
    everything = sum(count for count, _ in TXN_ROUNDS)
    kept = sum(count for count, commit in TXN_ROUNDS if commit)
    out["transactional read_uncommitted"] = _read_transactional(
        bootstrap, "read_uncommitted", everything
    )
    out["transactional read_committed"] = _read_transactional(bootstrap, "read_committed", kept)
    return out


def _read_transactional(bootstrap: str, isolation: str, expected: int) -> list[Any]:
    """The transactional topic's records as a consumer at ``isolation`` sees them (the control
    records never reach it, so it reads a known count, then checks nothing more comes)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"interchange-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 50,
        }
    )
    records: list[Any] = []
    try:
        consumer.assign([TopicPartition(TXN_TOPIC, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 120
        while len(records) < expected:
            assert time.monotonic() < deadline, f"{isolation}: read {len(records)} of {expected}"
            for message in consumer.consume(1000, 0.2):
                if not message.error():
                    records.append((message.offset(), message.key(), message.value()))
        records += [
            (m.offset(), m.key(), m.value()) for m in consumer.consume(1000, 1.0) if not m.error()
        ]
    finally:
        consumer.close()
    return records


def assert_same_data(truth: dict[str, Any], served: dict[str, Any]) -> None:
    assert served["committed"] == truth["committed"] == sorted(COMMITS)
    assert set(served) == set(truth)
    for key in truth:
        if key == "committed":
            continue
        if key.startswith(TXN_TOPIC):
            assert served[key] == truth[key], key
            continue
        t_low, t_high, t_records = truth[key]
        s_low, s_high, s_records = served[key]
        assert s_high == t_high, key
        if key.startswith("compacted"):
            # the reader's cleaner may compact further: what it serves is a subset with the
            # same latest value for every key
            assert set(s_records) <= set(t_records), key
            latest = {r[1]: r for r in t_records}
            assert {r[1]: r for r in s_records} == latest, key
        else:
            assert (s_low, s_records) == (t_low, t_records), key


@pytest.fixture
def site(reference_zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[Site]:
    yield Site(tmp_path, reference_zookeeper.chroot_connect("interchange"))


def _stop(writer: BrokerProcess | KafkaBroker, how: str) -> None:
    if how == "SIGKILL":
        writer.kill()
    else:
        writer.stop()


# --- DumpLogSegments ---------------------------------------------------------------------------

_RECORD_LINE = re.compile(r"^(\| offset: .*|baseOffset: .*)$")
#: a log's unreadable tail, which both tools report (and both stop reading at)
_TAIL_LINE = re.compile(r"^Found \d+ invalid bytes at the end of .*$")
_BATCH_LENGTH = struct.Struct(">qi")
#: the partition whose last batch a simulated torn write cuts in half (SIGKILL case)
TORN = "codec-none-1"


def _dump_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if _RECORD_LINE.match(line)]


def _sections(stdout: str) -> dict[str, list[str]]:
    """DumpLogSegments' output by file (each file's lines follow its ``Dumping <path>``)."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping ") :], [])
        else:
            current.append(line)
    return out


def _recovery_points(data: Path) -> dict[str, int]:
    """The writer's ``recovery-point-offset-checkpoint`` (Kafka's format: a version line, a
    count line, then ``topic partition offset`` lines) by partition directory; a partition it
    does not list has nothing flushed."""
    path = data / "recovery-point-offset-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    points = {}
    for line in lines[2 : 2 + int(lines[1])]:
        topic, partition, offset = line.split()
        points[f"{topic}-{partition}"] = int(offset)
    return points


def _unflushed_segments(logs: list[Path], recovery_points: dict[str, int]) -> set[Path]:
    """The log files of the segments Kafka's recovery after an unclean shutdown re-reads: in
    each partition, the segment holding its recovery point and every later one (LogLoader's
    recoverLog). It validates their batches, truncates at the first that is not whole, and
    rebuilds their offset, time and transaction indexes; the segments below the recovery point
    it takes as they are."""
    by_partition: dict[Path, list[Path]] = {}
    for log in logs:
        by_partition.setdefault(log.parent, []).append(log)
    unflushed: set[Path] = set()
    for directory, segments in by_partition.items():
        segments.sort()
        point = recovery_points.get(directory.name, 0)
        for log, following in zip(segments, [*segments[1:], None], strict=True):
            if following is None or int(following.stem) > point:
                unflushed.add(log)
    return unflushed


def _tear_last_batch(log: Path) -> None:
    """Cuts the last batch of ``log`` in half: what a SIGKILL in the middle of a write leaves
    (a kill cannot be timed to land inside one on demand)."""
    data = log.read_bytes()
    pos = last = 0
    while pos + _BATCH_LENGTH.size <= len(data):
        last = pos
        pos += _BATCH_LENGTH.size + _BATCH_LENGTH.unpack_from(data, pos)[1]
    assert pos == len(data) > 0, f"{log} does not end with a whole batch"
    with open(log, "r+b") as f:
        f.truncate(last + (len(data) - last) // 2)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_kafka_dump_log_segments_reads_odradek_segments(site: Site, how: str) -> None:
    """Clean stop: every file passes every check. SIGKILL: the files are read as the writer
    left them (its active segments' preallocated indexes, a torn last batch), and Kafka's tool
    must accept exactly what Kafka's recovery would: below each partition's recovery point
    everything as after a clean stop; above it a tail that is not a whole batch (recovery
    truncates it) and indexes that are not checked (recovery rebuilds them)."""
    # the recovery point checkpoint is written soon, so that segments below it are checked too
    writer = site.odradek({"log.flush.offset.checkpoint.interval.ms": "200"})
    write_workload(writer.bootstrap)
    _stop(writer, how)
    files = sorted(
        p
        for p in site.data.glob("*-*/*")
        if p.suffix in (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
    )
    log_files = [p for p in files if p.suffix == ".log"]
    unflushed: set[Path] = set()
    if how == "SIGKILL":
        unflushed = _unflushed_segments(log_files, _recovery_points(site.data))
        torn = max(p for p in log_files if p.parent.name == TORN)
        assert torn in unflushed
        _tear_last_batch(torn)
        # an index of a flushed segment is checked as after a clean stop
        assert any(p not in unflushed for p in log_files), "no segment below a recovery point"
    logs = [str(p) for p in log_files]
    indexes = [
        str(p)
        for p in files
        if p.suffix in (".index", ".timeindex") and p.with_suffix(".log") not in unflushed
    ]
    assert any("__consumer_offsets" in p for p in logs) and any("compacted" in p for p in logs)
    assert any("__transaction_state" in p for p in logs)
    version = zk_version()
    dump = tool_class(version, "kafka-dump-log")
    deep = run_tool(
        version, dump, "--deep-iteration", "--print-data-log", "--files", ",".join(logs)
    )
    sanity = run_tool(version, dump, "--index-sanity-check", "--files", ",".join(indexes))
    verify = run_tool(version, dump, "--verify-index-only", "--files", ",".join(indexes))
    # producer snapshots and the aborted-transaction index of the aborted transaction
    others = [str(p) for p in files if p.suffix in (".snapshot", ".txnindex")]
    assert any(p.endswith(".txnindex") for p in others)
    runs = [deep, sanity, verify, run_tool(version, dump, "--files", ",".join(others))]
    for proc in runs:
        problems = [line for line in proc.stderr.splitlines() if line.strip()]
        problems += [
            f"{path}: {line}"
            for path, lines in _sections(proc.stdout).items()
            for line in lines
            if ("invalid bytes" in line or "isvalid: false" in line or "failed sanity" in line)
            # the torn tail of a segment Kafka's recovery re-reads
            and not (_TAIL_LINE.match(line) and Path(path) in unflushed)
        ]
        assert not problems, "\n".join(problems[:40])
    assert sanity.stdout.count("passed sanity check") + sanity.stdout.count("is empty") == len(
        indexes
    )
    ours = subprocess.run(
        [sys.executable, "-m", "broker", "dump-log", "--print-data-log", *logs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    kafka_lines, our_lines = _dump_lines(deep.stdout), _dump_lines(ours.stdout)
    assert len(kafka_lines) > 500
    assert our_lines == kafka_lines
    tails = [
        [line for line in out.splitlines() if _TAIL_LINE.match(line)]
        for out in (deep.stdout, ours.stdout)
    ]
    assert tails[1] == tails[0]
    assert len(tails[0]) == (1 if how == "SIGKILL" else 0)


COMPACTED_TXN = "compacted-transactional"


def test_kafka_dump_log_segments_reads_cleaned_transactional_segments(site: Site) -> None:
    """Odradek's cleaner on a compacted topic with aborted transactions (issue 17): the aborted
    batches are gone or emptied, markers stay while their transaction has batches below them
    (and an abort marker with nothing left goes after delete.retention.ms), the rebuilt
    .txnindex keeps the entries of the markers kept. Kafka's DumpLogSegments reads the cleaned
    segments and indexes without an error and prints what ``odradek dump-log`` prints."""
    writer = site.odradek()
    try:
        admin = AdminClient({"bootstrap.servers": writer.bootstrap})
        topic = NewTopic(
            COMPACTED_TXN,
            1,
            1,
            config={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.01",
                "segment.ms": "100",
                "delete.retention.ms": "300",
            },
        )
        admin.create_topics([topic])[COMPACTED_TXN].result(60)
        producer = Producer(
            {"bootstrap.servers": writer.bootstrap, "transactional.id": "cleaned-txn"}
        )
        producer.init_transactions(60)
        rounds = ((range(10), "c0", True), (range(10), "a1", False), (range(5), "c2", True))
        rounds += ((range(5, 10), "a3", False),)
        for keys, name, commit in rounds:
            producer.begin_transaction()
            for k in keys:
                producer.produce(COMPACTED_TXN, key=b"k%d" % k, value=b"%s-%d" % (name.encode(), k))
            assert producer.flush(60) == 0
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
        # new segments keep coming, so the cleaner passes again (markers need a pass after
        # their delete horizon)
        plain = Producer({"bootstrap.servers": writer.bootstrap, "linger.ms": 0})
        deadline = time.monotonic() + 60
        while writer.log().count(f"cleaned {COMPACTED_TXN}-0") < 4:
            assert time.monotonic() < deadline, "the cleaner did not pass four times"
            plain.produce(COMPACTED_TXN, key=b"filler", value=b"%d" % time.monotonic_ns())
            plain.flush(10)
            time.sleep(0.2)
    finally:
        writer.stop()
    directory = site.data / f"{COMPACTED_TXN}-0"
    logs = sorted(str(p) for p in directory.glob("*.log"))
    txn_indexes = sorted(str(p) for p in directory.glob("*.txnindex"))
    version = zk_version()
    dump = tool_class(version, "kafka-dump-log")
    deep = run_tool(
        version, dump, "--deep-iteration", "--print-data-log", "--files", ",".join(logs)
    )
    runs = [deep]
    if txn_indexes:
        runs.append(run_tool(version, dump, "--files", ",".join(txn_indexes)))
    for proc in runs:
        # the gaps compaction leaves between record offsets are reported, not errors
        problems = [
            line
            for line in proc.stderr.splitlines()
            if line.strip()
            and not line.startswith("Non-consecutive offsets in ")
            and not re.fullmatch(r"\s+\d+ is followed by \d+", line)
        ]
        problems += [
            line
            for line in proc.stdout.splitlines()
            if "invalid bytes" in line or "isvalid: false" in line
        ]
        assert not problems, "\n".join(problems[:40])
    kafka_lines = _dump_lines(deep.stdout)
    payloads = [line for line in kafka_lines if "payload:" in line]
    # no aborted record is left; the latest committed value of every key is
    assert not [line for line in payloads if " payload: a1-" in line or " payload: a3-" in line]
    for k in range(10):
        latest = b"c2-%d" % k if k < 5 else b"c0-%d" % k
        assert any(line.endswith("payload: " + latest.decode()) for line in payloads), latest
    # the emptied batches and the markers Kafka's cleaner would keep
    assert "count: 0" in deep.stdout
    assert "endTxnMarker: COMMIT" in deep.stdout
    ours = subprocess.run(
        [sys.executable, "-m", "broker", "dump-log", "--print-data-log", *logs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert _dump_lines(ours.stdout) == kafka_lines


# --- one broker's directories served by the other ----------------------------------------------


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_kafka_serves_what_odradek_wrote(site: Site, how: str) -> None:
    writer = site.odradek()
    try:
        write_workload(writer.bootstrap)
        truth = read_everything(writer.bootstrap)
    finally:
        _stop(writer, how)
    site.wait_unregistered()
    reader = site.kafka()
    try:
        assert_same_data(truth, read_everything(reader.bootstrap))
    finally:
        reader.stop()
    log = reader.log_path.read_text(errors="replace")
    assert "ERROR" not in "\n".join(
        line for line in log.splitlines() if "zookeeper" not in line.lower()
    ), log[-5000:]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_odradek_serves_what_kafka_wrote(site: Site, how: str) -> None:
    writer = site.kafka()
    try:
        write_workload(writer.bootstrap)
        truth = read_everything(writer.bootstrap)
    finally:
        _stop(writer, how)
    site.wait_unregistered()
    reader = site.odradek()
    try:
        assert_same_data(truth, read_everything(reader.bootstrap))
    finally:
        reader.stop()
    assert "Traceback" not in reader.log()
