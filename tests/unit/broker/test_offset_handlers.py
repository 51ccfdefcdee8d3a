"""ListOffsets, DeleteRecords, OffsetForLeaderEpoch, OffsetCommit and OffsetFetch without a
broker: real partitions over real logs (or a real group coordinator over an in-memory log)
behind a fake replica manager, real codecs at every version the handlers advertise.

Each test asks the same question at the versions whose answers differ (old-style offsets,
leader epochs in the answer, fencing fields the request carries only from some version on,
where a group's error goes) and checks the partition errors: unknown partition, not the
leader, fenced or unknown leader epoch, not the coordinator."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.coordinators.groups import GroupService
from broker.dispatch import Dispatcher
from broker.handlers import load_handlers
from broker.purgatory import DelayedOperationPurgatory
from broker.replication.errors import UnknownTopicOrPartition
from broker.replication.log_validator import TopicRules
from broker.replication.partition import Partition, TopicPartition
from coordination.metadata.view import PartitionState, TopicMetadata
from protocol.acl import ResourceType
from protocol.error_codes import ErrorCode
from protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from storage.manager import LogManager
from storage.producer_state import ProducerStateManager
from tests.support.fake_services import (
    DenyCluster,
    FakeConnection,
    FakeReplicaManager,
    call,
    services,
    session,
)
from tests.unit.coordination.test_group_coordinator import Harness
from tests.unit.storage.util import make_batch

E = ErrorCode
NOW = 1_700_000_000_000
#: this broker; partition 0 of "t" it leads at epoch 3, partition 1 another broker leads
BROKER = 1
EPOCH = 3


class PartitionsReplicaManager(FakeReplicaManager):
    """Hosts real partitions; anything else is unknown (Kafka's ReplicaManager answers a
    partition it does not host UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER)."""

    def __init__(self, partitions: dict[TopicPartition, Partition]) -> None:
        super().__init__()
        self.partitions = partitions

    def partition_or_raise(self, topic: str | None, partition: int) -> Partition:
        part = self.partitions.get((topic or "", partition))
        if part is None:
            raise UnknownTopicOrPartition(f"{topic}-{partition} does not exist")
        return part


@pytest.fixture(scope="module")
def registry() -> Any:
    return load_handlers()


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    m = LogManager([tmp_path / "logs"])
    m.startup()
    yield m
    m.shutdown()


def hosted(manager: LogManager) -> dict[TopicPartition, Partition]:
    """t-0 led here at EPOCH (its only replica), t-1 followed here (broker 2 leads it)."""
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
    out: dict[TopicPartition, Partition] = {}
    for index, leader, replicas in ((0, BROKER, (BROKER,)), (1, 2, (2, BROKER))):
        log = manager.get_or_create_log("t", index)
        ProducerStateManager.attach(log)  # as the replica manager does
        out[("t", index)] = Partition(
            "t",
            index,
            uuid.uuid4(),
            log,
            TopicRules(),
            broker_id=BROKER,
            state=PartitionState(index, leader, EPOCH, replicas, replicas),
            fetch_purgatory=purgatory,
        )
    return out


def append(part: Partition, batch: bytearray) -> None:
    part.append_records_to_leader(memoryview(batch), api_version=9, now_ms=NOW)


def dispatcher(registry: Any, parts: dict[TopicPartition, Partition], **kw: Any) -> Dispatcher:
    return Dispatcher(services(PartitionsReplicaManager(parts), **kw), registry)


# --- ListOffsets ---------------------------------------------------------------------------


def list_offsets(
    d: Dispatcher,
    version: int,
    timestamp: int,
    *,
    partition: int = 0,
    topic: str = "t",
    current_leader_epoch: int = -1,
    read_committed: bool = False,
) -> Any:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=int(read_committed),
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=partition,
                        current_leader_epoch=current_leader_epoch,
                        timestamp=timestamp,
                    )
                ],
            )
        ],
    )
    response = call(d, FakeConnection(session()), request, version)
    return response.topics[0].partitions[0]


@pytest.fixture
def with_open_transaction(manager: LogManager) -> dict[TopicPartition, Partition]:
    """t-0: two records (timestamps NOW, NOW+1) at offsets 0-1, then a transaction still open
    at 2-3: the high watermark is 4, the last stable offset 2."""
    parts = hosted(manager)
    leader = parts[("t", 0)]
    append(leader, make_batch(2, timestamp=NOW))
    append(
        leader,
        make_batch(2, timestamp=NOW + 10, producer_id=7, producer_epoch=0, base_sequence=0,
                   transactional=True),
    )  # fmt: skip
    assert (leader.high_watermark, leader.last_stable_offset) == (4, 2)
    return parts


def test_list_offsets_v0_answers_old_style_offsets(
    registry: Any, with_open_transaction: dict[TopicPartition, Partition]
) -> None:
    d = dispatcher(registry, with_open_transaction)
    assert list_offsets(d, 0, LATEST_TIMESTAMP).old_style_offsets == [4]
    assert list_offsets(d, 0, EARLIEST_TIMESTAMP).old_style_offsets == [0]
    assert list_offsets(d, 0, NOW + 1).old_style_offsets == [1]
    # no record that late: the high watermark
    assert list_offsets(d, 0, NOW + 1000).old_style_offsets == [4]


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
def test_list_offsets_v1_on_answer_one_offset_and_v4_on_its_epoch(
    registry: Any, with_open_transaction: dict[TopicPartition, Partition], version: int
) -> None:
    d = dispatcher(registry, with_open_transaction)
    found = list_offsets(d, version, NOW + 1)
    assert (found.error_code, found.offset, found.timestamp) == (E.NONE, 1, NOW + 1)
    assert found.leader_epoch == (EPOCH if version >= 4 else -1)
    latest = list_offsets(d, version, LATEST_TIMESTAMP)
    assert (latest.offset, latest.timestamp) == (4, -1)
    assert list_offsets(d, version, NOW + 1000).offset == -1
    # read_committed (v2+) stops at the open transaction; v0-1 have no isolation level
    committed = list_offsets(d, version, LATEST_TIMESTAMP, read_committed=True)
    assert committed.offset == (2 if version >= 2 else 4)


@pytest.mark.parametrize("version", [0, 1, 4, 10])
def test_list_offsets_errors(
    registry: Any, with_open_transaction: dict[TopicPartition, Partition], version: int
) -> None:
    d = dispatcher(registry, with_open_transaction)
    assert list_offsets(d, version, LATEST_TIMESTAMP, topic="nope").error_code == (
        E.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert list_offsets(d, version, LATEST_TIMESTAMP, partition=1).error_code == (
        E.NOT_LEADER_OR_FOLLOWER
    )
    # the KIP-320 fence: v4+ carries the client's leader epoch, older versions cannot be fenced
    fenced = list_offsets(d, version, LATEST_TIMESTAMP, current_leader_epoch=EPOCH - 1)
    unknown = list_offsets(d, version, LATEST_TIMESTAMP, current_leader_epoch=EPOCH + 1)
    current = list_offsets(d, version, LATEST_TIMESTAMP, current_leader_epoch=EPOCH)
    if version >= 4:
        assert (fenced.error_code, unknown.error_code) == (
            E.FENCED_LEADER_EPOCH,
            E.UNKNOWN_LEADER_EPOCH,
        )
    else:
        assert fenced.error_code == unknown.error_code == E.NONE
    assert current.error_code == E.NONE


# --- DeleteRecords -------------------------------------------------------------------------


def delete_records(d: Dispatcher, version: int, *targets: tuple[str, int, int]) -> list[Any]:
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsTopic(
                name=topic, partitions=[DeleteRecordsPartition(partition_index=p, offset=offset)]
            )
            for topic, p, offset in targets
        ],
        timeout_ms=1000,
    )
    response = call(d, FakeConnection(session()), request, version)
    return [(t.partitions[0].error_code, t.partitions[0].low_watermark) for t in response.topics]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_low_watermark_on_the_leader_only(
    registry: Any, manager: LogManager, version: int
) -> None:
    parts = hosted(manager)
    append(parts[("t", 0)], make_batch(4, timestamp=NOW))
    d = dispatcher(registry, parts)
    assert delete_records(d, version, ("t", 0, 1), ("t", 1, 0), ("nope", 0, 0), ("t", 0, 9)) == [
        (E.NONE, 1),
        (E.NOT_LEADER_OR_FOLLOWER, -1),
        (E.UNKNOWN_TOPIC_OR_PARTITION, -1),
        (E.OFFSET_OUT_OF_RANGE, -1),
    ]
    # -1: up to the high watermark
    assert delete_records(d, version, ("t", 0, -1)) == [(E.NONE, 4)]
    assert parts[("t", 0)].log_start_offset == 4


# --- OffsetForLeaderEpoch ------------------------------------------------------------------


def end_offsets(
    d: Dispatcher,
    version: int,
    *targets: tuple[str, int, int, int],
    replica_id: int = -1,
) -> list[tuple[int, int, int]]:
    """(error, leader epoch, end offset) of each (topic, partition, epoch, current epoch)."""
    request = OffsetForLeaderEpochRequest(
        replica_id=replica_id,
        topics=[
            OffsetForLeaderTopic(
                topic=topic,
                partitions=[
                    OffsetForLeaderPartition(
                        partition=p, leader_epoch=epoch, current_leader_epoch=current
                    )
                ],
            )
            for topic, p, epoch, current in targets
        ],
    )
    response = call(d, FakeConnection(session()), request, version)
    return [
        (r.error_code, r.leader_epoch, r.end_offset) for t in response.topics for r in t.partitions
    ]


@pytest.fixture
def two_epochs(manager: LogManager) -> dict[TopicPartition, Partition]:
    """t-0: offsets 0-1 written at EPOCH, 2-4 at EPOCH + 2 (this broker still leads)."""
    parts = hosted(manager)
    leader = parts[("t", 0)]
    append(leader, make_batch(2, timestamp=NOW))
    leader.update_state(PartitionState(0, BROKER, EPOCH + 2, (BROKER,), (BROKER,)))
    append(leader, make_batch(3, timestamp=NOW))
    return parts


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_for_leader_epoch_by_version(
    registry: Any, two_epochs: dict[TopicPartition, Partition], version: int
) -> None:
    d = dispatcher(registry, two_epochs)
    new = EPOCH + 2
    answers = end_offsets(
        d,
        version,
        ("t", 0, EPOCH, -1),
        ("t", 0, EPOCH + 1, -1),  # no such epoch: the largest below it, ended where new began
        ("t", 0, new, -1),
        ("t", 0, EPOCH, new),
    )
    # v0 answers the end offset only; v1+ the epoch it belongs to
    epochs = [EPOCH, EPOCH, new, EPOCH] if version >= 1 else [-1] * 4
    assert answers == [(E.NONE, e, o) for e, o in zip(epochs, [2, 2, 5, 2], strict=True)]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_for_leader_epoch_errors(
    registry: Any, two_epochs: dict[TopicPartition, Partition], version: int
) -> None:
    d = dispatcher(registry, two_epochs)
    new = EPOCH + 2
    codes = [
        code
        for code, _, _ in end_offsets(
            d,
            version,
            ("nope", 0, EPOCH, -1),
            ("t", 1, EPOCH, -1),
            ("t", 0, EPOCH, new - 1),
            ("t", 0, EPOCH, new + 1),
        )
    ]
    # the fence needs the client's current epoch, which v2+ carries
    fence = [E.FENCED_LEADER_EPOCH, E.UNKNOWN_LEADER_EPOCH] if version >= 2 else [E.NONE] * 2
    assert codes == [E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, *fence]


class DenyTopics:
    def authorize(
        self, principal: Any, host: str, operation: Any, resource_type: Any, name: str
    ) -> bool:
        return resource_type != ResourceType.TOPIC


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_needs_cluster_action_or_describe(
    registry: Any, two_epochs: dict[TopicPartition, Partition], version: int
) -> None:
    """Kafka's KafkaApis, whoever asks (a follower names itself from v3, a consumer is -1):
    CLUSTER_ACTION on the cluster answers every topic, else DESCRIBE on each topic does."""
    for authorizer, expected in (
        (DenyCluster(), E.NONE),  # DESCRIBE on the topic
        (DenyTopics(), E.NONE),  # CLUSTER_ACTION
    ):
        d = dispatcher(registry, two_epochs, authorizer=authorizer)
        for replica in (2, -1):
            answered = end_offsets(d, version, ("t", 0, EPOCH, -1), replica_id=replica)
            assert answered == [(expected, EPOCH, 2)]
    d = dispatcher(registry, two_epochs, authorizer=DenyAll())
    for replica in (2, -1):
        answered = end_offsets(d, version, ("t", 0, EPOCH, -1), replica_id=replica)
        assert [code for code, _, _ in answered] == [E.TOPIC_AUTHORIZATION_FAILED]


class DenyAll:
    def authorize(
        self, principal: Any, host: str, operation: Any, resource_type: Any, name: str
    ) -> bool:
        return False


# --- OffsetCommit / OffsetFetch ------------------------------------------------------------

GROUP = "g"


def group_dispatcher(registry: Any, harness: Harness) -> Dispatcher:
    topic = TopicMetadata("t", uuid.uuid4(), tuple(
        PartitionState(i, BROKER, EPOCH, (BROKER,), (BROKER,)) for i in range(2)
    ))  # fmt: skip
    groups = GroupService(harness.gc, None)  # type: ignore[arg-type]
    return Dispatcher(services(FakeReplicaManager(), topics={"t": topic}, groups=groups), registry)


def commit(
    d: Dispatcher,
    version: int,
    partitions: list[tuple[str, int]],
    *,
    offset: int = 10,
    generation: int = -1,
    commit_timestamp: int = -1,
    retention_ms: int = -1,
) -> list[int]:
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    request = OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=generation,
        member_id="",
        retention_time_ms=retention_ms,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=offset,
                        committed_leader_epoch=EPOCH,
                        commit_timestamp=commit_timestamp,
                        committed_metadata="m",
                    )
                    for p in ps
                ],
            )
            for topic, ps in by_topic.items()
        ],
    )
    response = call(d, FakeConnection(session()), request, version)
    return [p.error_code for t in response.topics for p in t.partitions]


def stored(harness: Harness, partition: int = 0) -> Any:
    code, found = harness.gc.fetch_offsets(group_id=GROUP, partitions=[("t", partition)])
    assert code == E.NONE
    return found[("t", partition)]


@pytest.mark.parametrize("version", range(10))
def test_offset_commit_by_version(registry: Any, version: int) -> None:
    h = Harness()
    d = group_dispatcher(registry, h)
    answers = commit(
        d, version, [("t", 0), ("t", 2), ("nope", 0)], commit_timestamp=123, retention_ms=60_000
    )
    assert answers == [E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION]
    offset = stored(h)
    assert (offset.offset, offset.metadata) == (10, "m")
    # v6+ keeps the leader epoch; v1 alone carries a commit time; v2-4 a retention time
    assert offset.leader_epoch == (EPOCH if version >= 6 else -1)
    assert (offset.commit_timestamp_ms == 123) == (version == 1)
    if 2 <= version <= 4:
        assert offset.expire_timestamp_ms == offset.commit_timestamp_ms + 60_000
    else:
        assert offset.expire_timestamp_ms == -1


@pytest.mark.parametrize("version", range(10))
def test_offset_commit_errors(registry: Any, version: int) -> None:
    # a generation of a group the coordinator does not know: stale (v9+: not found); v0
    # carries no generation and commits as a simple consumer
    d = group_dispatcher(registry, Harness())
    expected = (
        E.NONE if version == 0 else E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION
    )
    assert commit(d, version, [("t", 0)], generation=5) == [expected]
    # the group's partition of __consumer_offsets is not loaded here
    unloaded = group_dispatcher(registry, Harness(load=False))
    assert commit(unloaded, version, [("t", 0), ("nope", 0)]) == [
        E.NOT_COORDINATOR,
        E.UNKNOWN_TOPIC_OR_PARTITION,
    ]


def fetch_request(version: int, partitions: list[tuple[str, int]] | None) -> Any:
    if version >= 8:
        topics = None
        if partitions is not None:
            topics = [
                OffsetFetchRequestTopics(name=t, partition_indexes=[p]) for t, p in partitions
            ]
        return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP, topics=topics)])
    topics = None
    if partitions is not None:
        topics = [OffsetFetchRequestTopic(name=t, partition_indexes=[p]) for t, p in partitions]
    return OffsetFetchRequest(group_id=GROUP, topics=topics)


def fetch_offsets(
    d: Dispatcher, version: int, partitions: list[tuple[str, int]] | None
) -> tuple[int, list[tuple[str, int, int, int, int]]]:
    """(the group's error, [(topic, partition, offset, leader epoch, error)])."""
    response = call(d, FakeConnection(session()), fetch_request(version, partitions), version)
    if version >= 8:
        (group,) = response.groups
        code, topics = group.error_code, group.topics
    else:
        code, topics = (response.error_code if version >= 2 else E.NONE), response.topics
    return code, [
        (t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.error_code)
        for t in topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", range(10))
def test_offset_fetch_by_version(registry: Any, version: int) -> None:
    h = Harness()
    d = group_dispatcher(registry, h)
    assert commit(d, 9, [("t", 0)]) == [E.NONE]
    epoch = EPOCH if version >= 5 else -1  # the leader epoch is answered from v5 on
    code, partitions = fetch_offsets(d, version, [("t", 0), ("t", 1)])
    assert code == E.NONE
    assert partitions == [("t", 0, 10, epoch, E.NONE), ("t", 1, -1, -1, E.NONE)]
    if version >= 2:  # a null topic list (v2+) asks for every committed offset
        assert fetch_offsets(d, version, None) == (E.NONE, [("t", 0, 10, epoch, E.NONE)])


@pytest.mark.parametrize("version", range(10))
def test_offset_fetch_not_coordinator_by_version(registry: Any, version: int) -> None:
    """The group's error: in each partition (v0-1), at the top (v2-7, no partitions), in the
    group (v8+)."""
    d = group_dispatcher(registry, Harness(load=False))
    code, partitions = fetch_offsets(d, version, [("t", 0)])
    if version < 2:
        assert (code, partitions) == (E.NONE, [("t", 0, -1, -1, E.NOT_COORDINATOR)])
    else:
        assert (code, partitions) == (E.NOT_COORDINATOR, [])
