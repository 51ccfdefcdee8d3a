"""Consumer groups with real clients: confluent-kafka members that join late, leave cleanly and
are killed (range and cooperative-sticky), kafka-python and aiokafka group consumers (also by
regex), committed offsets and metadata across restarts, ``__consumer_offsets`` on disk."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaConsumer
from kafka import TopicPartition as KTP

from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_clients import create_topic

#: broker settings that keep group tests quick: short sessions allowed, a short initial delay
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
}

MEMBER_SCRIPT = textwrap.dedent(
    """
    import signal, sys
    from confluent_kafka import Consumer

    bootstrap, group, topic, out_path, strategy = sys.argv[1:6]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": out_path.rsplit("/", 1)[-1],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 3000,
        "heartbeat.interval.ms": 300,
        "fetch.wait.max.ms": 100,
        "partition.assignment.strategy": strategy,
    })
    consumer.subscribe([topic])
    with open(out_path, "a", buffering=1) as out:
        print("ready", file=sys.stderr, flush=True)
        while not stop:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            # commit before recording: a record is only ever counted once it is committed
            consumer.commit(message=msg, asynchronous=False)
            out.write(f"{msg.partition()} {msg.offset()} {msg.value().decode()}\\n")
    consumer.close()
    """
)


def produce(bootstrap: str, topic: str, values: range, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in values:
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


class Member:
    """One confluent-kafka group member in its own process (so it can be SIGKILLed)."""

    def __init__(self, broker: BrokerProcess, group: str, topic: str, out: Path, strategy: str):
        self.out = out
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                MEMBER_SCRIPT,
                broker.bootstrap,
                group,
                topic,
                str(out),
                strategy,
            ],
            stderr=subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        assert b"ready" in self.proc.stderr.readline()

    def records(self) -> list[tuple[int, int, int]]:
        if not self.out.exists():
            return []
        rows = []
        for line in self.out.read_text().splitlines():
            p, o, v = line.split()
            rows.append((int(p), int(o), int(v)))
        return rows

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_members_join_leave_and_die_each_record_once(fresh_broker, tmp_path, strategy):
    broker = fresh_broker(**GROUP_SETTINGS)
    topic, group, partitions = "orders", f"g-{strategy}", 6
    create_topic(broker.bootstrap, topic, partitions)
    members: dict[str, Member] = {}

    def consumed() -> list[tuple[int, int, int]]:
        return [r for m in members.values() for r in m.records()]

    def produce_and_drain(batch: int) -> None:
        start = batch * 300
        produce(broker.bootstrap, topic, range(start, start + 300), partitions)
        wait_until(lambda: len(consumed()) >= start + 300, 60, f"records up to {start + 300}")

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def settled(n: int) -> bool:
        """The group is stable with n members that all own partitions."""
        (future,) = admin.describe_consumer_groups([group]).values()
        desc = future.result(10)
        return (
            desc.state.name == "STABLE"
            and len(desc.members) == n
            and all(m.assignment.topic_partitions for m in desc.members)
        )

    def join(name: str) -> None:
        members[name] = Member(broker, group, topic, tmp_path / name, strategy)
        wait_until(lambda: settled(sum(m.proc.poll() is None for m in members.values())), 60, name)

    try:
        join("a")
        produce_and_drain(0)
        join("b")  # joins late: a rebalance hands it partitions
        produce_and_drain(1)
        join("c")
        produce_and_drain(2)
        assert all(m.records() for m in members.values())
        members["b"].leave()  # LeaveGroup: its partitions move at once
        wait_until(lambda: settled(2), 60, "the group without b")
        produce_and_drain(3)
        members["c"].kill()  # no goodbye: its partitions move after its session timeout
        produce_and_drain(4)
        produce_and_drain(5)
    finally:
        for m in members.values():
            m.stop()

    rows = consumed()
    values = Counter(v for _, _, v in rows)
    assert sorted(values) == list(range(1800))
    assert max(values.values()) == 1, [v for v, n in values.items() if n > 1][:10]
    positions = Counter((p, o) for p, o, _ in rows)
    assert max(positions.values()) == 1
    for name in "abc":
        assert members[name].records(), f"member {name} never got a partition"
    log = broker.log()
    assert "has failed (session timeout)" in log
    assert "is leaving group" in log


def test_kafka_python_group_subscribes_by_pattern_commits_and_resumes(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    prefix = f"kp-{uuid.uuid4().hex[:6]}"
    for suffix in ("a", "b"):
        create_topic(broker.bootstrap, f"{prefix}-{suffix}", 2)
        produce(broker.bootstrap, f"{prefix}-{suffix}", range(50), 2)

    def consume(expected: int) -> list:
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=f"{prefix}-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        consumer.subscribe(pattern=f"^{prefix}-.*")
        got: list = []
        deadline = time.monotonic() + 60
        while len(got) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
        consumer.commit()
        committed = {tp: consumer.committed(tp) for tp in consumer.assignment()}
        consumer.close()
        return got, committed

    got, committed = consume(100)
    assert len(got) == 100
    assert committed == {KTP(f"{prefix}-{s}", p): 25 for s in "ab" for p in range(2)}
    produce(broker.bootstrap, f"{prefix}-a", range(50, 60), 2)
    got, _ = consume(10)
    assert sorted(int(r.value) for r in got) == list(range(50, 60))


def test_aiokafka_group_subscribes_by_pattern_commits_and_resumes(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    prefix = f"aio-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, f"{prefix}-x", 3)
    produce(broker.bootstrap, f"{prefix}-x", range(60), 3)

    async def consume(expected: int, *, pattern: bool) -> list[int]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=f"{prefix}-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        await consumer.start()
        try:
            if pattern:
                consumer.subscribe(pattern=f"^{prefix}-.*")
            else:
                consumer.subscribe([f"{prefix}-x"])
            got: list[int] = []
            deadline = time.monotonic() + 60
            while len(got) < expected and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    got.extend(int(r.value) for r in records)
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(consume(60, pattern=True))) == list(range(60))
    produce(broker.bootstrap, f"{prefix}-x", range(60, 75), 3)
    assert sorted(asyncio.run(consume(15, pattern=False))) == list(range(60, 75))


def test_committed_offsets_and_metadata_survive_restarts(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    create_topic(broker.bootstrap, "keep", 3)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "keeper"})
    offsets = [TopicPartition("keep", p, 10 * p + 5, metadata=f"meta-{p}") for p in range(3)]
    consumer.commit(offsets=offsets, asynchronous=False)
    consumer.close()

    def committed() -> list[tuple[int, int, str | None]]:
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "keeper"})
        try:
            got = c.committed([TopicPartition("keep", p) for p in range(3)], timeout=20)
        finally:
            c.close()
        return [(tp.partition, tp.offset, tp.metadata) for tp in got]

    expected = [(p, 10 * p + 5, f"meta-{p}") for p in range(3)]
    assert committed() == expected
    broker.restart()  # clean shutdown
    assert committed() == expected
    broker.kill()  # no clean shutdown: loaded from the log again
    broker.start()
    assert committed() == expected
    broker.wait_for_log("loaded 1 group(s) from __consumer_offsets")


def test_consumer_offsets_is_a_compacted_topic_that_shrinks(fresh_broker):
    broker = fresh_broker(
        **GROUP_SETTINGS,
        **{
            "offsets.topic.num.partitions": "3",
            "offsets.topic.segment.bytes": "4096",
            "log.cleaner.backoff.ms": "100",
        },
    )
    create_topic(broker.bootstrap, "src", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compact-me"})
    for i in range(400):
        consumer.commit(offsets=[TopicPartition("src", 0, i)], asynchronous=False)
    consumer.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (cfg,) = admin.describe_configs([ConfigResource("topic", "__consumer_offsets")]).values()
    config = cfg.result(10)
    assert config["cleanup.policy"].value == "compact"
    assert config["segment.bytes"].value == "4096"
    meta = admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
    assert len(meta.partitions) == 3

    dirs = [broker.data_dir / f"__consumer_offsets-{p}" for p in range(3)]
    assert all(d.is_dir() for d in dirs)

    def size() -> int:
        return sum(f.stat().st_size for d in dirs for f in d.glob("*.log"))

    before = size()
    wait_until(lambda: size() < before / 2, 60, "compaction of __consumer_offsets")
    # what is left still holds the last commit
    broker.restart()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compact-me"})
    (tp,) = c.committed([TopicPartition("src", 0)], timeout=20)
    c.close()
    assert tp.offset == 399


def test_list_describe_and_delete_groups_with_admin(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    create_topic(broker.bootstrap, "adm", 2)
    produce(broker.bootstrap, "adm", range(10), 2)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "described",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe(["adm"])
    first = []
    wait_until(lambda: first.append(consumer.poll(0.2)) or any(first), 30, "a first record")
    msg = next(m for m in first if m is not None)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert "described" in {g.group_id for g in listed.valid}
    (desc,) = admin.describe_consumer_groups(["described"]).values()
    group = desc.result(10)
    assert group.state.name == "STABLE" and len(group.members) == 1
    assigned = group.members[0].assignment.topic_partitions
    assert sorted(tp.partition for tp in assigned) == [0, 1]
    # a group with members cannot be deleted
    (fut,) = admin.delete_consumer_groups(["described"]).values()
    with pytest.raises(Exception, match=r"NON_EMPTY_GROUP|not empty"):
        fut.result(10)
    consumer.commit(message=msg, asynchronous=False)
    consumer.close()
    (fut,) = admin.delete_consumer_groups(["described"]).values()
    fut.result(10)
    assert "described" not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    create_topic(broker.bootstrap, "static", 4)
    revoked: list[str] = []

    def member(instance: str) -> Consumer:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "statics",
                "group.instance.id": instance,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
            }
        )
        c.subscribe(["static"], on_revoke=lambda _c, _p: revoked.append(instance))
        return c

    def poll_until(consumers: list[Consumer], done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 60
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            for c in consumers:
                c.poll(0.05)

    a, b = member("s1"), member("s2")
    poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, "balance")
    before = sorted(tp.partition for tp in b.assignment())
    revoked.clear()
    b.close()  # a static member leaves no LeaveGroup behind
    b = member("s2")
    poll_until([a, b], lambda: len(b.assignment()) == 2, "s2 back")
    assert sorted(tp.partition for tp in b.assignment()) == before
    assert "s1" not in revoked  # the other member never had to give anything up
    broker.wait_for_log("static member s2 of group statics rejoined")
    a.close()
    b.close()
