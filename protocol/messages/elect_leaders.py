"""ElectLeaders (key 43): ask the controller to elect partition leaders (KIP-183, KIP-460).

The election type (v1+) is 0 for the preferred replica, 1 for an unclean election of any live
replica when no in-sync replica is alive. A null ``topic_partitions`` means every partition.
v1 adds the election type and a top-level error code; v2 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

TopicPartitions = struct(
    "TopicPartitions",
    [
        f("topic", STRING),
        f("partitions", array(INT32)),
    ],
)

ElectLeadersRequest = message(
    "ElectLeadersRequest",
    api_key=ApiKey.ELECT_LEADERS,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("election_type", INT8, "1+", default=0),
        f("topic_partitions", array(TopicPartitions), null="0+"),
        f("timeout_ms", INT32, default=60000),
    ],
)

PartitionResult = struct(
    "PartitionResult",
    [
        f("partition_id", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
    ],
)

ReplicaElectionResult = struct(
    "ReplicaElectionResult",
    [
        f("topic", STRING),
        f("partition_result", array(PartitionResult)),
    ],
)

ElectLeadersResponse = message(
    "ElectLeadersResponse",
    api_key=ApiKey.ELECT_LEADERS,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "1+", default=0),
        f("replica_election_results", array(ReplicaElectionResult)),
    ],
)
