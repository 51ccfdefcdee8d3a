"""A log directory that fills up in a cluster (KIP-112, issue 20): real brokers on a real
ZooKeeper; broker 1 has two log dirs, a real 64 MB tmpfs and a healthy directory.

Broker 1 takes the full directory offline and tells the controller as Kafka's ZooKeeper-mode
brokers do (``/log_dir_event_notification``, with its offline replicas in
``/brokers/offline_replicas/<id>``); the controller moves the leadership of the partitions it led
there to other in-sync replicas and takes its replicas there out of the ISRs, while broker 1
keeps leading its partition in the healthy directory. The directory fills either through the
leader's appends (an idempotent ``acks=all`` producer goes on through its own retries) or
through a follower's. Every acknowledged record is there exactly once; with space freed and
broker 1 restarted, its replicas rejoin the ISRs and their logs match the others' batch for
batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.records import batch as rb
from tests.integration.broker_process import BrokerProcess
from tests.support.cluster import ProcessCluster, wait_leaders
from tests.support.metrics import scrape
from tests.support.raw_client import call, connect
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer, free_port, require_zookeeper

pytestmark = pytest.mark.zookeeper

ODRADEK = str(Path(sys.executable).parent / "odradek")
BROKERS = (1, 2, 3)
#: records of this size fill the 64 MB tmpfs after about 120 of them
VALUE_SIZE = 512 * 1024
RECORDS = 160


@pytest.fixture
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    require_zookeeper()
    server = ZooKeeperServer(tmp_path_factory.mktemp("zk")).start()
    yield server
    server.stop()


@pytest.fixture
def cluster(zk: ZooKeeperServer, tmp_path: Path) -> Iterator[ProcessCluster]:
    c = ProcessCluster(zk, tmp_path)
    yield c
    c.close()


def state(cluster: ProcessCluster, topic: str, partition: int) -> dict[str, Any]:
    data, _ = cluster.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return dict(json.loads(data))


def log_dirs(proc: BrokerProcess, broker_id: int) -> list[dict[str, Any]]:
    """``odradek log-dirs --broker ID --format json``, as an operator runs it."""
    done = subprocess.run(
        [ODRADEK, "log-dirs", "--broker", str(broker_id), "--format", "json", "-b", proc.bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def batches(directory: Path) -> list[tuple[int, int, int, int]]:
    """(base offset, partition leader epoch, length, CRC) of every batch of a replica's
    segment files."""
    out = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        pos = 0
        while pos + rb.HEADER_SIZE <= len(data):
            h = rb.read_header(data, pos)
            if h.batch_length <= 0 or pos + h.size > len(data):
                break
            out.append((h.base_offset, h.partition_leader_epoch, h.batch_length, h.crc))
            pos += h.size
    return out


def _high_watermark(consumer: Consumer, tp: TopicPartition) -> tuple[int] | None:
    """The partition's high watermark (in a tuple, so that 0 is true), or None if the broker
    asked is no longer its leader."""
    try:
        return (consumer.get_watermark_offsets(tp, timeout=30)[1],)
    except KafkaException as e:
        retriable = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
        if e.args[0].code() in retriable:
            return None
        raise


def read_partition(boot: str, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of the partition, up to its high watermark now."""
    consumer = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": "verify",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.message.max.bytes": 2 * VALUE_SIZE,
        }
    )
    try:
        # the client's metadata may still name the leader before a move (the controller's
        # preferred-leader election after broker 1 rejoins): asked again, it refreshes it
        end = wait_for(
            lambda: _high_watermark(consumer, TopicPartition(topic, partition)),
            f"{topic}-{partition}'s high watermark from its leader",
        )[0]
        consumer.assign([TopicPartition(topic, partition, 0)])
        got: list[tuple[int, bytes]] = []

        def done() -> bool:
            m = consumer.poll(0.5)
            if m is not None:
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(f"consumer error {m.error()}")
                else:
                    got.append((m.offset(), m.value()))
            if not got:
                return end == 0
            return got[-1][0] + 1 >= end

        wait_for(done, f"{topic}-{partition} read to offset {end}", timeout=120)
        return got
    finally:
        consumer.close()


def start(small_tmpfs: Path, cluster: ProcessCluster, tmp_path: Path) -> tuple[str, int]:
    """Brokers 1-3, broker 1 with log dirs ``small_tmpfs`` then a healthy one (new partitions
    go to the dir with the fewest, the first on a tie); returns the bootstrap servers and
    broker 1's metrics port."""
    settings = {
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "group.initial.rebalance.delay.ms": "0",
        "replica.fetch.backoff.ms": "200",
    }
    metrics_port = free_port()
    cluster.brokers[1] = cluster.process(
        1,
        **settings,
        **{"log.dirs": f"{small_tmpfs},{tmp_path / 'broker-1-healthy'}"},
        **{"metrics.port": str(metrics_port)},
    )
    for broker_id in (2, 3):
        cluster.brokers[broker_id] = cluster.process(broker_id, **settings)
    for proc in cluster.brokers.values():
        proc.start()
    wait_for(lambda: cluster.registered() == list(BROKERS), "all brokers registered")
    return ",".join(p.bootstrap for p in cluster.brokers.values()), metrics_port


def create_topic(boot: str, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": boot})
    new = NewTopic(
        topic,
        len(assignment),
        replica_assignment=assignment,
        config={"min.insync.replicas": "2"},
    )
    for f in admin.create_topics([new]).values():
        f.result(30)
    wait_leaders(boot, topic, len(assignment))


def on_tmpfs(cluster: ProcessCluster, small_tmpfs: Path) -> set[int]:
    dirs = {d["path"]: d for d in log_dirs(cluster.brokers[1], 1)}
    return {p["partition"] for p in dirs[str(small_tmpfs)]["partitions"]}


class Sender:
    """An idempotent ``acks=all`` producer of numbered records of ``VALUE_SIZE`` bytes."""

    def __init__(self, boot: str, topic: str) -> None:
        self.topic = topic
        self.payload = os.urandom(VALUE_SIZE)
        self.acked: dict[int, dict[int, int]] = {}
        self.failures: list[str] = []
        self.producer = Producer(
            {
                "bootstrap.servers": boot,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 300000,
                "retry.backoff.ms": 100,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failures.append(str(err))
        else:
            number = int.from_bytes(msg.value()[:4], "big")
            self.acked.setdefault(msg.partition(), {})[number] = msg.offset()

    def send(self, partition: int, count: int) -> None:
        """Sends ``count`` records to ``partition`` and waits until each is answered."""
        for i in range(count):
            self.producer.produce(
                self.topic,
                value=i.to_bytes(4, "big") + self.payload,
                partition=partition,
                on_delivery=self._delivered,
            )
            self.producer.poll(0)
            if i % 20 == 19:
                self.producer.flush(120)
        assert self.producer.flush(300) == 0
        assert self.failures == []

    def check(self, boot: str, partition: int, count: int) -> list[tuple[int, bytes]]:
        """Every acknowledged record of ``partition`` once, in the order sent, as its leader
        serves them now; returns them."""
        assert self.acked[partition] == {i: i for i in range(count)}
        records = read_partition(boot, self.topic, partition)
        assert [offset for offset, _ in records] == list(range(count))
        assert [int.from_bytes(v[:4], "big") for _, v in records] == list(range(count))
        assert all(v[4:] == self.payload for _, v in records)
        return records


def offline_in_zookeeper(cluster: ProcessCluster, topic: str, partitions: set[int]) -> None:
    """What broker 1 told the controller, and the controller consumed; and every broker's
    Metadata answers broker 1 among those partitions' offline replicas, as Kafka's does."""
    record = json.loads(cluster.zk.get("/brokers/offline_replicas/1")[0])
    wanted = [{"topic": topic, "partition": p} for p in sorted(partitions)]
    assert record["partitions"] == wanted, record
    wait_for(lambda: cluster.zk.get_children("/log_dir_event_notification") == [], "consumed")

    def answered(proc: BrokerProcess) -> bool:
        sock = connect(proc.bootstrap)
        try:
            request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)])
            response = call(sock, request, 12)
        finally:
            sock.close()
        offline = {p.partition_index: p.offline_replicas for p in response.topics[0].partitions}
        return offline == {p: ([1] if p in partitions else []) for p in offline}

    for proc in cluster.brokers.values():
        wait_for(lambda proc=proc: answered(proc), f"offline replicas in {proc.bootstrap}")


def restart_with_space(
    cluster: ProcessCluster, small_tmpfs: Path, tmp_path: Path, topic: str, partitions: int
) -> None:
    """Broker 1 stops, the tmpfs grows, broker 1 starts again: its replicas catch up and rejoin
    the ISRs, and every replica on the tmpfs matches the others batch for batch."""
    proc = cluster.brokers[1]
    port = proc.port
    proc.stop()
    subprocess.run(["mount", "-o", "remount,size=256m", str(small_tmpfs)], check=True)
    proc.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
    proc.start()

    def rejoined() -> bool:
        return all(
            sorted(state(cluster, topic, p)["isr"]) == list(BROKERS) for p in range(partitions)
        )

    wait_for(rejoined, "broker 1 back in every ISR", timeout=120)
    assert cluster.zk.exists("/brokers/offline_replicas/1") is None
    for p in on_tmpfs(cluster, small_tmpfs):
        replicas = [
            small_tmpfs / f"{topic}-{p}",
            tmp_path / "broker-2" / "data" / f"{topic}-{p}",
            tmp_path / "broker-3" / "data" / f"{topic}-{p}",
        ]

        def identical(replicas: list[Path] = replicas) -> bool:
            logs = [batches(path) for path in replicas]
            return all(log == logs[0] for log in logs[1:])

        wait_for(identical, f"the replicas of {topic}-{p} identical batch for batch")


def test_a_leader_whose_log_dir_fills_loses_leadership_there_and_nothing_acknowledged(
    small_tmpfs: Path, cluster: ProcessCluster, tmp_path: Path
) -> None:
    boot, metrics_port = start(small_tmpfs, cluster, tmp_path)
    topic = "jbod"
    create_topic(boot, topic, [[1, 2, 3], [1, 3, 2]])
    # broker 1 leads both partitions: one in each of its log dirs
    tmpfs_partitions = on_tmpfs(cluster, small_tmpfs)
    assert len(tmpfs_partitions) == 1
    full = tmpfs_partitions.pop()
    other = 1 - full

    sender = Sender(boot, topic)
    sender.send(full, RECORDS)

    # the full replica lost its leadership and left the ISR; the healthy one kept both
    moved = state(cluster, topic, full)
    assert moved["leader"] in (2, 3) and 1 not in moved["isr"], moved
    assert moved["leader_epoch"] >= 1
    kept = state(cluster, topic, other)
    assert kept["leader"] == 1 and sorted(kept["isr"]) == [1, 2, 3], kept
    assert kept["leader_epoch"] == 0
    sender.send(other, 1)
    dirs = {d["path"]: d for d in log_dirs(cluster.brokers[1], 1)}
    assert dirs[str(small_tmpfs)]["error"] == "KAFKA_STORAGE_ERROR"
    assert dirs[str(tmp_path / "broker-1-healthy")]["error"] is None
    offline_in_zookeeper(cluster, topic, {full})
    samples = scrape(metrics_port)
    assert samples["kafka_log_logmanager_offlinelogdirectorycount"] == 1
    assert samples[f'kafka_log_logmanager_logdirectoryoffline{{logDirectory="{small_tmpfs}"}}'] == 1
    assert samples["kafka_server_replicamanager_offlinereplicacount"] == 1
    # still ready: it serves its healthy directory
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/ready", timeout=10) as r:
        assert r.status == 200

    records = sender.check(boot, full, RECORDS)

    restart_with_space(cluster, small_tmpfs, tmp_path, topic, 2)
    assert read_partition(boot, topic, full) == records


def test_a_follower_whose_log_dir_fills_leaves_the_isr_and_its_dir_loses_leadership(
    small_tmpfs: Path, cluster: ProcessCluster, tmp_path: Path
) -> None:
    """The tmpfs fills with a follower's appends: broker 1 leaves that partition's ISR at once
    (not after replica.lag.time.max.ms), and the partition it led on the same dir moves to
    another leader though nothing was written to it."""
    boot, _ = start(small_tmpfs, cluster, tmp_path)
    topic = "follow"
    # 0: followed by 1 (on the tmpfs), 1: led by 1 (healthy dir), 2: led by 1 (on the tmpfs)
    create_topic(boot, topic, [[2, 1, 3], [1, 3, 2], [1, 2, 3]])
    assert on_tmpfs(cluster, small_tmpfs) == {0, 2}
    sender = Sender(boot, topic)
    sender.send(2, 3)

    sender.send(0, RECORDS)

    followed = state(cluster, topic, 0)
    assert followed["leader"] == 2 and sorted(followed["isr"]) == [2, 3], followed
    moved = state(cluster, topic, 2)
    assert moved["leader"] in (2, 3) and sorted(moved["isr"]) == [2, 3], moved
    kept = state(cluster, topic, 1)
    assert (kept["leader"], kept["leader_epoch"]) == (1, 0), kept
    assert sorted(kept["isr"]) == [1, 2, 3], kept
    offline_in_zookeeper(cluster, topic, {0, 2})
    sender.send(2, 3)  # to its new leader
    sender.send(1, 1)  # still led by broker 1
    records = sender.check(boot, 0, RECORDS)

    restart_with_space(cluster, small_tmpfs, tmp_path, topic, 3)
    assert read_partition(boot, topic, 0) == records
