"""CreateTopics (key 19): create topics with a partition count and replication factor, or an
explicit replica assignment, and optional topic configs.

v1 adds ``validate_only`` and a per-topic error message; v2 the throttle time; v4 lets
``num_partitions``/``replication_factor`` be -1 (broker defaults) without an assignment (KIP-464);
v5 is flexible and returns the topic's partitions, replication factor and configs (KIP-525);
v6 may answer THROTTLING_QUOTA_EXCEEDED; v7 returns the new topic's id. Kafka 4 dropped v0-1.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, array, f, message, struct

CreatableReplicaAssignment = struct(
    "CreatableReplicaAssignment",
    [
        f("partition_index", INT32),
        f("broker_ids", array(INT32)),
    ],
)

CreatableTopicConfig = struct(
    "CreatableTopicConfig",
    [
        f("name", STRING),
        f("value", STRING, null="0+"),
    ],
)

CreatableTopic = struct(
    "CreatableTopic",
    [
        f("name", STRING),
        f("num_partitions", INT32),
        f("replication_factor", INT16),
        f("assignments", array(CreatableReplicaAssignment)),
        f("configs", array(CreatableTopicConfig)),
    ],
)

CreateTopicsRequest = message(
    "CreateTopicsRequest",
    api_key=ApiKey.CREATE_TOPICS,
    kind="request",
    valid="0-7",
    flexible="5+",
    fields=[
        f("topics", array(CreatableTopic)),
        f("timeout_ms", INT32, default=60000),
        f("validate_only", BOOL, "1+", default=False),
    ],
)

CreatableTopicConfigs = struct(
    "CreatableTopicConfigs",
    [
        f("name", STRING, "5+"),
        f("value", STRING, "5+", null="5+"),
        f("read_only", BOOL, "5+"),
        f("config_source", INT8, "5+", default=-1),
        f("is_sensitive", BOOL, "5+"),
    ],
)

CreatableTopicResult = struct(
    "CreatableTopicResult",
    [
        f("name", STRING),
        f("topic_id", UUID, "7+"),
        f("error_code", INT16),
        f("error_message", STRING, "1+", null="0+"),
        f("topic_config_error_code", INT16, "5+", tag=0),
        f("num_partitions", INT32, "5+", default=-1),
        f("replication_factor", INT16, "5+", default=-1),
        f("configs", array(CreatableTopicConfigs), "5+", null="5+"),
    ],
)

CreateTopicsResponse = message(
    "CreateTopicsResponse",
    api_key=ApiKey.CREATE_TOPICS,
    kind="response",
    valid="0-7",
    flexible="5+",
    fields=[
        f("throttle_time_ms", INT32, "2+"),
        f("topics", array(CreatableTopicResult)),
    ],
)
