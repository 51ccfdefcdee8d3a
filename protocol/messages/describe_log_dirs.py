"""DescribeLogDirs (key 35): a broker's log directories, their partitions and sizes (KIP-113).

v1 is v0 (the broker answers before throttling); v2 is flexible; v3 adds the top-level
``error_code``; v4 adds each directory's ``total_bytes`` and ``usable_bytes`` (KIP-827; -1 when
unknown); v5 adds ``is_cordoned`` (KIP-1066). ``topics`` null asks for every partition. Kafka 4
dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct

DescribableLogDirTopic = struct(
    "DescribableLogDirTopic",
    [
        f("topic", STRING),
        f("partitions", array(INT32)),
    ],
)

DescribeLogDirsRequest = message(
    "DescribeLogDirsRequest",
    api_key=ApiKey.DESCRIBE_LOG_DIRS,
    kind="request",
    valid="0-5",
    flexible="2+",
    fields=[
        f("topics", array(DescribableLogDirTopic), null="0+"),
    ],
)

DescribeLogDirsPartition = struct(
    "DescribeLogDirsPartition",
    [
        f("partition_index", INT32),
        f("partition_size", INT64),
        f("offset_lag", INT64),
        f("is_future_key", BOOL),
    ],
)

DescribeLogDirsTopic = struct(
    "DescribeLogDirsTopic",
    [
        f("name", STRING),
        f("partitions", array(DescribeLogDirsPartition)),
    ],
)

DescribeLogDirsResult = struct(
    "DescribeLogDirsResult",
    [
        f("error_code", INT16),
        f("log_dir", STRING),
        f("topics", array(DescribeLogDirsTopic)),
        f("total_bytes", INT64, "4+", default=-1),
        f("usable_bytes", INT64, "4+", default=-1),
        f("is_cordoned", BOOL, "5+", default=False),
    ],
)

DescribeLogDirsResponse = message(
    "DescribeLogDirsResponse",
    api_key=ApiKey.DESCRIBE_LOG_DIRS,
    kind="response",
    valid="0-5",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "3+", default=0),
        f("results", array(DescribeLogDirsResult)),
    ],
)
