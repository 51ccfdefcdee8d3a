"""ConsumerGroupHeartbeat (key 68): the KIP-848 consumer group protocol's one request.

A member joins (epoch 0), heartbeats, reports its owned partitions and leaves (epoch -1, or -2
for a static member that will rejoin); the coordinator answers with the member epoch and, when it
changed, the target assignment. Most request fields are null when unchanged since the last
heartbeat. Always flexible. v1 adds ``subscribed_topic_regex`` and has the client generate its
own member id (KIP-1082).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, UUID, array, f, message, struct

#: ``member_epoch`` values with a special meaning in requests.
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

TopicPartitions = struct(
    "TopicPartitions",
    [
        f("topic_id", UUID),
        f("partitions", array(INT32)),
    ],
)

ConsumerGroupHeartbeatRequest = message(
    "ConsumerGroupHeartbeatRequest",
    api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT,
    kind="request",
    valid="0-1",
    flexible="0+",
    fields=[
        f("group_id", STRING),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("instance_id", STRING, null="0+", default=None),
        f("rack_id", STRING, null="0+", default=None),
        f("rebalance_timeout_ms", INT32, default=-1),
        f("subscribed_topic_names", array(STRING), null="0+", default=None),
        f("subscribed_topic_regex", STRING, "1+", null="1+", default=None),
        f("server_assignor", STRING, null="0+", default=None),
        f("topic_partitions", array(TopicPartitions), null="0+", default=None),
    ],
)

Assignment = struct(
    "Assignment",
    [
        f("topic_partitions", array(TopicPartitions)),
    ],
)

ConsumerGroupHeartbeatResponse = message(
    "ConsumerGroupHeartbeatResponse",
    api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT,
    kind="response",
    valid="0-1",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
        f("member_id", STRING, null="0+", default=None),
        f("member_epoch", INT32),
        f("heartbeat_interval_ms", INT32),
        f("assignment", Assignment, null="0+", default=None),
    ],
)
