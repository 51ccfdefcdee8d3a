"""Regression tests for the differences the differential corpus found (issue 15): Odradek in
ZooKeeper mode answers these requests as Apache Kafka 3.9 was seen to answer them (the expected
values are Kafka's). They need no Kafka, so they keep guarding when the reference cannot run.
docs/compatibility.md lists the differences."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.integration.broker_process import BrokerProcess
from tests.reference import corpus as c
from tests.support.differential import Connection, Context, warm_up

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def conn(odradek_zk: BrokerProcess) -> Iterator[Connection]:
    warm_up(odradek_zk.bootstrap)
    connection = Connection(odradek_zk.bootstrap)
    yield connection
    connection.close()


@pytest.fixture
def topic() -> str:
    return f"parity-{uuid.uuid4().hex[:8]}"


def run(conn: Connection, *exchanges: c.Exchange) -> list[Any]:
    ctx = Context("odradek")
    answers = []
    for exchange in exchanges:
        answer = conn.call(exchange.build(ctx), exchange.version)
        if exchange.capture is not None:
            exchange.capture(ctx, answer)
        answers.append(answer)
    return answers


def produced(answer: Any) -> Any:
    return answer.responses[0].partition_responses[0]


def test_produce_right_after_create_topics(conn: Connection, topic: str) -> None:
    """CreateTopics answers once the partitions have leaders (Kafka's DelayedCreatePartitions):
    a produce right after it succeeds, on every partition."""
    created, *appends = run(
        conn,
        c.setup_topic(topic, 3),
        *(c.produce(topic, c.record_bytes(9, 1), partition=p) for p in range(3)),
    )
    assert created.topics[0].error_code == ErrorCode.NONE
    assert [produced(a).error_code for a in appends] == [ErrorCode.NONE] * 3


def test_create_topics_answer_fields(conn: Connection, topic: str) -> None:
    (answer,) = run(conn, c.Exchange(c.create_topic(topic, validate_only=True), 7))
    assert answer.topics[0].error_code == ErrorCode.NONE
    assert answer.topics[0].error_message is None  # null, not ""
    assert answer.topics[0].topic_id == uuid.UUID(int=0)


def test_config_synonyms(conn: Connection, topic: str) -> None:
    """retention.ms lists no default synonym (only log.retention.hours has a default, and Kafka
    starts at the preferred key); a broker config lists its static setting then its default."""
    _, topic_configs, broker_configs = run(
        conn,
        c.setup_topic(topic, **{"retention.ms": "3600000"}),
        c.describe_configs(c.TOPIC_RESOURCE, topic, ["retention.ms", "cleanup.policy"]),
        c.describe_configs(c.BROKER_RESOURCE, "0", ["num.partitions"]),
    )
    synonyms = {
        e.name: [(s.name, s.value, s.source) for s in e.synonyms]
        for e in topic_configs.results[0].configs
    }
    assert synonyms == {
        "retention.ms": [("retention.ms", "3600000", 1)],
        "cleanup.policy": [("log.cleanup.policy", "delete", 5)],
    }
    (entry,) = broker_configs.results[0].configs
    assert [(s.name, s.source) for s in entry.synonyms] == [
        ("num.partitions", 4),
        ("num.partitions", 5),
    ]


def test_incremental_append_starts_from_the_default(conn: Connection, topic: str) -> None:
    _, altered, described = run(
        conn,
        c.setup_topic(topic),
        c.incremental_alter(topic, [("cleanup.policy", c.APPEND, "compact")]),
        c.describe_configs(c.TOPIC_RESOURCE, topic, ["cleanup.policy"]),
    )
    assert altered.responses[0].error_code == ErrorCode.NONE
    assert described.results[0].configs[0].value == "delete,compact"


def test_fetch_errors_carry_no_offsets(conn: Connection, topic: str) -> None:
    *_, out_of_range, unknown = run(
        conn,
        c.setup_topic(topic),
        c.produce(topic, c.record_bytes(9, 3)),
        c.fetch(topic, offset=100),
        c.fetch(topic, partition=5),
    )
    bad = out_of_range.responses[0].partitions[0]
    assert bad.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (bad.high_watermark, bad.last_stable_offset, bad.log_start_offset) == (-1, -1, -1)
    assert bad.aborted_transactions is None
    missing = unknown.responses[0].partitions[0]
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert missing.aborted_transactions == []


def test_leader_epochs(conn: Connection, topic: str) -> None:
    """The epoch is known as soon as the partition has a leader (ListOffsets on an empty log);
    an epoch above every known one is undefined (-1, -1)."""
    _, latest = run(conn, c.setup_topic(topic), c.list_offsets(topic, [-1], version=7))
    assert latest.topics[0].partitions[0].leader_epoch == 0
    run(conn, c.produce(topic, c.record_bytes(9, 3)))
    (answer,) = run(conn, c.end_offsets_of_epochs(topic, [0, 7], version=4))
    ends = [(p.leader_epoch, p.end_offset) for p in answer.topics[0].partitions]
    assert ends == [(0, 3), (-1, -1)]


def test_find_coordinator_messages(conn: Connection) -> None:
    group = f"parity-group-{uuid.uuid4().hex[:8]}"
    old, new = run(
        conn,
        c.Exchange(FindCoordinatorRequest(key=group, key_type=0), 3),
        c.Exchange(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4),
    )
    assert (old.error_code, old.error_message) == (ErrorCode.NONE, "NONE")
    assert new.coordinators[0].error_message is None


def test_describe_cluster(conn: Connection) -> None:
    everything, controllers = run(
        conn,
        c.Exchange(DescribeClusterRequest(include_cluster_authorized_operations=True), 1),
        c.Exchange(DescribeClusterRequest(endpoint_type=2), 1),
    )
    # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
    assert everything.cluster_authorized_operations == 8096
    assert controllers.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert controllers.endpoint_type == 1


def test_delete_records_of_a_compacted_topic(conn: Connection, topic: str) -> None:
    *_, deleted = run(
        conn,
        c.setup_topic(topic, **{"cleanup.policy": "compact"}),
        c.produce(topic, c.record_bytes(9, 3)),
        c.delete_records(topic, {0: 1}),
    )
    assert deleted.topics[0].partitions[0].error_code == ErrorCode.POLICY_VIOLATION


def test_produce_error_answers(conn: Connection, topic: str) -> None:
    """Log start offsets and messages as Kafka answers them; a duplicate answers the cached
    batch's timestamp; an entry below the smallest message is corrupt."""
    _, pid, first, duplicate, gap, garbage = run(
        conn,
        c.setup_topic(topic),
        c.init_producer_id(),
        c.produce(topic, c.idempotent_batch(3, sequence=0, start=0)),
        c.produce(topic, c.idempotent_batch(3, sequence=0, start=0)),
        c.produce(topic, c.idempotent_batch(1, sequence=9, start=3)),
        c.produce(topic, b"\x00" * 70),
    )
    assert pid.error_code == ErrorCode.NONE
    assert produced(first).error_code == ErrorCode.NONE
    dup = produced(duplicate)
    assert (dup.error_code, dup.base_offset) == (ErrorCode.NONE, 0)
    assert dup.log_append_time_ms == c.T0 + 20  # the cached batch's max timestamp
    out_of_order = produced(gap)
    assert out_of_order.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert (out_of_order.log_start_offset, out_of_order.error_message) == (0, None)
    corrupt = produced(garbage)
    assert corrupt.error_code == ErrorCode.CORRUPT_MESSAGE
    assert corrupt.log_start_offset == -1


def test_dynamic_broker_configs_are_the_preferred_keys(conn: Connection) -> None:
    """Only a topic config's preferred broker key is dynamic (Kafka's DynamicLogConfig): the
    hours and minutes forms of retention and roll times are read-only."""
    (answer,) = run(
        conn,
        c.describe_configs(
            c.BROKER_RESOURCE, "0", ["log.retention.ms", "log.retention.hours", "log.roll.hours"]
        ),
    )
    read_only = {e.name: e.read_only for e in answer.results[0].configs}
    assert read_only == {
        "log.retention.ms": False,
        "log.retention.hours": True,
        "log.roll.hours": True,
    }


def test_transactional_records_need_the_transactional_id(conn: Connection, topic: str) -> None:
    """Kafka refuses a whole Produce request holding transactional batches without a
    transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), before looking at partitions."""
    txn = f"{topic}-txn"
    ctx = Context("odradek")
    for exchange in (
        c.setup_topic(topic),
        c.find_txn_coordinator(txn),
        c.init_txn_producer(txn),
        c.add_partitions(txn, topic, [0]),
    ):
        answer = conn.call(exchange.build(ctx), exchange.version)
        while exchange.until is not None and not exchange.until(answer):
            answer = conn.call(exchange.build(ctx), exchange.version)
        if exchange.capture is not None:
            exchange.capture(ctx, answer)
    without = c.produce(topic, c.txn_batch(2, sequence=0, start=0))
    answer = produced(conn.call(without.build(ctx), without.version))
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        None,
    )
    with_id = c.produce(topic, c.txn_batch(2, sequence=0, start=0), transactional_id=txn)
    assert produced(conn.call(with_id.build(ctx), with_id.version)).error_code == ErrorCode.NONE
    end = c.end_txn(txn, committed=False)
    assert conn.call(end.build(ctx), end.version).error_code == ErrorCode.NONE


def test_describing_an_unknown_transaction(conn: Connection) -> None:
    (answer,) = run(conn, c.Exchange(c.DescribeTransactionsRequest(transactional_ids=["none"]), 0))
    state = answer.transaction_states[0]
    assert state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    # Kafka's schema defaults, not -1
    assert (state.producer_id, state.producer_epoch, state.transaction_start_time_ms) == (0, 0, 0)


def test_group_authorized_operations(conn: Connection, topic: str) -> None:
    """Kafka's GROUP resource supports READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS and
    ALTER_CONFIGS (its AclEntry.supportedOperations): 3400 with no authorizer."""
    group = f"{topic}-group"
    *_, described = run(
        conn,
        c.setup_topic(topic),
        *c.join_and_sync(group, topic),
        c.Exchange(c.DescribeGroupsRequest(groups=[group], include_authorized_operations=True), 5),
    )
    assert described.groups[0].authorized_operations == 3400
    run(conn, c.leave(group))


def test_consumer_group_member_without_a_regex(conn: Connection, topic: str) -> None:
    """ConsumerGroupDescribe answers "" for a member's regex when it has none, as Kafka."""
    group = f"{topic}-kip848"
    run(conn, c.setup_topic(topic), c.find_group_coordinator(group))
    (joined,) = run(
        conn,
        c.Exchange(
            c.ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id="",
                member_epoch=0,
                rebalance_timeout_ms=10000,
                subscribed_topic_names=[topic],
                topic_partitions=[],
            ),
            0,
        ),
    )
    assert joined.error_code == ErrorCode.NONE
    (described,) = run(conn, c.Exchange(c.ConsumerGroupDescribeRequest(group_ids=[group]), 0))
    assert described.groups[0].members[0].subscribed_topic_regex == ""
    run(
        conn,
        c.Exchange(
            c.ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=joined.member_id, member_epoch=-1
            ),
            0,
        ),
    )


def test_controller_answers_carry_the_errors_messages(conn: Connection, topic: str) -> None:
    """ElectLeaders and AlterPartitionReassignments answer a partition error with the error's
    own message when there is no other, as Kafka's ApiError does."""
    _, elected, reassigned = run(
        conn,
        c.setup_topic(topic),
        c.Exchange(
            c.ElectLeadersRequest(
                election_type=0,
                topic_partitions=[c.ElectLeadersTopicPartitions(topic=topic, partitions=[0])],
                timeout_ms=30000,
            ),
            2,
        ),
        c.Exchange(
            c.AlterPartitionReassignmentsRequest(
                timeout_ms=30000,
                topics=[
                    c.ReassignableTopic(
                        name=topic,
                        partitions=[c.ReassignablePartition(partition_index=0, replicas=None)],
                    )
                ],
            ),
            0,
        ),
    )
    result = elected.replica_election_results[0].partition_result[0]
    assert result.error_code == ErrorCode.ELECTION_NOT_NEEDED
    assert result.error_message == ErrorCode.ELECTION_NOT_NEEDED.message
    partition = reassigned.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert partition.error_message == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.message


def test_moving_a_partition_that_does_not_exist(conn: Connection, topic: str) -> None:
    """AlterReplicaLogDirs answers UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
    exist (REPLICA_NOT_AVAILABLE is for one another broker hosts), as Kafka."""
    _, dirs = run(conn, c.setup_topic(topic), c.Exchange(c.DescribeLogDirsRequest(topics=[]), 1))
    here = dirs.results[0].log_dir
    (moved,) = run(
        conn,
        c.Exchange(
            c.AlterReplicaLogDirsRequest(
                dirs=[
                    c.AlterReplicaLogDir(
                        path=here,
                        topics=[c.AlterReplicaLogDirTopic(name=topic, partitions=[0, 9])],
                    )
                ]
            ),
            2,
        ),
    )
    answers = {p.partition_index: p.error_code for p in moved.results[0].partitions}
    assert answers == {0: ErrorCode.NONE, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
