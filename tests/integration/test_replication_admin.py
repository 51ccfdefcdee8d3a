"""The controller's duties on a real cluster (three ``odradek serve`` processes, a real ZooKeeper,
real clients): controlled shutdown in a rolling restart under acks=all load, preferred leader
election (automatic and through admin clients), partition reassignment (KIP-455 and the legacy
znode), unclean leader election, replica assignments given at creation, DescribeLogDirs and
AlterReplicaLogDirs, and the controller's gauges.

The three brokers are shared by the module's tests, which run in file order and leave all three
running. Broker 1 is the first controller and the only one with automatic rebalancing (checked
every second), so the first test sees it work; once the rolling restart moved the controller to
broker 2 or 3, leadership stays where the tests put it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP
from kafka.structs import TopicPartitionReplica

from protocol.error_codes import ErrorCode
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records.record import SimpleRecord, build_batch
from tests.support import raw_client
from tests.support.cluster import (
    ProcessCluster,
    admin,
    bootstrap,
    controller,
    create,
    describe,
    restart,
    start_cluster,
    wait_in_sync,
)
from tests.support.kafka_clients import consume_from_start
from tests.support.ports import free_port
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

BROKERS = (1, 2, 3)


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    c = start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("replication-admin"),
        BROKERS,
        lambda broker_id: {
            # long enough for a SIGSTOPped broker to stay registered while a test asks for a
            # reassignment
            "zookeeper.session.timeout.ms": "4000",
            "auto.leader.rebalance.enable": "true" if broker_id == 1 else "false",
            "leader.imbalance.check.interval.seconds": "1",
            "controlled.shutdown.retry.backoff.ms": "500",
            "metrics.port": str(free_port()),
        },
    )
    yield c
    c.close()


# --- helpers ---------------------------------------------------------------------------------


def produce(cluster: ProcessCluster, topic: str, partition: int, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all"})
    errors: list[Any] = []
    for v in values:
        producer.produce(
            topic, v, partition=partition, on_delivery=lambda e, m: errors.append(e) if e else None
        )
    assert producer.flush(60) == 0
    assert errors == []


def values(cluster: ProcessCluster, topic: str, partition: int, expected: int) -> list[bytes]:
    """The partition's first ``expected`` values (read from its leader)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap(cluster),
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([CTP(topic, partition, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def segments(cluster: ProcessCluster, broker_id: int, topic: str, partition: int) -> bytes:
    """The partition's segment files on ``broker_id``, concatenated in offset order."""
    d = cluster.brokers[broker_id].data_dir / f"{topic}-{partition}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


def scrape(cluster: ProcessCluster, broker_id: int) -> dict[str, float]:
    port = cluster.brokers[broker_id].overrides["metrics.port"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def kadmin(cluster: ProcessCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap(cluster), request_timeout_ms=60000)


# --- automatic rebalancing (broker 1 is still the controller) ----------------------------------


def test_the_controller_moves_leadership_back_to_preferred_replicas(cluster):
    assert controller(cluster) == 1
    create(cluster, "auto-rebalance", [[2, 1, 3], [3, 1, 2], [2, 3, 1]])
    produce(cluster, "auto-rebalance", 0, [b"a", b"b"])
    cluster.brokers[2].stop()  # controlled shutdown: partitions 0 and 2 move away from broker 2
    wait_for(
        lambda: (m := describe(cluster, "auto-rebalance")) and m[0][0] != 2 and m[2][0] != 2,
        "leadership moved off broker 2",
    )
    restart(cluster, 2)
    # broker 2 leads none of its preferred partitions (100% > 10%): the controller elects it
    wait_for(
        lambda: (
            {p: s[0] for p, s in describe(cluster, "auto-rebalance").items()} == {0: 2, 1: 3, 2: 2}
        ),
        "preferred leaders back",
        timeout=120,
    )
    assert values(cluster, "auto-rebalance", 0, 2) == [b"a", b"b"]


# --- replica assignments at creation ------------------------------------------------------------


def test_create_topics_and_partitions_honour_replica_assignments(cluster):
    create(cluster, "assigned", [[3, 1], [2, 3]])
    assert describe(cluster, "assigned") == {0: (3, [3, 1], [3, 1]), 1: (2, [2, 3], [2, 3])}
    znode = json.loads(cluster.zk.get("/brokers/topics/assigned")[0])
    assert znode["partitions"] == {"0": [3, 1], "1": [2, 3]}
    client = admin(cluster)
    futures = client.create_partitions(
        [NewPartitions("assigned", 4, replica_assignment=[[1, 2], [3, 2]])]
    )
    futures["assigned"].result(30)
    found = wait_in_sync(cluster, "assigned", 4)
    assert (found[2][1], found[3][1]) == ([1, 2], [3, 2])
    # each replica hosts a log, and no other broker does
    for p, (_, replicas, _) in found.items():
        for broker_id, proc in cluster.brokers.items():
            path = proc.data_dir / f"assigned-{p}"
            wait_for(lambda path=path, r=broker_id in replicas: path.is_dir() == r, str(path))
    # an assignment naming an unknown broker is refused
    bad = client.create_topics([NewTopic("assigned-bad", 1, replica_assignment=[[1, 9]])])
    with pytest.raises(Exception, match=r"INVALID_REPLICA_ASSIGNMENT|nvalid replica"):
        bad["assigned-bad"].result(30)


# --- controlled shutdown: a rolling restart under acks=all load -----------------------------------


class Load:
    """A confluent-kafka producer (acks=all, idempotent) sending numbered records to every
    partition until stopped; it records each delivery and each failure."""

    def __init__(self, cluster: ProcessCluster, topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap(cluster),
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        self.sent = [0] * partitions
        self.delivered: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        self.failed: list[Any] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failed.append(err)
        else:
            self.delivered[msg.partition()].append((msg.offset(), msg.value()))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            p = n % self.partitions
            value = f"{p}:{self.sent[p]}".encode()
            try:
                self.producer.produce(self.topic, value, partition=p, on_delivery=self._on_delivery)
            except BufferError:
                self.producer.poll(0.1)
                continue
            self.sent[p] += 1
            n += 1
            self.producer.poll(0)
            if n % 20 == 0:
                time.sleep(0.01)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def progress(self) -> int:
        return sum(len(d) for d in self.delivered.values())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        assert self.producer.flush(180) == 0


def test_rolling_restart_under_acks_all_load_loses_and_fails_nothing(cluster):
    topic = "rolling"
    create(
        cluster,
        topic,
        [[1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 3, 2], [2, 1, 3], [3, 2, 1]],
        **{"min.insync.replicas": "2"},
    )
    with Load(cluster, topic, 6) as load:
        wait_for(lambda: load.progress() > 500, "records flowing")
        for broker_id in (2, 3, 1):
            proc = cluster.brokers[broker_id]
            before = load.progress()
            proc.stop()  # SIGTERM
            assert "controlled shutdown of broker" in proc.log()
            assert f"controlled shutdown of broker {broker_id} succeeded" in proc.log()
            wait_for(lambda b=before: load.progress() > b + 200, "records flowing meanwhile")
            restart(cluster, broker_id)
            wait_for(
                lambda b=broker_id: all(
                    b in isr for _, _, isr in describe(cluster, topic).values()
                ),
                f"broker {broker_id} back in every ISR",
                timeout=120,
            )
        wait_for(lambda: load.progress() > before + 200, "records flowing at the end")
    assert load.failed == []
    total = sum(load.sent)
    assert load.progress() == total
    got = consume_from_start(bootstrap(cluster), topic, 6, total, timeout=120)
    assert len(got) == total
    for p in range(6):
        read = [(m.offset(), m.value()) for m in got if m.partition() == p]
        # every record exactly once, in the order it was sent
        assert [v for _, v in read] == [f"{p}:{i}".encode() for i in range(load.sent[p])]
        # every delivery report names the record's offset in the log (librdkafka reports an
        # unknown offset only for a batch it learns was written from a later batch's answer)
        known = {v: o for o, v in load.delivered[p] if o is not None}
        assert sorted(v for _, v in load.delivered[p]) == sorted(v for _, v in read)
        assert all(known.get(v, o) == o for o, v in read)

    # the restarts left broker 1 (restarted last, after the controller moved) leading nothing
    # of this topic; a preferred election through confluent-kafka's admin client moves
    # leadership back to each partition's first replica
    assert controller(cluster) != 1
    layout = wait_in_sync(cluster, topic, 6)
    assert all(leader != 1 for leader, _, _ in layout.values())
    wanted = [CTP(topic, p) for p in range(6)]
    client = admin(cluster)
    results = client.elect_leaders(ElectionType.PREFERRED, wanted).result(60)
    for tp, error in results.items():
        if layout[tp.partition][1][0] == layout[tp.partition][0]:
            assert error is not None and error.code() == KafkaError.ELECTION_NOT_NEEDED
        else:
            assert error is None, (tp, error)
    preferred = {p: s[1][0] for p, s in layout.items()}
    # the answer came once the controller's metadata showed them; the other brokers follow
    wait_for(
        lambda: all(
            {p: s[0] for p, s in describe(cluster, topic, b).items()} == preferred for b in BROKERS
        ),
        "every broker shows the preferred leaders",
    )
    # and nothing moved in the data
    again = consume_from_start(bootstrap(cluster), topic, 6, total, timeout=120)
    assert sorted((m.partition(), m.offset(), m.value()) for m in again) == sorted(
        (m.partition(), m.offset(), m.value()) for m in got
    )


def test_elect_leaders_answers_per_partition(cluster):
    create(cluster, "elect", [[1, 2], [2, 1]])
    ka = kadmin(cluster)
    try:
        # kafka-python's admin client: preferred leaders already lead
        response = ka.elect_leaders(0, {"elect": [0, 1]})
        codes = {
            (r.topic, p.partition_id): p.error_code
            for r in response.replica_election_results
            for p in r.partition_result
        }
        assert codes == {("elect", 0): 84, ("elect", 1): 84}  # ELECTION_NOT_NEEDED
    finally:
        ka.close()
    ctrl = controller(cluster)
    other = next(b for b in BROKERS if b != ctrl)
    request = ElectLeadersRequest(
        election_type=0,
        topic_partitions=[
            TopicPartitions(topic="elect", partitions=[0]),
            TopicPartitions(topic="nope", partitions=[0]),
        ],
        timeout_ms=30000,
    )
    sock = raw_client.connect(cluster.brokers[ctrl].bootstrap)
    try:
        for version in (0, 1, 2):
            r = raw_client.call(sock, request, version)
            got = {
                (t.topic, p.partition_id): p.error_code
                for t in r.replica_election_results
                for p in t.partition_result
            }
            assert got == {
                ("elect", 0): ErrorCode.ELECTION_NOT_NEEDED,
                ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            }
        # unclean election of a partition whose leader is alive: not needed
        r = raw_client.call(
            sock,
            ElectLeadersRequest(
                election_type=1, topic_partitions=[TopicPartitions(topic="elect", partitions=[1])]
            ),
            1,
        )
        assert r.replica_election_results[0].partition_result[0].error_code == (
            ErrorCode.ELECTION_NOT_NEEDED
        )
    finally:
        sock.close()
    # ControlledShutdown: a stale broker epoch and an unknown broker are refused (these ask
    # nothing of a live broker)
    sock = raw_client.connect(cluster.brokers[ctrl].bootstrap)
    try:
        r = raw_client.call(sock, ControlledShutdownRequest(broker_id=other, broker_epoch=0), 3)
        assert (r.error_code, r.remaining_partitions) == (ErrorCode.STALE_BROKER_EPOCH, [])
        r = raw_client.call(sock, ControlledShutdownRequest(broker_id=99, broker_epoch=-1), 2)
        assert r.error_code == ErrorCode.BROKER_NOT_AVAILABLE
    finally:
        sock.close()
    # a broker that is not the controller answers NOT_CONTROLLER, as Kafka's ZooKeeper-mode
    # brokers do
    sock = raw_client.connect(cluster.brokers[other].bootstrap)
    try:
        r = raw_client.call(sock, request, 2)
        assert {p.error_code for t in r.replica_election_results for p in t.partition_result} == {
            ErrorCode.NOT_CONTROLLER
        }
        r = raw_client.call(sock, ListPartitionReassignmentsRequest(topics=None), 0)
        assert r.error_code == ErrorCode.NOT_CONTROLLER
        r = raw_client.call(sock, ControlledShutdownRequest(broker_id=other), 1)
        assert r.error_code == ErrorCode.NOT_CONTROLLER
    finally:
        sock.close()


# --- reassignment ------------------------------------------------------------------------------


def test_reassignment_grows_the_replication_factor_by_replication(cluster):
    create(cluster, "grow", [[1]])
    records = [f"grow-{i}".encode() * 20 for i in range(300)]
    produce(cluster, "grow", 0, records)
    ka = kadmin(cluster)
    try:
        result = ka.alter_partition_reassignments({KTP("grow", 0): [1, 2, 3]})
        assert result == {KTP("grow", 0): None}
        wait_for(lambda: ka.list_partition_reassignments() == {}, "reassignment complete", 120)
    finally:
        ka.close()
    found = wait_in_sync(cluster, "grow", 1)
    assert found[0][1] == [1, 2, 3]
    znode = json.loads(cluster.zk.get("/brokers/topics/grow")[0])
    assert znode["partitions"] == {"0": [1, 2, 3]}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    leader_copy = segments(cluster, 1, "grow", 0)
    for broker_id in (2, 3):
        wait_for(
            lambda b=broker_id: segments(cluster, b, "grow", 0) == leader_copy,
            f"broker {broker_id}'s copy",
        )
    assert values(cluster, "grow", 0, len(records)) == records


def test_reassignment_moves_a_replica_and_the_leader(cluster):
    create(cluster, "move", [[1, 2]])
    records = [f"move-{i}".encode() for i in range(200)]
    produce(cluster, "move", 0, records)
    ka = kadmin(cluster)
    try:
        # broker 1 (the leader) leaves, broker 3 comes in and leads
        assert ka.alter_partition_reassignments({KTP("move", 0): [3, 2]}) == {KTP("move", 0): None}
        wait_for(lambda: ka.list_partition_reassignments() == {}, "reassignment complete", 120)
    finally:
        ka.close()
    found = wait_in_sync(cluster, "move", 1)
    assert found[0][:2] == (3, [3, 2])
    old = cluster.brokers[1].data_dir / "move-0"
    wait_for(lambda: not old.exists(), "the removed replica's log deleted")
    wait_for(lambda: segments(cluster, 3, "move", 0) == segments(cluster, 2, "move", 0), "copy")
    assert values(cluster, "move", 0, len(records)) == records
    produce(cluster, "move", 0, [b"after"])
    assert values(cluster, "move", 0, len(records) + 1)[-1] == b"after"


def test_a_reassignment_is_listed_and_cancelled(cluster):
    ctrl = controller(cluster)
    stalled = max(b for b in BROKERS if b != ctrl)  # stopped, it cannot catch up
    origin = [b for b in BROKERS if b != stalled]
    create(cluster, "cancel", [origin])
    produce(cluster, "cancel", 0, [b"x"] * 10)
    ka = KafkaAdminClient(
        bootstrap_servers=",".join(cluster.brokers[b].bootstrap for b in origin),
        request_timeout_ms=60000,
    )
    assert ka.list_partition_reassignments() == {}  # knows the controller before the stall
    proc = cluster.brokers[stalled]
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        tp = KTP("cancel", 0)
        assert ka.alter_partition_reassignments({tp: [*origin, stalled]}) == {tp: None}
        ongoing = ka.list_partition_reassignments()
        assert ongoing == {
            tp: {
                "replicas": [*origin, stalled],
                "adding_replicas": [stalled],
                "removing_replicas": [],
            }
        }
        assert ka.list_partition_reassignments([tp]) == ongoing
        wait_for(lambda: describe(cluster, "cancel", ctrl)[0][1] == [*origin, stalled], "moving")
        assert ka.alter_partition_reassignments({tp: None}) == {tp: None}
        assert ka.list_partition_reassignments() == {}
        wait_for(lambda: describe(cluster, "cancel", ctrl)[0][1] == origin, "cancelled")
        # nothing left to cancel
        from kafka.errors import NoReassignmentInProgressError

        assert ka.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        ka.close()
    wait_for(lambda: stalled in cluster.registered(), "the stalled broker registered again")
    path = proc.data_dir / "cancel-0"
    wait_for(lambda: not path.exists(), "no replica left on the stalled broker")
    assert values(cluster, "cancel", 0, 10) == [b"x"] * 10


def test_reassignment_checks_its_target(cluster):
    create(cluster, "target", [[1, 2]])
    ka = kadmin(cluster)
    try:
        from kafka.errors import InvalidReplicationAssignmentError, UnknownTopicOrPartitionError

        result = ka.alter_partition_reassignments(
            {
                KTP("target", 0): [1, 9],  # broker 9 is not alive
                KTP("target", 5): [1, 2],  # no such partition
            }
        )
        assert result == {
            KTP("target", 0): InvalidReplicationAssignmentError,
            KTP("target", 5): UnknownTopicOrPartitionError,
        }
    finally:
        ka.close()


def test_the_legacy_reassignment_znode(cluster):
    create(cluster, "legacy", [[1]])
    produce(cluster, "legacy", 0, [b"l"] * 5)
    cluster.zk.create(
        "/admin/reassign_partitions",
        json.dumps(
            {"version": 1, "partitions": [{"topic": "legacy", "partition": 0, "replicas": [2, 3]}]}
        ).encode(),
        makepath=True,
    )
    wait_for(lambda: cluster.zk.exists("/admin/reassign_partitions") is None, "znode deleted", 120)
    found = wait_in_sync(cluster, "legacy", 1)
    assert found[0][1] == [2, 3]
    assert values(cluster, "legacy", 0, 5) == [b"l"] * 5


def test_a_reorder_and_the_legacy_preferred_election_znode(cluster):
    create(cluster, "reorder", [[1, 2]])
    ka = kadmin(cluster)
    try:
        # a new order moves no data: it completes at once, and the leader stays
        tp = KTP("reorder", 0)
        assert ka.alter_partition_reassignments({tp: [2, 1]}) == {tp: None}
        assert ka.list_partition_reassignments() == {}
    finally:
        ka.close()
    wait_for(lambda: describe(cluster, "reorder")[0][:2] == (1, [2, 1]), "new order")
    ctrl = controller(cluster)
    wait_for(
        lambda: (
            scrape(cluster, ctrl)["kafka_controller_kafkacontroller_preferredreplicaimbalancecount"]
            >= 1
        ),
        "the imbalance counted",
    )
    # kafka-preferred-replica-election.sh's znode: the controller elects, then deletes it
    cluster.zk.create(
        "/admin/preferred_replica_election",
        b'{"version":1,"partitions":[{"topic":"reorder","partition":0}]}',
        makepath=True,
    )
    wait_for(lambda: describe(cluster, "reorder")[0][0] == 2, "the preferred replica leads")
    wait_for(lambda: cluster.zk.exists("/admin/preferred_replica_election") is None, "deleted")


# --- unclean leader election --------------------------------------------------------------------


def raw_produce(bootstrap_: str, topic: str, partition: int) -> int:
    batch = build_batch([SimpleRecord(value=b"raw")])
    sock = raw_client.connect(bootstrap_)
    try:
        r = raw_client.call(
            sock,
            ProduceRequest(
                transactional_id=None,
                acks=1,
                timeout_ms=5000,
                topic_data=[
                    TopicProduceData(
                        name=topic,
                        partition_data=[PartitionProduceData(index=partition, records=batch)],
                    )
                ],
            ),
            9,
        )
    finally:
        sock.close()
    code: int = r.responses[0].partition_responses[0].error_code
    return code


def test_unclean_leader_election(cluster):
    topic = "unclean"
    create(cluster, topic, [[2, 3], [2, 3]])
    for p in (0, 1):
        produce(cluster, topic, p, [f"in-sync-{i}".encode() for i in range(10)])
    cluster.brokers[3].stop()  # leaves the ISRs
    for p in (0, 1):
        produce(cluster, topic, p, [f"only-on-2-{i}".encode() for i in range(5)])
    cluster.brokers[2].stop()  # the last in-sync replica: nothing to move, it stops anyway
    restart(cluster, 3)

    # default (unclean.leader.election.enable=false): the partitions stay offline
    def offline() -> bool:
        md = admin(cluster).list_topics(topic, timeout=15).topics[topic]
        return all(
            p.leader == -1
            and p.error is not None
            and p.error.code() == KafkaError.LEADER_NOT_AVAILABLE
            for p in md.partitions.values()
        )

    wait_for(offline, "both partitions offline")
    time.sleep(2)  # the controller had its chances to elect: still offline
    assert offline()
    assert raw_produce(cluster.brokers[3].bootstrap, topic, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    ctrl = controller(cluster)
    assert scrape(cluster, ctrl)["kafka_controller_kafkacontroller_offlinepartitionscount"] >= 2

    # partition 1 through an unclean ElectLeaders (KIP-460), from kafka-python's admin client
    ka = kadmin(cluster)
    try:
        response = ka.elect_leaders(1, {topic: [1]})
        assert response.replica_election_results[0].partition_result[0].error_code == 0
    finally:
        ka.close()
    # partition 0 once the topic allows unclean elections: the controller elects again
    client = admin(cluster)
    futures = client.incremental_alter_configs(
        [
            ConfigResource(
                "topic",
                topic,
                incremental_configs=[
                    ConfigEntry(
                        "unclean.leader.election.enable",
                        "true",
                        incremental_operation=AlterConfigOpType.SET,
                    )
                ],
            )
        ]
    )
    for f in futures.values():
        f.result(30)
    wait_for(
        lambda: {p: s[0] for p, s in describe(cluster, topic).items()} == {0: 3, 1: 3},
        "broker 3 leads both",
    )
    for p in (0, 1):
        # what only broker 2 had is gone: that is what unclean election means
        assert values(cluster, topic, p, 10) == [f"in-sync-{i}".encode() for i in range(10)]
        produce(cluster, topic, p, [b"after"])
    # broker 2 comes back, truncates what the new leader does not have, and follows it
    restart(cluster, 2)
    wait_in_sync(cluster, topic, 2)
    for p in (0, 1):
        wait_for(
            lambda p=p: segments(cluster, 2, topic, p) == segments(cluster, 3, topic, p),
            "broker 2's log equals the leader's",
        )
        expected = [*(f"in-sync-{i}".encode() for i in range(10)), b"after"]
        assert values(cluster, topic, p, 11) == expected
    wait_for(
        lambda: (
            scrape(cluster, controller(cluster))[
                "kafka_controller_kafkacontroller_offlinepartitionscount"
            ]
            == 0
        ),
        "no offline partition",
    )


# --- log dirs, metrics ---------------------------------------------------------------------------


def test_describe_and_alter_replica_log_dirs(cluster):
    create(cluster, "dirs", [[1, 2]])
    produce(cluster, "dirs", 0, [b"d"] * 50)
    proc = cluster.brokers[2]
    ka = kadmin(cluster)
    try:
        log_dir = str(proc.data_dir.absolute())
        tpr = TopicPartitionReplica("dirs", 0, 2)
        result = ka.alter_replica_log_dirs(
            {
                tpr: log_dir,
                TopicPartitionReplica("dirs", 0, 3): log_dir,
            }
        )
        from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError

        assert result[tpr] is NoError  # already there
        # broker 3 does not host it (and that path is not one of its log dirs)
        assert result[TopicPartitionReplica("dirs", 0, 3)] in (
            LogDirNotFoundError,
            ReplicaNotAvailableError,
        )
        result = ka.alter_replica_log_dirs({tpr: "/nowhere"})
        assert result[tpr] is LogDirNotFoundError
    finally:
        ka.close()
    from protocol.messages.describe_log_dirs import DescribableLogDirTopic, DescribeLogDirsRequest

    sock = raw_client.connect(proc.bootstrap)
    try:
        r = raw_client.call(
            sock,
            DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic="dirs", partitions=[0])]),
            4,
        )
    finally:
        sock.close()
    (result_dir,) = r.results
    (t,) = result_dir.topics
    (p,) = t.partitions
    assert (t.name, p.partition_index, p.offset_lag, p.is_future_key) == ("dirs", 0, 0, False)
    assert p.partition_size > 0


def test_controller_gauges(cluster):
    ctrl = controller(cluster)
    for broker_id in BROKERS:
        gauges = scrape(cluster, broker_id)
        assert gauges["kafka_controller_kafkacontroller_activecontrollercount"] == (
            1.0 if broker_id == ctrl else 0.0
        )
        if broker_id != ctrl:
            assert gauges["kafka_controller_kafkacontroller_globalpartitioncount"] == 0.0
    gauges = scrape(cluster, ctrl)
    assert gauges["kafka_controller_kafkacontroller_globalpartitioncount"] > 0
    assert "kafka_controller_kafkacontroller_preferredreplicaimbalancecount" in gauges
