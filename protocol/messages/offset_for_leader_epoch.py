"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for log truncation.

Followers use it before fetching; consumers use it to detect truncation after a leader change
(KIP-320). v1 returns the leader epoch with the end offset, v2 adds the current leader epoch for
fencing and throttle time, v3 the ``replica_id`` (a follower's broker id, -1 for a consumer; the
default -2, also assumed for older versions, is a "debug" reader that may see past the high
watermark), v4 is flexible. Kafka 4 dropped v0-1.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

#: ``replica_id`` of a consumer, and of a debugging reader (Kafka's default).
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2

OffsetForLeaderPartition = struct(
    "OffsetForLeaderPartition",
    [
        f("partition", INT32),
        f("current_leader_epoch", INT32, "2+", default=-1),
        f("leader_epoch", INT32),
    ],
)

OffsetForLeaderTopic = struct(
    "OffsetForLeaderTopic",
    [
        f("topic", STRING),
        f("partitions", array(OffsetForLeaderPartition)),
    ],
)

OffsetForLeaderEpochRequest = message(
    "OffsetForLeaderEpochRequest",
    api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH,
    kind="request",
    valid="0-4",
    flexible="4+",
    fields=[
        f("replica_id", INT32, "3+", default=DEBUGGING_REPLICA_ID),
        f("topics", array(OffsetForLeaderTopic)),
    ],
)

EpochEndOffset = struct(
    "EpochEndOffset",
    [
        f("error_code", INT16),
        f("partition", INT32),
        f("leader_epoch", INT32, "1+", default=-1),
        f("end_offset", INT64, default=-1),
    ],
)

OffsetForLeaderTopicResult = struct(
    "OffsetForLeaderTopicResult",
    [
        f("topic", STRING),
        f("partitions", array(EpochEndOffset)),
    ],
)

OffsetForLeaderEpochResponse = message(
    "OffsetForLeaderEpochResponse",
    api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH,
    kind="response",
    valid="0-4",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32, "2+"),
        f("topics", array(OffsetForLeaderTopicResult)),
    ],
)
