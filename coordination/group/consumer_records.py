"""The ``__consumer_offsets`` records of KIP-848 consumer groups: Kafka's key and value schemas
(the group coordinator's ``ConsumerGroup*Key``/``ConsumerGroup*Value`` message definitions), so
a restart or a coordinator move restores the groups, and Kafka's tools read what we write.

A key starts with an int16 that names the record type (Kafka's "key version"), a value with an
int16 version (0, flexible); a null value is a tombstone:

====  ==========================================  ============================================
key   record (key fields)                         value
====  ==========================================  ============================================
3     ConsumerGroupMetadata (group)               the group epoch
4     ConsumerGroupPartitionMetadata (group)      the subscribed topics: id, name, partitions
5     ConsumerGroupMemberMetadata (group, member) the member's subscription, client, timeouts,
                                                  server assignor, classic protocol metadata
6     ConsumerGroupTargetAssignmentMetadata       the target assignment epoch
      (group)
7     ConsumerGroupTargetAssignmentMember         the member's target partitions
      (group, member)
8     ConsumerGroupCurrentMemberAssignment        member epoch, previous epoch, state, owned
      (group, member)                             partitions, partitions pending revocation
16    ConsumerGroupRegularExpression              the topics a regular expression resolved to
      (group, regex)                              (Kafka 4.0)
====  ==========================================  ============================================

Kafka writes a group's records in this order (tombstones in the reverse order), and so do we.
"""

from __future__ import annotations

import struct as _struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from protocol.codegen import decode_version_prefixed, encode_version_prefixed
from protocol.errors import RemoteProtocolError
from protocol.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    Message,
    array,
    f,
    message,
    struct,
)

GROUP_EPOCH_TYPE = 3
SUBSCRIPTION_METADATA_TYPE = 4
MEMBER_SUBSCRIPTION_TYPE = 5
TARGET_EPOCH_TYPE = 6
TARGET_MEMBER_TYPE = 7
CURRENT_ASSIGNMENT_TYPE = 8
REGULAR_EXPRESSION_TYPE = 16
CONSUMER_RECORD_TYPES = frozenset(
    {
        GROUP_EPOCH_TYPE,
        SUBSCRIPTION_METADATA_TYPE,
        MEMBER_SUBSCRIPTION_TYPE,
        TARGET_EPOCH_TYPE,
        TARGET_MEMBER_TYPE,
        CURRENT_ASSIGNMENT_TYPE,
        REGULAR_EXPRESSION_TYPE,
    }
)

_INT16 = _struct.Struct(">h")


def _group_key(name: str, version: int) -> type[Message]:
    v = str(version)
    return message(name, api_key=-1, kind="data", valid=v, flexible="none", fields=[
        f("group_id", STRING, v),
    ])  # fmt: skip


def _member_key(name: str, version: int, second: str = "member_id") -> type[Message]:
    v = str(version)
    return message(name, api_key=-1, kind="data", valid=v, flexible="none", fields=[
        f("group_id", STRING, v),
        f(second, STRING, v),
    ])  # fmt: skip


ConsumerGroupMetadataKey = _group_key("ConsumerGroupMetadataKey", GROUP_EPOCH_TYPE)
ConsumerGroupPartitionMetadataKey = _group_key(
    "ConsumerGroupPartitionMetadataKey", SUBSCRIPTION_METADATA_TYPE
)
ConsumerGroupMemberMetadataKey = _member_key(
    "ConsumerGroupMemberMetadataKey", MEMBER_SUBSCRIPTION_TYPE
)
ConsumerGroupTargetAssignmentMetadataKey = _group_key(
    "ConsumerGroupTargetAssignmentMetadataKey", TARGET_EPOCH_TYPE
)
ConsumerGroupTargetAssignmentMemberKey = _member_key(
    "ConsumerGroupTargetAssignmentMemberKey", TARGET_MEMBER_TYPE
)
ConsumerGroupCurrentMemberAssignmentKey = _member_key(
    "ConsumerGroupCurrentMemberAssignmentKey", CURRENT_ASSIGNMENT_TYPE
)
ConsumerGroupRegularExpressionKey = _member_key(
    "ConsumerGroupRegularExpressionKey", REGULAR_EXPRESSION_TYPE, "regular_expression"
)

ConsumerGroupMetadataValue = message(
    "ConsumerGroupMetadataValue", api_key=-1, kind="data", valid="0", flexible="0+",
    fields=[f("epoch", INT32)],
)  # fmt: skip

PartitionRacks = struct("PartitionRacks", [
    f("partition", INT32),
    f("racks", array(STRING)),
])  # fmt: skip

TopicMetadataRecord = struct("TopicMetadataRecord", [
    f("topic_id", UUID),
    f("topic_name", STRING),
    f("num_partitions", INT32),
    # deprecated after Kafka 4.0 (rack-aware assignment); written empty, as racks are unknown
    f("partition_metadata", array(PartitionRacks)),
])  # fmt: skip

ConsumerGroupPartitionMetadataValue = message(
    "ConsumerGroupPartitionMetadataValue", api_key=-1, kind="data", valid="0", flexible="0+",
    fields=[f("topics", array(TopicMetadataRecord))],
)  # fmt: skip

ClassicProtocolRecord = struct("ClassicProtocolRecord", [
    f("name", STRING),
    f("metadata", BYTES),
])  # fmt: skip

ClassicMemberMetadataRecord = struct("ClassicMemberMetadataRecord", [
    f("session_timeout_ms", INT32),
    f("supported_protocols", array(ClassicProtocolRecord)),
])  # fmt: skip

ConsumerGroupMemberMetadataValue = message(
    "ConsumerGroupMemberMetadataValue", api_key=-1, kind="data", valid="0", flexible="0+",
    fields=[
        f("instance_id", STRING, null="0+", default=None),
        f("rack_id", STRING, null="0+", default=None),
        f("client_id", STRING),
        f("client_host", STRING),
        f("subscribed_topic_names", array(STRING)),
        f("subscribed_topic_regex", STRING, null="0+", default=None),
        f("rebalance_timeout_ms", INT32, default=-1),
        f("server_assignor", STRING, null="0+", default=None),
        f("classic_member_metadata", ClassicMemberMetadataRecord, null="0+", tag=0,
          default=None),
    ],
)  # fmt: skip

ConsumerGroupTargetAssignmentMetadataValue = message(
    "ConsumerGroupTargetAssignmentMetadataValue", api_key=-1, kind="data", valid="0",
    flexible="0+", fields=[f("assignment_epoch", INT32)],
)  # fmt: skip

TopicPartitionsRecord = struct("TopicPartitionsRecord", [
    f("topic_id", UUID),
    f("partitions", array(INT32)),
])  # fmt: skip

ConsumerGroupTargetAssignmentMemberValue = message(
    "ConsumerGroupTargetAssignmentMemberValue", api_key=-1, kind="data", valid="0",
    flexible="0+", fields=[f("topic_partitions", array(TopicPartitionsRecord))],
)  # fmt: skip

#: a member's partitions with, tagged (KIP-1251), the epoch at which it got each one
CurrentTopicPartitionsRecord = struct("CurrentTopicPartitionsRecord", [
    f("topic_id", UUID),
    f("partitions", array(INT32)),
    f("assignment_epochs", array(INT32), null="0+", tag=0, default=None),
])  # fmt: skip

ConsumerGroupCurrentMemberAssignmentValue = message(
    "ConsumerGroupCurrentMemberAssignmentValue", api_key=-1, kind="data", valid="0",
    flexible="0+",
    fields=[
        f("member_epoch", INT32),
        f("previous_member_epoch", INT32),
        f("state", INT8),
        f("assigned_partitions", array(CurrentTopicPartitionsRecord)),
        f("partitions_pending_revocation", array(CurrentTopicPartitionsRecord)),
    ],
)  # fmt: skip

ConsumerGroupRegularExpressionValue = message(
    "ConsumerGroupRegularExpressionValue", api_key=-1, kind="data", valid="0", flexible="0+",
    fields=[
        f("topics", array(STRING)),
        f("version", INT64),
        f("timestamp", INT64),
    ],
)  # fmt: skip


class CorruptConsumerGroupRecord(RemoteProtocolError):
    """A consumer group record this broker cannot parse."""


# -- values as this package uses them ------------------------------------------------------------

#: topic id -> partitions (an assignment)
Partitions = Mapping[uuid.UUID, frozenset[int]]
EMPTY_EPOCHS: Mapping[tuple[uuid.UUID, int], int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A subscribed topic as the group saw it (Kafka's ``TopicMetadata``)."""

    topic_id: uuid.UUID
    name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member that joined with the classic protocol (JoinGroup) brought: its session
    timeout and its (protocol name, metadata) pairs."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """ConsumerGroupMemberMetadataValue."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: frozenset[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMetadata | None


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    """ConsumerGroupCurrentMemberAssignmentValue."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions
    pending_revocation: Partitions
    #: (topic id, partition): the epoch at which the member got it (KIP-1251); a record
    #: written without them has none
    assignment_epochs: Mapping[tuple[uuid.UUID, int], int] = field(
        default_factory=lambda: EMPTY_EPOCHS
    )


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """ConsumerGroupRegularExpressionValue: the topics, the metadata version they were
    resolved at, and when (wall clock ms)."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


# -- keys ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupEpochKey:
    group: str


@dataclass(frozen=True, slots=True)
class SubscriptionMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberSubscriptionKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class TargetEpochKey:
    group: str


@dataclass(frozen=True, slots=True)
class TargetMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class CurrentAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RegexKey:
    group: str
    regex: str


ConsumerKey = (
    GroupEpochKey
    | SubscriptionMetadataKey
    | MemberSubscriptionKey
    | TargetEpochKey
    | TargetMemberKey
    | CurrentAssignmentKey
    | RegexKey
)
ConsumerValue = (
    int | dict[str, TopicInfo] | MemberSubscription | Partitions | CurrentAssignment | ResolvedRegex
)


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """One record of a consumer group; ``value`` None is a tombstone."""

    key: ConsumerKey
    value: ConsumerValue | None


# -- encoding --------------------------------------------------------------------------------------


def _partitions_out(partitions: Partitions) -> list[object]:
    return [
        TopicPartitionsRecord(topic_id=t, partitions=sorted(p))
        for t, p in sorted(partitions.items(), key=lambda item: str(item[0]))
        if p
    ]


def _current_partitions_out(
    partitions: Partitions, epochs: Mapping[tuple[uuid.UUID, int], int]
) -> list[object]:
    out: list[object] = []
    for t, p in sorted(partitions.items(), key=lambda item: str(item[0])):
        if p:
            indexes = sorted(p)
            known = [epochs.get((t, i)) for i in indexes]
            out.append(
                CurrentTopicPartitionsRecord(
                    topic_id=t,
                    partitions=indexes,
                    assignment_epochs=None if None in known else known,
                )
            )
    return out


def _epochs_in(records: list[object]) -> dict[tuple[uuid.UUID, int], int]:
    out: dict[tuple[uuid.UUID, int], int] = {}
    for r in records:
        epochs = r.assignment_epochs  # type: ignore[attr-defined]
        parts = r.partitions  # type: ignore[attr-defined]
        if epochs is not None and len(epochs) == len(parts):
            for p, e in zip(parts, epochs, strict=True):
                out[(r.topic_id, p)] = e  # type: ignore[attr-defined]
    return out


def _partitions_in(records: list[object]) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for r in records:
        parts = frozenset(r.partitions)  # type: ignore[attr-defined]
        if parts:
            out[r.topic_id] = out.get(r.topic_id, frozenset()) | parts  # type: ignore[attr-defined]
    return out


def encode_key(key: ConsumerKey) -> bytes:
    if isinstance(key, GroupEpochKey):
        return encode_version_prefixed(
            ConsumerGroupMetadataKey, GROUP_EPOCH_TYPE, ConsumerGroupMetadataKey(group_id=key.group)
        )
    if isinstance(key, SubscriptionMetadataKey):
        cls = ConsumerGroupPartitionMetadataKey
        return encode_version_prefixed(cls, SUBSCRIPTION_METADATA_TYPE, cls(group_id=key.group))
    if isinstance(key, MemberSubscriptionKey):
        cls = ConsumerGroupMemberMetadataKey
        value = cls(group_id=key.group, member_id=key.member_id)
        return encode_version_prefixed(cls, MEMBER_SUBSCRIPTION_TYPE, value)
    if isinstance(key, TargetEpochKey):
        cls = ConsumerGroupTargetAssignmentMetadataKey
        return encode_version_prefixed(cls, TARGET_EPOCH_TYPE, cls(group_id=key.group))
    if isinstance(key, TargetMemberKey):
        cls = ConsumerGroupTargetAssignmentMemberKey
        value = cls(group_id=key.group, member_id=key.member_id)
        return encode_version_prefixed(cls, TARGET_MEMBER_TYPE, value)
    if isinstance(key, CurrentAssignmentKey):
        cls = ConsumerGroupCurrentMemberAssignmentKey
        value = cls(group_id=key.group, member_id=key.member_id)
        return encode_version_prefixed(cls, CURRENT_ASSIGNMENT_TYPE, value)
    cls = ConsumerGroupRegularExpressionKey
    value = cls(group_id=key.group, regular_expression=key.regex)
    return encode_version_prefixed(cls, REGULAR_EXPRESSION_TYPE, value)


def encode_value(key: ConsumerKey, value: ConsumerValue) -> bytes:
    """The value of a record with ``key`` (version 0)."""
    if isinstance(key, GroupEpochKey | TargetEpochKey):
        assert isinstance(value, int)
        if isinstance(key, GroupEpochKey):
            return encode_version_prefixed(
                ConsumerGroupMetadataValue, 0, ConsumerGroupMetadataValue(epoch=value)
            )
        cls = ConsumerGroupTargetAssignmentMetadataValue
        return encode_version_prefixed(cls, 0, cls(assignment_epoch=value))
    if isinstance(key, SubscriptionMetadataKey):
        assert isinstance(value, dict)
        topics = [
            TopicMetadataRecord(
                topic_id=t.topic_id,
                topic_name=t.name,
                num_partitions=t.num_partitions,
                partition_metadata=[],
            )
            for t in sorted(value.values(), key=lambda t: t.name)
        ]
        cls = ConsumerGroupPartitionMetadataValue
        return encode_version_prefixed(cls, 0, cls(topics=topics))
    if isinstance(key, MemberSubscriptionKey):
        assert isinstance(value, MemberSubscription)
        classic = value.classic
        cls = ConsumerGroupMemberMetadataValue
        return encode_version_prefixed(
            cls,
            0,
            cls(
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=sorted(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                server_assignor=value.server_assignor,
                classic_member_metadata=None
                if classic is None
                else ClassicMemberMetadataRecord(
                    session_timeout_ms=classic.session_timeout_ms,
                    supported_protocols=[
                        ClassicProtocolRecord(name=n, metadata=m) for n, m in classic.protocols
                    ],
                ),
            ),
        )
    if isinstance(key, TargetMemberKey):
        assert isinstance(value, Mapping)
        cls = ConsumerGroupTargetAssignmentMemberValue
        partitions: Partitions = value  # type: ignore[assignment]
        return encode_version_prefixed(cls, 0, cls(topic_partitions=_partitions_out(partitions)))
    if isinstance(key, CurrentAssignmentKey):
        assert isinstance(value, CurrentAssignment)
        cls = ConsumerGroupCurrentMemberAssignmentValue
        return encode_version_prefixed(
            cls,
            0,
            cls(
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=value.state,
                assigned_partitions=_current_partitions_out(
                    value.assigned, value.assignment_epochs
                ),
                partitions_pending_revocation=_current_partitions_out(
                    value.pending_revocation, value.assignment_epochs
                ),
            ),
        )
    assert isinstance(value, ResolvedRegex)
    cls = ConsumerGroupRegularExpressionValue
    return encode_version_prefixed(
        cls,
        0,
        cls(topics=sorted(value.topics), version=value.version, timestamp=value.timestamp_ms),
    )


def encode(record: ConsumerRecord) -> tuple[bytes, bytes | None]:
    value = None if record.value is None else encode_value(record.key, record.value)
    return encode_key(record.key), value


# -- decoding --------------------------------------------------------------------------------------


def _decode(cls: type[Message], data: bytes | memoryview) -> Message:
    try:
        # values only add tagged fields in newer versions: read them as ours
        _, value = decode_version_prefixed(cls, data, newer_as_latest=True)
    except RemoteProtocolError as e:
        raise CorruptConsumerGroupRecord(str(e)) from e
    return value  # type: ignore[no-any-return]


def parse_consumer_key(data: bytes | memoryview) -> ConsumerKey | None:
    """The key of a consumer group record, or None for another record type. Raises
    CorruptConsumerGroupRecord."""
    if len(data) < 2:
        raise CorruptConsumerGroupRecord("a key of fewer than 2 bytes")
    (kind,) = _INT16.unpack_from(data, 0)
    if kind not in CONSUMER_RECORD_TYPES:
        return None
    if kind == GROUP_EPOCH_TYPE:
        return GroupEpochKey(_decode(ConsumerGroupMetadataKey, data).group_id)
    if kind == SUBSCRIPTION_METADATA_TYPE:
        return SubscriptionMetadataKey(_decode(ConsumerGroupPartitionMetadataKey, data).group_id)
    if kind == TARGET_EPOCH_TYPE:
        return TargetEpochKey(_decode(ConsumerGroupTargetAssignmentMetadataKey, data).group_id)
    if kind == REGULAR_EXPRESSION_TYPE:
        k = _decode(ConsumerGroupRegularExpressionKey, data)
        return RegexKey(k.group_id, k.regular_expression)
    if kind == MEMBER_SUBSCRIPTION_TYPE:
        k = _decode(ConsumerGroupMemberMetadataKey, data)
        return MemberSubscriptionKey(k.group_id, k.member_id)
    if kind == TARGET_MEMBER_TYPE:
        k = _decode(ConsumerGroupTargetAssignmentMemberKey, data)
        return TargetMemberKey(k.group_id, k.member_id)
    k = _decode(ConsumerGroupCurrentMemberAssignmentKey, data)
    return CurrentAssignmentKey(k.group_id, k.member_id)


def parse_consumer_value(key: ConsumerKey, data: bytes | memoryview) -> ConsumerValue:
    """The value of a record with ``key``. Raises CorruptConsumerGroupRecord."""
    if isinstance(key, GroupEpochKey):
        return int(_decode(ConsumerGroupMetadataValue, data).epoch)
    if isinstance(key, TargetEpochKey):
        return int(_decode(ConsumerGroupTargetAssignmentMetadataValue, data).assignment_epoch)
    if isinstance(key, SubscriptionMetadataKey):
        v = _decode(ConsumerGroupPartitionMetadataValue, data)
        return {
            t.topic_name: TopicInfo(t.topic_id, t.topic_name, t.num_partitions) for t in v.topics
        }
    if isinstance(key, MemberSubscriptionKey):
        v = _decode(ConsumerGroupMemberMetadataValue, data)
        classic = v.classic_member_metadata
        return MemberSubscription(
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=frozenset(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex or None,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
            classic=None
            if classic is None
            else ClassicMetadata(
                classic.session_timeout_ms,
                tuple((p.name, bytes(p.metadata)) for p in classic.supported_protocols),
            ),
        )
    if isinstance(key, TargetMemberKey):
        v = _decode(ConsumerGroupTargetAssignmentMemberValue, data)
        return _partitions_in(v.topic_partitions)
    if isinstance(key, CurrentAssignmentKey):
        v = _decode(ConsumerGroupCurrentMemberAssignmentValue, data)
        return CurrentAssignment(
            v.member_epoch,
            v.previous_member_epoch,
            v.state,
            _partitions_in(v.assigned_partitions),
            _partitions_in(v.partitions_pending_revocation),
            MappingProxyType(
                _epochs_in(v.assigned_partitions) | _epochs_in(v.partitions_pending_revocation)
            ),
        )
    v = _decode(ConsumerGroupRegularExpressionValue, data)
    return ResolvedRegex(frozenset(v.topics), v.version, v.timestamp)


def parse(
    key_bytes: bytes | memoryview, value_bytes: bytes | memoryview | None
) -> ConsumerRecord | None:
    """A whole record, or None when it is not a consumer group record."""
    key = parse_consumer_key(key_bytes)
    if key is None:
        return None
    value = None if value_bytes is None else parse_consumer_value(key, value_bytes)
    return ConsumerRecord(key, value)
