"""Transactions in a ZooKeeper cluster of broker subprocesses: the transaction coordinator runs
on the broker leading the id's ``__transaction_state`` partition, the data partitions are led
by both brokers, so commit and abort markers go broker to broker (WriteTxnMarkers), and a
transactional offset commit lands on the group coordinator of whichever broker leads its
``__consumer_offsets`` partition."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from coordination.group.config import partition_for
from tests.integration.test_zookeeper_brokers import (  # noqa: F401 - fixtures
    ProcessCluster,
    cluster,
    create_topic,
    wait_for,
    wait_leaders,
)
from tests.support.kafka_clients import consume_from_start

pytestmark = pytest.mark.zookeeper

SETTINGS = {
    "transaction.state.log.num.partitions": "2",
    "transaction.state.log.replication.factor": "1",
    "offsets.topic.num.partitions": "2",
    "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def test_markers_go_broker_to_broker(cluster: ProcessCluster) -> None:  # noqa: F811
    brokers = {}
    for broker_id in (1, 2):
        proc = cluster.process(broker_id, **SETTINGS)
        cluster.brokers[broker_id] = proc
        brokers[broker_id] = proc.start()
    wait_for(lambda: cluster.registered() == [1, 2], "both brokers registered")
    bs = f"{brokers[1].bootstrap},{brokers[2].bootstrap}"
    topic = f"ctxn-{uuid.uuid4().hex[:6]}"
    create_topic(brokers[1].bootstrap, topic, 4)
    data_leaders = wait_leaders(brokers[1].bootstrap, topic, 4)
    assert set(data_leaders.values()) == {1, 2}

    # a transactional id coordinated by each broker
    p0 = Producer({"bootstrap.servers": bs, "transactional.id": "probe"})
    p0.init_transactions(60)  # creates __transaction_state
    txn_leaders = wait_leaders(brokers[1].bootstrap, "__transaction_state", 2)
    assert set(txn_leaders.values()) == {1, 2}
    ids: dict[int, str] = {}
    i = 0
    while len(ids) < 2:
        ids.setdefault(txn_leaders[partition_for(f"cluster-{i}", 2)], f"cluster-{i}")
        i += 1

    expected: list[bytes] = []
    for coordinator, txn_id in sorted(ids.items()):
        p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
        p.init_transactions(60)
        for n, commit in enumerate((True, False, True)):
            p.begin_transaction()
            for part in range(4):
                value = b"%d-%d-%d-%s" % (coordinator, n, part, b"c" if commit else b"a")
                p.produce(topic, value=value, partition=part)
                if commit:
                    expected.append(value)
            if commit:
                p.commit_transaction(60)
            else:
                p.flush(60)
                p.abort_transaction(60)
        # a consumed position committed in the transaction (TxnOffsetCommit)
        group = f"g-{txn_id}"
        consumer = Consumer({"bootstrap.servers": bs, "group.id": group})
        p.begin_transaction()
        p.produce(topic, value=b"%d-offsets" % coordinator, partition=0)
        expected.append(b"%d-offsets" % coordinator)
        p.send_offsets_to_transaction(
            [TopicPartition(topic, 1, 42)], consumer.consumer_group_metadata(), 60
        )
        p.commit_transaction(60)
        committed = wait_for(
            lambda c=consumer: (
                (got := c.committed([TopicPartition(topic, 1)], 10)) and got[0].offset == 42 and got
            ),
            f"offsets of {group}",
        )
        assert committed[0].offset == 42
        consumer.close()
    got = consume_from_start(
        bs,
        topic,
        4,
        len(expected),
        timeout=30,
        client={"isolation.level": "read_committed", "enable.partition.eof": False},
    )
    assert sorted(m.value() for m in got) == sorted(expected)
    # the coordinators did send markers to the other broker
    logs = brokers[1].log() + brokers[2].log()
    assert "sending transaction markers" not in logs  # no failed sends
    assert "Traceback" not in logs
