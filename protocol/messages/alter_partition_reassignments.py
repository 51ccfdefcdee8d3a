"""AlterPartitionReassignments (key 45): start or cancel partition reassignments (KIP-455).

A partition's ``replicas`` is the target replica set; null cancels the partition's ongoing
reassignment. Version 0 is flexible; v1 adds ``allow_replication_factor_change`` (KIP-860: when
false, a target of another replication factor is refused with INVALID_REPLICATION_FACTOR), which
the response echoes.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, STRING, array, f, message, struct

ReassignablePartition = struct(
    "ReassignablePartition",
    [
        f("partition_index", INT32),
        f("replicas", array(INT32), null="0+", default=None),
    ],
)

ReassignableTopic = struct(
    "ReassignableTopic",
    [
        f("name", STRING),
        f("partitions", array(ReassignablePartition)),
    ],
)

AlterPartitionReassignmentsRequest = message(
    "AlterPartitionReassignmentsRequest",
    api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    kind="request",
    valid="0-1",
    flexible="0+",
    fields=[
        f("timeout_ms", INT32, default=60000),
        f("allow_replication_factor_change", BOOL, "1+", default=True),
        f("topics", array(ReassignableTopic)),
    ],
)

ReassignablePartitionResponse = struct(
    "ReassignablePartitionResponse",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
    ],
)

ReassignableTopicResponse = struct(
    "ReassignableTopicResponse",
    [
        f("name", STRING),
        f("partitions", array(ReassignablePartitionResponse)),
    ],
)

AlterPartitionReassignmentsResponse = message(
    "AlterPartitionReassignmentsResponse",
    api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    kind="response",
    valid="0-1",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("allow_replication_factor_change", BOOL, "1+", default=True),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("responses", array(ReassignableTopicResponse)),
    ],
)
