"""DeleteRecords (key 21): advance partitions' log start offsets, deleting the records before.

v1 is v0 (on quota violation the broker answers before throttling); v2 is flexible.
An offset of -1 means the high watermark.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

DeleteRecordsPartition = struct(
    "DeleteRecordsPartition",
    [
        f("partition_index", INT32),
        f("offset", INT64),
    ],
)

DeleteRecordsTopic = struct(
    "DeleteRecordsTopic",
    [
        f("name", STRING),
        f("partitions", array(DeleteRecordsPartition)),
    ],
)

DeleteRecordsRequest = message(
    "DeleteRecordsRequest",
    api_key=ApiKey.DELETE_RECORDS,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("topics", array(DeleteRecordsTopic)),
        f("timeout_ms", INT32),
    ],
)

DeleteRecordsPartitionResult = struct(
    "DeleteRecordsPartitionResult",
    [
        f("partition_index", INT32),
        f("low_watermark", INT64),
        f("error_code", INT16),
    ],
)

DeleteRecordsTopicResult = struct(
    "DeleteRecordsTopicResult",
    [
        f("name", STRING),
        f("partitions", array(DeleteRecordsPartitionResult)),
    ],
)

DeleteRecordsResponse = message(
    "DeleteRecordsResponse",
    api_key=ApiKey.DELETE_RECORDS,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("topics", array(DeleteRecordsTopicResult)),
    ],
)
