"""CreatePartitions (key 37): raise topics' partition counts, optionally placing the new
partitions' replicas.

v1 is v0 (the broker answers before throttling); v2 is flexible; v3 may answer
THROTTLING_QUOTA_EXCEEDED. A null ``assignments`` lets the broker place the new replicas.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, STRING, array, f, message, struct

CreatePartitionsAssignment = struct(
    "CreatePartitionsAssignment",
    [
        f("broker_ids", array(INT32)),
    ],
)

CreatePartitionsTopic = struct(
    "CreatePartitionsTopic",
    [
        f("name", STRING),
        f("count", INT32),
        f("assignments", array(CreatePartitionsAssignment), null="0+"),
    ],
)

CreatePartitionsRequest = message(
    "CreatePartitionsRequest",
    api_key=ApiKey.CREATE_PARTITIONS,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("topics", array(CreatePartitionsTopic)),
        f("timeout_ms", INT32),
        f("validate_only", BOOL),
    ],
)

CreatePartitionsTopicResult = struct(
    "CreatePartitionsTopicResult",
    [
        f("name", STRING),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
    ],
)

CreatePartitionsResponse = message(
    "CreatePartitionsResponse",
    api_key=ApiKey.CREATE_PARTITIONS,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(CreatePartitionsTopicResult)),
    ],
)
