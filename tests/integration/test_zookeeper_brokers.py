"""Real ``odradek serve`` processes forming a cluster through a real ZooKeeper, used by real
clients: every broker registers, partitions spread over them, any broker bootstraps a client
that produces and consumes every partition; SIGKILL, restarts, stalls (session expiry),
duplicate ids and a log dir from another cluster."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.support import kafka_clients
from tests.support.cluster import (  # noqa: F401 - re-exported for other test modules
    SESSION_TIMEOUT_MS,
    ProcessCluster,
    leaders,
    metadata,
    wait_leaders,
)
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[ProcessCluster]:
    c = ProcessCluster(zookeeper, tmp_path)
    yield c
    c.close()


def produce(
    bootstrap: str, topic: str, partitions: list[int], per_partition: int, tag: str
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    errors: list[Any] = []
    for p in partitions:
        for i in range(per_partition):
            producer.produce(
                topic,
                value=f"{tag}-{p}-{i}".encode(),
                partition=p,
                on_delivery=lambda err, msg: errors.append(err) if err else None,
            )
    assert producer.flush(30) == 0
    assert errors == []


def consume(bootstrap: str, topic: str, partitions: list[int], expected: int) -> list[bytes]:
    messages = kafka_clients.consume_from_start(bootstrap, topic, partitions, expected, timeout=60)
    return [m.value() or b"" for m in messages]


def create_topic(bootstrap: str, name: str, partitions: int, replication: int = 1) -> None:
    kafka_clients.create_topic(bootstrap, name, partitions, replication=replication)


# --- tests -----------------------------------------------------------------------------------


def test_three_brokers_serve_every_partition_from_any_bootstrap(cluster: ProcessCluster) -> None:
    b1, b2, b3 = cluster.start(1, 2, 3)
    assert cluster.registered() == [1, 2, 3]
    for b in (b1, b2, b3):
        md = wait_for(lambda b=b: (m := metadata(b.bootstrap)) and len(m.brokers) == 3 and m, "3")
        assert sorted(md.brokers) == [1, 2, 3]
        assert {i: f"{x.host}:{x.port}" for i, x in md.brokers.items()} == {
            1: b1.bootstrap,
            2: b2.bootstrap,
            3: b3.bootstrap,
        }
        assert md.controller_id == 1
    cluster_ids = {metadata(b.bootstrap).cluster_id for b in (b1, b2, b3)}
    assert len(cluster_ids) == 1

    create_topic(b2.bootstrap, "pageviews", 6)
    layout = wait_leaders(b3.bootstrap, "pageviews", 6)
    assert sorted(layout.values()) == [1, 1, 2, 2, 3, 3]
    for b in (b1, b2):
        wait_for(lambda b=b: leaders(b.bootstrap, "pageviews") == layout, "same leaders")
    # every partition has its state znode, and its log only on its leader
    for p, leader in layout.items():
        state = json.loads(cluster.zk.get(f"/brokers/topics/pageviews/partitions/{p}/state")[0])
        assert state["leader"] == leader and state["isr"] == [leader]
        for broker_id, proc in cluster.brokers.items():
            assert (proc.data_dir / f"pageviews-{p}").is_dir() == (broker_id == leader)

    produce(b2.bootstrap, "pageviews", list(range(6)), 20, "a")
    got = consume(b3.bootstrap, "pageviews", list(range(6)), 120)
    assert sorted(got) == sorted(f"a-{p}-{i}".encode() for p in range(6) for i in range(20))
    got = consume(b1.bootstrap, "pageviews", [0], 20)
    assert got == [f"a-0-{i}".encode() for i in range(20)]

    # auto-creation through a non-controller broker
    produce(b3.bootstrap, "auto-created", [0, 1, 2], 1, "x")
    assert sorted(wait_leaders(b1.bootstrap, "auto-created", 3).values()) == [1, 2, 3]


def test_sigkill_failover_and_restart(cluster: ProcessCluster) -> None:
    b1, b2, b3 = cluster.start(1, 2, 3)
    create_topic(b2.bootstrap, "survive", 3)
    layout = wait_leaders(b2.bootstrap, "survive", 3)
    produce(b2.bootstrap, "survive", [0, 1, 2], 10, "before")
    on_1 = [p for p, leader in layout.items() if leader == 1]
    others = [p for p, leader in layout.items() if leader != 1]
    assert cluster.controller() == 1

    b1.kill()  # SIGKILL: no clean shutdown, the session lives until ZooKeeper expires it
    wait_for(
        lambda: cluster.registered() == [2, 3], "/brokers/ids/1 gone after the session timeout"
    )
    wait_for(lambda: cluster.controller() in (2, 3), "a new controller")
    wait_for(lambda: sorted(metadata(b2.bootstrap).brokers) == [2, 3], "Metadata without 1")
    wait_for(lambda: sorted(metadata(b3.bootstrap).brokers) == [2, 3], "Metadata without 1")
    assert int(cluster.zk.get("/controller_epoch")[0]) == 2
    # broker 1's partitions have no other replica: no leader; the others keep serving
    wait_for(
        lambda: all(leaders(b3.bootstrap, "survive")[p] == -1 for p in on_1), "offline partitions"
    )
    produce(b3.bootstrap, "survive", others, 10, "during")
    got = consume(b2.bootstrap, "survive", others, 20 * len(others))
    assert sorted(got) == sorted(
        f"{tag}-{p}-{i}".encode() for tag in ("before", "during") for p in others for i in range(10)
    )

    b1.start()  # same id, same data: registers again and leads its partitions again
    wait_for(lambda: cluster.registered() == [1, 2, 3], "broker 1 registered again")
    wait_for(lambda: sorted(metadata(b2.bootstrap).brokers) == [1, 2, 3], "Metadata with 1")
    wait_for(lambda: all(leaders(b2.bootstrap, "survive")[p] == 1 for p in on_1), "back on 1")
    produce(b2.bootstrap, "survive", on_1, 10, "after")
    got = consume(b3.bootstrap, "survive", on_1, 20 * len(on_1))
    assert sorted(got) == sorted(
        f"{tag}-{p}-{i}".encode() for tag in ("before", "after") for p in on_1 for i in range(10)
    )


def test_duplicate_broker_id_fails_to_start(cluster: ProcessCluster) -> None:
    cluster.start(1)
    dup = cluster.process(1, name="duplicate")
    cluster.extra.append(dup)
    with pytest.raises(RuntimeError, match="did not start"):
        dup.start(timeout=60)
    assert dup.proc is not None
    assert dup.proc.wait(30) != 0
    assert "broker.id 1 is already registered in ZooKeeper" in dup.log()
    assert cluster.registered() == [1]


def test_stalled_broker_is_expired_and_registers_again_without_restart(
    cluster: ProcessCluster,
) -> None:
    b1, b2 = cluster.start(1, 2)
    create_topic(b1.bootstrap, "stall", 2)
    before = cluster.zk.exists("/brokers/ids/2")
    assert before is not None
    os.kill(b2.pid, signal.SIGSTOP)  # as a long GC pause or a frozen VM would
    try:
        wait_for(lambda: cluster.registered() == [1], "the stalled broker's session expired")
    finally:
        os.kill(b2.pid, signal.SIGCONT)

    def registered_again() -> bool:
        stat = cluster.zk.exists("/brokers/ids/2")
        return stat is not None and stat.ephemeralOwner != before.ephemeralOwner

    wait_for(registered_again, "broker 2 registered under a new session")
    assert b2.proc is not None and b2.proc.poll() is None  # the same process
    b2.wait_for_log("registering broker 2 again")
    wait_for(lambda: sorted(metadata(b1.bootstrap).brokers) == [1, 2], "listed again")
    wait_for(lambda: sorted(leaders(b2.bootstrap, "stall").values()) == [1, 2], "serving again")
    produce(b1.bootstrap, "stall", [0, 1], 5, "s")
    assert len(consume(b2.bootstrap, "stall", [0, 1], 10)) == 10


def test_log_dir_of_another_cluster_is_refused(
    cluster: ProcessCluster, zookeeper: ZooKeeperServer
) -> None:
    (b1,) = cluster.start(1)
    first_cluster = metadata(b1.bootstrap).cluster_id
    b1.stop()
    meta = (b1.data_dir / "meta.properties").read_text()
    assert f"cluster.id={first_cluster}" in meta

    # the same log dir, pointed at another cluster (another chroot)
    other = ProcessCluster(zookeeper, cluster.tmp)
    try:
        b1.overrides["zookeeper.connect"] = other.connect
        with pytest.raises(RuntimeError, match="did not start"):
            b1.start()
        assert b1.proc is not None and b1.proc.wait(30) != 0
        assert f"doesn't match stored clusterId {first_cluster} in meta.properties" in b1.log()
        assert other.registered() == []
    finally:
        other.close()


def test_consumer_groups_are_coordinated_across_the_cluster(cluster: ProcessCluster) -> None:
    """Group coordinators follow __consumer_offsets partition leadership, spread over brokers."""
    from confluent_kafka import Consumer

    for broker_id in (1, 2, 3):
        cluster.brokers[broker_id] = cluster.process(
            broker_id, **{"group.initial.rebalance.delay.ms": "0"}
        )
    b1, b2, b3 = cluster.start(1, 2, 3)
    create_topic(b1.bootstrap, "grouped", 3)
    wait_leaders(b3.bootstrap, "grouped", 3)
    produce(b2.bootstrap, "grouped", [0, 1, 2], 10, "g")
    coordinators: dict[str, int] = {}
    admin = AdminClient({"bootstrap.servers": b1.bootstrap})
    for group in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
        consumer = Consumer(
            {
                "bootstrap.servers": b3.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(["grouped"])
        got = 0
        deadline = time.monotonic() + 60
        try:
            while got < 30 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    got += 1
            assert got == 30
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        described = admin.describe_consumer_groups([group])[group].result(30)
        coordinators[group] = described.coordinator.id
    offsets = metadata(b2.bootstrap).topics["__consumer_offsets"]
    leader_of = {p.id: p.leader for p in offsets.partitions.values()}
    assert set(leader_of.values()) == {1, 2, 3}
    # Kafka's rule: the leader of partition abs(hashCode(group)) % partitions
    assert coordinators == {g: leader_of[java_hash(g) % len(leader_of)] for g in coordinators}


def java_hash(text: str) -> int:
    """Java's String.hashCode, then Kafka's Utils.abs (MIN_VALUE -> 0, else Math.abs)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return 0 if h == -(2**31) else abs(h)


def test_broker_ids_are_generated_from_zookeeper_and_kept(cluster: ProcessCluster) -> None:
    """broker.id=-1, or no broker.id in cluster mode: reserved.broker.max.id + the sequence
    number of /brokers/seqid, written to meta.properties and kept across restarts (Kafka's
    broker.id.generation.enable); a configured id that contradicts meta.properties is refused."""

    def meta_id(proc: Any) -> int:
        text = (proc.data_dir / "meta.properties").read_text()
        return int(text.split("broker.id=", 1)[1].split()[0])

    a = cluster.process(0, name="gen-a", **{"broker.id": "-1"})
    b = cluster.process(0, name="gen-b")
    del b.overrides["broker.id"]  # unset in cluster mode: generated too
    cluster.extra += [a, b]
    a.start()
    b.start()
    assert (meta_id(a), meta_id(b)) == (1001, 1002)
    assert cluster.registered() == [1001, 1002]
    assert "generated broker.id 1001" in a.log()
    a.restart()
    assert meta_id(a) == 1001
    wait_for(lambda: cluster.registered() == [1001, 1002], "1001 registered again")
    assert sorted(metadata(b.bootstrap).brokers) == [1001, 1002]

    a.stop()
    a.overrides["broker.id"] = "7"
    with pytest.raises(RuntimeError, match="did not start"):
        a.start()
    assert "Configured broker.id 7 doesn't match stored broker.id 1001" in a.log()

    c = cluster.process(0, name="gen-c", **{"broker.id": "-1", "reserved.broker.max.id": "5000"})
    cluster.extra.append(c)
    c.start()
    assert meta_id(c) == 5003
