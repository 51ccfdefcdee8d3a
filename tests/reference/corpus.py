"""The differential scenario corpus (issue 15): requests sent alike to Apache Kafka and to
Odradek, whose answers tests/reference/test_differential.py compares.

Every API Odradek advertises gets a scenario at every version it advertises (``api_scenarios``),
and the edge cases young brokers get wrong get their own (``edge_scenarios``): unknown topics and
partitions, offsets out of range, ListOffsets earliest/latest/max-timestamp/by time, a fetch whose
max_bytes is smaller than a batch, invalid configs, bad topic names and replica counts,
DeleteRecords past the high watermark, commits from unknown members and stale generations,
idempotent sequence gaps and duplicates, unsupported versions, null versus empty topic lists.

Each scenario creates what it uses under a name made of the run's prefix and its own name, so the
two brokers see the same names and no scenario sees another's. Record timestamps are fixed, so
the records each side stores are the same records.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

from protocol import otlp
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    QuotaAlteration,
    QuotaAlterationOp,
    QuotaEntityComponent,
)
from protocol.messages.alter_configs import AlterableConfig, AlterConfigsRequest
from protocol.messages.alter_configs import AlterConfigsResource as AlterResource
from protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.create_acls import AclCreation, CreateAclsRequest
from protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    QuotaFilterComponent,
)
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.describe_log_dirs import DescribableLogDirTopic, DescribeLogDirsRequest
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_producers import TopicRequest as DescribeProducersTopicRequest
from protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
)
from protocol.messages.describe_topic_partitions import TopicRequest as DescribeTopicRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    ScramUserName,
)
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.messages.elect_leaders import TopicPartitions as ElectLeadersTopicPartitions
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.incremental_alter_configs import AlterableConfig as IncConfig
from protocol.messages.incremental_alter_configs import AlterConfigsResource as IncResource
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from protocol.messages.list_config_resources import ListConfigResourcesRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
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
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.messages.push_telemetry import PushTelemetryRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from protocol.messages.update_features import FeatureUpdateKey, UpdateFeaturesRequest
from protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from protocol.records.legacy import build_message_set
from protocol.records.memory import iter_any_batches
from protocol.records.record import Record, RecordBatchBuilder, SimpleRecord, build_batch
from protocol.schema import Message
from tests.support.differential import Context, Exchange, RawRequest, Scenario

#: The base of record timestamps, fixed for a run so both brokers store the same records: a
#: day before the run, to the hour. Recent enough that neither broker's retention (a week by
#: default; Kafka checks 30 s after start, then every log.retention.check.interval.ms) deletes
#: a scenario's records between its produce and its read, as it did with a fixed 2023 base
#: (Kafka 4.x answered a read_committed fetch OFFSET_OUT_OF_RANGE); old enough for a topic's
#: message.timestamp.before.max.ms of an hour to refuse them.
T0 = (int(time.time()) // 3600 - 24) * 3600 * 1000
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8
ZSTD = 4

#: Versions the setup steps use (both references and Odradek speak them).
V_CREATE = 7
V_PRODUCE = 9
V_FETCH = 12
V_METADATA = 12
V_JOIN = 7
V_SYNC = 5
V_COMMIT = 8
V_OFFSET_FETCH = 7


#: The versions Odradek advertises, by API key (its ApiVersions answer), set by api_scenarios.
_ADVERTISED: dict[int, tuple[int, int]] = {}


def versions(api: ApiKey) -> range:
    """Every version Odradek advertises for ``api`` (none when it does not advertise it)."""
    lo, hi = _ADVERTISED.get(int(api), (0, -1))
    return range(lo, hi + 1)


# --- request builders -------------------------------------------------------------------------


def create_topic(
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str] | None = None,
    *,
    validate_only: bool = False,
) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=replication,
                assignments=[],
                configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
            )
        ],
        timeout_ms=30000,
        validate_only=validate_only,
    )


def capture_topic_ids(ctx: Context, response: Any) -> None:
    for topic in response.topics:
        if getattr(topic, "topic_id", None) is not None and topic.name:
            ctx.topic_ids[topic.name] = topic.topic_id


def _error_codes(answer: Any) -> Any:
    return [(t["name"], t["error_code"]) for t in answer["topics"]]


def setup_topic(name: str, partitions: int = 1, **configs: str) -> Exchange:
    """Creates a topic the scenario uses; compares only the outcome (create_topics/* scenarios
    compare whole CreateTopics answers)."""
    return Exchange(
        create_topic(name, partitions, configs=configs),
        V_CREATE,
        capture_topic_ids,
        label="setup create_topics",
        project=_error_codes,
    )


def find_group_coordinator(group: str, *, version: int = 3) -> Exchange:
    """What a client does before it speaks to a group."""
    return Exchange(FindCoordinatorRequest(key=group, key_type=0), version)


#: A topic id no broker has.
RANDOM_ID = uuid.UUID("5f1d6a0e-7c1b-4c3e-9d8e-0123456789ab")


def only_topics(prefix: str) -> Callable[[Any], Any]:
    """A Metadata answer reduced to the topics whose name starts with ``prefix`` (other tests'
    topics share the session's brokers)."""

    def project(answer: Any) -> Any:
        return {
            **answer,
            "topics": [t for t in answer["topics"] if (t["name"] or "").startswith(prefix)],
        }

    return project


def only_groups(prefix: str) -> Callable[[Any], Any]:
    """A ListGroups answer reduced to the groups whose id starts with ``prefix``."""

    def project(answer: Any) -> Any:
        return {
            **answer,
            "groups": [g for g in answer["groups"] if g["group_id"].startswith(prefix)],
        }

    return project


def records(count: int, *, start: int = 0, key: bytes | None = b"k") -> list[SimpleRecord]:
    return [
        SimpleRecord(
            value=b"value-%d" % (start + i),
            key=key,
            timestamp=T0 + 10 * (start + i),
            headers=[("h", b"%d" % i)] if i % 2 else [],
        )
        for i in range(count)
    ]


def record_bytes(
    version: int,
    count: int = 3,
    *,
    start: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """Records in the format Produce ``version`` carries: magic 0 (v0-1), 1 (v2), 2 (v3+)."""
    if version < 3:
        return build_message_set(
            records(count, start=start), magic=0 if version < 2 else 1, compression=compression
        )
    return build_batch(
        records(count, start=start),
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def produce(
    topic: str,
    data: bytes | Callable[[Context], bytes],
    *,
    partition: int = 0,
    acks: int = -1,
    version: int = V_PRODUCE,
    label: str = "",
    transactional_id: str | None = None,
) -> Exchange:
    def build(ctx: Context) -> Message:
        blob = data(ctx) if callable(data) else data
        return ProduceRequest(
            transactional_id=transactional_id,
            acks=acks,
            timeout_ms=30000,
            topic_data=[
                TopicProduceData(
                    name=topic if version < 13 else "",
                    topic_id=ctx.topic_id(topic),
                    partition_data=[PartitionProduceData(index=partition, records=blob)],
                )
            ],
        )

    return Exchange(build, version, label=label)


def fetch(
    topic: str,
    *,
    offset: int = 0,
    partition: int = 0,
    version: int = V_FETCH,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    session_epoch: int = -1,
    topic_id: Callable[[Context], Any] | None = None,
    label: str = "",
    current_leader_epoch: int = -1,
    last_fetched_epoch: int = -1,
    isolation_level: int = 0,
) -> Exchange:
    def build(ctx: Context) -> Message:
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=max_bytes,
            isolation_level=isolation_level,
            session_id=0,
            session_epoch=session_epoch,
            topics=[
                FetchTopic(
                    topic=topic,
                    topic_id=topic_id(ctx) if topic_id else ctx.topic_id(topic),
                    partitions=[
                        FetchPartition(
                            partition=partition,
                            current_leader_epoch=current_leader_epoch,
                            fetch_offset=offset,
                            last_fetched_epoch=last_fetched_epoch,
                            log_start_offset=-1,
                            partition_max_bytes=partition_max_bytes,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        )

    return Exchange(build, version, label=label)


#: A fetch session id no broker handed out.
UNKNOWN_SESSION = 0x5E55_1011


def session_fetch(
    topic: str,
    offsets: dict[int, int],
    *,
    version: int,
    epoch: int,
    forget: list[int] | None = None,
    session: Callable[[Context], int] | None = None,
    label: str = "",
) -> Exchange:
    """A consumer's fetch in a KIP-227 session: epoch 0 opens one (its id is kept from the
    answer), a later epoch is incremental (``offsets``: the partitions whose fetch offset
    changed; ``forget``: partitions to drop), -1 closes it. ``session`` overrides the id."""

    def build(ctx: Context) -> Message:
        sid = session(ctx) if session is not None else ctx.values.get("session", 0)
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0 if epoch == 0 else sid,
            session_epoch=epoch,
            topics=[
                FetchTopic(
                    topic=topic,
                    topic_id=ctx.topic_id(topic),
                    partitions=[
                        FetchPartition(
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=o,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                        for p, o in sorted(offsets.items())
                    ],
                )
            ]
            if offsets
            else [],
            forgotten_topics_data=[
                ForgottenTopic(topic=topic, topic_id=ctx.topic_id(topic), partitions=forget)
            ]
            if forget
            else [],
            rack_id="",
        )

    def capture(ctx: Context, response: Any) -> None:
        if epoch == 0 and response.error_code == 0:
            ctx.values["session"] = response.session_id

    return Exchange(build, version, capture, label=label)


def _topic_gone(response: Any) -> bool:
    """Whether a Metadata response answers every topic UNKNOWN_TOPIC_OR_PARTITION."""
    return all(t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for t in response.topics)


def _topic_led(response: Any) -> bool:
    """Whether a Metadata response answers every topic with a leader for each partition."""
    return all(
        t.error_code == 0 and t.partitions and all(x.leader_id >= 0 for x in t.partitions)
        for t in response.topics
    )


def _sorted_quota_entries(answer: Any) -> Any:
    """A DescribeClientQuotas answer with its entries in entity order (Kafka lists them in its
    map's order)."""
    entries = answer.get("entries")
    if entries:
        answer = {**answer, "entries": sorted(entries, key=lambda e: repr(e["entity"]))}
    return answer


def _session_of_a_deleted_topic(topic: str, version: int) -> list[Exchange]:
    """A fetch session opened on a topic of 2 partitions, then the topic deleted. Metadata is
    asked until the topic is gone, before the session fetches again: a partition being deleted
    may answer NOT_LEADER_OR_FOLLOWER for a moment, and asking the fetch again would reuse its
    session epoch (INVALID_FETCH_SESSION_EPOCH)."""
    deleted = metadata([topic], label="until the topic is gone")
    deleted.until = _topic_gone
    return [
        setup_topic(topic, 2),
        produce(topic, record_bytes(V_PRODUCE, 2)),
        session_fetch(topic, {0: 0, 1: 0}, version=version, epoch=0, label="full"),
        Exchange(DeleteTopicsRequest(topic_names=[topic], timeout_ms=30000), 4),
        deleted,
    ]


def describe_topic_partitions(
    names: list[str] | None,
    limit: int,
    *,
    version: int,
    cursor: tuple[str, int] | None = None,
    label: str = "",
    project: Callable[[Any], Any] | None = None,
) -> Exchange:
    return Exchange(
        DescribeTopicPartitionsRequest(
            topics=[DescribeTopicRequest(name=n) for n in names or []],
            response_partition_limit=limit,
            cursor=Cursor(topic_name=cursor[0], partition_index=cursor[1]) if cursor else None,
        ),
        version,
        label=label,
        project=project,
    )


def list_offsets(
    topic: str,
    timestamps: list[int],
    *,
    version: int,
    partition: int = 0,
    isolation_level: int = 0,
    current_leader_epoch: int = -1,
    label: str = "",
) -> Exchange:
    # One partition per request: Kafka refuses duplicate partitions in one ListOffsets.
    return Exchange(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsPartition(
                            partition_index=partition,
                            current_leader_epoch=current_leader_epoch,
                            timestamp=ts,
                            max_num_offsets=1,
                        )
                        for ts in timestamps
                    ],
                )
            ],
            timeout_ms=30000,
        ),
        version,
        label=label,
    )


def metadata(
    topics: list[str] | None,
    *,
    version: int = V_METADATA,
    auto: bool = False,
    topic_operations: bool = False,
    label: str = "",
    project: Callable[[Any], Any] | None = None,
) -> Exchange:
    return Exchange(
        MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=topic_operations,
        ),
        version,
        label=label,
        project=project,
    )


def commit(
    group: str,
    topic: str,
    offset: int,
    *,
    version: int = V_COMMIT,
    generation: int | Callable[[Context], int] = -1,
    member: str | Callable[[Context], str] = "",
    partition: int = 0,
    label: str = "",
    instance: str | None = None,
    metadata: str = "meta",
) -> Exchange:
    def build(ctx: Context) -> Message:
        return OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation(ctx) if callable(generation) else generation,
            member_id=member(ctx) if callable(member) else member,
            group_instance_id=instance,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequestTopic(
                    name=topic,
                    # v10 names topics by id (the zero id for a topic never created)
                    topic_id=ctx.topic_id(topic),
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=partition,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            commit_timestamp=-1,
                            committed_metadata=metadata,
                        )
                    ],
                )
            ],
        )

    return Exchange(build, version, label=label)


def offset_fetch(
    group: str,
    topics: dict[str, list[int]] | None,
    *,
    version: int = V_OFFSET_FETCH,
    require_stable: bool = False,
    label: str = "",
    until: Callable[[Any], bool] | None = None,
) -> Exchange:
    if version >= 8:

        def build(ctx: Context) -> Message:
            return OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id=group,
                        topics=None
                        if topics is None
                        else [
                            # v10 names topics by id (the zero id for a topic never created)
                            OffsetFetchRequestTopics(
                                name=t, topic_id=ctx.topic_id(t), partition_indexes=p
                            )
                            for t, p in topics.items()
                        ],
                    )
                ],
                require_stable=require_stable,
            )

        return Exchange(build, version, label=label, until=until)
    else:
        request = OffsetFetchRequest(
            group_id=group,
            topics=None
            if topics is None
            else [OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in topics.items()],
            require_stable=require_stable,
        )
    return Exchange(request, version, label=label, until=until)


def offset_delete(group: str, topic: str, *, label: str = "offset delete") -> Exchange:
    """OffsetDelete of the topic's partition 0."""
    return Exchange(
        OffsetDeleteRequest(
            group_id=group,
            topics=[
                OffsetDeleteRequestTopic(
                    name=topic, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        0,
        label=label,
    )


def end_offsets_of_epochs(
    topic: str,
    epochs: list[int],
    *,
    version: int,
    current_leader_epoch: int = -1,
    partition: int = 0,
    label: str = "",
) -> Exchange:
    """A consumer's OffsetForLeaderEpoch (replica id -1) of the partition's ``epochs``."""
    return Exchange(
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderTopic(
                    topic=topic,
                    partitions=[
                        OffsetForLeaderPartition(
                            partition=partition,
                            current_leader_epoch=current_leader_epoch,
                            leader_epoch=e,
                        )
                        for e in epochs
                    ],
                )
            ],
        ),
        version,
        label=label,
    )


def keyed_batch(
    pairs: list[tuple[bytes, bytes | None]],
    start: int,
    *,
    producer: str | None = None,
    sequence: int = -1,
    transactional: bool = False,
) -> Callable[[Context], bytes]:
    """A batch of (key, value) records (a None value: a tombstone); an idempotent or
    transactional producer's when ``producer`` names the context value holding its id."""

    def build(ctx: Context) -> bytes:
        pid, epoch = ctx.values.get(producer, (-1, -1)) if producer else (-1, -1)
        return build_batch(
            [
                SimpleRecord(value=v, key=k, timestamp=T0 + start + i)
                for i, (k, v) in enumerate(pairs)
            ],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=sequence,
            transactional=transactional,
        )

    return build


def compacted_topic(name: str) -> Exchange:
    """A compacted topic whose segments roll at 1 KiB, and that the cleaner cleans as soon as
    a segment is rolled (Kafka's cleaner looks every 15 s)."""
    return setup_topic(
        name,
        **{
            "cleanup.policy": "compact",
            "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )


def compaction_checks(topic: str, offset: int, *, retained: list[int]) -> list[Exchange]:
    """A batch too big for the segment rolls the log at ``offset``; then the cleaned segment is
    fetched, asked again until its records' offsets are ``retained`` (the cleaner has run), and
    the active segment and the log's bounds are checked."""

    def cleaned(response: Any) -> bool:
        data = response.responses[0].partitions[0].records
        found = [r.offset for b in iter_any_batches(bytes(data or b"")) for r in b.records]
        return found == retained

    compacted = fetch(topic, label="cleaned")
    compacted.until, compacted.until_timeout = cleaned, 90.0
    return [
        produce(topic, keyed_batch([(b"k9", b"z" * 900)], offset), label="roll"),
        compacted,
        fetch(topic, offset=offset, label="the active segment"),
        list_offsets(topic, [-2], version=7, label="earliest"),
        list_offsets(topic, [-1], version=7, label="latest"),
    ]


def subscription(topic: str) -> bytes:
    """A ConsumerProtocolSubscription v0 (what a Java consumer sends in JoinGroup)."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """A ConsumerProtocolAssignment v0."""
    name = topic.encode()
    body = struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    return body + struct.pack(">i", -1)


def member_of(key: str) -> Callable[[Context], str]:
    return lambda ctx: str(ctx.values.get(f"{key}.member", ""))


def generation_of(key: str, delta: int = 0) -> Callable[[Context], int]:
    return lambda ctx: int(ctx.values.get(f"{key}.generation", -1)) + delta


def join(
    group: str,
    topic: str,
    *,
    version: int = V_JOIN,
    key: str = "m",
    label: str = "",
    instance: str | None = None,
    session_ms: int = 10000,
    rebalance_ms: int = 10000,
) -> Exchange:
    def build(ctx: Context) -> Message:
        return JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=str(ctx.values.get(f"{key}.member", "")),
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription(topic))],
            reason=None,
        )

    def capture(ctx: Context, response: Any) -> None:
        if response.member_id:
            ctx.values[f"{key}.member"] = response.member_id
        if response.generation_id >= 0:
            ctx.values[f"{key}.generation"] = response.generation_id

    return Exchange(build, version, capture, label=label)


def sync(
    group: str,
    topic: str,
    *,
    version: int = V_SYNC,
    key: str = "m",
    instance: str | None = None,
    label: str = "",
) -> Exchange:
    def build(ctx: Context) -> Message:
        member = member_of(key)(ctx)
        return SyncGroupRequest(
            group_id=group,
            generation_id=generation_of(key)(ctx),
            member_id=member,
            group_instance_id=instance,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                SyncGroupRequestAssignment(member_id=member, assignment=assignment(topic, [0]))
            ],
        )

    return Exchange(build, version, label=label)


def heartbeat(
    group: str, *, version: int = 4, key: str = "m", label: str = "", instance: str | None = None
) -> Exchange:
    def build(ctx: Context) -> Message:
        return HeartbeatRequest(
            group_id=group,
            generation_id=generation_of(key)(ctx),
            member_id=member_of(key)(ctx),
            group_instance_id=instance,
        )

    return Exchange(build, version, label=label)


def leave(group: str, *, version: int = 5, key: str = "m") -> Exchange:
    def build(ctx: Context) -> Message:
        member = member_of(key)(ctx)
        return LeaveGroupRequest(
            group_id=group,
            member_id=member,
            members=[MemberIdentity(member_id=member, group_instance_id=None, reason=None)],
        )

    return Exchange(build, version)


def join_and_sync(group: str, topic: str, *, join_version: int = V_JOIN) -> list[Exchange]:
    """A single member joins (and, from v4, rejoins with the member id it was given) and syncs."""
    steps = [find_group_coordinator(group), join(group, topic, version=join_version)]
    if join_version >= 4:
        steps.append(join(group, topic, version=join_version, label="rejoin"))
    steps.append(sync(group, topic))
    return steps


def describe_groups(groups: list[str], *, version: int = 5) -> Exchange:
    return Exchange(
        DescribeGroupsRequest(groups=groups, include_authorized_operations=False), version
    )


def describe_configs(
    resource_type: int,
    name: str,
    keys: list[str] | None,
    *,
    version: int = 4,
    synonyms: bool = True,
    documentation: bool = False,
) -> Exchange:
    return Exchange(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=keys
                )
            ],
            include_synonyms=synonyms,
            include_documentation=documentation,
        ),
        version,
    )


def alter_configs(
    name: str,
    configs: dict[str, str | None],
    *,
    version: int = 2,
    validate_only: bool = False,
    resource_type: int = TOPIC_RESOURCE,
    label: str = "",
) -> Exchange:
    return Exchange(
        AlterConfigsRequest(
            resources=[
                AlterResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[AlterableConfig(name=k, value=v) for k, v in configs.items()],
                )
            ],
            validate_only=validate_only,
        ),
        version,
        label=label,
    )


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def incremental_alter(
    name: str,
    ops: list[tuple[str, int, str | None]],
    *,
    version: int = 1,
    resource_type: int = TOPIC_RESOURCE,
    validate_only: bool = False,
    label: str = "",
) -> Exchange:
    return Exchange(
        IncrementalAlterConfigsRequest(
            resources=[
                IncResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[IncConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
                )
            ],
            validate_only=validate_only,
        ),
        version,
        label=label,
    )


def delete_records(topic: str, offsets: dict[int, int], *, version: int = 2) -> Exchange:
    return Exchange(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name=topic,
                    partitions=[
                        DeleteRecordsPartition(partition_index=p, offset=o)
                        for p, o in offsets.items()
                    ],
                )
            ],
            timeout_ms=30000,
        ),
        version,
    )


def init_producer_id(*, version: int = 4, key: str = "pid") -> Exchange:
    def capture(ctx: Context, response: Any) -> None:
        ctx.values[key] = (response.producer_id, response.producer_epoch)

    return Exchange(
        InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        ),
        version,
        capture,
    )


def idempotent_batch(
    count: int, *, sequence: int, start: int, key: str = "pid", epoch_delta: int = 0
) -> Callable[[Context], bytes]:
    def build(ctx: Context) -> bytes:
        pid, epoch = ctx.values.get(key, (-1, -1))
        return record_bytes(
            V_PRODUCE,
            count,
            start=start,
            producer_id=pid,
            producer_epoch=epoch + epoch_delta,
            base_sequence=sequence,
        )

    return build


# --- one scenario per API and version ----------------------------------------------------------


def api_scenarios(prefix: str, advertised: dict[int, tuple[int, int]]) -> list[Scenario]:
    """A scenario for every version of every API in ``advertised`` (Odradek's ApiVersions)."""
    _ADVERTISED.clear()
    _ADVERTISED.update(advertised)
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"{name}", exchanges))

    for v in versions(ApiKey.API_VERSIONS):
        add(
            f"api_versions/v{v}",
            [
                Exchange(
                    ApiVersionsRequest(
                        client_software_name="odradek-diff", client_software_version="1.0"
                    ),
                    v,
                )
            ],
        )

    # KIP-511: a software name or version outside [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
    for v in (v for v in versions(ApiKey.API_VERSIONS) if v >= 3):
        add(
            f"api_versions/v{v}-malformed-software",
            [
                Exchange(
                    ApiVersionsRequest(
                        client_software_name="odradek diff", client_software_version="1.0+x"
                    ),
                    v,
                )
            ],
        )

    # v5: the cluster and the broker the client means to reach (both or neither); another
    # cluster's id or another broker's is REBOOTSTRAP_REQUIRED
    if 5 in versions(ApiKey.API_VERSIONS):

        def keep_cluster(ctx: Context, response: Any) -> None:
            ctx.values["cluster_id"] = response.cluster_id
            ctx.values["node_id"] = response.brokers[0].broker_id

        def reaching(cluster: str | None, node: int | None, label: str) -> Exchange:
            def build(ctx: Context) -> Message:
                return ApiVersionsRequest(
                    client_software_name="odradek-diff",
                    client_software_version="1.0",
                    cluster_id=ctx.values.get("cluster_id") if cluster == "ours" else cluster,
                    node_id=ctx.values.get("node_id", 0) if node is None else node,
                )

            def outcome(answer: Any) -> Any:
                return {"error_code": answer["error_code"], "listed": bool(answer["api_keys"])}

            return Exchange(build, 5, project=outcome, label=label)

        add(
            "api_versions/v5-cluster-and-node",
            [
                Exchange(
                    DescribeClusterRequest(include_cluster_authorized_operations=False),
                    0,
                    keep_cluster,
                    label="the cluster's id",
                    project=lambda answer: answer["error_code"],
                ),
                reaching(None, -1, "neither"),
                reaching("ours", None, "this cluster and this broker"),
                reaching("ours", -1, "a cluster without a node"),
                reaching(None, None, "a node without a cluster"),
                reaching("", -1, "an empty cluster id without a node"),
                reaching("ours", 7, "another broker"),
                reaching("ours", -5, "a negative node id"),
                reaching("AAAAAAAAAAAAAAAAAAAAAA", None, "another cluster"),
                reaching("", None, "an empty cluster id"),
            ],
        )

    for v in versions(ApiKey.METADATA):
        t = f"{prefix}-md{v}"
        add(
            f"metadata/v{v}",
            [setup_topic(t, 2), metadata([t, f"{prefix}-md{v}-missing"], version=v, auto=False)],
        )

    for v in versions(ApiKey.PRODUCE):
        t = f"{prefix}-pr{v}"
        steps = [
            setup_topic(t),
            produce(t, record_bytes(v, 3), version=v),
            produce(t, record_bytes(v, 2, start=3), version=v, label="second produce"),
            produce(t, record_bytes(v, 1), version=v, partition=7, label="unknown partition"),
            fetch(t, label="read back"),
        ]
        if v < 13:
            steps.append(
                produce(f"{t}-missing", record_bytes(v, 1), version=v, label="unknown topic")
            )
        add(f"produce/v{v}", steps)

    for v in versions(ApiKey.FETCH):
        t = f"{prefix}-fe{v}"
        add(
            f"fetch/v{v}",
            [
                setup_topic(t),
                produce(t, record_bytes(V_PRODUCE, 3)),
                produce(t, record_bytes(V_PRODUCE, 2, start=3)),
                fetch(t, version=v),
                fetch(t, version=v, offset=3, label="from the second batch"),
                fetch(t, version=v, offset=5, label="at the end"),
                fetch(t, version=v, offset=1000, label="out of range"),
                fetch(t, version=v, partition=4, label="unknown partition"),
            ],
        )

    for v in versions(ApiKey.LIST_OFFSETS):
        t = f"{prefix}-lo{v}"
        steps = [setup_topic(t), produce(t, record_bytes(V_PRODUCE, 3))]
        specs: list[tuple[str, int]] = [("latest", -1), ("earliest", -2)]
        if v >= 1:
            specs += [("by time", T0 + 5), ("after the last", T0 + 1000), ("by exact time", T0)]
        if v >= 7:
            specs.append(("max timestamp", -3))
        if v >= 8:
            specs.append(("earliest local", -4))
        if v >= 1:
            # the sentinels later versions introduced, and unknown ones: UNSUPPORTED_VERSION
            # before their version (v9 latest tiered, v11 earliest pending upload: -1 and -1
            # without tiered storage)
            specs += [
                (f"sentinel {ts}", ts)
                for ts in (-3, -4, -5, -6, -7, -100)
                if ts < -4 or (ts == -3 and v < 7) or (ts == -4 and v < 8)
            ]
        for label, ts in specs:
            ex = list_offsets(t, [ts], version=v)
            ex.label = label
            steps.append(ex)
        bad = list_offsets(t, [-1], version=v, partition=9)
        bad.label = "unknown partition"
        steps.append(bad)
        add(f"list_offsets/v{v}", steps)

    for v in versions(ApiKey.OFFSET_COMMIT):
        t, g = f"{prefix}-oc{v}", f"{prefix}-oc{v}-group"
        add(
            f"offset_commit/v{v}",
            [
                setup_topic(t),
                find_group_coordinator(g),
                commit(g, t, 5, version=v),
                offset_fetch(g, {t: [0]}, version=min(v, 7) if v else 0),
                commit(g, t, 6, version=v, partition=3, label="unknown partition"),
                *(
                    [commit(g, f"{t}-missing", 6, version=v, label="unknown topic id")]
                    if v >= 10
                    else []
                ),
            ],
        )

    for v in versions(ApiKey.OFFSET_FETCH):
        t, g = f"{prefix}-of{v}", f"{prefix}-of{v}-group"
        steps = [
            setup_topic(t, 2),
            find_group_coordinator(g),
            commit(g, t, 5, version=0 if v == 0 else V_COMMIT),
            offset_fetch(g, {t: [0, 1]}, version=v),
            offset_fetch(f"{g}-none", {t: [0]}, version=v),
        ]
        if v >= 2:
            steps.append(offset_fetch(g, None, version=v))
        if v >= 10:
            steps.append(
                offset_fetch(g, {t: [0, 5], f"{t}-missing": [0]}, version=v, label="by topic id")
            )
        add(f"offset_fetch/v{v}", steps)

    for v in versions(ApiKey.FIND_COORDINATOR):
        g = f"{prefix}-fc{v}-group"
        if v < 4:
            req = FindCoordinatorRequest(key=g, key_type=0)
        else:
            req = FindCoordinatorRequest(key_type=0, coordinator_keys=[g, f"{g}-2"])
        add(f"find_coordinator/v{v}", [Exchange(req, v)])

    for v in versions(ApiKey.JOIN_GROUP):
        t, g = f"{prefix}-jg{v}", f"{prefix}-jg{v}-group"
        add(
            f"join_group/v{v}",
            [
                setup_topic(t),
                *join_and_sync(g, t, join_version=v),
                heartbeat(g),
                leave(g),
            ],
        )

    for v in versions(ApiKey.SYNC_GROUP):
        t, g = f"{prefix}-sg{v}", f"{prefix}-sg{v}-group"
        add(
            f"sync_group/v{v}",
            [
                setup_topic(t),
                find_group_coordinator(g),
                join(g, t),
                join(g, t, label="rejoin"),
                sync(g, t, version=v),
                leave(g),
            ],
        )

    for v in versions(ApiKey.HEARTBEAT):
        t, g = f"{prefix}-hb{v}", f"{prefix}-hb{v}-group"
        add(
            f"heartbeat/v{v}",
            [
                setup_topic(t),
                *join_and_sync(g, t),
                heartbeat(g, version=v),
                leave(g),
                heartbeat(g, version=v, label="after leaving"),
            ],
        )

    for v in versions(ApiKey.LEAVE_GROUP):
        t, g = f"{prefix}-lg{v}", f"{prefix}-lg{v}-group"
        add(
            f"leave_group/v{v}",
            [setup_topic(t), *join_and_sync(g, t), leave(g, version=v), describe_groups([g])],
        )

    for v in versions(ApiKey.DESCRIBE_GROUPS):
        t, g = f"{prefix}-dg{v}", f"{prefix}-dg{v}-group"
        add(
            f"describe_groups/v{v}",
            [
                setup_topic(t),
                *join_and_sync(g, t),
                describe_groups([g, f"{g}-unknown"], version=v),
                leave(g),
                describe_groups([g], version=v),
            ],
        )

    for v in versions(ApiKey.LIST_GROUPS):
        t, g = f"{prefix}-li{v}", f"{prefix}-li{v}-group"
        request = ListGroupsRequest(
            states_filter=["Empty"] if v >= 4 else [], types_filter=["classic"] if v >= 5 else []
        )
        add(
            f"list_groups/v{v}",
            [
                setup_topic(t),
                find_group_coordinator(g),
                commit(g, t, 1),
                Exchange(request, v, label="listed", project=only_groups(g)),
            ],
        )

    for v in versions(ApiKey.CREATE_TOPICS):
        t = f"{prefix}-ct{v}"

        def created(name: str, v: int = v, label: str = "", **kw: Any) -> Exchange:
            return Exchange(create_topic(name, **kw), v, capture_topic_ids, label=label)

        steps = [
            created(t, partitions=2, configs={"retention.ms": "3600000"}),
            created(t, label="duplicate"),
            created(f"{t}/bad", label="bad name"),
            created("x" * 250, label="name too long"),
            created(f"{t}-rf", replication=3, label="more replicas than brokers"),
            created(f"{t}-zero", partitions=0, label="zero partitions"),
            created(f"{t}-badcfg", configs={"retention.ms": "soon"}, label="invalid config value"),
            created(f"{t}-unknowncfg", configs={"no.such.config": "1"}, label="unknown config"),
        ]
        if v >= 1:
            steps.append(created(f"{t}-validate", validate_only=True, label="validate only"))
        if v >= 4:
            steps.append(
                created(f"{t}-default", partitions=-1, replication=-1, label="broker defaults")
            )
        add(f"create_topics/v{v}", steps)

    for v in versions(ApiKey.DELETE_TOPICS):
        t = f"{prefix}-dt{v}"
        if v < 6:
            req: Callable[[Context], Message] | Message = DeleteTopicsRequest(
                topic_names=[t, f"{t}-missing"], timeout_ms=30000
            )
        else:

            def req(ctx: Context, t: str = t) -> Message:
                return DeleteTopicsRequest(
                    topics=[
                        DeleteTopicState(name=t, topic_id=ctx.topic_id("")),
                        DeleteTopicState(name=f"{t}-missing", topic_id=ctx.topic_id("")),
                    ],
                    timeout_ms=30000,
                )

        add(f"delete_topics/v{v}", [setup_topic(t), Exchange(req, v)])

    for v in versions(ApiKey.DELETE_RECORDS):
        t = f"{prefix}-dr{v}"
        add(
            f"delete_records/v{v}",
            [
                setup_topic(t),
                produce(t, record_bytes(V_PRODUCE, 5)),
                delete_records(t, {0: 2}, version=v),
                delete_records(t, {0: 10}, version=v),
                delete_records(t, {0: -1}, version=v),
                delete_records(t, {5: 1}, version=v),
                list_offsets(t, [-2], version=7),
            ],
        )

    for v in versions(ApiKey.INIT_PRODUCER_ID):
        add(f"init_producer_id/v{v}", [init_producer_id(version=v)])

    for v in versions(ApiKey.OFFSET_FOR_LEADER_EPOCH):
        t = f"{prefix}-oe{v}"

        def epochs(v: int = v, t: str = t, current: int = -1, partition: int = 0) -> Exchange:
            return end_offsets_of_epochs(
                t, [0, 7], version=v, current_leader_epoch=current, partition=partition
            )

        steps = [setup_topic(t), produce(t, record_bytes(V_PRODUCE, 3)), epochs()]
        if v >= 2:
            steps += [epochs(current=5), epochs(current=0)]
        steps.append(epochs(partition=3))
        add(f"offset_for_leader_epoch/v{v}", steps)

    for v in versions(ApiKey.DESCRIBE_CONFIGS):
        t = f"{prefix}-dc{v}"
        keys = ["retention.ms", "cleanup.policy", "min.insync.replicas", "max.message.bytes"]
        add(
            f"describe_configs/v{v}",
            [
                setup_topic(t, **{"retention.ms": "3600000"}),
                describe_configs(TOPIC_RESOURCE, t, keys, version=v, documentation=v >= 3),
                describe_configs(TOPIC_RESOURCE, f"{t}-missing", keys, version=v),
                describe_configs(
                    BROKER_RESOURCE, "0", ["num.partitions", "log.retention.hours"], version=v
                ),
            ],
        )

    for v in versions(ApiKey.ALTER_CONFIGS):
        t = f"{prefix}-ac{v}"
        add(
            f"alter_configs/v{v}",
            [
                setup_topic(t),
                alter_configs(
                    t, {"retention.ms": "7200000", "cleanup.policy": "compact"}, version=v
                ),
                describe_configs(TOPIC_RESOURCE, t, ["retention.ms", "cleanup.policy"]),
                alter_configs(t, {"retention.ms": "soon"}, version=v),
                alter_configs(t, {"no.such.config": "1"}, version=v),
                alter_configs(t, {"retention.ms": "1"}, version=v, validate_only=True),
                alter_configs(f"{t}-missing", {"retention.ms": "1"}, version=v),
                describe_configs(TOPIC_RESOURCE, t, ["retention.ms", "cleanup.policy"]),
            ],
        )

    for v in versions(ApiKey.INCREMENTAL_ALTER_CONFIGS):
        t = f"{prefix}-ia{v}"
        keys = ["retention.ms", "cleanup.policy", "segment.bytes"]
        add(
            f"incremental_alter_configs/v{v}",
            [
                setup_topic(t, **{"segment.bytes": "1048576"}),
                incremental_alter(
                    t,
                    [
                        ("retention.ms", SET, "7200000"),
                        ("cleanup.policy", APPEND, "compact"),
                        ("segment.bytes", DELETE, None),
                    ],
                    version=v,
                ),
                describe_configs(TOPIC_RESOURCE, t, keys),
                incremental_alter(t, [("cleanup.policy", SUBTRACT, "delete")], version=v),
                describe_configs(TOPIC_RESOURCE, t, keys),
                incremental_alter(t, [("retention.ms", SET, "soon")], version=v),
                incremental_alter(t, [("retention.ms", APPEND, "1")], version=v),
                incremental_alter(f"{t}-missing", [("retention.ms", SET, "1")], version=v),
            ],
        )
        # what ConfigAdminManager.preprocess refuses before the configs, the resource type or
        # the topic's existence: a key without a value (in any operation but DELETE), a key
        # given twice, a resource named twice
        twice = IncResource(
            resource_type=TOPIC_RESOURCE,
            resource_name=t,
            configs=[IncConfig(name="retention.ms", config_operation=SET, value="7200000")],
        )
        add(
            f"incremental_alter_configs/v{v}/preprocess",
            [
                setup_topic(t + "-pre"),
                *(
                    incremental_alter(t + "-pre", ops, version=v, validate_only=True, label=label)
                    for label, ops in (
                        ("SET without a value", [("retention.ms", SET, None)]),
                        ("SUBTRACT without a value", [("cleanup.policy", SUBTRACT, None)]),
                        ("DELETE without a value", [("retention.ms", DELETE, None)]),
                        ("an unknown key without a value", [("no.such.key", SET, None)]),
                        ("an unknown operation", [("retention.ms", 7, None)]),
                        ("two keys without values", [("retention.ms", SET, None),
                                                     ("segment.ms", APPEND, None)]),
                        ("a key twice", [("retention.ms", SET, "1"), ("retention.ms", SET, None)]),
                    )
                ),
                incremental_alter(
                    f"{t}-missing", [("retention.ms", SET, None)], version=v,
                    label="a topic that does not exist, without a value",
                ),
                incremental_alter(
                    "", [("log.cleaner.threads", SET, None)], version=v,
                    resource_type=BROKER_RESOURCE, label="a broker config without a value",
                ),
                Exchange(
                    IncrementalAlterConfigsRequest(resources=[twice, twice], validate_only=True),
                    v,
                    label="a resource twice",
                ),
            ],
        )  # fmt: skip

    for v in versions(ApiKey.CREATE_PARTITIONS):
        t = f"{prefix}-cp{v}"

        def grow(
            count: int,
            label: str,
            v: int = v,
            t: str = t,
            *,
            name: str | None = None,
            validate_only: bool = False,
            assignments: list[CreatePartitionsAssignment] | None = None,
        ) -> Exchange:
            return Exchange(
                CreatePartitionsRequest(
                    topics=[
                        CreatePartitionsTopic(name=name or t, count=count, assignments=assignments)
                    ],
                    timeout_ms=30000,
                    validate_only=validate_only,
                ),
                v,
                label=label,
            )

        add(
            f"create_partitions/v{v}",
            [
                setup_topic(t),
                grow(3, "grow to 3"),
                grow(2, "shrink"),
                grow(3, "same count"),
                grow(5, "validate only", validate_only=True),
                grow(
                    5,
                    "too few assignments",
                    assignments=[CreatePartitionsAssignment(broker_ids=[0])],
                ),
                grow(2, "unknown topic", name=f"{t}-missing"),
                metadata([t]),
            ],
        )

    for v in versions(ApiKey.DELETE_GROUPS):
        t, g = f"{prefix}-dl{v}", f"{prefix}-dl{v}-group"
        add(
            f"delete_groups/v{v}",
            [
                setup_topic(t),
                find_group_coordinator(g),
                commit(g, t, 1),
                *join_and_sync(f"{g}-active", t),
                Exchange(DeleteGroupsRequest(groups_names=[g, f"{g}-unknown", f"{g}-active"]), v),
                offset_fetch(g, {t: [0]}),
                leave(f"{g}-active"),
            ],
        )

    for v in versions(ApiKey.OFFSET_DELETE):
        t, g = f"{prefix}-od{v}", f"{prefix}-od{v}-group"

        def offset_delete(group: str, topic: str, partitions: list[int], v: int = v) -> Exchange:
            return Exchange(
                OffsetDeleteRequest(
                    group_id=group,
                    topics=[
                        OffsetDeleteRequestTopic(
                            name=topic,
                            partitions=[
                                OffsetDeleteRequestPartition(partition_index=p) for p in partitions
                            ],
                        )
                    ],
                ),
                v,
            )

        add(
            f"offset_delete/v{v}",
            [
                setup_topic(t, 2),
                find_group_coordinator(g),
                commit(g, t, 1),
                commit(g, t, 2, partition=1),
                offset_delete(g, t, [0]),
                offset_fetch(g, {t: [0, 1]}),
                offset_delete(f"{g}-unknown", t, [0]),
                *join_and_sync(f"{g}-active", t),
                commit(f"{g}-active", t, 1, generation=generation_of("m"), member=member_of("m")),
                offset_delete(f"{g}-active", t, [0]),
                leave(f"{g}-active"),
            ],
        )

    for v in versions(ApiKey.DESCRIBE_TOPIC_PARTITIONS):
        t = f"{prefix}-dtp{v}"
        a, b, missing = f"{t}-a", f"{t}-b", f"{t}-missing"

        def without_cursor(answer: Any, t: str = t) -> Any:
            # every topic of the cluster is listed: keep this scenario's, and no cursor (the
            # other topics differ between the two clusters)
            return {**only_topics(t)(answer), "next_cursor": None}

        add(
            f"describe_topic_partitions/v{v}",
            [
                setup_topic(a, 3),
                setup_topic(b, 2),
                describe_topic_partitions([b, a], 2, version=v, label="first page"),
                describe_topic_partitions([b, a], 2, version=v, cursor=(a, 2), label="next page"),
                describe_topic_partitions([a, b], 2, version=v, cursor=(b, 1), label="last page"),
                describe_topic_partitions([a, b], 3, version=v, label="a page ending a topic"),
                describe_topic_partitions([a, b], 2000, version=v, label="everything at once"),
                describe_topic_partitions(
                    [a, missing, "bad/name"], 10, version=v, label="unknown and illegal names"
                ),
                describe_topic_partitions(
                    None, 2000, version=v, label="every topic", project=without_cursor
                ),
                describe_topic_partitions(
                    [a], 10, version=v, cursor=(b, 0), label="cursor outside the topics"
                ),
                describe_topic_partitions(
                    [a], 10, version=v, cursor=(a, -1), label="negative cursor partition"
                ),
                describe_topic_partitions(
                    [a], 10, version=v, cursor=(a, 7), label="cursor past the partitions"
                ),
            ],
        )

    for v in versions(ApiKey.DESCRIBE_CLUSTER):
        steps = [Exchange(DescribeClusterRequest(include_cluster_authorized_operations=True), v)]
        if v >= 1:
            steps.append(Exchange(DescribeClusterRequest(endpoint_type=2), v, label="controllers"))
        add(f"describe_cluster/v{v}", steps)

    return out


# --- edge cases --------------------------------------------------------------------------------


def edge_scenarios(prefix: str) -> list[Scenario]:
    """The cases young brokers get wrong (see the module doc)."""
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"edge/{name}", exchanges))

    p = f"{prefix}-e"

    t = f"{p}-unsupported"
    add(
        "unsupported-versions",
        [
            Exchange(
                RawRequest(int(ApiKey.API_VERSIONS), 99, decode_version=0),
                0,
                label="api_versions v99",
            ),
            Exchange(
                RawRequest(int(ApiKey.METADATA), 99, decode_version=0), 0, label="metadata v99"
            ),
            metadata([t]),
        ],
    )

    t = f"{p}-lists"
    g = f"{p}-lists-group"
    add(
        "null-versus-empty-lists",
        [
            setup_topic(t),
            Exchange(
                metadata(None).request,
                V_METADATA,
                label="metadata null topics",
                project=only_topics(p),
            ),
            Exchange(
                metadata([]).request,
                V_METADATA,
                label="metadata empty topics",
                project=only_topics(p),
            ),
            Exchange(
                metadata(None).request, 1, label="metadata v1 null topics", project=only_topics(p)
            ),
            Exchange(
                metadata([]).request,
                0,
                label="metadata v0 empty topics (all)",
                project=only_topics(p),
            ),
            find_group_coordinator(g),
            commit(g, t, 3),
            offset_fetch(g, None, version=7),
            offset_fetch(g, {}, version=7),
            offset_fetch(g, None, version=8),
            Exchange(
                DeleteTopicsRequest(topic_names=[], timeout_ms=30000), 4, label="delete no topics"
            ),
            Exchange(DescribeGroupsRequest(groups=[]), 5, label="describe no groups"),
        ],
    )

    t = f"{p}-range"
    steps = [setup_topic(t), produce(t, record_bytes(V_PRODUCE, 3))]
    for v in (1, 4, 7, 11, 12):
        steps.append(fetch(t, version=v, offset=4, label="past the end"))
        steps.append(fetch(t, version=v, offset=-5, label="negative offset"))
    steps.append(delete_records(t, {0: 2}))
    steps.append(fetch(t, offset=1, label="below the log start"))
    steps.append(
        list_offsets(
            t,
            [
                -2,
            ],
            version=7,
        )
    )
    add("offsets-out-of-range", steps)

    t = f"{p}-empty"
    add(
        "list-offsets-empty-partition",
        [setup_topic(t)]
        + [list_offsets(t, [ts], version=v) for v in (0, 1, 7, 9) for ts in (-1, -2, T0)],
    )

    t = f"{p}-small"
    big = [record_bytes(V_PRODUCE, 20, start=20 * i) for i in range(3)]
    add(
        "fetch-max-bytes-below-a-batch",
        [setup_topic(t)]
        + [produce(t, b) for b in big]
        + [
            fetch(t, version=v, max_bytes=10, partition_max_bytes=10, label="10 bytes")
            for v in (3, 4, 11, 12, 17)
        ]
        + [
            fetch(
                t, version=v, max_bytes=1 << 20, partition_max_bytes=10, label="partition 10 bytes"
            )
            for v in (4, 12)
        ]
        + [
            fetch(
                t, version=v, max_bytes=10, partition_max_bytes=1 << 20, label="response 10 bytes"
            )
            for v in (4, 12)
        ],
    )

    t = f"{p}-codecs"
    steps = [setup_topic(t)]
    for i, codec in enumerate((1, 2, 3)):
        steps.append(
            produce(
                t,
                record_bytes(V_PRODUCE, 4, start=4 * i, compression=codec),
                label=f"codec {codec}",
            )
        )
    steps += [fetch(t, version=v, label="read back") for v in (4, 9, 10, 12)]
    add("compression-codecs", steps)

    t = f"{p}-zstd"
    add(
        "zstd",
        [
            setup_topic(t),
            produce(t, record_bytes(5, 2, compression=ZSTD), version=5, label="zstd on produce v5"),
            produce(t, record_bytes(V_PRODUCE, 4, compression=ZSTD), label="zstd"),
            fetch(t, version=9, label="zstd to fetch v9"),
            fetch(t, version=10, label="zstd to fetch v10"),
            fetch(t, version=12, label="zstd to fetch v12"),
        ],
    )

    t = f"{p}-bad-produce"
    add(
        "produce-refusals",
        [
            setup_topic(t),
            Exchange(
                create_topic(f"{t}-compact", configs={"cleanup.policy": "compact"}),
                V_CREATE,
                project=_error_codes,
            ),
            Exchange(
                create_topic(f"{t}-tiny", configs={"max.message.bytes": "100"}),
                V_CREATE,
                project=_error_codes,
            ),
            produce(t, record_bytes(V_PRODUCE, 1), acks=2, label="acks 2"),
            produce(
                f"{t}-compact",
                build_batch([SimpleRecord(b"v", None, T0)]),
                label="no key, compacted",
            ),
            produce(f"{t}-tiny", record_bytes(V_PRODUCE, 10), label="too large"),
            produce(t, b"\x00" * 70, label="garbage records"),
            produce(f"{t}-compact", record_bytes(V_PRODUCE, 2), label="keyed, compacted"),
            delete_records(f"{t}-compact", {0: 1}),
        ],
    )

    t = f"{p}-idem"
    add(
        "idempotent-sequences",
        [
            setup_topic(t),
            init_producer_id(),
            produce(t, idempotent_batch(3, sequence=0, start=0), label="sequence 0"),
            produce(t, idempotent_batch(3, sequence=0, start=0), label="duplicate of sequence 0"),
            produce(t, idempotent_batch(2, sequence=5, start=3), label="gap: sequence 5 after 2"),
            produce(t, idempotent_batch(2, sequence=3, start=3), label="sequence 3"),
            produce(t, idempotent_batch(2, sequence=3, start=3), label="duplicate of sequence 3"),
            produce(t, idempotent_batch(1, sequence=0, start=5, epoch_delta=1), label="epoch bump"),
            produce(t, idempotent_batch(1, sequence=5, start=6), label="old epoch"),
            produce(
                t,
                lambda ctx: record_bytes(
                    V_PRODUCE, 1, producer_id=987654, producer_epoch=0, base_sequence=4
                ),
                label="unknown producer, sequence 4",
            ),
            fetch(t, label="read back"),
        ],
    )

    t, g = f"{p}-gen", f"{p}-gen-group"
    add(
        "group-generations-and-members",
        [
            setup_topic(t),
            *join_and_sync(g, t),
            commit(
                g,
                t,
                1,
                generation=generation_of("m"),
                member=member_of("m"),
                label="current generation",
            ),
            commit(
                g,
                t,
                2,
                generation=generation_of("m", 1),
                member=member_of("m"),
                label="next generation",
            ),
            commit(
                g,
                t,
                2,
                generation=generation_of("m", -1),
                member=member_of("m"),
                label="previous generation",
            ),
            commit(
                g,
                t,
                2,
                generation=generation_of("m"),
                member="no-such-member",
                label="unknown member",
            ),
            commit(g, t, 2, label="simple commit to an active group"),
            heartbeat(g, label="heartbeat"),
            Exchange(
                lambda ctx: HeartbeatRequest(
                    group_id=g,
                    generation_id=generation_of("m", 1)(ctx),
                    member_id=member_of("m")(ctx),
                ),
                4,
                label="heartbeat, wrong generation",
            ),
            Exchange(
                HeartbeatRequest(group_id=g, generation_id=1, member_id="no-such-member"),
                4,
                label="heartbeat, unknown member",
            ),
            Exchange(
                lambda ctx: SyncGroupRequest(
                    group_id=g,
                    generation_id=generation_of("m", 1)(ctx),
                    member_id=member_of("m")(ctx),
                    protocol_type="consumer",
                    protocol_name="range",
                    assignments=[],
                ),
                V_SYNC,
                label="sync, wrong generation",
            ),
            Exchange(
                JoinGroupRequest(
                    group_id=g,
                    session_timeout_ms=10000,
                    rebalance_timeout_ms=10000,
                    member_id="no-such-member",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription(t))],
                ),
                V_JOIN,
                label="join, unknown member",
            ),
            Exchange(
                JoinGroupRequest(
                    group_id=g,
                    session_timeout_ms=10,
                    rebalance_timeout_ms=10000,
                    member_id="",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription(t))],
                ),
                V_JOIN,
                label="join, session timeout too small",
            ),
            Exchange(
                JoinGroupRequest(
                    group_id=g,
                    session_timeout_ms=10000,
                    rebalance_timeout_ms=10000,
                    member_id="",
                    protocol_type="other",
                    protocols=[JoinGroupRequestProtocol(name="other", metadata=b"")],
                ),
                V_JOIN,
                label="join, inconsistent protocol",
            ),
            leave(g),
            commit(
                f"{g}-none",
                t,
                1,
                generation=3,
                member="someone",
                label="member of a group that does not exist",
            ),
            offset_fetch(g, {t: [0]}),
        ],
    )

    # KIP-345 static membership: a member rejoining under its instance id with no member id
    # replaces the old one, which is fenced from then on; LeaveGroup v3+ by instance id
    t, g = f"{p}-static", f"{p}-static-group"

    def leave_instances(members: list[tuple[str, str | None]], label: str) -> Exchange:
        def build(ctx: Context) -> Message:
            return LeaveGroupRequest(
                group_id=g,
                member_id="",
                members=[
                    MemberIdentity(
                        member_id=str(ctx.values.get(f"{key}.member", "")) if key else "",
                        group_instance_id=instance,
                        reason=None,
                    )
                    for key, instance in members
                ],
            )

        return Exchange(build, 5, label=label)

    add(
        "static-membership",
        [
            setup_topic(t),
            find_group_coordinator(g),
            join(g, t, key="a", instance="i1", label="static member joins"),
            sync(g, t, key="a", instance="i1", label="static member syncs"),
            heartbeat(g, key="a", instance="i1", label="heartbeat"),
            heartbeat(g, key="a", instance="i2", label="heartbeat, other instance id"),
            join(g, t, key="b", instance="i1", label="same instance, no member id"),
            heartbeat(g, key="a", instance="i1", label="heartbeat, replaced member"),
            commit(
                g,
                t,
                1,
                generation=generation_of("a"),
                member=member_of("a"),
                instance="i1",
                label="commit, replaced member",
            ),
            sync(g, t, key="a", instance="i1", label="sync, replaced member"),
            heartbeat(g, key="b", instance="i1", label="heartbeat, replacement"),
            commit(
                g,
                t,
                2,
                generation=generation_of("b"),
                member=member_of("b"),
                instance="i1",
                label="commit, replacement",
            ),
            commit(
                g,
                t,
                3,
                generation=generation_of("b"),
                member=member_of("b"),
                instance="i1",
                metadata="m" * 4097,
                label="commit, metadata too large",
            ),
            describe_groups([g]),
            find_txn_coordinator(f"{g}-txn"),
            init_txn_producer(f"{g}-txn"),
            add_offsets(f"{g}-txn", g),
            txn_commit(
                f"{g}-txn",
                g,
                t,
                4,
                member_key="b",
                instance="i9",
                label="txn commit, unknown instance",
            ),
            txn_commit(
                f"{g}-txn",
                g,
                t,
                4,
                member_key="a",
                instance="i1",
                label="txn commit, replaced member",
            ),
            txn_commit(f"{g}-txn", g, t, 4, label="txn commit from outside the group"),
            end_txn(f"{g}-txn", committed=False),
            describe_txn(f"{g}-txn"),
            leave_instances(
                [("a", "i1"), ("", "i2")], "leave, replaced member and unknown instance"
            ),
            leave_instances([("b", "i9")], "leave, member under an unknown instance id"),
            leave_instances([("", "i1")], "leave by instance id alone"),
            describe_groups([g]),
            commit(
                g,
                t,
                5,
                generation=-1,
                member=member_of("b"),
                label="commit naming a member, no generation, to the empty group",
            ),
            offset_fetch(g, {t: [0]}),
        ],
    )

    # OffsetCommit of what is not there: a topic that does not exist, a partition past the
    # topic's, negative offsets, null metadata; then what OffsetFetch answers for each
    t, g = f"{p}-oddc", f"{p}-oddc-group"
    add(
        "offset-commit-oddities",
        [
            setup_topic(t),
            find_group_coordinator(g),
            commit(g, f"{t}-missing", 3, label="unknown topic"),
            commit(g, t, 3, partition=9, label="unknown partition"),
            commit(g, t, -1, label="offset -1"),
            commit(g, t, -7, partition=0, label="offset -7"),
            offset_fetch(g, {t: [0, 9], f"{t}-missing": [0]}, label="those partitions"),
            offset_fetch(g, None, label="every partition"),
        ],
    )

    # Produce: timestamps a topic's message.timestamp.before/after.max.ms refuse, a
    # LogAppendTime topic, records whose offset deltas skip, a control batch from a client
    t = f"{p}-ts"

    def controlled(ctx: Context) -> bytes:
        builder = RecordBatchBuilder(producer_id=4242, producer_epoch=0, control=True)
        builder.append(b"\x00\x00\x00\x00\x00\x00", key=b"\x00\x00\x00\x01", timestamp=T0)
        return builder.build()

    add(
        "produce-timestamps-offsets-and-control",
        [
            setup_topic(t, **{"message.timestamp.before.max.ms": "3600000"}),
            Exchange(
                create_topic(f"{t}-after", configs={"message.timestamp.after.max.ms": "0"}),
                V_CREATE,
                project=_error_codes,
                label="setup create_topics",
            ),
            Exchange(
                create_topic(f"{t}-append", configs={"message.timestamp.type": "LogAppendTime"}),
                V_CREATE,
                project=_error_codes,
                label="setup create_topics",
            ),
            produce(t, record_bytes(V_PRODUCE, 3), label="older than before.max.ms"),
            produce(
                f"{t}-after",
                build_batch([SimpleRecord(b"v", b"k", 4_000_000_000_000)]),
                label="later than after.max.ms",
            ),
            produce(
                f"{t}-append",
                build_batch([SimpleRecord(b"v", b"k", T0)]),
                label="LogAppendTime topic",
            ),
            produce(
                f"{t}-after",
                build_batch(
                    [Record(0, T0, b"k", b"a", []), Record(2, T0, b"k", b"b", [])],
                    keep_offsets=True,
                ),
                label="offset deltas 0, 2",
            ),
            produce(f"{t}-after", controlled, label="a control batch"),
            list_offsets(f"{t}-after", [-1], version=7),
        ],
    )

    # KIP-320: a consumer's fetch and ListOffsets naming the leader epoch it knows (ahead of the
    # leader's, the leader's), and a fetch's last fetched epoch (v12+) that the log does not
    # end the same way: the answer names the diverging epoch
    t = f"{p}-epochs"
    add(
        "leader-epochs-and-divergence",
        [
            setup_topic(t),
            produce(t, record_bytes(V_PRODUCE, 3)),
            fetch(t, current_leader_epoch=1, label="epoch ahead"),
            fetch(t, current_leader_epoch=0, label="the leader's epoch"),
            *(
                fetch(t, version=v, offset=2, last_fetched_epoch=3, label="last fetched epoch 3")
                for v in (12, 16)
            ),
            fetch(t, offset=5, last_fetched_epoch=0, label="past the end, epoch 0"),
            fetch(t, offset=3, last_fetched_epoch=0, label="at the end, epoch 0"),
            fetch(t, offset=1, last_fetched_epoch=0, label="inside, epoch 0"),
            list_offsets(
                t, [-1], version=7, current_leader_epoch=1, label="list offsets, epoch ahead"
            ),
        ],
    )

    # Topic configs CreateTopics (validate only) takes or refuses, one per request: values
    # out of each config's range or of its kind, and a few just inside
    t = f"{p}-cfg"
    checked = [
        ("cleanup.policy", "bogus"),
        ("cleanup.policy", "compact,delete"),
        ("cleanup.policy", ""),
        ("compression.type", "brotli"),
        ("compression.type", "producer"),
        ("retention.ms", "-2"),
        ("retention.ms", "-1"),
        ("retention.bytes", "-5"),
        ("segment.ms", "0"),
        ("segment.index.bytes", "3"),
        ("max.message.bytes", "-1"),
        ("min.insync.replicas", "0"),
        ("min.insync.replicas", "3"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("message.timestamp.type", "WallClock"),
        ("unclean.leader.election.enable", "maybe"),
        ("delete.retention.ms", "-1"),
        ("flush.messages", "0"),
        ("compression.gzip.level", "10"),
        ("compression.zstd.level", "23"),
        ("compression.lz4.level", "17"),
        ("local.retention.ms", "-3"),
        ("follower.replication.throttled.replicas", "0:x"),
        ("leader.replication.throttled.replicas", "*"),
    ]

    # Compaction (Kafka's LogCleaner): one segment of single-record batches and a batch of two,
    # then a batch too big for it rolls the log, so the first segment is cleanable. Once
    # cleaned it keeps each key's last record (a tombstone too, for delete.retention.ms), and
    # the batch of two keeps its one survivor; a key the active segment has again keeps its
    # record in the cleaned segment (the active segment is not read for the offset map).
    t = f"{p}-compacted"
    layout: list[list[tuple[bytes, bytes | None]]] = [
        [(b"k0", b"a")],
        [(b"k1", b"a")],
        [(b"k2", b"a")],
        [(b"k0", b"b")],
        [(b"k1", None)],
        [(b"k2", b"c")],
        [(b"k9", b"z")],
        [(b"k3", b"x"), (b"k4", b"x")],
        [(b"k3", b"y")],
    ]
    steps = [compacted_topic(t)]
    offset = 0
    for batch in layout:
        steps.append(produce(t, keyed_batch(batch, offset)))
        offset += len(batch)
    steps += compaction_checks(t, offset, retained=[3, 4, 5, 6, 8, 9])
    add("compaction", steps)

    def outcome(answer: Any) -> Any:
        return [(x["error_code"], x["error_message"]) for x in answer["topics"]]

    add(
        "topic-config-validation",
        [
            Exchange(
                create_topic(f"{t}-{i}", configs={key: value}, validate_only=True),
                V_CREATE,
                project=outcome,
                label=f"{key}={value}",
            )
            for i, (key, value) in enumerate(checked)
        ],
    )

    # Dynamic broker configs IncrementalAlterConfigs (validate only, on broker 0 and at the
    # cluster default) takes or refuses: values out of each key's range, thread pools changed
    # past Kafka's limits (at most double, at least half the current size)
    broker_checked = [
        ("log.retention.ms", "-2"),
        ("log.roll.ms", "0"),
        ("log.index.size.max.bytes", "3"),
        ("log.flush.interval.messages", "0"),
        ("log.cleaner.min.cleanable.ratio", "1.5"),
        ("log.cleaner.max.compaction.lag.ms", "0"),
        ("min.insync.replicas", "0"),
        ("message.max.bytes", "-1"),
        ("compression.gzip.level", "10"),
        ("compression.zstd.level", "23"),
        ("log.message.timestamp.type", "WallClock"),
        ("log.cleaner.threads", "0"),
        ("log.cleaner.threads", "2"),
        ("log.cleaner.threads", "3"),
        ("log.cleaner.backoff.ms", "-1"),
        ("num.io.threads", "0"),
        ("num.io.threads", "16"),
        ("num.io.threads", "17"),
        ("num.io.threads", "4"),
        ("num.io.threads", "3"),
        ("num.network.threads", "7"),
        ("num.replica.fetchers", "0"),
        ("background.threads", "0"),
        ("num.recovery.threads.per.data.dir", "0"),
        ("max.connections", "-1"),
        ("max.connections.per.ip.overrides", "nonsense"),
        ("producer.id.expiration.ms", "-1"),
    ]
    add(
        "dynamic-broker-config-validation",
        [
            incremental_alter(
                entity,
                [(key, SET, value)],
                resource_type=BROKER_RESOURCE,
                validate_only=True,
                label=f"{where} {key}={value}",
            )
            for key, value in broker_checked
            for entity, where in (("0", "broker 0"), ("", "default"))
        ],
    )

    # DescribeConfigs of every config of a topic (with synonyms): each key's value, source,
    # sensitivity, read-only flag and synonyms, for a topic with overrides and without
    t = f"{p}-allcfg"
    # (Kafka 3.9 also lists the three topic configs Kafka 4.0 removed, as in D6: left out)
    removed = {
        "message.format.version",
        "message.downconversion.enable",
        "message.timestamp.difference.max.ms",
    }

    def without_removed(answer: Any) -> Any:
        results = [
            {**r, "configs": [c for c in r["configs"] if c["name"] not in removed]}
            for r in answer["results"]
        ]
        return {**answer, "results": results}

    def every_config(name: str, *, synonyms: bool = True) -> Exchange:
        exchange = describe_configs(TOPIC_RESOURCE, name, None, synonyms=synonyms)
        exchange.project = without_removed
        return exchange

    add(
        "describe-every-topic-config",
        [
            setup_topic(t, **{"retention.ms": "3600000", "cleanup.policy": "compact"}),
            setup_topic(f"{t}-plain"),
            every_config(t),
            every_config(f"{t}-plain", synonyms=False),
        ],
    )

    # FindCoordinator keys a coordinator cannot be found for: an empty group id, an empty
    # transactional id, an unknown key type (v3 one key, v4 batched)
    add(
        "find-coordinator-odd-keys",
        [
            Exchange(FindCoordinatorRequest(key="", key_type=0), 3, label="empty group id"),
            Exchange(FindCoordinatorRequest(key="", key_type=1), 3, label="empty transactional id"),
            Exchange(FindCoordinatorRequest(key=f"{p}-k7", key_type=7), 3, label="key type 7"),
            Exchange(
                FindCoordinatorRequest(key_type=0, coordinator_keys=["", f"{p}-fc-group"]),
                4,
                label="batched, an empty group id",
            ),
            Exchange(
                FindCoordinatorRequest(key_type=1, coordinator_keys=["", f"{p}-fc-txn"]),
                4,
                label="batched, an empty transactional id",
            ),
            Exchange(
                FindCoordinatorRequest(key_type=7, coordinator_keys=[f"{p}-fc"]),
                4,
                label="batched, key type 7",
            ),
        ],
    )

    # A group whose members are not consumers (protocol type "connect"), and JoinGroup
    # refusals: no protocols, an empty group id, another protocol type than the group's
    t, g = f"{p}-proto", f"{p}-proto-group"

    def join_raw(
        group: str, protocol_type: str, protocols: list[tuple[str, bytes]], label: str
    ) -> Exchange:
        return Exchange(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=10000,
                rebalance_timeout_ms=10000,
                member_id="",
                group_instance_id="c1",
                protocol_type=protocol_type,
                protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
                reason=None,
            ),
            V_JOIN,
            label=label,
        )

    add(
        "group-protocol-types",
        [
            setup_topic(t),
            find_group_coordinator(g),
            join_raw(f"{g}-none", "consumer", [], "no protocols"),
            join_raw("", "consumer", [("range", subscription(t))], "empty group id"),
            join_raw(g, "connect", [("default", b"\x00\x01"), ("v2", b"")], "connect member"),
            join_raw(g, "consumer", [("range", subscription(t))], "a consumer joins it"),
            describe_groups([g]),
            Exchange(
                ListGroupsRequest(states_filter=[], types_filter=[]),
                4,
                project=only_groups(g),
                label="listed",
            ),
            commit(g, t, 1, label="simple commit to the connect group"),
        ],
    )

    # read_committed while a transaction is open: the last stable offset holds back what a
    # read_committed consumer may read (and ListOffsets latest), records after it included
    t, txn = f"{p}-open", f"{p}-open-txn"

    def isolated(isolation: int, label: str, *, ts: int = -1) -> Exchange:
        return list_offsets(t, [ts], version=7, isolation_level=isolation, label=label)

    add(
        "read-committed-with-an-open-transaction",
        [
            *open_transaction(t, txn, 2),
            produce(t, record_bytes(V_PRODUCE, 2, start=4), label="after the open transaction"),
            fetch(t, isolation_level=1, label="read committed"),
            fetch(t, label="read uncommitted"),
            isolated(1, "latest, read committed"),
            isolated(0, "latest, read uncommitted"),
            isolated(1, "max timestamp, read committed", ts=-3),
            isolated(1, "by time, read committed", ts=T0 + 30),
            end_txn(txn, committed=False),
            describe_txn(txn),
            read_committed(t),
            isolated(1, "latest, read committed, after the abort"),
        ],
    )

    # A classic group's rebalance when a second member joins and the first never rejoins: the
    # second's JoinGroup waits the rebalance timeout (3 s), then completes without the first,
    # which is gone (its heartbeat, SyncGroup and JoinGroup answer UNKNOWN_MEMBER_ID). The
    # sessions last longer than both brokers' waits together (each broker's exchange waits
    # while the other's runs), so only the rebalance timeout ends the first member; for the
    # same reason the second member's SyncGroup is not compared (Kafka drops a member that has
    # not synced within the rebalance timeout, which runs out on Kafka while Odradek's JoinGroup
    # waits its own).
    t, g = f"{p}-rebalance", f"{p}-rebalance-group"

    def member(key: str, label: str) -> Exchange:
        return join(g, t, key=key, label=label, session_ms=45000, rebalance_ms=3000)

    add(
        "classic-rebalance-without-a-member",
        [
            setup_topic(t, 2),
            find_group_coordinator(g),
            member("m1", "first member, no id"),
            member("m1", "first member"),
            sync(g, t, key="m1", label="first member's sync"),
            heartbeat(g, key="m1", label="first member's heartbeat"),
            member("m2", "second member, no id"),
            member("m2", "second member, after the rebalance timeout"),
            heartbeat(g, key="m1", label="the first member, gone"),
            sync(g, t, key="m1", label="the first member's sync"),
            member("m1", "the first member rejoins"),
        ],
    )

    # A classic group between its JoinGroup and SyncGroup (CompletingRebalance): heartbeat,
    # commit, describe; then Stable: OffsetDelete of the topic its member subscribes to and of
    # another, ListGroups by state (Kafka matches state names without regard to case)
    t, g = f"{p}-states", f"{p}-states-group"

    def list_by_state(states: list[str]) -> Exchange:
        return Exchange(
            ListGroupsRequest(states_filter=states, types_filter=[]),
            4,
            project=only_groups(g),
            label=f"listed as {states}",
        )

    add(
        "classic-group-states",
        [
            setup_topic(t),
            setup_topic(f"{t}-other"),
            find_group_coordinator(g),
            commit(g, f"{t}-other", 4, label="commit to the other topic while empty"),
            join(g, t, key="a", label="join"),
            join(g, t, key="a", label="join with the member id"),
            heartbeat(g, key="a", label="heartbeat, completing the rebalance"),
            commit(
                g,
                t,
                1,
                generation=generation_of("a"),
                member=member_of("a"),
                label="commit, completing the rebalance",
            ),
            describe_groups([g]),
            list_by_state(["CompletingRebalance"]),
            sync(g, t, key="a"),
            commit(g, t, 2, generation=generation_of("a"), member=member_of("a"), label="commit"),
            offset_delete(g, t, label="delete offsets of the subscribed topic"),
            offset_delete(g, f"{t}-other", label="delete offsets of another topic"),
            list_by_state(["Stable"]),
            list_by_state(["stable"]),
            list_by_state(["Bogus"]),
            offset_fetch(g, {t: [0], f"{t}-other": [0]}),
            leave(g, key="a"),
            list_by_state(["Empty", "Dead"]),
        ],
    )

    # Produce of record formats a version does not carry (magic 1 on v9, magic 2 on v2), a
    # batch whose base offset or partition leader epoch the client set, two batches in one
    # partition's records, a batch of only tombstones (null values)
    t = f"{p}-fmt"
    no_values = build_batch([SimpleRecord(None, b"k1", T0), SimpleRecord(None, b"k2", T0 + 1)])
    add(
        "produce-formats-and-offsets",
        [
            setup_topic(t),
            produce(t, build_message_set(records(2), magic=1), label="magic 1 on produce v9"),
            produce(t, build_batch(records(2, start=10)), version=2, label="magic 2 on produce v2"),
            produce(t, build_batch(records(2), base_offset=1000), label="base offset 1000"),
            produce(
                t,
                build_batch(records(2, start=2), partition_leader_epoch=7),
                label="partition leader epoch 7",
            ),
            produce(
                t,
                build_batch(records(1, start=4)) + build_batch(records(1, start=5)),
                label="two batches",
            ),
            produce(t, no_values, label="tombstones"),
            fetch(t, label="read back"),
        ],
    )

    t = f"{p}-names"
    add(
        "topic-names-and-replicas",
        [
            Exchange(create_topic(""), V_CREATE, label="empty name"),
            Exchange(create_topic("."), V_CREATE, label="dot"),
            Exchange(create_topic(".."), V_CREATE, label="dot dot"),
            Exchange(
                create_topic(f"{t}.with_both"),
                V_CREATE,
                label="dot and underscore",
                project=_error_codes,
            ),
            Exchange(create_topic(f"{t} space"), V_CREATE, label="space"),
            Exchange(create_topic(f"{t}", replication=0), V_CREATE, label="zero replicas"),
            Exchange(
                create_topic(f"{t}", partitions=1, replication=-2),
                V_CREATE,
                label="negative replicas",
            ),
            Exchange(
                CreateTopicsRequest(
                    topics=[
                        CreatableTopic(
                            name=f"{t}-assigned",
                            num_partitions=-1,
                            replication_factor=-1,
                            assignments=[
                                CreatableReplicaAssignment(partition_index=0, broker_ids=[7])
                            ],
                            configs=[],
                        )
                    ],
                    timeout_ms=1000,
                ),
                V_CREATE,
                label="assigned to an unknown broker",
            ),
            Exchange(
                CreateTopicsRequest(
                    topics=[
                        CreatableTopic(
                            name=f"{t}-twice",
                            num_partitions=1,
                            replication_factor=1,
                            assignments=[],
                            configs=[],
                        ),
                        CreatableTopic(
                            name=f"{t}-twice",
                            num_partitions=1,
                            replication_factor=1,
                            assignments=[],
                            configs=[],
                        ),
                    ],
                    timeout_ms=30000,
                ),
                V_CREATE,
                label="same topic twice",
            ),
            Exchange(
                create_topic(f"{t}-nulcfg", configs={"retention.ms": None}),
                V_CREATE,
                label="null config value",
            ),
        ],
    )

    t = f"{p}-ids"
    add(
        "topic-ids",
        [
            setup_topic(t),
            Exchange(
                MetadataRequest(
                    topics=[MetadataRequestTopic(topic_id=RANDOM_ID, name=None)],
                    allow_auto_topic_creation=False,
                ),
                12,
                label="metadata by unknown id",
            ),
            fetch(t, version=13, topic_id=lambda ctx: RANDOM_ID, label="fetch by unknown id"),
            Exchange(
                DeleteTopicsRequest(
                    topics=[DeleteTopicState(name=None, topic_id=RANDOM_ID)], timeout_ms=30000
                ),
                6,
                label="delete by unknown id",
            ),
            Exchange(
                lambda ctx, t=t: DeleteTopicsRequest(
                    topics=[DeleteTopicState(name=None, topic_id=ctx.topic_id(t))], timeout_ms=30000
                ),
                6,
                label="delete by id",
            ),
        ],
    )

    add(
        "transaction-coordinator-and-producer-id",
        [
            Exchange(
                FindCoordinatorRequest(key=f"{p}-txn", key_type=1),
                3,
                label="transaction coordinator",
            ),
            Exchange(
                InitProducerIdRequest(transactional_id=f"{p}-txn", transaction_timeout_ms=60000),
                4,
                label="transactional producer id",
            ),
        ],
    )

    # KIP-227 fetch sessions, by topic name (v7-12) and by topic id (v13+): a full fetch opens
    # a session, incremental fetches answer only what changed, a stale epoch and an unknown
    # session id are refused, forgotten partitions leave it, epoch -1 closes it
    for v in (7, 12, 13, 16):
        st = f"{p}-session{v}"
        add(
            f"fetch-sessions-v{v}",
            [
                setup_topic(st, 3),
                produce(st, record_bytes(V_PRODUCE, 3)),
                produce(st, record_bytes(V_PRODUCE, 2, start=3), partition=1),
                session_fetch(st, {0: 0, 1: 0, 2: 0}, version=v, epoch=0, label="full"),
                session_fetch(st, {0: 3, 1: 2}, version=v, epoch=1, label="caught up"),
                produce(st, record_bytes(V_PRODUCE, 1, start=5), partition=1),
                session_fetch(st, {}, version=v, epoch=2, label="new records on one partition"),
                session_fetch(st, {1: 3}, version=v, epoch=2, label="stale epoch"),
                session_fetch(st, {1: 3}, version=v, epoch=4, label="epoch ahead"),
                session_fetch(st, {1: 3}, version=v, epoch=3, label="after the refusals"),
                session_fetch(st, {}, version=v, epoch=4, forget=[0], label="forget a partition"),
                produce(st, record_bytes(V_PRODUCE, 1, start=6), partition=0),
                session_fetch(st, {}, version=v, epoch=5, label="a forgotten partition is quiet"),
                session_fetch(
                    st,
                    {},
                    version=v,
                    epoch=1,
                    session=lambda ctx: UNKNOWN_SESSION,
                    label="unknown session id",
                ),
                session_fetch(st, {0: 0}, version=v, epoch=-1, label="close"),
                session_fetch(st, {}, version=v, epoch=6, label="closed session"),
            ],
        )
        # a session's topic deleted: the next incremental fetches name its partitions' error
        gone = f"{p}-session{v}-gone"
        out.append(
            Scenario(
                f"edge/fetch-sessions-v{v}-deleted-topic",
                prefer="4",
                exchanges=[
                    *_session_of_a_deleted_topic(gone, v),
                    session_fetch(gone, {}, version=v, epoch=1, label="after the deletion"),
                    session_fetch(gone, {}, version=v, epoch=2, label="again"),
                    session_fetch(gone, {0: 2}, version=v, epoch=3, label="fetching on"),
                ],
            )
        )
        # ... and created again under its name before the next fetch
        again = f"{p}-session{v}-again"
        created_again = setup_topic(again, 2)
        created_again.until = lambda r: all(t.error_code == 0 for t in r.topics)
        led = metadata([again], label="until the new topic has leaders")
        led.until = _topic_led
        out.append(
            Scenario(
                f"edge/fetch-sessions-v{v}-recreated-topic",
                prefer="4",
                exchanges=[
                    *_session_of_a_deleted_topic(again, v),
                    created_again,
                    led,
                    session_fetch(again, {}, version=v, epoch=1, label="after the recreation"),
                    session_fetch(again, {}, version=v, epoch=2, label="again"),
                    session_fetch(again, {0: 0}, version=v, epoch=3, label="from the start"),
                ],
            )
        )
    return out


# --- transactions, producers and log dirs -------------------------------------------------------

V_ADD_PARTITIONS = 3
V_ADD_OFFSETS = 3
V_END_TXN = 3
V_TXN_COMMIT = 3


def find_txn_coordinator(txn: str) -> Exchange:
    return Exchange(FindCoordinatorRequest(key=txn, key_type=1), 3, label="transaction coordinator")


def init_txn_producer(txn: str, *, key: str = "txn") -> Exchange:
    def capture(ctx: Context, response: Any) -> None:
        ctx.values[key] = (response.producer_id, response.producer_epoch)

    return Exchange(
        InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000),
        4,
        capture,
        label="transactional producer id",
        # a fresh coordinator may answer CONCURRENT_TRANSACTIONS or load in progress first
        until=lambda r: r.error_code == 0,
    )


def _pid(ctx: Context, key: str = "txn") -> tuple[int, int]:
    pid, epoch = ctx.values.get(key, (-1, -1))
    return int(pid), int(epoch)


def add_partitions(
    txn: str,
    topic: str,
    partitions: list[int],
    *,
    version: int = V_ADD_PARTITIONS,
    label: str = "",
    pid_delta: int = 0,
    epoch_delta: int = 0,
) -> Exchange:
    def build(ctx: Context) -> Message:
        pid, epoch = _pid(ctx)
        pid, epoch = pid + pid_delta, epoch + epoch_delta
        topics = [AddPartitionsToTxnTopic(name=topic, partitions=partitions)]
        if version >= 4:
            return AddPartitionsToTxnRequest(
                transactions=[
                    AddPartitionsToTxnTransaction(
                        transactional_id=txn,
                        producer_id=pid,
                        producer_epoch=epoch,
                        verify_only=False,
                        topics=topics,
                    )
                ]
            )
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=topics,
        )

    return Exchange(build, version, label=label)


def txn_batch(count: int, *, sequence: int, start: int) -> Callable[[Context], bytes]:
    def build(ctx: Context) -> bytes:
        pid, epoch = _pid(ctx)
        return build_batch(
            records(count, start=start),
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=sequence,
            transactional=True,
        )

    return build


def add_offsets(
    txn: str, group: str, *, version: int = V_ADD_OFFSETS, epoch_delta: int = 0, label: str = ""
) -> Exchange:
    def build(ctx: Context) -> Message:
        pid, epoch = _pid(ctx)
        return AddOffsetsToTxnRequest(
            transactional_id=txn,
            producer_id=pid,
            producer_epoch=epoch + epoch_delta,
            group_id=group,
        )

    return Exchange(build, version, label=label)


def txn_commit(
    txn: str,
    group: str,
    topic: str,
    offset: int,
    *,
    version: int = V_TXN_COMMIT,
    member_key: str | None = None,
    instance: str | None = None,
    label: str = "",
) -> Exchange:
    """TxnOffsetCommit of partition 0; ``member_key`` names the group member (its id and
    generation, as join captured them) the commit comes from, else none."""

    def build(ctx: Context) -> Message:
        pid, epoch = _pid(ctx)
        return TxnOffsetCommitRequest(
            transactional_id=txn,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=generation_of(member_key)(ctx) if member_key else -1,
            member_id=member_of(member_key)(ctx) if member_key else "",
            group_instance_id=instance,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=topic,
                    # v6 names topics by id (the zero id for a topic never created)
                    topic_id=ctx.topic_id(topic),
                    partitions=[
                        TxnOffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="txn",
                        )
                    ],
                )
            ],
        )

    return Exchange(build, version, label=label)


def end_txn(
    txn: str,
    *,
    committed: bool = True,
    version: int = V_END_TXN,
    epoch_delta: int = 0,
    pid_delta: int = 0,
    label: str = "",
) -> Exchange:
    """EndTxn; from v5 (KIP-890 transaction version 2) an answer without error gives the
    producer's bumped epoch, which the next requests then use."""

    def build(ctx: Context) -> Message:
        pid, epoch = _pid(ctx)
        return EndTxnRequest(
            transactional_id=txn,
            producer_id=pid + pid_delta,
            producer_epoch=epoch + epoch_delta,
            committed=committed,
        )

    def capture(ctx: Context, response: Any) -> None:
        if version >= 5 and response.error_code == 0:
            ctx.values["txn"] = (response.producer_id, response.producer_epoch)

    return Exchange(build, version, capture, label=label)


def open_transaction(topic: str, txn: str, count: int) -> list[Exchange]:
    """A topic with two plain records, then ``count`` records of a transaction left open."""
    return [
        setup_topic(topic),
        produce(topic, record_bytes(V_PRODUCE, 2)),
        find_txn_coordinator(txn),
        init_txn_producer(txn),
        add_partitions(txn, topic, [0]),
        produce(topic, txn_batch(count, sequence=0, start=2), transactional_id=txn, label="open"),
    ]


def _settled(response: Any) -> bool:
    return all(not t.transaction_state.startswith("Prepare") for t in response.transaction_states)


def _partitions_sorted(answer: Any) -> Any:
    """A DescribeTransactions answer with each topic's partitions in order (Kafka lists them
    in its hash set's order)."""
    for state in answer["transaction_states"]:
        for topic in state["topics"]:
            topic["partitions"] = sorted(topic["partitions"])
    return answer


def describe_txn(txn: str) -> Exchange:
    return Exchange(
        DescribeTransactionsRequest(transactional_ids=[txn, f"{txn}-unknown"]),
        0,
        until=_settled,
        project=_partitions_sorted,
    )


def read_committed(topic: str) -> Exchange:
    exchange = fetch(topic, isolation_level=1, label="read committed")

    def stable(response: Any) -> bool:
        p = response.responses[0].partitions[0]
        return bool(p.error_code == 0 and p.last_stable_offset == p.high_watermark)

    # the last stable offset passes the markers a moment after the coordinator says the
    # transaction is complete: ask until it has
    exchange.until = stable
    return exchange


def transaction(
    prefix: str, name: str, *, focus: tuple[str, int] | None = None, committed: bool = True
) -> list[Exchange]:
    """A whole transaction: coordinator, producer id, a partition, records, a group's offsets,
    the end, and what the brokers then say about it. ``focus`` = (API, version) to use."""
    api, v = focus or ("", -1)
    t, g, txn = f"{prefix}-{name}", f"{prefix}-{name}-group", f"{prefix}-{name}-txn"
    return [
        setup_topic(t, 2),
        find_group_coordinator(g),
        find_txn_coordinator(txn),
        init_txn_producer(txn),
        add_partitions(txn, t, [0], version=v if api == "add_partitions" else V_ADD_PARTITIONS),
        add_partitions(
            txn,
            f"{t}-missing",
            [0],
            version=v if api == "add_partitions" else V_ADD_PARTITIONS,
            label="unknown topic",
        ),
        produce(t, txn_batch(3, sequence=0, start=0), label="without the transactional id"),
        produce(
            t,
            txn_batch(3, sequence=0, start=0),
            label="transactional records",
            transactional_id=txn,
        ),
        add_offsets(txn, g, version=v if api == "add_offsets" else V_ADD_OFFSETS),
        txn_commit(txn, g, t, 2, version=v if api == "txn_commit" else V_TXN_COMMIT),
        end_txn(
            txn,
            committed=committed,
            version=v if api == "end_txn" else V_END_TXN,
            epoch_delta=-1,
            label="stale epoch",
        )
        if api == "end_txn"
        else describe_txn(txn),
        end_txn(txn, committed=committed, version=v if api == "end_txn" else V_END_TXN),
        describe_txn(txn),
        read_committed(t),
        offset_fetch(g, {t: [0]}),
    ]


def _no_unstable_offset(response: Any) -> bool:
    """Whether no partition of an OffsetFetch answer (either form) is UNSTABLE_OFFSET_COMMIT."""
    topics = response.groups[0].topics if response.groups else response.topics
    return all(
        p.error_code != ErrorCode.UNSTABLE_OFFSET_COMMIT for t in topics for p in t.partitions
    )


def pending_offsets(prefix: str, name: str, *, version: int, committed: bool) -> list[Exchange]:
    """OffsetFetch with ``require_stable`` (v7+, KIP-447) while a TxnOffsetCommit of partition 0
    is pending (UNSTABLE_OFFSET_COMMIT; partition 1 has nothing pending) and after the
    transaction ends (the transactional offset when committed, the previous one when
    aborted); without ``require_stable`` the previous offset meanwhile."""
    t, g, txn = f"{prefix}-{name}", f"{prefix}-{name}-group", f"{prefix}-{name}-txn"
    partitions = {t: [0, 1]}
    return [
        setup_topic(t, 2),
        find_group_coordinator(g),
        commit(g, t, 1, label="the previous offset"),
        find_txn_coordinator(txn),
        init_txn_producer(txn),
        add_offsets(txn, g),
        txn_commit(txn, g, t, 2),
        offset_fetch(g, partitions, version=version, require_stable=True, label="pending"),
        offset_fetch(g, partitions, version=version, label="pending, not require_stable"),
        end_txn(txn, committed=committed),
        describe_txn(txn),
        # the marker reaches __consumer_offsets before the transaction is complete; asked
        # again only should a broker apply it a moment later
        offset_fetch(
            g,
            partitions,
            version=version,
            require_stable=True,
            label="ended",
            until=_no_unstable_offset,
        ),
    ]


def transaction_scenarios(prefix: str) -> list[Scenario]:
    out: list[Scenario] = []
    p = f"{prefix}-t"
    for v in versions(ApiKey.OFFSET_FETCH):
        if v < 7:
            continue  # require_stable is v7+
        for committed in (True, False):
            outcome = "commit" if committed else "abort"
            out.append(
                Scenario(
                    f"offset_fetch_require_stable/v{v}-{outcome}",
                    pending_offsets(p, f"stable{v}{outcome}", version=v, committed=committed),
                )
            )
    for api, key in (
        ("add_partitions", ApiKey.ADD_PARTITIONS_TO_TXN),
        ("add_offsets", ApiKey.ADD_OFFSETS_TO_TXN),
        ("txn_commit", ApiKey.TXN_OFFSET_COMMIT),
        ("end_txn", ApiKey.END_TXN),
    ):
        for v in versions(key):
            out.append(Scenario(f"{api}/v{v}", transaction(p, f"{api}{v}", focus=(api, v))))
    out.append(Scenario("edge/transaction-aborted", transaction(p, "abort", committed=False)))
    out.extend(transaction_edge_scenarios(p))
    out.extend(transaction_v2_scenarios(p))
    out.extend(transaction_listing_scenarios(p))
    out.extend(deleted_topic_scenarios(p))

    # Compaction of a producer's batches (Kafka's LogCleaner): an idempotent producer's last
    # batch stays, emptied, when its record is superseded (its sequence must survive); an
    # aborted transaction's records go, its marker stays (for delete.retention.ms), and so do a
    # committed one's records and marker
    t, txn = f"{p}-compacted-txn", f"{p}-compacted-txn-txn"
    out.append(
        Scenario(
            "edge/compaction-of-producers-and-transactions",
            [
                compacted_topic(t),
                init_producer_id(),
                produce(t, keyed_batch([(b"k0", b"a")], 0, producer="pid", sequence=0)),
                produce(t, keyed_batch([(b"k0", b"b")], 1)),
                find_txn_coordinator(txn),
                init_txn_producer(txn),
                add_partitions(txn, t, [0]),
                produce(
                    t,
                    keyed_batch([(b"k1", b"t")], 2, producer="txn", sequence=0, transactional=True),
                    transactional_id=txn,
                ),
                end_txn(txn, committed=False),
                describe_txn(txn),
                add_partitions(txn, t, [0], label="the second transaction"),
                produce(
                    t,
                    keyed_batch([(b"k2", b"t")], 4, producer="txn", sequence=1, transactional=True),
                    transactional_id=txn,
                ),
                end_txn(txn),
                describe_txn(txn),
                *compaction_checks(t, 6, retained=[1, 3, 4, 5]),
            ],
        )
    )

    # KIP-1152: ListTransactions v2 filters by a transactional id pattern (RE2 syntax, the
    # whole id); a pattern RE2 refuses is INVALID_REGULAR_EXPRESSION, before the state filters
    if 2 in versions(ApiKey.LIST_TRANSACTIONS):
        lt, a, b = f"{p}-listpat", f"{p}-listpat-a1", f"{p}-listpat-b1"

        def listed(pattern: str | None, states: list[str], label: str) -> Exchange:
            def mine(answer: Any) -> Any:
                return {
                    **answer,
                    "transaction_states": sorted(
                        (
                            t
                            for t in answer["transaction_states"]
                            if t["transactional_id"] in (a, b)
                        ),
                        key=lambda t: t["transactional_id"],
                    ),
                }

            return Exchange(
                ListTransactionsRequest(
                    state_filters=states,
                    producer_id_filters=[],
                    transactional_id_pattern=pattern,
                ),
                2,
                project=mine,
                label=label,
            )

        out.append(
            Scenario(
                "edge/list-transactions-by-pattern",
                [
                    setup_topic(lt),
                    find_txn_coordinator(a),
                    find_txn_coordinator(b),
                    init_txn_producer(a, key="a"),
                    init_txn_producer(b, key="b"),
                    listed(None, [], "no pattern"),
                    listed("", [], "empty pattern"),
                    listed(f"{p}-listpat-a.*", [], "one"),
                    listed(f"{p}-listpat-[ab]1", [], "both"),
                    listed("listpat", [], "a part of the id: none"),
                    listed(f"(?i){p.upper()}-LISTPAT-B1", [], "case-insensitive"),
                    listed(f"(?P<x>{p})-listpat-a1", [], "a named group"),
                    listed(f"{p}-listpat-a1", ["Empty"], "with a state"),
                    listed("[", [], "invalid"),
                    listed("[", ["Bogus"], "invalid, with an unknown state"),
                    listed(r".*\Cz", [], "RE2 refuses \\C"),
                    listed(r"\p{Alpha}.*", [], "no POSIX class in RE2"),
                ],
            )
        )

    t = f"{p}-producers"
    out.append(
        Scenario(
            "describe_producers/v0",
            [
                setup_topic(t),
                init_producer_id(),
                produce(t, idempotent_batch(3, sequence=0, start=0)),
                Exchange(
                    DescribeProducersRequest(
                        topics=[DescribeProducersTopicRequest(name=t, partition_indexes=[0, 4])]
                    ),
                    0,
                ),
            ],
        )
    )
    txn = f"{p}-list-txn"
    for v in versions(ApiKey.LIST_TRANSACTIONS):
        lt = f"{p}-list{v}"
        out.append(
            Scenario(
                f"list_transactions/v{v}",
                [
                    setup_topic(lt),
                    find_txn_coordinator(f"{txn}{v}"),
                    init_txn_producer(f"{txn}{v}"),
                    add_partitions(f"{txn}{v}", lt, [0]),
                    Exchange(
                        ListTransactionsRequest(
                            state_filters=[], producer_id_filters=[], duration_filter=-1
                        ),
                        v,
                        project=only_transactions(f"{txn}{v}"),
                        label="all",
                    ),
                    Exchange(
                        ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[]),
                        v,
                        project=only_transactions(f"{txn}{v}"),
                        label="ongoing",
                    ),
                    end_txn(f"{txn}{v}", committed=False),
                ],
            )
        )
    for v in versions(ApiKey.WRITE_TXN_MARKERS):
        wt = f"{p}-markers{v}"
        out.append(
            Scenario(
                f"write_txn_markers/v{v}",
                [
                    setup_topic(wt),
                    Exchange(
                        WriteTxnMarkersRequest(
                            markers=[
                                WritableTxnMarker(
                                    producer_id=424242,
                                    producer_epoch=0,
                                    transaction_result=False,
                                    topics=[
                                        WritableTxnMarkerTopic(
                                            name=f"{wt}-missing", partition_indexes=[0]
                                        ),
                                        WritableTxnMarkerTopic(name=wt, partition_indexes=[3]),
                                    ],
                                    coordinator_epoch=0,
                                )
                            ]
                        ),
                        v,
                    ),
                ],
            )
        )
    for v in versions(ApiKey.ALTER_REPLICA_LOG_DIRS):
        at = f"{p}-move{v}"

        def learn_log_dir(ctx: Context, response: Any) -> None:
            ctx.values["log_dir"] = response.results[0].log_dir

        def move(ctx: Context, v: int = v, at: str = at) -> Message:
            here = str(ctx.values.get("log_dir", "/nowhere"))
            return AlterReplicaLogDirsRequest(
                dirs=[
                    AlterReplicaLogDir(
                        path=here, topics=[AlterReplicaLogDirTopic(name=at, partitions=[0, 9])]
                    ),
                    AlterReplicaLogDir(
                        path="/no/such/log/dir",
                        topics=[AlterReplicaLogDirTopic(name=at, partitions=[1])],
                    ),
                ]
            )

        out.append(
            Scenario(
                f"alter_replica_log_dirs/v{v}",
                [
                    setup_topic(at, 2),
                    Exchange(DescribeLogDirsRequest(topics=[]), 1, learn_log_dir, label="log dirs"),
                    Exchange(move, v),
                ],
            )
        )
    for v in versions(ApiKey.DESCRIBE_LOG_DIRS):
        dt = f"{p}-logdirs{v}"
        out.append(
            Scenario(
                f"describe_log_dirs/v{v}",
                [
                    setup_topic(dt, 2),
                    produce(dt, record_bytes(V_PRODUCE, 3)),
                    Exchange(
                        DescribeLogDirsRequest(
                            topics=[DescribableLogDirTopic(topic=dt, partitions=[0, 1, 7])]
                        ),
                        v,
                    ),
                    Exchange(
                        DescribeLogDirsRequest(topics=None),
                        v,
                        label="every partition",
                        project=only_log_dir_topics(dt),
                    ),
                ],
            )
        )
    return out


def reinit_txn_producer(
    txn: str,
    *,
    pid_delta: int = 0,
    epoch_delta: int = 0,
    timeout_ms: int = 60000,
    label: str = "",
    keep: bool = True,
) -> Exchange:
    """InitProducerId v4 naming the producer id and epoch the client holds (KIP-360); ``keep``
    takes the answer's id and epoch as the transaction's from then on."""

    def build(ctx: Context) -> Message:
        pid, epoch = _pid(ctx)
        return InitProducerIdRequest(
            transactional_id=txn,
            transaction_timeout_ms=timeout_ms,
            producer_id=pid + pid_delta,
            producer_epoch=epoch + epoch_delta,
        )

    def capture(ctx: Context, response: Any) -> None:
        if keep and response.error_code == 0:
            ctx.values["txn"] = (response.producer_id, response.producer_epoch)

    return Exchange(
        build,
        4,
        capture,
        label=label,
        # aborting an open transaction first answers CONCURRENT_TRANSACTIONS until it is done
        until=lambda r: r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS,
    )


def transaction_v2_scenarios(p: str) -> list[Scenario]:
    """KIP-890 part 2 (transaction version 2, which both brokers finalize): a producer's
    Produce v12+ adds its partition to the transaction (no AddPartitionsToTxn), TxnOffsetCommit
    v5 adds the group's offsets partition (no AddOffsetsToTxn), and every EndTxn v5 bumps the
    producer's epoch (the answer gives it; a retry with the epoch before answers the same).
    Produce v11 still only verifies. Run against Kafka 4.x, the line that speaks these
    versions."""
    t, g, txn = f"{p}-tv2", f"{p}-tv2-group", f"{p}-tv2-txn"
    v_produce = max(versions(ApiKey.PRODUCE), default=12)
    v_end = max(versions(ApiKey.END_TXN), default=5)
    v_commit = max(versions(ApiKey.TXN_OFFSET_COMMIT), default=5)
    return [
        Scenario(
            "edge/transaction-version-2",
            [
                setup_topic(t, 2),
                find_group_coordinator(g),
                find_txn_coordinator(txn),
                init_txn_producer(txn),
                end_txn(txn, version=v_end, label="commit, none open"),
                end_txn(txn, version=v_end, committed=False, label="abort, none open"),
                describe_txn(txn),
                produce(
                    t,
                    txn_batch(2, sequence=0, start=0),
                    version=11,
                    partition=1,
                    label="v11: a partition not added",
                    transactional_id=txn,
                ),
                produce(
                    t,
                    txn_batch(2, sequence=0, start=0),
                    version=12,
                    label="v12 adds the partition",
                    transactional_id=txn,
                ),
                produce(
                    t,
                    txn_batch(1, sequence=2, start=2),
                    version=v_produce,
                    label="in the transaction",
                    transactional_id=txn,
                ),
                describe_txn(txn),
                txn_commit(txn, g, t, 2, version=v_commit, label="adds the offsets partition"),
                *(
                    [txn_commit(txn, g, f"{t}-missing", 2, version=v_commit, label="unknown id")]
                    if v_commit >= 6
                    else []
                ),
                describe_txn(txn),
                offset_fetch(g, {t: [0]}, require_stable=True, label="pending"),
                end_txn(txn, version=v_end, epoch_delta=-1, label="stale epoch"),
                end_txn(txn, version=v_end, label="bumps the epoch"),
                describe_txn(txn),
                end_txn(txn, version=v_end, epoch_delta=-1, label="retried with the epoch before"),
                end_txn(txn, version=v_end, committed=False, epoch_delta=-1, label="contrary"),
                end_txn(txn, version=v_end, label="the new epoch: nothing open"),
                read_committed(t),
                end_txn(txn, version=v_end, committed=False, label="abort after a commit"),
                describe_txn(txn),
                end_txn(txn, version=v_end, committed=False, label="abort after an abort"),
                describe_txn(txn),
                end_txn(txn, version=v_end, committed=False, epoch_delta=-1, label="retried"),
                offset_fetch(g, {t: [0]}, require_stable=True, label="committed"),
                produce(
                    t,
                    txn_batch(2, sequence=0, start=3),
                    version=12,
                    label="the next transaction, with the bumped epoch",
                    transactional_id=txn,
                ),
                produce(
                    t,
                    txn_batch(1, sequence=0, start=5),
                    version=12,
                    partition=1,
                    label="a second partition",
                    transactional_id=txn,
                ),
                describe_txn(txn),
                end_txn(txn, version=v_end, committed=False, label="abort bumps it too"),
                describe_txn(txn),
                end_txn(txn, version=4, label="EndTxn v4 after version 2"),
                read_committed(t),
            ],
        ),
        Scenario(
            "edge/transaction-version-2-fenced",
            [
                setup_topic(f"{t}-fenced"),
                find_txn_coordinator(f"{txn}-fenced"),
                init_txn_producer(f"{txn}-fenced"),
                produce(
                    f"{t}-fenced",
                    txn_batch(2, sequence=0, start=0),
                    version=12,
                    label="opens a transaction",
                    transactional_id=f"{txn}-fenced",
                ),
                init_txn_producer(f"{txn}-fenced"),
                describe_txn(f"{txn}-fenced"),
                read_committed(f"{t}-fenced"),
                produce(
                    f"{t}-fenced",
                    txn_batch(1, sequence=0, start=2),
                    version=12,
                    label="the new instance",
                    transactional_id=f"{txn}-fenced",
                ),
                end_txn(f"{txn}-fenced", version=v_end),
                describe_txn(f"{txn}-fenced"),
                read_committed(f"{t}-fenced"),
            ],
        ),
    ]


def transaction_edge_scenarios(p: str) -> list[Scenario]:
    """The transaction coordinator's refusals and retries: ending a transaction that is not
    open, a retried or contrary EndTxn, stale epochs and unknown producer ids, unknown
    transactional ids, out-of-range timeouts, KIP-360 re-initialisation with the held id and
    epoch, re-initialisation aborting an open transaction, and records for a partition not in
    the transaction (KIP-890 part 1)."""
    out: list[Scenario] = []
    t, txn, g = f"{p}-states", f"{p}-states-txn", f"{p}-states-group"
    out.append(
        Scenario(
            "edge/txn-states",
            [
                setup_topic(t, 2),
                find_group_coordinator(g),
                find_txn_coordinator(txn),
                init_txn_producer(txn),
                end_txn(txn, committed=True, label="commit with none open"),
                end_txn(txn, committed=False, label="abort with none open"),
                add_partitions(txn, t, [0], label="stale epoch", epoch_delta=-1),
                add_partitions(txn, t, [0], label="other producer id", pid_delta=1),
                add_partitions(txn, t, [0, 7], label="unknown partition"),
                add_partitions(txn, t, [0]),
                add_offsets(txn, g, epoch_delta=-1, label="stale epoch"),
                produce(
                    t,
                    txn_batch(2, sequence=0, start=0),
                    partition=1,
                    label="records for a partition not in the transaction",
                    transactional_id=txn,
                ),
                produce(
                    t,
                    txn_batch(2, sequence=0, start=0),
                    label="records for the added partition",
                    transactional_id=txn,
                ),
                end_txn(txn, committed=True, pid_delta=1, label="other producer id"),
                end_txn(txn, committed=True),
                describe_txn(txn),
                end_txn(txn, committed=True, label="commit retried"),
                end_txn(txn, committed=False, label="abort after commit"),
                read_committed(t),
            ],
        )
    )
    # KIP-890 for offsets: a TxnOffsetCommit whose group was never added with AddOffsetsToTxn
    # is refused, and no pending offset is left for ever
    t, txn, g = f"{p}-offsets-not-added", f"{p}-offsets-not-added-txn", f"{p}-ona-group"
    out.append(
        Scenario(
            "edge/txn-offset-commit-not-added",
            [
                setup_topic(t),
                find_group_coordinator(g),
                find_txn_coordinator(txn),
                init_txn_producer(txn),
                add_partitions(txn, t, [0]),
                *(
                    txn_commit(txn, g, t, 1, version=v, label=f"v{v} without AddOffsetsToTxn")
                    for v in versions(ApiKey.TXN_OFFSET_COMMIT)
                    if v < 5
                ),
                describe_txn(txn),
                end_txn(txn, committed=True),
                describe_txn(txn),
                offset_fetch(g, {t: [0]}, require_stable=True, label="nothing pending"),
            ],
        )
    )
    u = f"{p}-unknown-txn"
    out.append(
        Scenario(
            "edge/txn-unknown-transactional-id",
            [
                setup_topic(u),
                find_txn_coordinator(u),
                Exchange(
                    AddPartitionsToTxnRequest(
                        v3_and_below_transactional_id=u,
                        v3_and_below_producer_id=424242,
                        v3_and_below_producer_epoch=0,
                        v3_and_below_topics=[AddPartitionsToTxnTopic(name=u, partitions=[0])],
                    ),
                    V_ADD_PARTITIONS,
                ),
                Exchange(
                    AddOffsetsToTxnRequest(
                        transactional_id=u, producer_id=424242, producer_epoch=0, group_id=u
                    ),
                    V_ADD_OFFSETS,
                ),
                Exchange(
                    EndTxnRequest(
                        transactional_id=u, producer_id=424242, producer_epoch=0, committed=True
                    ),
                    V_END_TXN,
                ),
                describe_txn(u),
            ],
        )
    )
    to = f"{p}-timeouts"
    out.append(
        Scenario(
            "edge/txn-timeouts",
            [
                find_txn_coordinator(to),
                *(
                    Exchange(
                        InitProducerIdRequest(transactional_id=to, transaction_timeout_ms=ms),
                        4,
                        label=f"timeout {ms} ms",
                        until=lambda r: r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS,
                    )
                    for ms in (0, -1, 900001, 2**31 - 1, 900000)
                ),
            ],
        )
    )
    k, ktxn = f"{p}-kip360", f"{p}-kip360-txn"
    out.append(
        Scenario(
            "edge/txn-init-with-the-held-epoch",
            [
                setup_topic(k),
                find_txn_coordinator(ktxn),
                init_txn_producer(ktxn),
                reinit_txn_producer(ktxn, label="held id and epoch"),
                reinit_txn_producer(ktxn, epoch_delta=-1, keep=False, label="the previous epoch"),
                reinit_txn_producer(ktxn, epoch_delta=-3, keep=False, label="an older epoch"),
                reinit_txn_producer(ktxn, epoch_delta=1, keep=False, label="a later epoch"),
                reinit_txn_producer(ktxn, pid_delta=1, keep=False, label="another producer id"),
                add_partitions(ktxn, k, [0]),
                produce(
                    k,
                    txn_batch(2, sequence=0, start=0),
                    label="records",
                    transactional_id=ktxn,
                ),
                reinit_txn_producer(ktxn, label="held id and epoch, a transaction open"),
                end_txn(ktxn, committed=True, epoch_delta=-1, label="the aborted epoch"),
                describe_txn(ktxn),
                read_committed(k),
            ],
        )
    )
    o, otxn = f"{p}-reinit", f"{p}-reinit-txn"
    out.append(
        Scenario(
            "edge/txn-init-aborts-the-open-transaction",
            [
                setup_topic(o),
                find_txn_coordinator(otxn),
                init_txn_producer(otxn, key="old"),
                init_txn_producer(otxn),
                add_partitions(otxn, o, [0]),
                produce(
                    o,
                    txn_batch(2, sequence=0, start=0),
                    label="records",
                    transactional_id=otxn,
                ),
                Exchange(
                    InitProducerIdRequest(transactional_id=otxn, transaction_timeout_ms=60000),
                    4,
                    label="a new instance",
                    until=lambda r: r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS,
                ),
                end_txn(otxn, committed=True, label="the fenced instance commits"),
                describe_txn(otxn),
                read_committed(o),
            ],
        )
    )
    return out


def transaction_listing_scenarios(p: str) -> list[Scenario]:
    """DescribeProducers and ListTransactions around one transaction: an open one (its start
    offset, the Ongoing state, a producer id filter, a duration filter that keeps it and one
    that does not, an unknown state name), then committed."""
    t, txn = f"{p}-listing", f"{p}-listing-txn"

    def listed(label: str, version: int = 1, **filters: Any) -> Exchange:
        def build(ctx: Context) -> Message:
            pid, _ = _pid(ctx)
            ids = filters.get("pids", [])
            return ListTransactionsRequest(
                state_filters=filters.get("states", []),
                producer_id_filters=[pid if x == "held" else x for x in ids],
                duration_filter=filters.get("duration", -1),
            )

        return Exchange(build, version, project=only_transactions(txn), label=label)

    def marker_time(answer: Any) -> Any:
        """After the commit the producer's last timestamp is its marker's, the broker's clock:
        compared for being set."""
        for topic in answer["topics"]:
            for partition in topic["partitions"]:
                for producer in partition["active_producers"]:
                    if producer["last_timestamp"] >= 0:
                        producer["last_timestamp"] = "<set>"
        return answer

    def producers(label: str, *, committed: bool = False) -> Exchange:
        return Exchange(
            DescribeProducersRequest(
                topics=[DescribeProducersTopicRequest(name=t, partition_indexes=[0])]
            ),
            0,
            label=label,
            project=marker_time if committed else None,
        )

    return [
        Scenario(
            "edge/transactions-listed-and-described",
            [
                *open_transaction(t, txn, 3),
                producers("an open transaction"),
                listed("ongoing", states=["Ongoing"]),
                listed("by producer id", pids=["held"]),
                listed("by another producer id", pids=[123456789]),
                listed("open for 0 ms or more", duration=0),
                listed("open for a day or more", duration=86_400_000),
                listed("an unknown state", states=["Ongoing", "Sleeping"]),
                end_txn(txn),
                describe_txn(txn),
                producers("committed", committed=True),
                listed("complete", states=["CompleteCommit"]),
            ],
        )
    ]


def deleted_topic_scenarios(p: str) -> list[Scenario]:
    """A deleted topic's committed offsets go from every group (Kafka's
    ``GroupCoordinator.onPartitionsDeleted``), and so do its pending transactional offsets, so a
    topic created again under the name starts with none. Asked again until they are gone: the
    brokers learn of the deletion a moment after they answer DeleteTopics."""

    def without(topic: str) -> Callable[[Any], bool]:
        def check(response: Any) -> bool:
            topics = response.groups[0].topics if response.groups else response.topics
            return all(t.name != topic for t in topics)

        return check

    def delete(topic: str) -> Exchange:
        return Exchange(
            DeleteTopicsRequest(topic_names=[topic], timeout_ms=30000), 4, label=f"delete {topic}"
        )

    out = []
    # Kafka 3.9's group coordinator hears of a deletion from StopReplica, 4.x's from the
    # metadata image: one scenario against each
    for line, suffix in (("3", ""), ("4", "-kraft")):
        gone, kept = f"{p}-gone{suffix}", f"{p}-kept{suffix}"
        g1, g2 = f"{p}-gone-group{suffix}", f"{p}-gone-only-group{suffix}"
        # Kafka 3.9 may still be deleting the topic's logs: TOPIC_ALREADY_EXISTS until done
        created_again = setup_topic(gone, 2)
        created_again.until = lambda r: all(t.error_code == 0 for t in r.topics)
        steps = [
            setup_topic(gone, 2),
            setup_topic(kept),
            find_group_coordinator(g1),
            find_group_coordinator(g2),
            commit(g1, gone, 3),
            commit(g1, gone, 4, partition=1),
            commit(g1, kept, 5),
            commit(g2, gone, 6),
            offset_fetch(g1, None, label="before"),
            delete(gone),
            offset_fetch(g1, None, label="the kept topic's only", until=without(gone)),
            offset_fetch(g2, None, label="none left", until=without(gone)),
            created_again,
            offset_fetch(g1, {gone: [0, 1]}, label="created again: none"),
            commit(g1, gone, 1, label="the new topic's"),
            offset_fetch(g1, None, label="the new topic's and the kept topic's"),
        ]
        out.append(Scenario(f"edge/deleted-topic-offsets{suffix}", steps, prefer=line))
    t, g, txn = f"{p}-gone-txn", f"{p}-gone-txn-group", f"{p}-gone-txn-txn"
    kept = f"{p}-gone-txn-kept"
    out.append(
        Scenario(
            "edge/deleted-topic-pending-offsets",
            [
                setup_topic(t),
                setup_topic(kept),
                find_group_coordinator(g),
                commit(g, kept, 2),
                find_txn_coordinator(txn),
                init_txn_producer(txn),
                add_offsets(txn, g),
                txn_commit(txn, g, t, 7),
                delete(t),
                offset_fetch(
                    g, None, require_stable=True, label="pending dropped", until=_no_unstable_offset
                ),
                end_txn(txn),
                describe_txn(txn),
                offset_fetch(g, None, label="the commit applies none", until=without(t)),
            ],
        )
    )
    return out


def only_transactions(txn: str) -> Callable[[Any], Any]:
    def project(answer: Any) -> Any:
        return {
            **answer,
            "transaction_states": [
                t for t in answer["transaction_states"] if t["transactional_id"] == txn
            ],
        }

    return project


def only_log_dir_topics(prefix: str) -> Callable[[Any], Any]:
    def project(answer: Any) -> Any:
        results = []
        for result in answer["results"]:
            topics = [t for t in result["topics"] if t["name"].startswith(prefix)]
            results.append({**result, "topics": topics})
        return {**answer, "results": results}

    return project


# --- security and quotas on a plaintext listener without an authorizer, KIP-848 groups ---------


def security_scenarios(prefix: str) -> list[Scenario]:
    """What a plaintext listener with no authorizer answers to the SASL, ACL, quota and SCRAM
    APIs (the brokers side by side run that way)."""
    out: list[Scenario] = []
    p = f"{prefix}-s"
    for v in versions(ApiKey.SASL_HANDSHAKE):
        out.append(
            Scenario(f"sasl_handshake/v{v}", [Exchange(SaslHandshakeRequest(mechanism="PLAIN"), v)])
        )
    for v in versions(ApiKey.SASL_AUTHENTICATE):
        out.append(
            Scenario(
                f"sasl_authenticate/v{v}",
                [Exchange(SaslAuthenticateRequest(auth_bytes=b"\x00user\x00secret"), v)],
            )
        )
    topic_acl = {
        "resource_type": 2,
        "resource_name": f"{p}-acl",
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    for v in versions(ApiKey.CREATE_ACLS):
        out.append(
            Scenario(
                f"create_acls/v{v}",
                [
                    Exchange(
                        CreateAclsRequest(
                            creations=[AclCreation(resource_pattern_type=3, **topic_acl)]
                        ),
                        v,
                    )
                ],
            )
        )
    acl_filter = {
        "resource_type_filter": 2,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    for v in versions(ApiKey.DESCRIBE_ACLS):
        out.append(
            Scenario(f"describe_acls/v{v}", [Exchange(DescribeAclsRequest(**acl_filter), v)])
        )
    for v in versions(ApiKey.DELETE_ACLS):
        out.append(
            Scenario(
                f"delete_acls/v{v}",
                [Exchange(DeleteAclsRequest(filters=[DeleteAclsFilter(**acl_filter)]), v)],
            )
        )
    for v in versions(ApiKey.ALTER_CLIENT_QUOTAS):
        client = f"{p}-client{v}"
        entity = [QuotaEntityComponent(entity_type="client-id", entity_name=client)]
        match = [QuotaFilterComponent(entity_type="client-id", match_type=0, match=client)]
        out.append(
            Scenario(
                f"alter_client_quotas/v{v}",
                [
                    Exchange(
                        AlterClientQuotasRequest(
                            entries=[
                                QuotaAlteration(
                                    entity=entity,
                                    ops=[
                                        QuotaAlterationOp(
                                            key="consumer_byte_rate", value=1048576.0, remove=False
                                        ),
                                        QuotaAlterationOp(
                                            key="no_such_quota", value=1.0, remove=False
                                        ),
                                    ],
                                )
                            ],
                            validate_only=False,
                        ),
                        v,
                        label="unknown quota key",
                    ),
                    Exchange(
                        AlterClientQuotasRequest(
                            entries=[
                                QuotaAlteration(
                                    entity=entity,
                                    ops=[
                                        QuotaAlterationOp(
                                            key="consumer_byte_rate", value=1048576.0, remove=False
                                        )
                                    ],
                                )
                            ],
                            validate_only=False,
                        ),
                        v,
                    ),
                    Exchange(
                        DescribeClientQuotasRequest(components=match, strict=True),
                        min(v, 1),
                        until=lambda r: bool(r.entries),
                        until_timeout=10.0,
                    ),
                    Exchange(
                        AlterClientQuotasRequest(
                            entries=[
                                QuotaAlteration(
                                    entity=entity,
                                    ops=[
                                        QuotaAlterationOp(
                                            key="consumer_byte_rate", value=0.0, remove=True
                                        )
                                    ],
                                )
                            ],
                            validate_only=False,
                        ),
                        v,
                        label="remove",
                    ),
                ],
            )
        )
    for v in versions(ApiKey.DESCRIBE_CLIENT_QUOTAS):
        out.append(
            Scenario(
                f"describe_client_quotas/v{v}",
                [
                    Exchange(
                        DescribeClientQuotasRequest(
                            components=[
                                QuotaFilterComponent(
                                    entity_type="client-id", match_type=0, match=f"{p}-nobody"
                                )
                            ],
                            strict=False,
                        ),
                        v,
                    )
                ],
            )
        )

    # AlterClientQuotas refusals, validate only: negative rates, a request percentage,
    # entity combinations Kafka does not keep (ip with user, client-id twice), an empty entity,
    # an unknown entity type, a key of another entity type (connection rate on a user)
    def quota(
        components: list[tuple[str, str | None]], key: str, value: float, label: str
    ) -> Exchange:
        return Exchange(
            AlterClientQuotasRequest(
                entries=[
                    QuotaAlteration(
                        entity=[
                            QuotaEntityComponent(entity_type=t, entity_name=n)
                            for t, n in components
                        ],
                        ops=[QuotaAlterationOp(key=key, value=value, remove=False)],
                    )
                ],
                validate_only=True,
            ),
            1,
            label=label,
        )

    u, c = f"{p}-qu", f"{p}-qc"
    out.append(
        Scenario(
            "edge/client-quota-refusals",
            [
                quota([("user", u)], "producer_byte_rate", -5.0, "negative byte rate"),
                quota([("user", u)], "producer_byte_rate", 0.0, "zero byte rate"),
                quota([("user", u)], "producer_byte_rate", 1.5, "fractional byte rate"),
                quota([("client-id", c)], "request_percentage", 250.0, "request percentage"),
                quota([("client-id", c)], "request_percentage", -1.0, "negative percentage"),
                quota([("user", u)], "controller_mutation_rate", 2.5, "mutation rate"),
                quota([("user", u)], "connection_creation_rate", 5.0, "connection rate on a user"),
                quota([("ip", "127.0.0.1")], "connection_creation_rate", 5.0, "ip"),
                quota([("ip", "not an address")], "connection_creation_rate", 5.0, "bad ip"),
                quota([("ip", None)], "connection_creation_rate", 5.0, "default ip"),
                quota(
                    [("ip", "127.0.0.1"), ("user", u)],
                    "connection_creation_rate",
                    5.0,
                    "ip with user",
                ),
                quota(
                    [("client-id", c), ("client-id", f"{c}2")],
                    "producer_byte_rate",
                    5.0,
                    "client-id twice",
                ),
                quota([], "producer_byte_rate", 5.0, "no entity"),
                quota([("group", c)], "producer_byte_rate", 5.0, "unknown entity type"),
                quota([("user", "")], "producer_byte_rate", 5.0, "empty user name"),
                quota([("user", None), ("client-id", None)], "consumer_byte_rate", 9.0, "defaults"),
            ],
        )
    )

    # ip entities (KIP-612): connection_creation_rate set, described and removed. The rates
    # are too high to slow the corpus's own connections (from 127.0.0.1, which "localhost" and
    # the default entity cover)
    def ip_quota(
        ip: str | None, value: float, label: str, *, remove: bool = False, key: str = ""
    ) -> Exchange:
        return Exchange(
            AlterClientQuotasRequest(
                entries=[
                    QuotaAlteration(
                        entity=[QuotaEntityComponent(entity_type="ip", entity_name=ip)],
                        ops=[
                            QuotaAlterationOp(
                                key=key or "connection_creation_rate", value=value, remove=remove
                            )
                        ],
                    )
                ],
                validate_only=False,
            ),
            1,
            label=label,
        )

    def ip_quotas(
        components: list[tuple[str, int, str | None]], label: str, until: int | None = None
    ) -> Exchange:
        return Exchange(
            DescribeClientQuotasRequest(
                components=[
                    QuotaFilterComponent(entity_type=t, match_type=m, match=n)
                    for t, m, n in components
                ],
                strict=True,
            ),
            1,
            label=label,
            until=None if until is None else (lambda r, n=until: len(r.entries or []) == n),
            project=_sorted_quota_entries,
        )

    # Kafka 3.9 sanitizes an ip entity's name before it checks that it resolves, so it refuses
    # IPv6 addresses (%3A%3A2 does not resolve), and it takes a zero rate, which 4.x refuses:
    # the IPv6 address against 4.4, zero against 3.9 (Odradek takes both)
    for line, suffix in (("3", ""), ("4", "-kraft")):
        a = "127.0.0.2" if line == "3" else "127.0.0.3"
        ipv6 = [] if line == "3" else ["::3"]
        out.append(
            Scenario(
                f"edge/ip-quotas{suffix}",
                [
                    ip_quota(a, 5.0, "an address"),
                    *[ip_quota(b, 7.0, "an IPv6 address") for b in ipv6],
                    ip_quota("localhost", 100000.0, "a host name"),
                    ip_quota(None, 1000000.0, "the default"),
                    ip_quota(a, 2.5, "a fraction"),
                    ip_quota(a, 1e12, "too large"),
                    ip_quota(a, -3.0, "negative"),
                    *([ip_quota(f"{a}0", 0.0, "zero")] if line == "3" else []),
                    ip_quota(a, 5.0, "a user's key", key="producer_byte_rate"),
                    ip_quota("no-such-host.invalid", 5.0, "a host name that does not resolve"),
                    ip_quotas([("ip", 0, a)], "one address", until=1),
                    ip_quotas([("ip", 1, None)], "the default entity", until=1),
                    ip_quotas(
                        [("ip", 2, None)], "every ip entity", until=3 + len(ipv6) + (line == "3")
                    ),
                    ip_quotas([("ip", 2, None), ("user", 2, None)], "ip and user components"),
                    ip_quota(a, 0.0, "remove", remove=True),
                    *[ip_quota(b, 0.0, "remove the IPv6 address's", remove=True) for b in ipv6],
                    *([ip_quota(f"{a}0", 0.0, "remove zero", remove=True)] if line == "3" else []),
                    ip_quota("localhost", 0.0, "remove the host name's", remove=True),
                    ip_quota(None, 0.0, "remove the default's", remove=True),
                    ip_quotas([("ip", 2, None)], "none left", until=0),
                ],
                prefer=line,
            )
        )

    user = f"{p}-user"
    salted = bytes(range(32))

    def scram(
        upsertions: list[tuple[str, int, int, bytes]],
        deletions: list[tuple[str, int]],
        label: str,
    ) -> Exchange:
        return Exchange(
            AlterUserScramCredentialsRequest(
                deletions=[ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions],
                upsertions=[
                    ScramCredentialUpsertion(
                        name=n, mechanism=m, iterations=i, salt=salt, salted_password=salted
                    )
                    for n, m, i, salt in upsertions
                ],
            ),
            0,
            label=label,
        )

    su = f"{p}-scram"
    out.append(
        Scenario(
            "edge/scram-credential-refusals",
            [
                scram([(su, 0, 4096, b"salt")], [], "unknown mechanism"),
                scram([(su, 1, 16385, b"salt")], [], "too many iterations"),
                scram([(su, 1, 4096, b"")], [], "empty salt"),
                scram([("", 1, 4096, b"salt")], [], "empty user"),
                scram([(su, 1, 4096, b"salt")], [(su, 1)], "upsert and delete one user"),
                scram([(su, 1, 4096, b"salt"), (su, 1, 8192, b"salt")], [], "one mechanism twice"),
                scram([], [(f"{su}-none", 1)], "delete what does not exist"),
                scram([], [(su, 0)], "delete an unknown mechanism"),
                scram([(su, 1, 4096, b"salt"), (su, 2, 4096, b"salt")], [], "two mechanisms"),
                Exchange(
                    DescribeUserScramCredentialsRequest(
                        users=[ScramUserName(name=su), ScramUserName(name=su)]
                    ),
                    0,
                    label="one user twice",
                    until=lambda r: any(x.credential_infos for x in r.results),
                    until_timeout=10.0,
                ),
                scram([], [(su, 1), (su, 2)], "delete both"),
            ],
        )
    )
    out.append(
        Scenario(
            "user_scram_credentials/v0",
            [
                Exchange(
                    DescribeUserScramCredentialsRequest(users=[ScramUserName(name=user)]),
                    0,
                    label="unknown user",
                ),
                Exchange(
                    AlterUserScramCredentialsRequest(
                        deletions=[],
                        upsertions=[
                            ScramCredentialUpsertion(
                                name=user,
                                mechanism=1,
                                iterations=4096,
                                salt=b"salt-of-16-bytes",
                                salted_password=salted,
                            ),
                            ScramCredentialUpsertion(
                                name=f"{user}-weak",
                                mechanism=2,
                                iterations=10,
                                salt=b"salt",
                                salted_password=salted,
                            ),
                        ],
                    ),
                    0,
                    label="upsert (one below the minimum iterations)",
                ),
                Exchange(
                    DescribeUserScramCredentialsRequest(
                        users=[ScramUserName(name=user), ScramUserName(name=f"{user}-weak")]
                    ),
                    0,
                    until=lambda r: bool(r.results and r.results[0].credential_infos),
                    until_timeout=10.0,
                ),
                Exchange(
                    AlterUserScramCredentialsRequest(
                        deletions=[ScramCredentialDeletion(name=user, mechanism=1)],
                        upsertions=[],
                    ),
                    0,
                    label="delete",
                ),
            ],
        )
    )
    return out


def _without_assignment(answer: Any) -> Any:
    """A heartbeat answer without its assignment: Kafka 4.x computes a new group's assignment
    apart from the heartbeat, so the first answers may or may not carry it yet (the Java
    consumer tests check that members get and consume their partitions on both brokers)."""
    return {k: v for k, v in answer.items() if k != "assignment"}


def _without_group_assignments(answer: Any) -> Any:
    """A ConsumerGroupDescribe answer without what depends on when the assignment arrived
    (the group's state, the members' current and target assignments)."""
    groups = []
    for group in answer["groups"]:
        members = [
            {k: v for k, v in m.items() if k not in ("assignment", "target_assignment")}
            for m in group["members"]
        ]
        groups.append(
            {**{k: v for k, v in group.items() if k != "group_state"}, "members": members}
        )
    return {**answer, "groups": groups}


def consumer_group_scenarios(prefix: str) -> list[Scenario]:
    """KIP-848 groups, against Kafka 4.x (Kafka 3.9 in ZooKeeper mode has no consumer groups)."""
    out: list[Scenario] = []
    p = f"{prefix}-k"
    for api, key in (
        ("consumer_group_heartbeat", ApiKey.CONSUMER_GROUP_HEARTBEAT),
        ("consumer_group_describe", ApiKey.CONSUMER_GROUP_DESCRIBE),
    ):
        for v in versions(key):
            t, g = f"{p}-{api[15:]}{v}", f"{p}-{api[15:]}{v}-group"
            hb = v if api == "consumer_group_heartbeat" else 0
            member = "ZwsvsQy6Q2iY3VtK8a5o1g" if hb >= 1 else ""

            def heartbeat_request(
                ctx: Context, epoch: int, g: str = g, t: str = t, member: str = member
            ) -> Message:
                return ConsumerGroupHeartbeatRequest(
                    group_id=g,
                    member_id=str(ctx.values.get("kip848.member", member)),
                    member_epoch=epoch,
                    instance_id=None,
                    rack_id=None,
                    rebalance_timeout_ms=10000,
                    subscribed_topic_names=[t] if epoch == 0 else None,
                    subscribed_topic_regex=None,
                    server_assignor=None,
                    topic_partitions=[] if epoch == 0 else None,
                )

            def keep(ctx: Context, response: Any) -> None:
                if response.member_id:
                    ctx.values["kip848.member"] = response.member_id
                ctx.values["kip848.epoch"] = response.member_epoch

            out.append(
                Scenario(
                    f"{api}/v{v}",
                    [
                        setup_topic(t, 2),
                        find_group_coordinator(g),
                        Exchange(
                            lambda ctx, r=heartbeat_request: r(ctx, 0),
                            hb,
                            keep,
                            label="join",
                            project=_without_assignment,
                        ),
                        Exchange(
                            lambda ctx, r=heartbeat_request: r(
                                ctx, int(ctx.values.get("kip848.epoch", 0))
                            ),
                            hb,
                            keep,
                            label="heartbeat",
                            project=_without_assignment,
                        ),
                        Exchange(
                            ConsumerGroupDescribeRequest(
                                group_ids=[g, f"{g}-unknown"], include_authorized_operations=True
                            ),
                            v if api == "consumer_group_describe" else 0,
                            project=_without_group_assignments,
                        ),
                        Exchange(lambda ctx, r=heartbeat_request: r(ctx, -1), hb, label="leave"),
                    ],
                    prefer="4",
                )
            )
    return out + consumer_group_refusals(prefix) + group_config_scenarios(prefix)


GROUP_RESOURCE = 32
#: the group configs Odradek has (Kafka's GroupConfig also has share and streams groups' keys)
GROUP_CONSUMER_KEYS = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms")


def group_config_ops(
    group: str, ops: list[tuple[str, int, str | None]], label: str, *, validate_only: bool = False
) -> Exchange:
    return incremental_alter(
        group, ops, resource_type=GROUP_RESOURCE, validate_only=validate_only, label=label
    )


def group_config_scenarios(prefix: str) -> list[Scenario]:
    """KIP-848's group configs, against Kafka 4.x: a group's own session timeout and heartbeat
    interval set, refused out of the broker's bounds, described (the consumer groups' keys),
    listed, and followed by the coordinator (a member's heartbeat interval)."""
    p = f"{prefix}-k"
    t, g, other = f"{p}-gconf", f"{p}-gconf-group", f"{p}-gconf-none"

    def described(group: str, label: str) -> Exchange:
        def mine(answer: Any) -> Any:
            return {
                **answer,
                "results": [
                    {**r, "configs": [c for c in r["configs"] if c["name"] in GROUP_CONSUMER_KEYS]}
                    for r in answer["results"]
                ],
            }

        exchange = describe_configs(GROUP_RESOURCE, group, None)
        exchange.project, exchange.label = mine, label
        return exchange

    def listed(label: str) -> Exchange:
        def mine(answer: Any) -> Any:
            return [r for r in answer["config_resources"] if r["resource_name"].startswith(p)]

        request = ListConfigResourcesRequest(resource_types=[GROUP_RESOURCE])
        return Exchange(request, 1, project=mine, label=label)

    def member(epoch: int) -> Message:
        return ConsumerGroupHeartbeatRequest(
            group_id=g,
            member_id="ZwsvsQy6Q2iY3VtK8a5o1g",
            member_epoch=epoch,
            instance_id=None,
            rack_id=None,
            rebalance_timeout_ms=10000,
            subscribed_topic_names=[t] if epoch == 0 else None,
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[] if epoch == 0 else None,
        )

    def interval(answer: Any) -> Any:
        return {k: answer[k] for k in ("error_code", "heartbeat_interval_ms")}

    hb_version = max(versions(ApiKey.CONSUMER_GROUP_HEARTBEAT), default=-1)
    if hb_version < 1 or 1 not in versions(ApiKey.LIST_CONFIG_RESOURCES):
        return []
    keys = GROUP_CONSUMER_KEYS
    exchanges = [
        setup_topic(t),
        group_config_ops(g, [(keys[0], SET, "6000"), (keys[1], SET, "50000")], "set both"),
        described(g, "the group's own values"),
        described(other, "a group without configs: the broker's"),
        listed("groups with configs"),
        group_config_ops(g, [(keys[1], SET, "1000")], "session timeout below the minimum"),
        group_config_ops(g, [(keys[1], SET, "60001")], "session timeout above the maximum"),
        group_config_ops(g, [(keys[0], SET, "4999")], "heartbeat below the minimum"),
        group_config_ops(g, [(keys[0], SET, "15001")], "heartbeat above the maximum"),
        group_config_ops(g, [(keys[0], SET, "abc")], "not a number"),
        group_config_ops(g, [("consumer.unknown.ms", SET, "1")], "an unknown key"),
        group_config_ops(g, [(keys[0], APPEND, "6000")], "APPEND to an int"),
        group_config_ops("", [(keys[0], SET, "6000")], "the default group"),
        group_config_ops(g, [(keys[1], SET, "55000")], "validate only", validate_only=True),
        described(g, "unchanged by the refusals and the validation"),
        find_group_coordinator(g),
        Exchange(member(0), hb_version, label="the group's interval told", project=interval),
        Exchange(member(-1), hb_version, label="the member leaves", project=interval),
        group_config_ops(g, [(keys[0], DELETE, None), (keys[1], DELETE, None)], "delete both"),
        described(g, "the broker's values again"),
        listed("no group with configs"),
    ]
    return [Scenario("consumer_group/group-configs", exchanges, prefer="4")]


def consumer_group_refusals(prefix: str) -> list[Scenario]:
    """What a KIP-848 group coordinator refuses, against Kafka 4.x: a first heartbeat without
    a subscription, a negative rebalance timeout, an unknown server assignor, an empty group
    id, an unknown member, an instance id another live member holds, an epoch ahead of the
    member's, an invalid regex; then the classic APIs
    on a consumer group: OffsetCommit v9 with a stale epoch or an unknown member,
    DescribeGroups, ListGroups by type, DeleteGroups of a group with members, and a static
    member's temporary leave (epoch -2)."""
    out: list[Scenario] = []
    p = f"{prefix}-k"
    for v in versions(ApiKey.CONSUMER_GROUP_HEARTBEAT):
        t, g = f"{p}-refusals{v}", f"{p}-refusals{v}-group"
        first = "ZwsvsQy6Q2iY3VtK8a5o1g" if v >= 1 else ""
        second = "Q2iY3VtK8a5o1gZwsvsQy6" if v >= 1 else ""

        def hb(
            *,
            label: str,
            epoch: int | Callable[[Context], int] = 0,
            member: str | None = None,
            group: str = g,
            topics: list[str] | None = None,
            regex: str | None = None,
            timeout_ms: int = 10000,
            assignor: str | None = None,
            instance: str | None = "s1",
            keep: bool = False,
            owned: bool = False,
            v: int = v,
            first: str = first,
        ) -> Exchange:
            def build(ctx: Context) -> Message:
                e = epoch(ctx) if callable(epoch) else epoch
                return ConsumerGroupHeartbeatRequest(
                    group_id=group,
                    member_id=member
                    if member is not None
                    else str(ctx.values.get("kip848.member", first)),
                    member_epoch=e,
                    instance_id=instance,
                    rack_id=None,
                    rebalance_timeout_ms=timeout_ms,
                    subscribed_topic_names=topics,
                    subscribed_topic_regex=regex,
                    server_assignor=assignor,
                    topic_partitions=[] if e == 0 or owned else None,
                )

            def capture(ctx: Context, response: Any) -> None:
                if keep and response.error_code == 0:
                    ctx.values["kip848.member"] = response.member_id
                    ctx.values["kip848.epoch"] = response.member_epoch

            return Exchange(build, v, capture, label=label, project=_without_assignment)

        def held(delta: int) -> Callable[[Context], int]:
            return lambda ctx: int(ctx.values.get("kip848.epoch", 0)) + delta

        member_of_group = lambda ctx: str(ctx.values.get("kip848.member", ""))  # noqa: E731
        steps = [
            setup_topic(t, 2),
            find_group_coordinator(g),
            hb(label="no subscription"),
            hb(label="negative rebalance timeout", topics=[t], timeout_ms=-1),
            hb(label="unknown assignor", topics=[t], assignor="nope"),
            hb(label="empty group id", topics=[t], group=""),
            hb(label="unknown member", topics=[t], epoch=3, member="AAAAAAAAAAAAAAAAAAAAAA"),
            hb(label="join", topics=[t], keep=True),
            hb(label="the instance id of a live member", topics=[t], member=second),
            hb(label="epoch ahead", epoch=held(5)),
            commit(
                g,
                t,
                1,
                version=9,
                generation=held(-1),
                member=member_of_group,
                label="commit, stale member epoch",
            ),
            commit(
                g,
                t,
                1,
                version=9,
                generation=held(0),
                member="AAAAAAAAAAAAAAAAAAAAAA",
                label="commit, unknown member",
            ),
            describe_groups([g]),
            Exchange(
                ListGroupsRequest(states_filter=[], types_filter=["consumer"]),
                5,
                project=only_groups(g),
                label="consumer groups",
            ),
            Exchange(
                ListGroupsRequest(states_filter=[], types_filter=["classic"]),
                5,
                project=only_groups(g),
                label="classic groups",
            ),
            Exchange(DeleteGroupsRequest(groups_names=[g]), 2, label="delete, a member in it"),
            hb(label="static member leaves for now", epoch=-2),
            hb(label="the instance rejoins", topics=[t], member=second, keep=True),
            hb(label="leave", epoch=-1),
        ]
        if v >= 1:
            steps.insert(
                8, hb(label="invalid regex", topics=None, regex="[", member=second, instance=None)
            )
        out.append(Scenario(f"consumer_group_refusals/v{v}", steps, prefer="4"))
    return out


# --- the controller's admin APIs ---------------------------------------------------------------


def controller_scenarios(prefix: str) -> list[Scenario]:
    """Leader elections, reassignments and controlled shutdown on a one-broker cluster: what
    there is to elect or move is nothing, so the answers are the errors Kafka gives for it."""
    out: list[Scenario] = []
    p = f"{prefix}-c"
    for v in versions(ApiKey.ELECT_LEADERS):
        t = f"{p}-elect{v}"
        out.append(
            Scenario(
                f"elect_leaders/v{v}",
                [
                    setup_topic(t, 2),
                    Exchange(
                        ElectLeadersRequest(
                            election_type=0,
                            topic_partitions=[
                                ElectLeadersTopicPartitions(topic=t, partitions=[0, 1, 9]),
                                ElectLeadersTopicPartitions(topic=f"{t}-missing", partitions=[0]),
                            ],
                            timeout_ms=30000,
                        ),
                        v,
                        label="preferred",
                    ),
                    *(
                        [
                            Exchange(
                                ElectLeadersRequest(
                                    election_type=1,
                                    topic_partitions=[
                                        ElectLeadersTopicPartitions(topic=t, partitions=[0])
                                    ],
                                    timeout_ms=30000,
                                ),
                                v,
                                label="unclean",
                            )
                        ]
                        if v >= 1
                        else []
                    ),
                ],
            )
        )
    for v in versions(ApiKey.ALTER_PARTITION_REASSIGNMENTS):
        t = f"{p}-reassign{v}"

        def reassign(replicas: list[int] | None, topic: str, label: str, v: int = v) -> Exchange:
            return Exchange(
                AlterPartitionReassignmentsRequest(
                    timeout_ms=30000,
                    topics=[
                        ReassignableTopic(
                            name=topic,
                            partitions=[
                                ReassignablePartition(partition_index=0, replicas=replicas)
                            ],
                        )
                    ],
                ),
                v,
                label=label,
            )

        out.append(
            Scenario(
                f"alter_partition_reassignments/v{v}",
                [
                    setup_topic(t),
                    reassign([7], t, "to an unknown broker"),
                    reassign(None, t, "cancel when none is in progress"),
                    reassign([0], f"{t}-missing", "unknown topic"),
                    reassign([0], t, "to the same replicas"),
                ],
            )
        )
    for v in versions(ApiKey.LIST_PARTITION_REASSIGNMENTS):
        t = f"{p}-listing{v}"
        out.append(
            Scenario(
                f"list_partition_reassignments/v{v}",
                [
                    setup_topic(t),
                    Exchange(
                        ListPartitionReassignmentsRequest(
                            timeout_ms=30000,
                            topics=[
                                ListPartitionReassignmentsTopics(name=t, partition_indexes=[0, 5])
                            ],
                        ),
                        v,
                    ),
                    Exchange(
                        ListPartitionReassignmentsRequest(timeout_ms=30000, topics=None),
                        v,
                        label="every partition",
                    ),
                ],
            )
        )
    for v in versions(ApiKey.CONTROLLED_SHUTDOWN):
        out.append(
            Scenario(
                f"controlled_shutdown/v{v}",
                # a broker that is not registered: the one answer that changes nothing
                [Exchange(ControlledShutdownRequest(broker_id=99, broker_epoch=-1), v)],
            )
        )
    out.extend(feature_scenarios())
    return out


def feature_scenarios() -> list[Scenario]:
    """UpdateFeatures (KIP-584) of transaction.version, which both brokers finalize at 2: the
    same level, levels out of range, the upgrade types' refusals, an unknown feature, a
    validate-only downgrade, and a downgrade to 1 then back to 2, so that the scenarios after
    these find the level they started with. Kafka 4.x's controller is the reference."""

    def update(
        v: int,
        level: int,
        label: str,
        *,
        kind: int = 1,
        feature: str = "transaction.version",
        allow_downgrade: bool = False,
        validate_only: bool = False,
    ) -> Exchange:
        key = FeatureUpdateKey(feature=feature, max_version_level=level)
        if v == 0:
            key.allow_downgrade = allow_downgrade
        else:
            key.upgrade_type = kind
        request = UpdateFeaturesRequest(timeout_ms=30000, feature_updates=[key])
        if v >= 1:
            request.validate_only = validate_only
        return Exchange(request, v, label=label)

    out = []
    for v in versions(ApiKey.UPDATE_FEATURES):
        steps = [
            update(v, 2, "the level finalized"),
            update(v, 3, "above the supported levels"),
            update(v, -1, "below 0"),
            update(v, 1, "a downgrade asked as an upgrade"),
            update(v, 1, "an unknown feature", feature="no.such.feature"),
            Exchange(UpdateFeaturesRequest(timeout_ms=30000, feature_updates=[]), v, label="none"),
        ]
        if v == 0:
            steps.append(update(v, 1, "a downgrade allowed", allow_downgrade=True))
        else:
            steps += [
                update(v, 3, "an upgrade as a safe downgrade", kind=2),
                update(v, 2, "an unknown upgrade type", kind=7),
                update(v, 0, "a safe downgrade, validated only", kind=2, validate_only=True),
                update(v, 1, "a safe downgrade", kind=2),
                update(v, 2, "an upgrade back"),
            ]
        out.append(Scenario(f"update_features/v{v}", steps, prefer="4"))
    return out


# --- client telemetry (KIP-714) ----------------------------------------------------------------

CLIENT_METRICS_RESOURCE = 16
ZERO_INSTANCE = uuid.UUID(int=0)
#: an instance id neither broker handed out
STRANGER_INSTANCE = uuid.UUID("0b6c51a2-3f7e-4d0a-8a51-6f4e2c9d1e70")


def telemetry_get(key: str, *, label: str = "", fresh: bool = True, **kw: Any) -> Exchange:
    """GetTelemetrySubscriptions, as a new client (the zero instance id: the broker hands one
    out) or as instance ``key``; keeps the instance and subscription ids under ``key``."""

    def build(ctx: Context) -> Message:
        # (the probe context that asks an exchange its API key has no instance yet)
        instance = ZERO_INSTANCE if fresh else ctx.values.get(f"{key}-instance", ZERO_INSTANCE)
        return GetTelemetrySubscriptionsRequest(client_instance_id=instance)

    def capture(ctx: Context, response: Any) -> None:
        if response.error_code == 0:
            ctx.values[f"{key}-instance"] = response.client_instance_id
            ctx.values[f"{key}-subscription"] = response.subscription_id

    return Exchange(build, 0, capture, label=label or f"get {key}", **kw)


def telemetry_push(
    key: str,
    *,
    label: str,
    payload: bytes = b"",
    compression_type: int = 0,
    terminating: bool = False,
    subscription_delta: int = 0,
    instance: uuid.UUID | None = None,
) -> Exchange:
    """PushTelemetry as instance ``key`` (or as ``instance``, an id given outright)."""

    def build(ctx: Context) -> Message:
        return PushTelemetryRequest(
            client_instance_id=(
                instance
                if instance is not None
                else ctx.values.get(f"{key}-instance", ZERO_INSTANCE)
            ),
            subscription_id=ctx.values.get(f"{key}-subscription", 0) + subscription_delta,
            terminating=terminating,
            compression_type=compression_type,
            metrics=payload,
        )

    return Exchange(build, 0, label=label)


def _telemetry_keys(answer: Any) -> Any:
    """An ApiVersions answer reduced to the client telemetry APIs (keys 71 and 72)."""
    return [k for k in answer["api_keys"] if k["api_key"] in (71, 72)]


def client_metrics_subscription(name: str, ops: list[tuple[str, int, str | None]]) -> Exchange:
    return Exchange(
        IncrementalAlterConfigsRequest(
            resources=[
                IncResource(
                    resource_type=CLIENT_METRICS_RESOURCE,
                    resource_name=name,
                    configs=[IncConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
                )
            ],
            validate_only=False,
        ),
        1,
        label=f"subscription {name}",
    )


def telemetry_scenarios(prefix: str) -> list[Scenario]:
    """GetTelemetrySubscriptions and PushTelemetry (KIP-714) at every version Odradek
    advertises (it does while its metrics endpoint, where pushed metrics go, is on: the
    ``odradek_zk`` fixture turns it on).

    Compared with Kafka 4.x: it serves both APIs without advertising them when no metrics
    reporter receives client telemetry (its distribution ships none), and Kafka 3.9 in ZooKeeper
    mode has no client metrics at all (it closes the connection). The advertising is the one
    difference, D17; everything a client can be told is compared: a new instance's
    subscription, the throttling of early requests, unknown subscription ids and instances,
    compression types, payload size, terminating pushes, and a subscription's metrics and
    interval once one is configured (a CLIENT_METRICS resource, as kafka-client-metrics
    writes it) and after it is removed.
    """
    p = f"{prefix}-telemetry"
    gauge = otlp.encode_metrics_data(
        [
            otlp.ResourceMetrics(
                (("service.name", "odradek-diff"),),
                (otlp.Metric("odradek.diff.gauge", otlp.GAUGE, (otlp.DataPoint((), 42.0),)),),
            )
        ]
    )
    too_large = b"\x00" * (1024 * 1024 + 1)  # one byte past telemetry.max.bytes' default
    unadvertised = frozenset({int(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS), int(ApiKey.PUSH_TELEMETRY)})
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"telemetry/{name}", exchanges, prefer="4", unadvertised=unadvertised))

    add(
        "advertised",
        [
            Exchange(
                ApiVersionsRequest(
                    client_software_name="odradek-diff", client_software_version="1.0"
                ),
                3,
                label="telemetry APIs advertised",
                project=_telemetry_keys,
            ),
        ],
    )
    for v in versions(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS):
        assert v == 0, f"GetTelemetrySubscriptions v{v}: extend the telemetry scenarios"
    for v in versions(ApiKey.PUSH_TELEMETRY):
        assert v == 0, f"PushTelemetry v{v}: extend the telemetry scenarios"
    add(
        "subscriptions/v0",
        [
            telemetry_get("a", label="a new client"),
            telemetry_get("a", fresh=False, label="again before the push interval"),
            telemetry_push("a", subscription_delta=1, label="another subscription id"),
            telemetry_get("a", fresh=False, label="again after an unknown subscription id"),
            telemetry_push("a", label="early again"),
        ],
    )
    add(
        "push/v0",
        [
            telemetry_get("b", label="a new client"),
            telemetry_push("b", payload=gauge, label="metrics"),
            telemetry_push("b", payload=gauge, label="before the push interval"),
            telemetry_push("b", terminating=True, label="terminating"),
            telemetry_push("b", label="after terminating"),
            telemetry_get("b", fresh=False, label="get after terminating"),
            telemetry_get("c", label="another client"),
            telemetry_push("c", payload=gauge, compression_type=ZSTD, label="zstd, not zstd"),
            telemetry_get("d", label="a third client"),
            telemetry_push("d", compression_type=9, label="unknown compression type"),
            telemetry_get("e", label="a fourth client"),
            telemetry_push("e", payload=too_large, label="past telemetry.max.bytes"),
            telemetry_get("f", label="a fifth client"),
            telemetry_push("f", payload=b"\xff\xfe\xfd", label="not OTLP"),
            telemetry_push("z", instance=ZERO_INSTANCE, label="the zero instance id"),
            telemetry_push("z", instance=STRANGER_INSTANCE, label="an instance never handed out"),
        ],
    )
    sub = f"{p}-sub"
    add(
        "configured/v0",
        [
            client_metrics_subscription(
                sub,
                [
                    ("metrics", SET, "org.apache.kafka.producer.,org.apache.kafka.consumer."),
                    ("interval.ms", SET, "2000"),
                    ("match", SET, "client_software_name=odradek-diff"),
                ],
            ),
            telemetry_get(
                "s",
                label="a client the subscription matches",
                until=lambda r: r.error_code != 0 or bool(r.requested_metrics),
            ),
            telemetry_push("s", payload=gauge, label="metrics"),
            client_metrics_subscription(sub, [("metrics", SET, "*")]),
            telemetry_get(
                "t",
                label="every metric",
                until=lambda r: r.error_code != 0 or r.requested_metrics == ["*"],
            ),
            client_metrics_subscription(
                sub,
                [("metrics", DELETE, None), ("interval.ms", DELETE, None), ("match", DELETE, None)],
            ),
            telemetry_get(
                "u",
                label="after the subscription is removed",
                until=lambda r: r.error_code != 0 or not r.requested_metrics,
            ),
        ],
    )
    # ListConfigResources (v0: ListClientMetricsResources; v1: KIP-1142's resource types): the
    # scenario's own subscription and topics, and the brokers, by type in Kafka's order
    listed_sub, listed_topic = f"{p}-listed-sub", f"{p}-listed"

    def listed(types: list[int] | None, version: int, label: str) -> Exchange:
        def mine(answer: Any) -> Any:
            return {
                **answer,
                "config_resources": [
                    r
                    for r in answer["config_resources"]
                    if r["resource_name"].startswith(p) or r["resource_name"].isdigit()
                ],
            }

        return Exchange(
            ListConfigResourcesRequest(resource_types=types or []),
            version,
            project=mine,
            label=label,
        )

    for v in versions(ApiKey.LIST_CONFIG_RESOURCES):
        assert v <= 1, f"ListConfigResources v{v}: extend the scenario"
        exchanges = [
            setup_topic(f"{listed_topic}{v}-b"),
            setup_topic(f"{listed_topic}{v}-a", **{"retention.ms": "100000"}),
            client_metrics_subscription(f"{listed_sub}{v}", [("metrics", SET, "*")]),
            listed(None, v, "every type" if v else "client metrics subscriptions"),
        ]
        if v >= 1:
            exchanges += [
                listed([TOPIC_RESOURCE], v, "topics"),
                listed([BROKER_RESOURCE], v, "brokers"),
                listed([BROKER_LOGGER_RESOURCE], v, "broker loggers"),
                listed([CLIENT_METRICS_RESOURCE], v, "client metrics"),
                listed([32], v, "groups with configs: none"),
                listed([TOPIC_RESOURCE, CLIENT_METRICS_RESOURCE], v, "two types, Kafka's order"),
                listed([TOPIC_RESOURCE, TOPIC_RESOURCE], v, "a type twice"),
                listed([1], v, "ANY: unsupported"),
                listed([0], v, "UNKNOWN: unsupported"),
                listed([64], v, "an unknown number: unsupported"),
                listed([TOPIC_RESOURCE, -1], v, "a known and an unknown type"),
            ]
        exchanges.append(
            client_metrics_subscription(f"{listed_sub}{v}", [("metrics", DELETE, None)])
        )
        add(f"list-config-resources/v{v}", exchanges)
    return out


# --- replication throttles (kafka-reassign-partitions) -------------------------------------------

#: Kafka's broker-level replication quota configs (``QuotaConfig``), which kafka-reassign-partitions
#: sets with ``--throttle`` and clears with ``--verify``: dynamic only, never in server.properties
REPLICATION_THROTTLES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def broker_config_ops(entity: str, ops: list[tuple[str, int, str | None]], label: str) -> Exchange:
    return Exchange(
        IncrementalAlterConfigsRequest(
            resources=[
                IncResource(
                    resource_type=BROKER_RESOURCE,
                    resource_name=entity,
                    configs=[IncConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
                )
            ],
            validate_only=False,
        ),
        1,
        label=label,
    )


def describe_broker_configs(
    entity: str, keys: list[str] | None, label: str, *, count: int | None = None
) -> Exchange:
    """DescribeConfigs of a broker (or of the cluster default, ``""``); with ``count``, asked
    again until that many configs are listed (a change of the cluster default reaches a broker
    a moment later: in Kafka's ZooKeeper mode, through a change notification)."""

    def project(answer: Any) -> Any:
        # every key of the broker when none is named: keep the throttles
        for result in answer["results"]:
            result["configs"] = [c for c in result["configs"] if c["name"] in REPLICATION_THROTTLES]
        return answer

    return Exchange(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=BROKER_RESOURCE, resource_name=entity, configuration_keys=keys
                )
            ],
            include_synonyms=True,
        ),
        4,
        label=label,
        project=project if keys is None else None,
        until=None if count is None else (lambda r: len(r.results[0].configs) == count),
    )


def replication_throttle_scenarios(prefix: str) -> list[Scenario]:
    """The replication throttle rates kafka-reassign-partitions sets (``--throttle``) and clears
    (every ``--verify``): set on the broker and at the cluster default, described by name and
    among all of a broker's configs, refused when negative, and deleted."""
    names = list(REPLICATION_THROTTLES)
    delete_all = [(n, DELETE, None) for n in names]
    return [
        Scenario(
            "edge/replication-throttles",
            [
                describe_broker_configs("0", names, "unset, by name"),
                broker_config_ops("0", delete_all, "clear when unset (as --verify does)"),
                broker_config_ops(
                    "0",
                    [(names[0], SET, "1000000"), (names[1], SET, "2000000")],
                    "set on the broker",
                ),
                broker_config_ops("", [(names[2], SET, "3000000")], "set at the default"),
                describe_broker_configs("0", names, "set, by name", count=3),
                describe_broker_configs("0", None, "set, among all"),
                describe_broker_configs("", None, "the default"),
                broker_config_ops("0", [(names[0], SET, "-5")], "negative"),
                broker_config_ops("0", [(names[0], SET, "fast")], "not a number"),
                broker_config_ops("0", delete_all, "clear on the broker"),
                broker_config_ops("", delete_all, "clear at the default"),
                describe_broker_configs("0", names, "cleared", count=0),
            ],
        )
    ]


# --- legacy AlterConfigs on brokers and broker loggers -------------------------------------------

#: ConfigSource codes of DescribeConfigs v1+
DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 2, 3, 5


def broker_configs_until(
    entity: str, expected: dict[str, tuple[int, str | None]], label: str
) -> Exchange:
    """DescribeConfigs of ``expected``'s keys on a broker (``"0"``) or on the cluster default
    (``""``, which lists only the keys set there), asked again until each key has the source and
    value given. In Kafka's ZooKeeper mode a change reaches even the broker that made it through
    a change notification, a moment after the answer, and the source of a key is updated a
    moment before its value."""
    if entity == "":
        wanted = {k: sv for k, sv in expected.items() if sv[0] == DYNAMIC_DEFAULT}
    else:
        wanted = dict(expected)

    def reached(answer: Any) -> bool:
        configs = answer.results[0].configs
        return {c.name: (c.config_source, c.value) for c in configs} == wanted

    return Exchange(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=BROKER_RESOURCE,
                    resource_name=entity,
                    configuration_keys=sorted(expected),
                )
            ],
            include_synonyms=True,
        ),
        4,
        label=label,
        until=reached,
    )


def legacy_broker_config_scenarios(prefix: str) -> list[Scenario]:
    """Legacy AlterConfigs (key 33) on BROKER and BROKER_LOGGER resources, at every version.

    On a BROKER resource it replaces the whole set of that broker's dynamic configs (``"0"``)
    or of the cluster default (``""``): keys left out are removed (Kafka's ``ZkAdminManager``
    writes the new set as the entity's znode); ``validate_only`` changes nothing; a read-only
    key (``broker.id``, ``log.dirs``), a per-broker key at the default (``listeners``), a bad
    value, a null value, a repeated key, a resource named twice and another broker's id are
    refused (Kafka's ``ConfigAdminManager.preprocess``). Legacy AlterConfigs has no
    BROKER_LOGGER (KIP-412 added logger levels to IncrementalAlterConfigs only): Kafka refuses
    it, ``validate_only`` or not.
    Each scenario leaves no dynamic config behind (Kafka is shared by the whole corpus)."""
    out: list[Scenario] = []
    retention, max_bytes, delete_retention = (
        "log.retention.ms",
        "message.max.bytes",
        "log.cleaner.delete.retention.ms",
    )
    #: (source, value) of the keys as each step leaves them (log.retention.ms has no value of
    #: its own by default: log.retention.hours gives it)
    unset_retention, unset_delete = (DEFAULT, None), (DEFAULT, "86400000")
    replaced = {retention: unset_retention, max_bytes: (DYNAMIC_BROKER, "3000000")}
    default_retention = (DYNAMIC_DEFAULT, "7200000")
    default_replaced = {retention: default_retention, delete_retention: unset_delete}
    for v in versions(ApiKey.ALTER_CONFIGS):

        def alter(
            entity: str,
            configs: dict[str, str | None],
            label: str,
            *,
            validate_only: bool = False,
            resource_type: int = BROKER_RESOURCE,
            version: int = v,
        ) -> Exchange:
            return alter_configs(
                entity,
                configs,
                version=version,
                validate_only=validate_only,
                resource_type=resource_type,
                label=label,
            )

        def twice(label: str, *, resources: int, keys: int, version: int = v) -> Exchange:
            """``resources`` resources naming broker 0, each with ``keys`` retention values."""
            configs = [AlterableConfig(name=retention, value=f"{i + 1}000") for i in range(keys)]
            return Exchange(
                AlterConfigsRequest(
                    resources=[
                        AlterResource(
                            resource_type=BROKER_RESOURCE, resource_name="0", configs=configs
                        )
                        for _ in range(resources)
                    ],
                    validate_only=False,
                ),
                version,
                label=label,
                # Kafka never answers a resource named twice (allowance D23): 5 s of silence
                # is its answer, not the socket's 60 s
                answer_within=5.0 if resources > 1 else 60.0,
            )

        out.append(
            Scenario(
                f"alter_configs_broker/v{v}",
                [
                    alter("0", {retention: "3600000", max_bytes: "2000000"}, "set on broker 0"),
                    broker_configs_until(
                        "0",
                        {
                            retention: (DYNAMIC_BROKER, "3600000"),
                            max_bytes: (DYNAMIC_BROKER, "2000000"),
                        },
                        "both set",
                    ),
                    alter("0", {max_bytes: "3000000"}, "replace: retention left out"),
                    broker_configs_until("0", replaced, "retention removed"),
                    alter("0", {retention: "1"}, "validate only", validate_only=True),
                    broker_configs_until("0", replaced, "still as before"),
                    alter("0", {"broker.id": "7"}, "read-only broker.id"),
                    alter("0", {"log.dirs": "/tmp/elsewhere", max_bytes: "2000000"}, "log.dirs"),
                    alter("0", {retention: "soon"}, "not a number"),
                    alter("0", {retention: None}, "null value"),
                    twice("a key twice", resources=1, keys=2),
                    alter("5", {retention: "1000"}, "another broker"),
                    broker_configs_until("0", replaced, "refusals kept it"),
                    alter("0", {}, "replace with nothing"),
                    broker_configs_until(
                        "0",
                        {retention: unset_retention, max_bytes: (DEFAULT, "1048588")},
                        "nothing left",
                    ),
                ],
            )
        )
        out.append(
            Scenario(
                f"alter_configs_broker_default/v{v}",
                [
                    alter(
                        "",
                        {retention: "7200000", delete_retention: "3600000"},
                        "set the cluster default",
                    ),
                    broker_configs_until(
                        "0",
                        {
                            retention: default_retention,
                            delete_retention: (DYNAMIC_DEFAULT, "3600000"),
                        },
                        "broker 0 follows the default",
                    ),
                    broker_configs_until(
                        "",
                        {
                            retention: default_retention,
                            delete_retention: (DYNAMIC_DEFAULT, "3600000"),
                        },
                        "the default",
                    ),
                    alter("", {retention: "7200000"}, "replace: delete retention left out"),
                    broker_configs_until("0", default_replaced, "delete retention removed"),
                    alter("", {retention: "1"}, "validate only", validate_only=True),
                    alter("", {"broker.id": "7"}, "read-only broker.id"),
                    alter("", {"listeners": "PLAINTEXT://127.0.0.1:1"}, "per-broker key"),
                    broker_configs_until("", default_replaced, "still as before"),
                    alter("", {}, "replace with nothing"),
                    broker_configs_until(
                        "0",
                        {retention: unset_retention, delete_retention: unset_delete},
                        "nothing left",
                    ),
                ],
            )
        )
        # both answers INVALID_REQUEST in Kafka's ConfigAdminManager, which then fails to count
        # them and never answers (allowance D23)
        out.append(
            Scenario(
                f"alter_configs_broker_twice/v{v}",
                [twice("broker 0 twice", resources=2, keys=1)],
            )
        )
        logger = {"kafka.server.ReplicaManager": "DEBUG"}
        out.append(
            Scenario(
                f"alter_configs_broker_logger/v{v}",
                [
                    alter("0", logger, "a logger level", resource_type=BROKER_LOGGER_RESOURCE),
                    alter(
                        "0",
                        logger,
                        "validate only",
                        validate_only=True,
                        resource_type=BROKER_LOGGER_RESOURCE,
                    ),
                    alter("0", {}, "nothing", resource_type=BROKER_LOGGER_RESOURCE),
                ],
            )
        )
    return out
