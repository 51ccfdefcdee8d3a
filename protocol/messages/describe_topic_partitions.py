"""DescribeTopicPartitions (key 75): topic partitions with their eligible leader replicas.

Like Metadata's topic part, plus ELR and last known ELR (KIP-966), paginated: the response stops
after ``response_partition_limit`` partitions and returns a ``next_cursor`` (topic and partition)
to continue from. Only v0, flexible. Java 3.7+ clients use it when it is advertised.
"""

from protocol.api_keys import ApiKey
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct

TopicRequest = struct(
    "TopicRequest",
    [
        f("name", STRING),
    ],
)

Cursor = struct(
    "Cursor",
    [
        f("topic_name", STRING),
        f("partition_index", INT32),
    ],
)

DescribeTopicPartitionsRequest = message(
    "DescribeTopicPartitionsRequest",
    api_key=ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("topics", array(TopicRequest)),
        f("response_partition_limit", INT32, default=2000),
        f("cursor", Cursor, null="0+", default=None),
    ],
)

DescribeTopicPartitionsResponsePartition = struct(
    "DescribeTopicPartitionsResponsePartition",
    [
        f("error_code", INT16),
        f("partition_index", INT32),
        f("leader_id", INT32),
        f("leader_epoch", INT32, default=-1),
        f("replica_nodes", array(INT32)),
        f("isr_nodes", array(INT32)),
        f("eligible_leader_replicas", array(INT32), null="0+", default=None),
        f("last_known_elr", array(INT32), null="0+", default=None),
        f("offline_replicas", array(INT32)),
    ],
)

DescribeTopicPartitionsResponseTopic = struct(
    "DescribeTopicPartitionsResponseTopic",
    [
        f("error_code", INT16),
        f("name", STRING, null="0+"),
        f("topic_id", UUID),
        f("is_internal", BOOL, default=False),
        f("partitions", array(DescribeTopicPartitionsResponsePartition)),
        f("topic_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

DescribeTopicPartitionsResponse = message(
    "DescribeTopicPartitionsResponse",
    api_key=ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("topics", array(DescribeTopicPartitionsResponseTopic)),
        f("next_cursor", Cursor, null="0+", default=None),
    ],
)
