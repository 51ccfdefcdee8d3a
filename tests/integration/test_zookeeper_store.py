"""ZkMetadataStore against a real ZooKeeper: several stores in one process play the brokers.

Every znode is read back with a plain kazoo client and compared field by field with what Kafka
(ZooKeeper mode, 2.8-3.8) writes. Each test gets its own chroot on one shared server.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from coordination.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidTopic,
    KafkaApiError,
    TopicExists,
    UnknownTopic,
)
from coordination.metadata.security import TokenInformation, TokenSnapshot, encode_token
from coordination.metadata.view import BrokerInfo, ClusterView, Endpoint, uuid_to_base64
from coordination.zk import security as zk_security
from coordination.zk.client import Op
from coordination.zk.data import PERSISTENT_PATHS
from coordination.zk.errors import BrokerIdInUse, InconsistentClusterId, ZooKeeperUnavailable
from coordination.zk.security import (
    TOKEN_CHANGE_PREFIX,
    TOKEN_CHANGES_PATH,
    TOKENS_PATH,
    ZkSecurityStore,
)
from coordination.zk.store import ZkMetadataStore
from protocol.error_codes import ErrorCode
from tests.support.gated_proxy import GatedProxy
from tests.support.ports import free_port
from tests.support.waiting import wait_for
from tests.support.zookeeper import (
    ZooKeeperServer,
    expire_session,
    require_zookeeper,
)

pytestmark = pytest.mark.zookeeper

B64_UUID = r"^[A-Za-z0-9_-]{22}$"


class Cluster:
    """Stores sharing one chroot, plus a raw kazoo client on that chroot to read znodes."""

    def __init__(self, server: ZooKeeperServer, tmp: Path, *, hosts: str | None = None) -> None:
        self.server = server
        self.connect = server.chroot_connect()
        if hosts is not None:  # e.g. a proxy in front of the server
            self.connect = hosts + self.connect[self.connect.index("/") :]
        self.stores: list[ZkMetadataStore] = []
        self._raw: KazooClient | None = None

    def store(self, broker_id: int, *, rack: str | None = None, **kwargs: Any) -> ZkMetadataStore:
        info = BrokerInfo(
            broker_id, (Endpoint("PLAINTEXT", "127.0.0.1", 19000 + broker_id),), rack=rack
        )
        kwargs.setdefault("session_timeout_ms", 4000)
        kwargs.setdefault("admin_timeout_ms", 20000)
        store = ZkMetadataStore(self.connect, info, **kwargs)
        self.stores.append(store)
        return store

    def start(self, broker_id: int, **kwargs: Any) -> ZkMetadataStore:
        store = self.store(broker_id, **kwargs)
        store.start()
        return store

    @property
    def raw(self) -> KazooClient:
        if self._raw is None:
            self._raw = KazooClient(hosts=self.connect)
            self._raw.start(timeout=10)
        return self._raw

    def json(self, path: str) -> Any:
        data, _ = self.raw.get(path)
        assert b" " not in data, f"{path} is not compact JSON: {data!r}"
        return json.loads(data)

    def close(self) -> None:
        for store in self.stores:
            store.stop()
        if self._raw is not None:
            self._raw.stop()
            self._raw.close()


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zookeeper, tmp_path)
    yield c
    c.close()


@pytest.fixture
def security(cluster: Cluster) -> Iterator[Callable[[ZkMetadataStore], ZkSecurityStore]]:
    """Starts a ZkSecurityStore on a metadata store's client (as the broker does); stopped
    before the metadata stores."""
    started: list[ZkSecurityStore] = []

    def start(metadata: ZkMetadataStore) -> ZkSecurityStore:
        store = ZkSecurityStore(metadata.zk)
        store.start()
        started.append(store)
        return store

    yield start
    for store in started:
        store.stop()


def converged(stores: list[ZkMetadataStore], check: Callable[[ClusterView], bool]) -> bool:
    return all(check(s.view) for s in stores)


# --- the znodes ------------------------------------------------------------------------------


def test_znodes_have_kafkas_shape(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2, rack="rack-b")
    b3 = cluster.start(3)
    stores = [b1, b2, b3]
    wait_for(lambda: converged(stores, lambda v: sorted(v.brokers) == [1, 2, 3]), "3 brokers")

    for path in PERSISTENT_PATHS:
        assert cluster.raw.exists(path) is not None, path
    assert {"consumers", "brokers", "config", "admin", "cluster", "controller"} <= set(
        cluster.raw.get_children("/")
    )

    # /cluster/id
    doc = cluster.json("/cluster/id")
    assert list(doc) == ["version", "id"]
    assert doc["version"] == "1"
    assert doc["id"] == b1.view.cluster_id == b2.view.cluster_id == b3.view.cluster_id
    assert len(doc["id"]) == 22
    cluster_id_bytes = cluster.raw.get("/cluster/id")[0]
    assert cluster_id_bytes == b'{"version":"1","id":"%s"}' % doc["id"].encode()

    # /brokers/ids/<id>: ephemeral, owned by the broker's session, version 5
    for store in stores:
        path = f"/brokers/ids/{store.broker_id}"
        data, stat = cluster.raw.get(path)
        assert stat.ephemeralOwner == store.session_id
        assert stat.czxid == store.broker_epoch
        doc = json.loads(data)
        expected_keys = {
            "features",
            "listener_security_protocol_map",
            "endpoints",
            "jmx_port",
            "port",
            "host",
            "timestamp",
            "version",
        }
        if store.broker_id == 2:
            expected_keys.add("rack")
            assert doc["rack"] == "rack-b"
        assert set(doc) == expected_keys
        port = 19000 + store.broker_id
        assert doc["version"] == 5
        assert doc["features"] == {}
        assert doc["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert doc["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"]
        assert doc["host"] == "127.0.0.1"
        assert doc["port"] == port
        assert doc["jmx_port"] == -1
        assert isinstance(doc["timestamp"], str) and doc["timestamp"].isdigit()
        assert abs(int(doc["timestamp"]) - time.time() * 1000) < 3_600_000

    # /controller and /controller_epoch
    data, stat = cluster.raw.get("/controller")
    doc = json.loads(data)
    assert list(doc) == ["version", "brokerid", "timestamp", "kraftControllerEpoch"]
    assert doc["version"] == 2
    assert doc["brokerid"] == 1  # the first broker to start
    assert doc["kraftControllerEpoch"] == -1
    assert isinstance(doc["timestamp"], str) and doc["timestamp"].isdigit()
    assert stat.ephemeralOwner == b1.session_id
    assert cluster.raw.get("/controller_epoch")[0] == b"1"
    assert b1.is_controller and not b2.is_controller and not b3.is_controller
    assert all(s.view.controller_id == 1 for s in stores)
    assert cluster.json("/feature") == {"version": 2, "status": 1, "features": {}}

    # a topic created through broker 3
    topic = b3.create_topic("orders", 3, 2, {"retention.ms": "60000"})
    doc = cluster.json("/brokers/topics/orders")
    assert list(doc) == [
        "version",
        "partitions",
        "adding_replicas",
        "removing_replicas",
        "topic_id",
    ]
    assert doc["version"] == 3
    assert doc["topic_id"] == uuid_to_base64(topic.topic_id)
    assert doc["adding_replicas"] == {} and doc["removing_replicas"] == {}
    assert set(doc["partitions"]) == {"0", "1", "2"}
    assert {r[0] for r in doc["partitions"].values()} == {1, 2, 3}
    for p, replicas in doc["partitions"].items():
        assert len(replicas) == 2 and len(set(replicas)) == 2
        assert cluster.raw.get(f"/brokers/topics/orders/partitions/{p}")[0] == b""
        data, stat = cluster.raw.get(f"/brokers/topics/orders/partitions/{p}/state")
        assert data == (
            b'{"version":1,"leader":%d,"leader_epoch":0,"controller_epoch":1,"isr":[%d,%d]}'
            % (replicas[0], replicas[0], replicas[1])
        )
        assert stat.version == 0
    assert cluster.raw.get("/brokers/topics/orders/partitions")[0] == b""
    assert cluster.raw.get("/config/topics/orders")[0] == (
        b'{"version":1,"config":{"retention.ms":"60000"}}'
    )
    assert cluster.raw.get_children("/config/changes") == []

    # configs: the entity node and a change notification
    b2.set_topic_configs("orders", {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert cluster.json("/config/topics/orders") == {
        "version": 1,
        "config": {"retention.ms": "1000", "cleanup.policy": "compact"},
    }
    changes = cluster.raw.get_children("/config/changes")
    assert changes == ["config_change_0000000000"]
    assert cluster.raw.get("/config/changes/config_change_0000000000")[0] == (
        b'{"version":2,"entity_path":"topics/orders"}'
    )
    wait_for(
        lambda: converged(
            stores, lambda v: v.topics["orders"].configs.get("cleanup.policy") == "compact"
        ),
        "configs everywhere",
    )

    # producer id blocks
    assert cluster.raw.get("/latest_producer_id_block")[0] == b""
    assert b2.allocate_producer_id_block(1000) == (0, 999)
    assert cluster.raw.get("/latest_producer_id_block")[0] == (
        b'{"version":1,"broker":2,"block_start":"0","block_end":"999"}'
    )
    assert b3.allocate_producer_id_block(1000) == (1000, 1999)
    assert cluster.json("/latest_producer_id_block") == {
        "version": 1,
        "broker": 3,
        "block_start": "1000",
        "block_end": "1999",
    }

    # deletion: /admin/delete_topics/<t>, then everything goes
    b2.delete_topic("orders")
    assert cluster.raw.exists("/brokers/topics/orders") is None
    assert cluster.raw.exists("/config/topics/orders") is None
    assert cluster.raw.get_children("/admin/delete_topics") == []
    wait_for(lambda: converged(stores, lambda v: "orders" not in v.topics), "deleted everywhere")


def test_chroot_is_created_and_used(cluster: Cluster, zookeeper: ZooKeeperServer) -> None:
    cluster.start(1)
    chroot = cluster.connect.split("/", 1)[1]
    root = KazooClient(hosts=zookeeper.connect)
    root.start(timeout=10)
    try:
        assert root.exists(f"/{chroot}/brokers/ids/1") is not None
        assert "brokers" not in root.get_children("/")
    finally:
        root.stop()
        root.close()


# --- topics over the cluster -----------------------------------------------------------------


def test_topic_created_anywhere_is_spread_and_seen_everywhere(cluster: Cluster) -> None:
    stores = [cluster.start(i) for i in (1, 2, 3)]
    wait_for(lambda: converged(stores, lambda v: len(v.brokers) == 3), "3 brokers")
    seen: list[ClusterView] = []
    stores[0].add_listener(lambda old, new: seen.append(new))

    topic = stores[2].create_topic("spread", 6, 1, {})
    assert [p.partition for p in topic.partitions] == list(range(6))
    leaders = [p.leader for p in topic.partitions]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert all(p.leader_epoch == 0 and p.isr == (p.leader,) for p in topic.partitions)

    def same_everywhere(v: ClusterView) -> bool:
        t = v.topics.get("spread")
        return t is not None and t == topic

    wait_for(lambda: converged(stores, same_everywhere), "the topic everywhere")
    wait_for(lambda: any("spread" in v.topics for v in seen), "listener notified")

    grown = stores[1].create_partitions("spread", 9)
    assert len(grown.partitions) == 9
    assert grown.partitions[:6] == topic.partitions
    assert sorted(p.leader for p in grown.partitions[6:]) == [1, 2, 3]
    doc = cluster.json("/brokers/topics/spread")
    assert set(doc["partitions"]) == {str(i) for i in range(9)}
    assert doc["topic_id"] == uuid_to_base64(topic.topic_id)
    wait_for(
        lambda: converged(stores, lambda v: len(v.topics["spread"].partitions) == 9),
        "9 partitions everywhere",
    )


def test_rack_aware_assignment_puts_replicas_on_distinct_racks(cluster: Cluster) -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    stores = [cluster.start(i, rack=r) for i, r in racks.items()]
    wait_for(lambda: converged(stores, lambda v: len(v.brokers) == 6), "6 brokers")
    topic = stores[0].create_topic("racks", 12, 3, {})
    for p in topic.partitions:
        assert len({racks[r] for r in p.replicas}) == 3, p
    assert sorted(p.leader for p in topic.partitions) == sorted([1, 2, 3, 4, 5, 6] * 2)


def test_admin_errors(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    wait_for(lambda: converged([b1, b2], lambda v: len(v.brokers) == 2), "2 brokers")
    b1.create_topic("a.b", 1, 1, {})
    with pytest.raises(TopicExists):
        b2.create_topic("a.b", 1, 1, {})
    with pytest.raises(InvalidTopic, match="collides"):
        b1.create_topic("a_b", 1, 1, {})
    with pytest.raises(InvalidTopic):
        b1.create_topic("bad/name", 1, 1, {})
    with pytest.raises(UnknownTopic):
        b2.delete_topic("nope")
    with pytest.raises(UnknownTopic):
        b2.create_partitions("nope", 3)
    with pytest.raises(UnknownTopic):
        b2.set_topic_configs("nope", {})
    with pytest.raises(InvalidPartitions):
        b2.create_partitions("a.b", 1)
    with pytest.raises(InvalidReplicaAssignment, match="Unknown broker"):
        b1.create_topic("manual", -1, -1, {}, assignment=[[1, 7]])
    with pytest.raises(InvalidReplicaAssignment):
        b1.create_topic("manual", -1, -1, {}, assignment=[[1, 1]])
    with pytest.raises(InvalidReplicaAssignment):
        b1.create_topic("manual", -1, -1, {}, assignment=[[1, 2], [2]])

    checked = b1.create_topic("dry", 4, 2, {"retention.ms": "1"}, validate_only=True)
    assert len(checked.partitions) == 4
    assert cluster.raw.exists("/brokers/topics/dry") is None
    assert cluster.raw.exists("/config/topics/dry") is None

    manual = b2.create_topic("manual", -1, -1, {}, assignment=[[2, 1], [1, 2]])
    assert [p.replicas for p in manual.partitions] == [(2, 1), (1, 2)]
    assert [p.leader for p in manual.partitions] == [2, 1]
    assert cluster.json("/brokers/topics/manual")["partitions"] == {"0": [2, 1], "1": [1, 2]}


def test_topic_written_by_kafka_admin_tools(cluster: Cluster) -> None:
    """Old Kafka tools write /brokers/topics/<t> (version 1/2, no topic id) and
    /admin/delete_topics/<t>; the controller completes both."""
    stores = [cluster.start(i) for i in (1, 2)]
    wait_for(lambda: converged(stores, lambda v: len(v.brokers) == 2), "2 brokers")
    cluster.raw.create("/brokers/topics/legacy", b'{"version":1,"partitions":{"0":[2],"1":[1]}}')

    def ready(v: ClusterView) -> bool:
        t = v.topics.get("legacy")
        return t is not None and t.topic_id.int != 0 and [p.leader for p in t.partitions] == [2, 1]

    wait_for(lambda: converged(stores, ready), "legacy topic with an id and leaders")
    doc = cluster.json("/brokers/topics/legacy")
    assert doc["version"] == 3
    assert doc["topic_id"] == uuid_to_base64(stores[0].view.topics["legacy"].topic_id)

    cluster.raw.create("/admin/delete_topics/legacy", b"")
    wait_for(lambda: converged(stores, lambda v: "legacy" not in v.topics), "legacy deleted")
    assert cluster.raw.exists("/brokers/topics/legacy") is None
    wait_for(lambda: cluster.raw.get_children("/admin/delete_topics") == [], "deletion done")


# --- failures --------------------------------------------------------------------------------


def test_controller_failover(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    b3 = cluster.start(3)
    assert b1.is_controller
    b1.stop()
    wait_for(lambda: b2.is_controller or b3.is_controller, "a new controller")
    new = b2 if b2.is_controller else b3
    assert cluster.raw.get("/controller_epoch")[0] == b"2"
    assert new.controller_epoch == 2
    assert cluster.json("/controller")["brokerid"] == new.broker_id
    wait_for(
        lambda: converged(
            [b2, b3], lambda v: v.controller_id == new.broker_id and len(v.brokers) == 2
        ),
        "controller everywhere",
    )
    # the new controller does the controller's work: a new topic gets leaders
    topic = b2.create_topic("after-failover", 2, 2, {})
    assert all(p.leader in (2, 3) for p in topic.partitions)
    state = cluster.json("/brokers/topics/after-failover/partitions/0/state")
    assert state["controller_epoch"] == 2


def test_leader_failover_and_return(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    b3 = cluster.start(3)
    stores = [b1, b2, b3]
    wait_for(lambda: converged(stores, lambda v: len(v.brokers) == 3), "3 brokers")
    # replicated: partition 0 led by 3 with follower 2; "solo" has broker 3 alone
    b1.create_topic("fail", -1, -1, {}, assignment=[[3, 2], [1, 2]])
    b1.create_topic("solo", -1, -1, {}, assignment=[[3]])
    b3.stop()

    def moved(v: ClusterView) -> bool:
        return (
            3 not in v.brokers
            and v.topics["fail"].partitions[0].leader == 2
            and v.topics["solo"].partitions[0].leader == -1
        )

    wait_for(lambda: converged([b1, b2], moved), "leadership moved")
    fail = b1.view.topics["fail"].partitions
    solo = b1.view.topics["solo"].partitions
    assert (fail[0].leader, fail[0].isr, fail[0].leader_epoch) == (2, (2,), 1)
    assert (fail[1].leader, fail[1].isr, fail[1].leader_epoch) == (1, (1, 2), 0)
    # no live replica: no leader, the last ISR member kept (Kafka never empties the ISR)
    assert (solo[0].leader, solo[0].isr, solo[0].leader_epoch) == (-1, (3,), 1)
    assert cluster.json("/brokers/topics/fail/partitions/0/state") == {
        "version": 1,
        "leader": 2,
        "leader_epoch": 1,
        "controller_epoch": 1,
        "isr": [2],
    }

    # broker 3 comes back: it is the only ISR member of "solo", so it leads it again
    b3again = cluster.start(3)
    wait_for(
        lambda: converged([b1, b2, b3again], lambda v: v.topics["solo"].partitions[0].leader == 3),
        "solo back on broker 3",
    )
    solo = b3again.view.topics["solo"].partitions
    assert (solo[0].leader, solo[0].isr, solo[0].leader_epoch) == (3, (3,), 2)
    # "fail"-0 stays with broker 2 (no preferred-leader election yet)
    assert b3again.view.topics["fail"].partitions[0].leader == 2


def test_replicas_in_an_offline_log_dir_lose_leadership_and_leave_the_isr(
    cluster: Cluster, zookeeper: ZooKeeperServer
) -> None:
    """KIP-112 in ZooKeeper mode: broker 1 reports the replicas of a failed log dir; the
    controller elects other in-sync replicas for the ones it led (leader epoch bumped), takes
    all of them out of their ISRs, and leaves broker 1's other partitions alone. The record
    follows the broker's session; a restarted broker has none and leads again where it is the
    last in-sync replica."""
    from coordination.metadata.election import ElectionType
    from protocol.error_codes import ErrorCode

    b1 = cluster.start(1)
    b2 = cluster.start(2)
    b3 = cluster.start(3)
    stores = [b1, b2, b3]
    wait_for(lambda: converged(stores, lambda v: len(v.brokers) == 3), "3 brokers")
    b2.create_topic("jbod", -1, -1, {}, assignment=[[1, 2, 3], [1, 3, 2]])
    b2.create_topic("follow", -1, -1, {}, assignment=[[2, 1, 3]])
    b2.create_topic("solo", -1, -1, {}, assignment=[[1]])
    wait_for(lambda: converged(stores, lambda v: "solo" in v.topics), "topics everywhere")
    offline = {("jbod", 0), ("follow", 0), ("solo", 0)}

    b1.report_offline_replicas(offline)

    def moved(v: ClusterView) -> bool:
        return (
            v.topics["jbod"].partitions[0].leader == 2
            and v.topics["follow"].partitions[0].isr == (2, 3)
            and v.topics["solo"].partitions[0].leader == -1
        )

    wait_for(lambda: converged(stores, moved), "leadership moved off the offline replicas")
    for v in (s.view for s in stores):
        jbod, follow, solo = (v.topics[t].partitions for t in ("jbod", "follow", "solo"))
        assert (jbod[0].leader, jbod[0].isr, jbod[0].leader_epoch) == (2, (2, 3), 1)
        # broker 1's partition in its healthy log dir is untouched
        assert (jbod[1].leader, jbod[1].isr, jbod[1].leader_epoch) == (1, (1, 3, 2), 0)
        assert (follow[0].leader, follow[0].isr, follow[0].leader_epoch) == (2, (2, 3), 1)
        # no other replica: no leader, and the ISR keeps its last member (as for a dead broker)
        assert (solo[0].leader, solo[0].isr, solo[0].leader_epoch) == (-1, (1,), 1)
        assert v.offline_replicas == {1: frozenset(offline)}
        assert v.offline_replica_ids("jbod", jbod[0]) == [1]
        assert v.offline_replica_ids("jbod", jbod[1]) == []
    assert cluster.json("/brokers/offline_replicas/1") == {
        "version": 1,
        "broker_epoch": b1.broker_epoch,
        "partitions": [
            {"topic": "follow", "partition": 0},
            {"topic": "jbod", "partition": 0},
            {"topic": "solo", "partition": 0},
        ],
    }
    assert cluster.raw.exists("/brokers/offline_replicas/1").ephemeralOwner == b1.session_id
    # Kafka's notification was written, and the controller consumed it
    wait_for(lambda: cluster.raw.get_children("/log_dir_event_notification") == [], "consumed")
    controller = next(s for s in stores if s.is_controller)
    # the offline replica is not in the ISR: no preferred election brings leadership back
    result = controller.elect_leaders(ElectionType.PREFERRED, [("jbod", 0)])
    assert result[("jbod", 0)].error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE

    # a new session of the same broker writes the record again, under its new broker epoch
    old_epoch = b1.broker_epoch
    expire_session(zookeeper.connect, b1.zk.raw.client_id)
    wait_for(lambda: b1.broker_epoch != old_epoch, "registered again")
    wait_for(
        lambda: (
            cluster.raw.exists("/brokers/offline_replicas/1") is not None
            and cluster.json("/brokers/offline_replicas/1")["broker_epoch"] == b1.broker_epoch
        ),
        "the record written again",
    )
    wait_for(
        lambda: converged(stores, lambda v: v.offline_replicas == {1: frozenset(offline)}),
        "the record seen again",
    )
    assert b2.view.topics["jbod"].partitions[0].leader == 2

    # broker 1 restarts with its log dir healthy: no record, and it leads "solo" again
    b1.stop()
    wait_for(lambda: cluster.raw.exists("/brokers/offline_replicas/1") is None, "record gone")
    b1again = cluster.start(1)
    stores = [b1again, b2, b3]
    wait_for(
        lambda: converged(
            stores,
            lambda v: v.offline_replicas == {} and v.topics["solo"].partitions[0].leader == 1,
        ),
        "broker 1 back",
    )
    assert b1again.view.topics["jbod"].partitions[0].leader == 2


def test_unclean_leader_election(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    b1.create_topic(
        "unclean", -1, -1, {"unclean.leader.election.enable": "true"}, assignment=[[2, 1]]
    )
    # broker 1 leaves the ISR while 2 leads, then 2 dies: only an unclean election helps
    path = "/brokers/topics/unclean/partitions/0/state"
    wait_for(lambda: cluster.raw.exists(path), "state")
    data, stat = cluster.raw.get(path)
    doc = json.loads(data)
    doc["isr"] = [2]
    cluster.raw.set(path, json.dumps(doc, separators=(",", ":")).encode(), stat.version)
    wait_for(lambda: b1.view.topics["unclean"].partitions[0].isr == (2,), "isr shrunk")
    b2.stop()
    wait_for(lambda: b1.view.topics["unclean"].partitions[0].leader == 1, "unclean leader")
    assert b1.view.topics["unclean"].partitions[0].isr == (1,)


def test_duplicate_broker_id_is_refused(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    before = cluster.raw.get("/brokers/ids/1")
    dup = cluster.store(1)
    with pytest.raises(BrokerIdInUse, match=r"broker\.id 1 is already registered"):
        dup.start()
    after = cluster.raw.get("/brokers/ids/1")
    assert after == before
    assert after[1].ephemeralOwner == b1.session_id
    assert sorted(b1.view.brokers) == [1]


def test_a_connection_lost_while_registering_is_retried(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine can starve the session's pings at start-up: the connection is dropped
    while the broker registers (its socket shut down for real, the request failed as kazoo fails
    it). The start waits for the reconnection and registers, as Kafka's ZooKeeper client
    retries until connected; it used to be a failed start."""
    from kazoo.exceptions import ConnectionLoss

    from coordination.zk.registration import BrokerRegistration

    original = BrokerRegistration.register
    drops = []

    def flaky(self: BrokerRegistration) -> None:
        if not drops:
            drops.append(1)
            # the connection, for real: kazoo reads EOF and reconnects
            self.zk.raw._connection._socket.shutdown(socket.SHUT_RDWR)
            raise ConnectionLoss()
        original(self)

    monkeypatch.setattr(BrokerRegistration, "register", flaky)
    store = cluster.start(1)
    assert drops == [1]
    assert cluster.json("/brokers/ids/1")["port"] == 19001
    assert store.broker_epoch > 0


def test_session_expiry_reregisters_without_restart(
    cluster: Cluster, zookeeper: ZooKeeperServer
) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    wait_for(lambda: converged([b1, b2], lambda v: len(v.brokers) == 2), "2 brokers")
    old_session, old_epoch = b1.session_id, b1.broker_epoch
    assert b1.is_controller

    expire_session(zookeeper.connect, b1.zk.raw.client_id)

    def registered_again() -> bool:
        stat = cluster.raw.exists("/brokers/ids/1")
        return stat is not None and stat.ephemeralOwner not in (0, old_session)

    wait_for(registered_again, "registration under a new session")
    assert b1.session_id != old_session
    wait_for(lambda: b1.broker_epoch != old_epoch, "new broker epoch")
    assert b1.broker_epoch == cluster.raw.exists("/brokers/ids/1").czxid
    # the controller's ephemeral node went with the old session: someone was elected again
    wait_for(lambda: b1.is_controller or b2.is_controller, "a controller")
    wait_for(lambda: int(cluster.raw.get("/controller_epoch")[0]) == 2, "controller epoch 2")
    wait_for(lambda: converged([b1, b2], lambda v: sorted(v.brokers) == [1, 2]), "both listed")
    # and the re-registered broker keeps working
    topic = b1.create_topic("after-expiry", 2, 2, {})
    assert {p.leader for p in topic.partitions} == {1, 2}


def test_stale_controller_cannot_write(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    assert b1.is_controller
    # another controller was elected meanwhile (the epoch moved on)
    cluster.raw.set("/controller_epoch", b"7")
    result = b1.parts.controller.multi([Op.create("/fenced", b"")])
    assert result is None
    assert cluster.raw.exists("/fenced") is None


def test_stopping_ends_a_wait_for_a_change_to_show(cluster: Cluster) -> None:
    """A request thread waiting for its change to show in the view (CreateTopics, a topic
    FindCoordinator creates) ends when the store stops, instead of at the admin timeout: the
    process's exit joins that thread (seen: a broker's clean stop took 30 s after "stopped
    cleanly", the ``__consumer_offsets`` creation of a FindCoordinator still waiting)."""
    b1 = cluster.start(1)
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            b1._await("a topic", lambda view: None, b1._deadline())
        except BaseException as e:
            outcome.append(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)  # the thread is waiting (the assertion below holds either way)
    b1.stop()
    waiter.join(10)
    assert not waiter.is_alive()
    (error,) = outcome
    assert isinstance(error, KafkaApiError) and error.error_code == ErrorCode.BROKER_NOT_AVAILABLE
    assert "shutting down" in str(error)


def test_cluster_id_checks(cluster: Cluster) -> None:
    b1 = cluster.start(1, cluster_id="AAAAAAAAAAAAAAAAAAAAAQ")
    assert b1.view.cluster_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert cluster.json("/cluster/id") == {"version": "1", "id": "AAAAAAAAAAAAAAAAAAAAAQ"}
    other = cluster.store(2, cluster_id="BBBBBBBBBBBBBBBBBBBBBQ")
    with pytest.raises(InconsistentClusterId, match="wrong cluster"):
        other.start()
    stale = cluster.store(3, stored_cluster_id="CCCCCCCCCCCCCCCCCCCCCQ")
    with pytest.raises(InconsistentClusterId, match=r"meta\.properties"):
        stale.start()
    # neither registered
    assert cluster.raw.get_children("/brokers/ids") == ["1"]
    ok = cluster.start(4, stored_cluster_id="AAAAAAAAAAAAAAAAAAAAAQ")
    assert ok.view.cluster_id == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_unreachable_zookeeper_is_a_startup_error(tmp_path: Path) -> None:
    info = BrokerInfo(1, (Endpoint("PLAINTEXT", "127.0.0.1", 19001),))
    store = ZkMetadataStore(f"127.0.0.1:{free_port()}/nowhere", info, connection_timeout_ms=1000)
    with pytest.raises(ZooKeeperUnavailable, match="could not connect to ZooKeeper"):
        store.start()
    store.stop()


def test_first_broker_creates_a_random_cluster_id(cluster: Cluster) -> None:
    b1 = cluster.start(1)
    b2 = cluster.start(2)
    assert b1.view.cluster_id == b2.view.cluster_id
    assert len(b1.view.cluster_id) == 22
    assert not b1.view.cluster_id.startswith("-")


def test_zookeeper_restart_keeps_sessions_and_rearms_watches(tmp_path: Path) -> None:
    """kazoo drops every watch when its connection drops; the store re-reads (re-arming them)
    after reconnecting, so changes made after a ZooKeeper restart still reach every broker.

    The brokers reach ZooKeeper through a proxy that refuses connections until the restarted
    server serves: one that arrives while it is still loading hangs until the session has
    expired (see tests/support/gated_proxy.py), which is ZooKeeper's race, not the store's."""
    require_zookeeper()
    server = ZooKeeperServer(tmp_path / "zk", tick_time_ms=200)
    server.start()
    proxy = GatedProxy(server.host, server.port)
    cluster = Cluster(server, tmp_path, hosts=f"127.0.0.1:{proxy.port}")
    try:
        b1 = cluster.start(1, session_timeout_ms=10000)
        b2 = cluster.start(2, session_timeout_ms=10000)
        wait_for(lambda: converged([b1, b2], lambda v: len(v.brokers) == 2), "2 brokers")
        sessions = (b1.session_id, b2.session_id)
        if cluster._raw is not None:
            cluster._raw.stop()
            cluster._raw.close()
            cluster._raw = None
        proxy.close_gate()
        server.stop()
        server.start()  # returns once the server answers srvr with its mode (serving)
        proxy.open_gate()
        wait_for(lambda: b1.zk.raw.connected and b2.zk.raw.connected, "reconnected")
        assert (b1.session_id, b2.session_id) == sessions  # the sessions survived
        topic = b2.create_topic("after-restart", 2, 2, {})
        wait_for(lambda: b1.view.topics.get("after-restart") == topic, "broker 1 sees the topic")
        assert cluster.raw.exists("/brokers/ids/1").ephemeralOwner == sessions[0]
    finally:
        cluster.close()
        proxy.stop()
        server.stop()


def test_another_clusters_zookeeper_is_not_applied(
    cluster: Cluster, zookeeper: ZooKeeperServer
) -> None:
    """After a new session, a ZooKeeper that holds another cluster id (swapped or rebuilt) is not
    applied: the broker keeps its view (so its logs) and does not register there."""
    b1 = cluster.start(1)
    b1.create_topic("precious", 1, 1, {})
    wait_for(lambda: "precious" in b1.view.topics, "topic")
    cluster.raw.set("/cluster/id", b'{"version":"1","id":"ZZZZZZZZZZZZZZZZZZZZZQ"}')
    old_session = b1.session_id
    expire_session(zookeeper.connect, b1.zk.raw.client_id)
    wait_for(lambda: b1.zk.raw.connected and b1.session_id != old_session, "a new session")
    # the broker keeps retrying (and logging an error) but changes nothing
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        assert "precious" in b1.view.topics
        assert cluster.raw.exists("/brokers/ids/1") is None
        time.sleep(0.1)


# --- ISR changes (alter_partition) ----------------------------------------------------------


def test_alter_partition_is_seen_by_every_broker_and_notified(cluster: Cluster) -> None:
    from coordination.errors import InvalidUpdateVersion
    from coordination.metadata.view import LeaderAndIsr

    b1 = cluster.start(1)
    b2 = cluster.start(2)
    wait_for(lambda: converged([b1, b2], lambda v: len(v.brokers) == 2), "2 brokers")
    topic = b1.create_topic("isr", 1, 2, {})
    wait_for(lambda: converged([b1, b2], lambda v: "isr" in v.topics), "topic everywhere")
    state = topic.partitions[0]
    assert len(state.isr) == 2
    leader_store = b1 if state.leader == 1 else b2
    follower = 2 if state.leader == 1 else 1
    shrunk = leader_store.alter_partition(
        "isr",
        0,
        LeaderAndIsr(state.leader, state.leader_epoch, (state.leader,)),
        partition_epoch=state.partition_epoch,
    )
    assert shrunk.isr == (state.leader,) and shrunk.partition_epoch == state.partition_epoch + 1
    doc = cluster.json("/brokers/topics/isr/partitions/0/state")
    assert doc == {
        "version": 1,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "controller_epoch": doc["controller_epoch"],
        "isr": [state.leader],
    }
    wait_for(
        lambda: converged([b1, b2], lambda v: v.topics["isr"].partitions[0].isr == shrunk.isr),
        "every broker sees the new ISR",
    )
    # the controller consumed the notification
    wait_for(lambda: cluster.raw.get_children("/isr_change_notification") == [], "notified")
    # a proposal at the old partition epoch is refused and changes nothing
    with pytest.raises(InvalidUpdateVersion):
        leader_store.alter_partition(
            "isr",
            0,
            LeaderAndIsr(state.leader, state.leader_epoch, (state.leader, follower)),
            partition_epoch=state.partition_epoch,
        )
    assert cluster.json("/brokers/topics/isr/partitions/0/state")["isr"] == [state.leader]


def test_concurrent_alter_partitions_exactly_one_wins(cluster: Cluster) -> None:
    import threading

    from coordination.errors import InvalidUpdateVersion
    from coordination.metadata.view import LeaderAndIsr

    b1 = cluster.start(1)
    b2 = cluster.start(2)
    wait_for(lambda: converged([b1, b2], lambda v: len(v.brokers) == 2), "2 brokers")
    state = b1.create_topic("race", 1, 2, {}).partitions[0]
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def propose(store: ZkMetadataStore, isr: tuple[int, ...]) -> None:
        barrier.wait()
        try:
            store.alter_partition(
                "race",
                0,
                LeaderAndIsr(state.leader, state.leader_epoch, isr),
                partition_epoch=state.partition_epoch,
            )
            outcomes.append("won")
        except InvalidUpdateVersion:
            outcomes.append("stale")

    threads = [
        threading.Thread(target=propose, args=(b1 if i % 2 else b2, (state.leader,)))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["stale"] * 7 + ["won"]


@pytest.mark.parametrize("kind", ["client-metrics", "groups"])
def test_named_configs_are_kept_as_kafka_keeps_them(cluster: Cluster, kind: str) -> None:
    """KIP-714 subscriptions (CLIENT_METRICS config resources) in ``/config/client-metrics``,
    KIP-848 group configs in ``/config/groups`` (where Kafka 4's ConfigType.GROUP would be),
    each with a ``/config/changes`` notification: written on one broker, seen by another,
    removed when emptied, and read back by a broker that starts later."""
    b1, b2 = cluster.start(1), cluster.start(2)
    if kind == "groups":
        configs = {"consumer.session.timeout.ms": "50000"}

        def named(v: ClusterView) -> Mapping[str, Mapping[str, str]]:
            return v.group_configs

        b1.set_group_configs("producers", configs)
    else:
        configs = {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000"}

        def named(v: ClusterView) -> Mapping[str, Mapping[str, str]]:
            return v.client_metrics

        b1.set_client_metrics_configs("producers", configs)
    assert cluster.json(f"/config/{kind}/producers") == {"version": 1, "config": configs}
    wait_for(lambda: dict(named(b2.view).get("producers", {})) == configs, "broker 2")
    b3 = cluster.start(3)
    assert dict(named(b3.view)["producers"]) == configs
    if kind == "groups":
        b2.set_group_configs("producers", {})
    else:
        b2.set_client_metrics_configs("producers", {})
    wait_for(
        lambda: converged([b1, b2, b3], lambda v: "producers" not in named(v)),
        "the configs removed everywhere",
    )


def test_finalized_feature_levels_are_shared(cluster: Cluster) -> None:
    """UpdateFeatures' levels (KIP-584) in Odradek's ``/odradek/features``, beside Kafka's
    ``/feature``, which stays as Kafka's ZooKeeper controller writes it: written on one broker,
    seen by another with the same epoch, merged with a later update, and read back by a broker
    that starts later."""
    b1, b2 = cluster.start(1), cluster.start(2)
    assert (b1.view.features, b1.view.features_epoch) == ({}, 0)
    b1.update_features({"transaction.version": 1})
    assert cluster.json("/odradek/features") == {
        "version": 1,
        "features": {"transaction.version": 1},
    }
    assert (b1.view.features, b1.view.features_epoch) == ({"transaction.version": 1}, 1)
    wait_for(lambda: b2.view.features_epoch == 1, "broker 2")
    assert b2.view.features == {"transaction.version": 1}
    b2.update_features({"other.version": 3})
    wait_for(lambda: b1.view.features_epoch == 2, "broker 1")
    assert b1.view.features == {"transaction.version": 1, "other.version": 3}
    assert cluster.json("/feature")["features"] == {}
    b3 = cluster.start(3)
    assert (b3.view.features, b3.view.features_epoch) == (b1.view.features, 2)


# --- delegation tokens (ZkSecurityStore) ------------------------------------------------------

TOKEN = TokenInformation(
    token_id="abc",
    owner="User:alice",
    requester="User:alice",
    renewers=("User:bob",),
    issue_timestamp=1,
    max_timestamp=3,
    expiry_timestamp=2,
)


def token_notifications(cluster: Cluster) -> list[bytes]:
    """The data of every ``token_change_`` node, oldest first."""
    children = sorted(cluster.raw.get_children(TOKEN_CHANGES_PATH))
    assert all(c.startswith(TOKEN_CHANGE_PREFIX) and len(c) == 23 for c in children), children
    return [cluster.raw.get(f"{TOKEN_CHANGES_PATH}/{c}")[0] for c in children]


def has_tokens(*expected: TokenInformation) -> Callable[[ZkSecurityStore], bool]:
    want = {t.token_id: t for t in expected}
    return lambda store: dict(store.tokens) == want


def test_delegation_tokens_are_kept_and_notified_as_kafka_does(
    cluster: Cluster, security: Callable[[ZkMetadataStore], ZkSecurityStore]
) -> None:
    """Kafka's DelegationTokenManagerZk: the token in ``/delegation_token/tokens/<id>``, then a
    ``token_change_`` notification naming it after every set and every delete; another broker
    follows the notification, one that starts later loads the tokens."""
    b1, b2 = cluster.start(1), cluster.start(2)
    s1, s2 = security(b1), security(b2)
    seen: list[TokenSnapshot] = []
    s2.add_token_listener(seen.append)
    assert dict(s1.tokens) == {} and dict(s2.tokens) == {}

    s1.put_token(TOKEN)
    assert has_tokens(TOKEN)(s1)  # the writer publishes at once
    assert cluster.raw.get(f"{TOKENS_PATH}/abc")[0] == encode_token(TOKEN)
    assert token_notifications(cluster) == [b"abc"]
    wait_for(lambda: has_tokens(TOKEN)(s2), "broker 2 to see the token")
    assert dict(seen[-1]) == {"abc": TOKEN}

    renewed = dataclasses.replace(TOKEN, expiry_timestamp=3)
    s2.put_token(renewed)
    assert cluster.raw.get(f"{TOKENS_PATH}/abc")[0] == encode_token(renewed)
    assert token_notifications(cluster) == [b"abc", b"abc"]
    wait_for(lambda: has_tokens(renewed)(s1), "broker 1 to see the renewal")

    other = TokenInformation("t-2", "User:bob", "User:admin", (), 10, 30, 20)
    s1.put_token(other)
    wait_for(lambda: has_tokens(renewed, other)(s2), "broker 2 to see the second token")
    s3 = security(cluster.start(3))
    assert has_tokens(renewed, other)(s3)  # loaded at start

    s2.remove_token("abc")
    assert has_tokens(other)(s2)
    assert cluster.raw.exists(f"{TOKENS_PATH}/abc") is None
    assert token_notifications(cluster)[-1] == b"abc"
    wait_for(lambda: has_tokens(other)(s1) and has_tokens(other)(s3), "the token removed")

    s3.remove_token("abc")  # absent: no error, and notified all the same (as Kafka)
    assert token_notifications(cluster) == [b"abc", b"abc", b"t-2", b"abc", b"abc"]
    s3.remove_token("t-2")
    wait_for(lambda: all(has_tokens()(s) for s in (s1, s2, s3)), "no token left anywhere")
    assert cluster.raw.get_children(TOKENS_PATH) == []


def test_a_token_kafka_wrote_is_loaded(
    cluster: Cluster, security: Callable[[ZkMetadataStore], ZkSecurityStore]
) -> None:
    """A token a Kafka 3.9 broker stored (its JSON, byte for byte) and notified; unreadable
    tokens are skipped, at start and when notified."""
    s1 = security(cluster.start(1))
    kafkas = (
        b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aalice",'
        b'"renewers":["User%3Abob"],"issueTimestamp":1,"maxTimestamp":3,'
        b'"expiryTimestamp":2,"tokenId":"abc"}'
    )
    cluster.raw.create(f"{TOKENS_PATH}/abc", kafkas)
    cluster.raw.create(f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", b"abc", sequence=True)
    wait_for(lambda: has_tokens(TOKEN)(s1), "the token Kafka wrote")

    cluster.raw.create(f"{TOKENS_PATH}/bad", b'{"version":3,"owner":"alice"}')
    cluster.raw.create(f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", b"bad", sequence=True)
    # a later notification shows the unreadable one was gone past
    older = dataclasses.replace(TOKEN, token_id="v1", requester="User:bob")
    version_1 = json.loads(encode_token(older))
    del version_1["tokenRequester"]  # version 1: the owner is the requester
    version_1["version"] = 1
    cluster.raw.create(f"{TOKENS_PATH}/v1", json.dumps(version_1).encode())
    cluster.raw.create(f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", b"v1", sequence=True)
    as_read = dataclasses.replace(older, requester="User:alice")
    wait_for(lambda: has_tokens(TOKEN, as_read)(s1), "the version 1 token")

    s2 = security(cluster.start(2))  # reads the three at start, skips the unreadable one
    assert has_tokens(TOKEN, as_read)(s2)

    cluster.raw.delete(f"{TOKENS_PATH}/abc")
    cluster.raw.create(f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", b"abc", sequence=True)
    wait_for(lambda: has_tokens(as_read)(s1) and has_tokens(as_read)(s2), "the token removed")


def test_tokens_are_followed_after_a_new_session(
    cluster: Cluster,
    security: Callable[[ZkMetadataStore], ZkSecurityStore],
    zookeeper: ZooKeeperServer,
) -> None:
    b1, b2 = cluster.start(1), cluster.start(2)
    s1, s2 = security(b1), security(b2)
    old_session = b1.zk.session_id
    expire_session(zookeeper.connect, b1.zk.raw.client_id)
    wait_for(lambda: b1.zk.session_id not in (0, old_session), "a new session")
    s2.put_token(TOKEN)
    wait_for(lambda: has_tokens(TOKEN)(s1), "the token, after the session expired")
    s2.remove_token("abc")
    wait_for(lambda: has_tokens()(s1), "the token removed, after the session expired")


def test_old_token_notifications_are_purged(
    cluster: Cluster,
    security: Callable[[ZkMetadataStore], ZkSecurityStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kafka's ZkNodeChangeNotificationListener deletes notifications older than
    changeExpirationMs; here every notification is that old."""
    s1 = security(cluster.start(1))
    monkeypatch.setattr(zk_security, "CHANGE_EXPIRATION_MS", -60_000)
    s1.put_token(TOKEN)
    wait_for(lambda: cluster.raw.get_children(TOKEN_CHANGES_PATH) == [], "the purge")
    assert cluster.raw.get(f"{TOKENS_PATH}/abc")[0] == encode_token(TOKEN)
    assert has_tokens(TOKEN)(s1)
