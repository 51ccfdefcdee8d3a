"""OffsetFetch (key 9): read a consumer group's committed offsets.

v0 read offsets from ZooKeeper, v1+ from ``__consumer_offsets`` (same shape). v2 allows a null
topic list (all committed topics) and adds a top-level error code; v3 adds throttle time, v5 the
committed leader epoch, v6 is flexible, v7 adds ``require_stable``. v8 batches several groups: the
top-level group id, topics and error code move into ``groups``. v9 adds the member id and epoch
for the KIP-848 consumer protocol, v10 names topics by id. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, UUID, array, f, message, struct

OffsetFetchRequestTopic = struct(
    "OffsetFetchRequestTopic",
    [
        f("name", STRING, "0-7"),
        f("partition_indexes", array(INT32), "0-7"),
    ],
)

OffsetFetchRequestTopics = struct(
    "OffsetFetchRequestTopics",
    [
        f("name", STRING, "8-9"),
        f("topic_id", UUID, "10+"),
        f("partition_indexes", array(INT32), "8+"),
    ],
)

OffsetFetchRequestGroup = struct(
    "OffsetFetchRequestGroup",
    [
        f("group_id", STRING, "8+"),
        f("member_id", STRING, "9+", null="9+", default=None),
        f("member_epoch", INT32, "9+", default=-1),
        f("topics", array(OffsetFetchRequestTopics), "8+", null="8+"),
    ],
)

OffsetFetchRequest = message(
    "OffsetFetchRequest",
    api_key=ApiKey.OFFSET_FETCH,
    kind="request",
    valid="0-10",
    flexible="6+",
    fields=[
        f("group_id", STRING, "0-7"),
        f("topics", array(OffsetFetchRequestTopic), "0-7", null="2-7"),
        f("groups", array(OffsetFetchRequestGroup), "8+"),
        f("require_stable", BOOL, "7+", default=False),
    ],
)

OffsetFetchResponsePartition = struct(
    "OffsetFetchResponsePartition",
    [
        f("partition_index", INT32, "0-7"),
        f("committed_offset", INT64, "0-7"),
        f("committed_leader_epoch", INT32, "5-7", default=-1),
        f("metadata", STRING, "0-7", null="0-7"),
        f("error_code", INT16, "0-7"),
    ],
)

OffsetFetchResponseTopic = struct(
    "OffsetFetchResponseTopic",
    [
        f("name", STRING, "0-7"),
        f("partitions", array(OffsetFetchResponsePartition), "0-7"),
    ],
)

OffsetFetchResponsePartitions = struct(
    "OffsetFetchResponsePartitions",
    [
        f("partition_index", INT32, "8+"),
        f("committed_offset", INT64, "8+"),
        f("committed_leader_epoch", INT32, "8+", default=-1),
        f("metadata", STRING, "8+", null="8+"),
        f("error_code", INT16, "8+"),
    ],
)

OffsetFetchResponseTopics = struct(
    "OffsetFetchResponseTopics",
    [
        f("name", STRING, "8-9"),
        f("topic_id", UUID, "10+"),
        f("partitions", array(OffsetFetchResponsePartitions), "8+"),
    ],
)

OffsetFetchResponseGroup = struct(
    "OffsetFetchResponseGroup",
    [
        f("group_id", STRING, "8+"),
        f("topics", array(OffsetFetchResponseTopics), "8+"),
        f("error_code", INT16, "8+"),
    ],
)

OffsetFetchResponse = message(
    "OffsetFetchResponse",
    api_key=ApiKey.OFFSET_FETCH,
    kind="response",
    valid="0-10",
    flexible="6+",
    fields=[
        f("throttle_time_ms", INT32, "3+"),
        f("topics", array(OffsetFetchResponseTopic), "0-7"),
        f("error_code", INT16, "2-7"),
        f("groups", array(OffsetFetchResponseGroup), "8+"),
    ],
)
