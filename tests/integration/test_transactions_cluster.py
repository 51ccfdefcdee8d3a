"""Transactions in a ZooKeeper cluster of broker subprocesses: the transaction coordinator runs
on the broker leading the id's ``__transaction_state`` partition, the data partitions are led
by both brokers, so commit and abort markers go broker to broker (WriteTxnMarkers), and a
transactional offset commit lands on the group coordinator of whichever broker leads its
``__consumer_offsets`` partition."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from coordination.group.config import partition_for
from protocol.error_codes import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records.record import SimpleRecord, build_batch
from tests.integration.test_idempotence import RawClient
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


def _raw(bootstrap: str) -> RawClient:
    return RawClient(bootstrap)


def _txn_batch(pid: int, epoch: int, seq: int, value: bytes) -> bytes:
    return build_batch(
        [SimpleRecord(value, timestamp=int(time.time() * 1000))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )


def _produce(
    client: RawClient, txn_id: str, topic: str, partition: int, batch: bytes, version: int
):
    r = client.request(
        ProduceRequest(
            transactional_id=txn_id,
            acks=-1,
            timeout_ms=10000,
            topic_data=[
                TopicProduceData(
                    name=topic,
                    partition_data=[PartitionProduceData(index=partition, records=batch)],
                )
            ],
        ),
        version,
    )
    p = r.responses[0].partition_responses[0]
    return ErrorCode(p.error_code), p.error_message


def test_kip890_partition_leader_verifies_and_adds_with_the_coordinator_broker(
    cluster: ProcessCluster,  # noqa: F811
) -> None:
    """KIP-890 in a cluster: the broker leading a data partition does not coordinate the
    transactional id, so it asks the coordinator broker before appending a producer's first
    transactional batch there. Part 1 (AddPartitionsToTxn v4+ verify_only): refused for a
    partition the transaction never added (INVALID_TXN_STATE; TRANSACTION_ABORTABLE for produce
    v11+), no transaction left hanging; accepted once AddPartitionsToTxn added it. Part 2
    (transaction version 2, Produce v12+): the leader has the coordinator add the partition
    (AddPartitionsToTxn v5 without verify_only); EndTxn v5 bumps the epoch, and the next
    transaction's batch, sent at once with it, is added to that transaction (asked again while
    the last one completes), never ended by the last one's marker."""
    settings = {**SETTINGS, "transaction.state.log.num.partitions": "1"}
    brokers = {}
    for broker_id in (1, 2):
        proc = cluster.process(broker_id, **settings)
        cluster.brokers[broker_id] = proc
        brokers[broker_id] = proc.start()
    wait_for(lambda: cluster.registered() == [1, 2], "both brokers registered")
    bs = f"{brokers[1].bootstrap},{brokers[2].bootstrap}"
    Producer({"bootstrap.servers": bs, "transactional.id": "probe"}).init_transactions(60)
    coordinator = wait_leaders(brokers[1].bootstrap, "__transaction_state", 1)[0]
    topic = f"kip890-{uuid.uuid4().hex[:6]}"
    create_topic(brokers[1].bootstrap, topic, 4)
    leaders = wait_leaders(brokers[1].bootstrap, topic, 4)
    partition = next(p for p, leader in leaders.items() if leader != coordinator)
    other = next(p for p, leader in leaders.items() if leader == coordinator)
    leader = brokers[leaders[partition]]

    txn_id = f"raw-{uuid.uuid4().hex[:6]}"
    to_coordinator = _raw(brokers[coordinator].bootstrap)
    init = to_coordinator.request(
        InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000), 4
    )
    assert init.error_code == ErrorCode.NONE
    pid, epoch = init.producer_id, init.producer_epoch
    # the transaction adds another partition, not ours
    added = to_coordinator.request(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[other])],
        ),
        3,
    )
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0

    to_leader = _raw(leader.bootstrap)
    batch = _txn_batch(pid, epoch, 0, b"never-added")
    # broker 1's metadata can name the leader before that broker has taken the partition on
    # (CI: NOT_LEADER_OR_FOLLOWER); a refused produce appends nothing, so it is asked again
    first = wait_for(
        lambda: (
            (got := _produce(to_leader, txn_id, topic, partition, batch, 9))[0]
            not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            and got
        ),
        f"broker {leaders[partition]} leading {topic}-{partition}",
    )
    assert first == (
        ErrorCode.INVALID_TXN_STATE,
        "Partition was not added to the transaction",
    )
    assert _produce(to_leader, txn_id, topic, partition, batch, 11)[0] == (
        ErrorCode.TRANSACTION_ABORTABLE
    )
    # nothing was appended and no transaction hangs there: the LSO is the log end
    offsets = to_leader.request(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=1,
            topics=[
                ListOffsetsTopic(
                    name=topic,
                    partitions=[ListOffsetsPartition(partition_index=partition, timestamp=-1)],
                )
            ],
        ),
        5,
    )
    assert offsets.topics[0].partitions[0].offset == 0
    # a stale epoch is fenced by the coordinator's answer
    stale = _txn_batch(pid, epoch - 1 if epoch > 0 else epoch + 5, 0, b"stale")
    assert _produce(to_leader, txn_id, topic, partition, stale, 9)[0] in (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_TXN_STATE,
    )

    # once the transaction adds the partition, the same batch is verified and appended
    added = to_coordinator.request(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[partition])],
        ),
        3,
    )
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert _produce(to_leader, txn_id, topic, partition, batch, 9) == (ErrorCode.NONE, None)
    ended = to_coordinator.request(
        EndTxnRequest(
            transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True
        ),
        3,
    )
    assert ended.error_code == ErrorCode.NONE
    got = wait_for(
        lambda: consume_from_start(
            bs,
            topic,
            4,
            1,
            timeout=10,
            client={"isolation.level": "read_committed", "enable.partition.eof": False},
        ),
        "the committed record",
    )
    assert [(m.partition(), m.value()) for m in got] == [(partition, b"never-added")]

    # transaction version 2: no AddPartitionsToTxn
    txn2 = f"raw2-{uuid.uuid4().hex[:6]}"
    init = to_coordinator.request(
        InitProducerIdRequest(transactional_id=txn2, transaction_timeout_ms=60000), 4
    )
    pid, epoch = init.producer_id, init.producer_epoch
    assert _produce(to_leader, txn2, topic, partition, _txn_batch(pid, epoch, 0, b"v2"), 12) == (
        ErrorCode.NONE,
        None,
    )
    ended = to_coordinator.request(
        EndTxnRequest(transactional_id=txn2, producer_id=pid, producer_epoch=epoch, committed=True),
        5,
    )
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
    # the next transaction at once: retried (NOT_ENOUGH_REPLICAS) until the last is complete
    aborted = _txn_batch(pid, epoch + 1, 0, b"v2-aborted")
    assert wait_for(
        lambda: (
            (got := _produce(to_leader, txn2, topic, partition, aborted, 12))[0]
            != ErrorCode.NOT_ENOUGH_REPLICAS
            and got
        ),
        "the next transaction's batch",
    ) == (ErrorCode.NONE, None)
    ended = to_coordinator.request(
        EndTxnRequest(
            transactional_id=txn2, producer_id=pid, producer_epoch=epoch + 1, committed=False
        ),
        5,
    )
    assert (ended.error_code, ended.producer_epoch) == (0, epoch + 2)
    # read until a third record would have arrived: the aborted one must not
    got = consume_from_start(
        bs,
        topic,
        4,
        3,
        timeout=5,
        client={"isolation.level": "read_committed", "enable.partition.eof": False},
    )
    assert [(m.partition(), m.value()) for m in got] == [
        (partition, b"never-added"),
        (partition, b"v2"),
    ]
    to_leader.close()
    to_coordinator.close()
    logs = brokers[1].log() + brokers[2].log()
    assert "Traceback" not in logs
