"""OffsetCommit (key 8): store a consumer group's committed offsets.

v0 has no group membership (offsets went to ZooKeeper); v1 adds the generation and member id and a
per-partition ``commit_timestamp``; v2-4 replace that with a request-wide ``retention_time_ms``,
which v5 drops again (retention is broker configuration). v3 adds throttle time to the response,
v6 the committed leader epoch, v7 the group instance id (static membership), v8 is flexible, v9
works with the KIP-848 consumer protocol (the generation field carries the member epoch), v10
names topics by id. Kafka 4 dropped v0-1.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, UUID, array, f, message, struct

OffsetCommitRequestPartition = struct(
    "OffsetCommitRequestPartition",
    [
        f("partition_index", INT32),
        f("committed_offset", INT64),
        f("committed_leader_epoch", INT32, "6+", default=-1),
        f("commit_timestamp", INT64, "1", default=-1),
        f("committed_metadata", STRING, null="0+"),
    ],
)

OffsetCommitRequestTopic = struct(
    "OffsetCommitRequestTopic",
    [
        f("name", STRING, "0-9"),
        f("topic_id", UUID, "10+"),
        f("partitions", array(OffsetCommitRequestPartition)),
    ],
)

OffsetCommitRequest = message(
    "OffsetCommitRequest",
    api_key=ApiKey.OFFSET_COMMIT,
    kind="request",
    valid="0-10",
    flexible="8+",
    fields=[
        f("group_id", STRING),
        f("generation_id_or_member_epoch", INT32, "1+", default=-1),
        f("member_id", STRING, "1+"),
        f("group_instance_id", STRING, "7+", null="7+", default=None),
        f("retention_time_ms", INT64, "2-4", default=-1),
        f("topics", array(OffsetCommitRequestTopic)),
    ],
)

OffsetCommitResponsePartition = struct(
    "OffsetCommitResponsePartition",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
    ],
)

OffsetCommitResponseTopic = struct(
    "OffsetCommitResponseTopic",
    [
        f("name", STRING, "0-9"),
        f("topic_id", UUID, "10+"),
        f("partitions", array(OffsetCommitResponsePartition)),
    ],
)

OffsetCommitResponse = message(
    "OffsetCommitResponse",
    api_key=ApiKey.OFFSET_COMMIT,
    kind="response",
    valid="0-10",
    flexible="8+",
    fields=[
        f("throttle_time_ms", INT32, "3+"),
        f("topics", array(OffsetCommitResponseTopic)),
    ],
)
