"""The "consumer" embedded protocol: what consumers put in JoinGroup metadata and SyncGroup
assignments (Kafka's ConsumerProtocolSubscription/Assignment, not flexible; int16 version first).

The coordinator treats both as opaque bytes, except that it reads the subscribed topics of
``protocol_type == "consumer"`` groups: offsets of topics a live group still subscribes to are
neither expired nor deletable with OffsetDelete (Kafka's rules).

Subscription: v0 topics and user data, v1 owned partitions (KIP-429), v2 the generation, v3 the
rack (KIP-881). Assignment: v0 assigned partitions and user data (v1-3 are identical).
"""

from __future__ import annotations

from protocol.codegen import decode_version_prefixed, encode_version_prefixed
from protocol.errors import RemoteProtocolError
from protocol.schema import BYTES, INT32, STRING, array, f, message, struct

CONSUMER_PROTOCOL_TYPE = "consumer"

ConsumerTopicPartition = struct(
    "ConsumerTopicPartition",
    [
        f("topic", STRING),
        f("partitions", array(INT32)),
    ],
)

ConsumerProtocolSubscription = message(
    "ConsumerProtocolSubscription",
    api_key=-1,
    kind="data",
    valid="0-3",
    flexible="none",
    fields=[
        f("topics", array(STRING)),
        f("user_data", BYTES, null="0+", default=None),
        f("owned_partitions", array(ConsumerTopicPartition), "1+"),
        f("generation_id", INT32, "2+", default=-1),
        f("rack_id", STRING, "3+", null="3+", default=None),
    ],
)

ConsumerProtocolAssignment = message(
    "ConsumerProtocolAssignment",
    api_key=-1,
    kind="data",
    valid="0-3",
    flexible="none",
    fields=[
        f("assigned_partitions", array(ConsumerTopicPartition)),
        f("user_data", BYTES, null="0+", default=None),
    ],
)


def encode_subscription(
    topics: list[str], *, version: int = 0, user_data: bytes | None = None
) -> bytes:
    return encode_version_prefixed(
        ConsumerProtocolSubscription,
        version,
        ConsumerProtocolSubscription(topics=list(topics), user_data=user_data),
    )


def encode_assignment(
    partitions: dict[str, list[int]], *, user_data: bytes | None = None, version: int = 0
) -> bytes:
    return encode_version_prefixed(
        ConsumerProtocolAssignment,
        version,
        ConsumerProtocolAssignment(
            assigned_partitions=[
                ConsumerTopicPartition(topic=t, partitions=list(p)) for t, p in partitions.items()
            ],
            user_data=user_data,
        ),
    )


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics a consumer subscription names, or None if it cannot be read."""
    try:
        # newer versions only add fields at the end: read them as our newest
        _, value = decode_version_prefixed(
            ConsumerProtocolSubscription, metadata, newer_as_latest=True
        )
    except RemoteProtocolError:
        return None
    return frozenset(value.topics)


def assigned_partitions(assignment: bytes) -> dict[str, list[int]] | None:
    """The partitions of a consumer assignment (empty bytes: none), or None if unreadable."""
    if not assignment:
        return {}
    try:
        _, value = decode_version_prefixed(
            ConsumerProtocolAssignment, assignment, newer_as_latest=True
        )
    except RemoteProtocolError:
        return None
    return {tp.topic: list(tp.partitions) for tp in value.assigned_partitions}
