"""Fetch (key 1): read record batches from partitions, long-polling for min_bytes.

v0-3 return legacy message sets (the broker down-converts), v4+ record batches; v7+ fetch sessions
(KIP-227); v12+ flexible with tagged epochs; v13+ topic ids.
"""

from protocol.api_keys import ApiKey
from protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    array,
    f,
    message,
    struct,
)

ReplicaState = struct(
    "ReplicaState",
    [
        f("replica_id", INT32, "15+", default=-1),
        f("replica_epoch", INT64, "15+", default=-1),
    ],
)

FetchPartition = struct(
    "FetchPartition",
    [
        f("partition", INT32),
        f("current_leader_epoch", INT32, "9+", default=-1),
        f("fetch_offset", INT64),
        f("last_fetched_epoch", INT32, "12+", default=-1),
        f("log_start_offset", INT64, "5+", default=-1),
        f("partition_max_bytes", INT32),
        f("replica_directory_id", UUID, "17+", tag=0),
        f("high_watermark", INT64, "18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
    ],
)

FetchTopic = struct(
    "FetchTopic",
    [
        f("topic", STRING, "0-12"),
        f("topic_id", UUID, "13+"),
        f("partitions", array(FetchPartition)),
    ],
)

ForgottenTopic = struct(
    "ForgottenTopic",
    [
        f("topic", STRING, "7-12"),
        f("topic_id", UUID, "13+"),
        f("partitions", array(INT32), "7+"),
    ],
)

FetchRequest = message(
    "FetchRequest",
    api_key=ApiKey.FETCH,
    kind="request",
    valid="0-18",
    flexible="12+",
    fields=[
        f("cluster_id", STRING, "12+", null="12+", tag=0, default=None),
        f("replica_id", INT32, "0-14", default=-1),
        f("replica_state", ReplicaState, "15+", tag=1),
        f("max_wait_ms", INT32),
        f("min_bytes", INT32),
        f("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        f("isolation_level", INT8, "4+"),
        f("session_id", INT32, "7+"),
        f("session_epoch", INT32, "7+", default=-1),
        f("topics", array(FetchTopic)),
        f("forgotten_topics_data", array(ForgottenTopic), "7+"),
        f("rack_id", STRING, "11+"),
    ],
)

EpochEndOffset = struct(
    "EpochEndOffset",
    [
        f("epoch", INT32, "12+", default=-1),
        f("end_offset", INT64, "12+", default=-1),
    ],
)

LeaderIdAndEpoch = struct(
    "LeaderIdAndEpoch",
    [
        f("leader_id", INT32, "12+", default=-1),
        f("leader_epoch", INT32, "12+", default=-1),
    ],
)

SnapshotId = struct(
    "SnapshotId",
    [
        f("end_offset", INT64, default=-1),
        f("epoch", INT32, default=-1),
    ],
)

AbortedTransaction = struct(
    "AbortedTransaction",
    [
        f("producer_id", INT64, "4+"),
        f("first_offset", INT64, "4+"),
    ],
)

PartitionData = struct(
    "PartitionData",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
        f("high_watermark", INT64),
        f("last_stable_offset", INT64, "4+", default=-1),
        f("log_start_offset", INT64, "5+", default=-1),
        f("diverging_epoch", EpochEndOffset, "12+", tag=0),
        f("current_leader", LeaderIdAndEpoch, "12+", tag=1),
        f("snapshot_id", SnapshotId, "12+", tag=2),
        f("aborted_transactions", array(AbortedTransaction), "4+", null="4+"),
        f("preferred_read_replica", INT32, "11+", default=-1),
        f("records", RECORDS, null="0+"),
    ],
)

FetchableTopicResponse = struct(
    "FetchableTopicResponse",
    [
        f("topic", STRING, "0-12"),
        f("topic_id", UUID, "13+"),
        f("partitions", array(PartitionData)),
    ],
)

NodeEndpoint = struct(
    "NodeEndpoint",
    [
        f("node_id", INT32, "16+"),
        f("host", STRING, "16+"),
        f("port", INT32, "16+"),
        f("rack", STRING, "16+", null="16+", default=None),
    ],
)

FetchResponse = message(
    "FetchResponse",
    api_key=ApiKey.FETCH,
    kind="response",
    valid="0-18",
    flexible="12+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "7+"),
        f("session_id", INT32, "7+"),
        f("responses", array(FetchableTopicResponse)),
        f("node_endpoints", array(NodeEndpoint), "16+", tag=0),
    ],
)
