"""Group coordination in a ZooKeeper cluster: each broker coordinates the groups whose
``__consumer_offsets`` partition it leads (``abs(hashCode(group)) % partitions``), every broker
names the same coordinator, the others answer NOT_COORDINATOR, and real consumer groups commit
and resume through their coordinators."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from coordination.group.config import partition_for
from protocol.error_codes import ErrorCode
from protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.integration.test_groups_protocol import commit, fetch
from tests.integration.test_idempotence import RawClient
from tests.integration.test_zookeeper_brokers import (  # noqa: F401 - fixtures
    ProcessCluster,
    cluster,
    create_topic,
    wait_for,
    wait_leaders,
)

pytestmark = pytest.mark.zookeeper

OFFSETS_PARTITIONS = 4
SETTINGS = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "100",
    "group.min.session.timeout.ms": "1000",
}


def coordinator_of(bootstrap: str, group: str) -> tuple[int, int]:
    """(error, node id) as one broker answers FindCoordinator."""
    client = RawClient(bootstrap)
    try:
        r = client.request(FindCoordinatorRequest(key=group), 1)
    finally:
        client.close()
    return r.error_code, r.node_id


def test_each_broker_coordinates_the_groups_of_the_partitions_it_leads(
    cluster: ProcessCluster,  # noqa: F811 - the fixture
) -> None:
    brokers = {}
    for broker_id in (1, 2):
        proc = cluster.process(broker_id, **SETTINGS)
        cluster.brokers[broker_id] = proc
        brokers[broker_id] = proc.start()
    wait_for(lambda: cluster.registered() == [1, 2], "both brokers registered")
    b1 = brokers[1]
    # the first FindCoordinator creates __consumer_offsets (through the controller)
    wait_for(lambda: coordinator_of(b1.bootstrap, "probe")[0] == ErrorCode.NONE, "coordinator")
    leaders = wait_leaders(b1.bootstrap, "__consumer_offsets", OFFSETS_PARTITIONS)
    assert set(leaders.values()) == {1, 2}

    # a group for each broker
    groups: dict[int, str] = {}
    i = 0
    while len(groups) < 2:
        g = f"group-{i}"
        groups.setdefault(leaders[partition_for(g, OFFSETS_PARTITIONS)], g)
        i += 1
    for leader, group in groups.items():
        for b in brokers.values():
            answer = wait_for(
                lambda b=b, group=group: (
                    (a := coordinator_of(b.bootstrap, group))[0] == ErrorCode.NONE and a
                ),
                f"coordinator of {group} from {b.bootstrap}",
            )
            assert answer == (ErrorCode.NONE, leader)

    create_topic(b1.bootstrap, "data", 2)
    wait_leaders(b1.bootstrap, "data", 2)
    for leader, group in groups.items():
        other = brokers[3 - leader]
        # the broker that does not lead the group's partition refuses it
        client = RawClient(other.bootstrap)
        assert commit(client, 8, group, "data", {0: 1}) == {0: ErrorCode.NOT_COORDINATOR}
        assert fetch(client, 8, group, "data", [0])[1] == ErrorCode.NOT_COORDINATOR
        assert fetch(client, 2, group, "data", [0])[1] == ErrorCode.NOT_COORDINATOR
        # v0-1 have no top-level error: each requested partition carries it
        got, _ = fetch(client, 1, group, "data", [0, 1])
        assert {p: v[3] for p, v in got.items()} == {
            0: ErrorCode.NOT_COORDINATOR,
            1: ErrorCode.NOT_COORDINATOR,
        }
        client.close()
        # a real consumer finds the coordinator from either bootstrap
        consumer = Consumer({"bootstrap.servers": other.bootstrap, "group.id": group})
        consumer.commit(offsets=[TopicPartition("data", 0, 42, metadata=group)], asynchronous=False)
        consumer.close()
        consumer = Consumer({"bootstrap.servers": brokers[leader].bootstrap, "group.id": group})
        (tp,) = consumer.committed([TopicPartition("data", 0)], timeout=20)
        consumer.close()
        assert (tp.offset, tp.metadata) == (42, group)
    # the coordinators' records went to their own broker's log dir
    for leader, group in groups.items():
        p = partition_for(group, OFFSETS_PARTITIONS)
        path = brokers[leader].data_dir / f"__consumer_offsets-{p}"
        deadline = time.monotonic() + 10
        while not any(f.stat().st_size for f in path.glob("*.log")):
            assert time.monotonic() < deadline
            time.sleep(0.1)
