"""ListPartitionReassignments (key 46): the ongoing partition reassignments (KIP-455).

A null ``topics`` asks for every ongoing reassignment. Each answer gives the partition's full
replica set while it moves (target and original replicas), and the replicas being added and
removed. Version 0 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

ListPartitionReassignmentsTopics = struct(
    "ListPartitionReassignmentsTopics",
    [
        f("name", STRING),
        f("partition_indexes", array(INT32)),
    ],
)

ListPartitionReassignmentsRequest = message(
    "ListPartitionReassignmentsRequest",
    api_key=ApiKey.LIST_PARTITION_REASSIGNMENTS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("timeout_ms", INT32, default=60000),
        f("topics", array(ListPartitionReassignmentsTopics), null="0+", default=None),
    ],
)

OngoingPartitionReassignment = struct(
    "OngoingPartitionReassignment",
    [
        f("partition_index", INT32),
        f("replicas", array(INT32)),
        f("adding_replicas", array(INT32)),
        f("removing_replicas", array(INT32)),
    ],
)

OngoingTopicReassignment = struct(
    "OngoingTopicReassignment",
    [
        f("name", STRING),
        f("partitions", array(OngoingPartitionReassignment)),
    ],
)

ListPartitionReassignmentsResponse = message(
    "ListPartitionReassignmentsResponse",
    api_key=ApiKey.LIST_PARTITION_REASSIGNMENTS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("topics", array(OngoingTopicReassignment)),
    ],
)
