"""ListOffsets (key 2): find the offset for a timestamp, or the earliest/latest offset.

v0 asks for up to ``max_num_offsets`` offsets before a timestamp and gets ``old_style_offsets``
back; v1+ returns one (timestamp, offset) pair. v2 adds the isolation level, v4 the leader epoch
(fencing), v6 is flexible. Later versions only admit new timestamp sentinels: v7 MAX_TIMESTAMP
(KIP-734), v8 EARLIEST_LOCAL (KIP-405), v9 LATEST_TIERED (KIP-1005), v10 adds ``timeout_ms`` for
asynchronous remote lookups (KIP-1075), v11 EARLIEST_PENDING_UPLOAD (KIP-1023). Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, INT64, STRING, array, f, message, struct

#: Timestamp sentinels a request may carry instead of a real timestamp.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

#: ``replica_id`` of an ordinary consumer and of a debugging tool.
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2

ListOffsetsPartition = struct(
    "ListOffsetsPartition",
    [
        f("partition_index", INT32),
        f("current_leader_epoch", INT32, "4+", default=-1),
        f("timestamp", INT64),
        f("max_num_offsets", INT32, "0", default=1),
    ],
)

ListOffsetsTopic = struct(
    "ListOffsetsTopic",
    [
        f("name", STRING),
        f("partitions", array(ListOffsetsPartition)),
    ],
)

ListOffsetsRequest = message(
    "ListOffsetsRequest",
    api_key=ApiKey.LIST_OFFSETS,
    kind="request",
    valid="0-11",
    flexible="6+",
    fields=[
        f("replica_id", INT32),
        f("isolation_level", INT8, "2+"),
        f("topics", array(ListOffsetsTopic)),
        f("timeout_ms", INT32, "10+"),
    ],
)

ListOffsetsPartitionResponse = struct(
    "ListOffsetsPartitionResponse",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
        f("old_style_offsets", array(INT64), "0"),
        f("timestamp", INT64, "1+", default=-1),
        f("offset", INT64, "1+", default=-1),
        f("leader_epoch", INT32, "4+", default=-1),
    ],
)

ListOffsetsTopicResponse = struct(
    "ListOffsetsTopicResponse",
    [
        f("name", STRING),
        f("partitions", array(ListOffsetsPartitionResponse)),
    ],
)

ListOffsetsResponse = message(
    "ListOffsetsResponse",
    api_key=ApiKey.LIST_OFFSETS,
    kind="response",
    valid="0-11",
    flexible="6+",
    fields=[
        f("throttle_time_ms", INT32, "2+"),
        f("topics", array(ListOffsetsTopicResponse)),
    ],
)
