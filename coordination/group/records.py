"""The records of ``__consumer_offsets``: Kafka's key and value schemas, so Kafka's tools (and
Kafka itself) can read the topic this broker writes.

Every record's key and value start with an int16 version, then the struct at that version:

========================  ==========  ==========================================================
record                    key version  value
========================  ==========  ==========================================================
offset commit             0 or 1      OffsetCommitValue v0-4 (we write v3); null = deleted
group metadata            2           GroupMetadataValue v0-4 (we write v3); null = group deleted
========================  ==========  ==========================================================

OffsetCommitKey is (group, topic, partition); GroupMetadataKey is (group). Keys are written in
one canonical form (offset keys at version 1), so compaction keeps one record per key. Value
versions: OffsetCommitValue v1 adds the expire timestamp (v1 only), v3 the leader epoch, v4 is
flexible; GroupMetadataValue v1 adds each member's rebalance timeout, v2 the state timestamp, v3
each member's group instance id, v4 is flexible.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass

from protocol.codegen import decode_version_prefixed, encode_version_prefixed
from protocol.errors import RemoteProtocolError
from protocol.schema import BYTES, INT32, INT64, STRING, Message, array, f, message, struct

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
#: the value versions this broker writes
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = _struct.Struct(">h")

OffsetCommitKey = message(
    "OffsetCommitKey",
    api_key=-1,
    kind="data",
    valid="0-1",
    flexible="none",
    fields=[
        f("group", STRING),
        f("topic", STRING),
        f("partition", INT32),
    ],
)

OffsetCommitValue = message(
    "OffsetCommitValue",
    api_key=-1,
    kind="data",
    valid="0-4",
    flexible="4+",
    fields=[
        f("offset", INT64),
        f("leader_epoch", INT32, "3+", default=-1),
        f("metadata", STRING),
        f("commit_timestamp", INT64),
        f("expire_timestamp", INT64, "1", default=-1),
    ],
)

GroupMetadataKey = message(
    "GroupMetadataKey",
    api_key=-1,
    kind="data",
    valid="2",
    flexible="none",
    fields=[
        f("group", STRING),
    ],
)

MemberMetadataRecord = struct(
    "MemberMetadataRecord",
    [
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", null="3+", default=None),
        f("client_id", STRING),
        f("client_host", STRING),
        f("rebalance_timeout", INT32, "1+", default=-1),
        f("session_timeout", INT32),
        f("subscription", BYTES),
        f("assignment", BYTES),
    ],
)

GroupMetadataValue = message(
    "GroupMetadataValue",
    api_key=-1,
    kind="data",
    valid="0-4",
    flexible="4+",
    fields=[
        f("protocol_type", STRING),
        f("generation", INT32),
        f("protocol", STRING, null="0+"),
        f("leader", STRING, null="0+"),
        f("current_state_timestamp", INT64, "2+", default=-1),
        f("members", array(MemberMetadataRecord)),
    ],
)


class CorruptGroupRecord(RemoteProtocolError):
    """A ``__consumer_offsets`` record this broker cannot parse."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


def _decode(cls: type[Message], data: bytes | memoryview) -> tuple[int, Message]:
    try:
        version, value = decode_version_prefixed(cls, data)
    except RemoteProtocolError as e:  # MalformedMessage: truncated, unknown version...
        raise CorruptGroupRecord(str(e)) from e
    return version, value


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode_version_prefixed(
        OffsetCommitKey,
        OFFSET_COMMIT_KEY_VERSION,
        OffsetCommitKey(group=group, topic=topic, partition=partition),
    )


def group_metadata_key(group: str) -> bytes:
    return encode_version_prefixed(
        GroupMetadataKey, GROUP_METADATA_KEY_VERSION, GroupMetadataKey(group=group)
    )


def parse_key(data: bytes | memoryview) -> OffsetKey | GroupKey | None:
    """The key of a ``__consumer_offsets`` record; None for record types we do not keep (KIP-848
    consumer groups, share groups...). Raises CorruptGroupRecord."""
    if len(data) < 2:
        raise CorruptGroupRecord("a key of fewer than 2 bytes")
    (version,) = _INT16.unpack_from(data, 0)
    if version in (0, 1):
        _, key = _decode(OffsetCommitKey, data)
        return OffsetKey(key.group, key.topic, key.partition)
    if version == GROUP_METADATA_KEY_VERSION:
        _, key = _decode(GroupMetadataKey, data)
        return GroupKey(key.group)
    return None


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


def offset_commit_value(
    offset: int,
    leader_epoch: int,
    metadata: str,
    commit_timestamp: int,
    *,
    expire_timestamp: int = -1,
) -> bytes:
    """Version 3, or version 1 when the commit carries an explicit expire timestamp (OffsetCommit
    v1-4 with a retention time), as Kafka writes them."""
    version = OFFSET_COMMIT_VALUE_VERSION if expire_timestamp < 0 else 1
    return encode_version_prefixed(
        OffsetCommitValue,
        version,
        OffsetCommitValue(
            offset=offset,
            leader_epoch=leader_epoch,
            metadata=metadata,
            commit_timestamp=commit_timestamp,
            expire_timestamp=expire_timestamp,
        ),
    )


def parse_offset_value(data: bytes | memoryview) -> OffsetValue:
    """Raises CorruptGroupRecord."""
    version, v = _decode(OffsetCommitValue, data)
    return OffsetValue(
        v.offset,
        v.leader_epoch if version >= 3 else -1,
        v.metadata,
        v.commit_timestamp,
        v.expire_timestamp if version == 1 else -1,
    )


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberRecord, ...]


def group_metadata_value(value: GroupValue) -> bytes:
    return encode_version_prefixed(
        GroupMetadataValue,
        GROUP_METADATA_VALUE_VERSION,
        GroupMetadataValue(
            protocol_type=value.protocol_type,
            generation=value.generation,
            protocol=value.protocol,
            leader=value.leader,
            current_state_timestamp=value.current_state_timestamp,
            members=[
                MemberMetadataRecord(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.subscription,
                    assignment=m.assignment,
                )
                for m in value.members
            ],
        ),
    )


def parse_group_value(data: bytes | memoryview) -> GroupValue:
    """Raises CorruptGroupRecord."""
    version, v = _decode(GroupMetadataValue, data)
    return GroupValue(
        protocol_type=v.protocol_type,
        generation=v.generation,
        protocol=v.protocol,
        leader=v.leader,
        current_state_timestamp=v.current_state_timestamp if version >= 2 else -1,
        members=tuple(
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout if version >= 1 else m.session_timeout,
                session_timeout_ms=m.session_timeout,
                subscription=bytes(m.subscription),
                assignment=bytes(m.assignment),
            )
            for m in v.members
        ),
    )
