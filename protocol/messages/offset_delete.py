"""OffsetDelete (key 47): delete a group's committed offsets for some partitions (KIP-496).

Only v0, not flexible. The response puts the top-level error code before the throttle time.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

OffsetDeleteRequestPartition = struct(
    "OffsetDeleteRequestPartition",
    [
        f("partition_index", INT32),
    ],
)

OffsetDeleteRequestTopic = struct(
    "OffsetDeleteRequestTopic",
    [
        f("name", STRING),
        f("partitions", array(OffsetDeleteRequestPartition)),
    ],
)

OffsetDeleteRequest = message(
    "OffsetDeleteRequest",
    api_key=ApiKey.OFFSET_DELETE,
    kind="request",
    valid="0",
    flexible="none",
    fields=[
        f("group_id", STRING),
        f("topics", array(OffsetDeleteRequestTopic)),
    ],
)

OffsetDeleteResponsePartition = struct(
    "OffsetDeleteResponsePartition",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
    ],
)

OffsetDeleteResponseTopic = struct(
    "OffsetDeleteResponseTopic",
    [
        f("name", STRING),
        f("partitions", array(OffsetDeleteResponsePartition)),
    ],
)

OffsetDeleteResponse = message(
    "OffsetDeleteResponse",
    api_key=ApiKey.OFFSET_DELETE,
    kind="response",
    valid="0",
    flexible="none",
    fields=[
        f("error_code", INT16),
        f("throttle_time_ms", INT32),
        f("topics", array(OffsetDeleteResponseTopic)),
    ],
)
