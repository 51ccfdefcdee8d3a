"""AlterReplicaLogDirs (key 34): move replicas between a broker's log directories (KIP-113).

v1 is v0 (the broker answers before throttling); v2 is flexible. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

AlterReplicaLogDirTopic = struct(
    "AlterReplicaLogDirTopic",
    [
        f("name", STRING),
        f("partitions", array(INT32)),
    ],
)

AlterReplicaLogDir = struct(
    "AlterReplicaLogDir",
    [
        f("path", STRING),
        f("topics", array(AlterReplicaLogDirTopic)),
    ],
)

AlterReplicaLogDirsRequest = message(
    "AlterReplicaLogDirsRequest",
    api_key=ApiKey.ALTER_REPLICA_LOG_DIRS,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("dirs", array(AlterReplicaLogDir)),
    ],
)

AlterReplicaLogDirPartitionResult = struct(
    "AlterReplicaLogDirPartitionResult",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
    ],
)

AlterReplicaLogDirTopicResult = struct(
    "AlterReplicaLogDirTopicResult",
    [
        f("topic_name", STRING),
        f("partitions", array(AlterReplicaLogDirPartitionResult)),
    ],
)

AlterReplicaLogDirsResponse = message(
    "AlterReplicaLogDirsResponse",
    api_key=ApiKey.ALTER_REPLICA_LOG_DIRS,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(AlterReplicaLogDirTopicResult)),
    ],
)
