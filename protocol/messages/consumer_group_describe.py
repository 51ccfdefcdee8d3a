"""ConsumerGroupDescribe (key 69): describe KIP-848 consumer groups.

Returns each group's epochs, assignor and members with their subscriptions, current and target
assignments. Always flexible. v1 adds each member's ``member_type`` (KIP-1099: -1 unknown,
0 classic, 1 consumer); the request is unchanged.
"""

from protocol.api_keys import ApiKey
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, array, f, message, struct

ConsumerGroupDescribeRequest = message(
    "ConsumerGroupDescribeRequest",
    api_key=ApiKey.CONSUMER_GROUP_DESCRIBE,
    kind="request",
    valid="0-1",
    flexible="0+",
    fields=[
        f("group_ids", array(STRING)),
        f("include_authorized_operations", BOOL),
    ],
)

TopicPartitions = struct(
    "TopicPartitions",
    [
        f("topic_id", UUID),
        f("topic_name", STRING),
        f("partitions", array(INT32)),
    ],
)

Assignment = struct(
    "Assignment",
    [
        f("topic_partitions", array(TopicPartitions)),
    ],
)

Member = struct(
    "Member",
    [
        f("member_id", STRING),
        f("instance_id", STRING, null="0+", default=None),
        f("rack_id", STRING, null="0+", default=None),
        f("member_epoch", INT32),
        f("client_id", STRING),
        f("client_host", STRING),
        f("subscribed_topic_names", array(STRING)),
        f("subscribed_topic_regex", STRING, null="0+", default=None),
        f("assignment", Assignment),
        f("target_assignment", Assignment),
        f("member_type", INT8, "1+", default=-1),
    ],
)

DescribedGroup = struct(
    "DescribedGroup",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
        f("group_id", STRING),
        f("group_state", STRING),
        f("group_epoch", INT32),
        f("assignment_epoch", INT32),
        f("assignor_name", STRING),
        f("members", array(Member)),
        f("authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

ConsumerGroupDescribeResponse = message(
    "ConsumerGroupDescribeResponse",
    api_key=ApiKey.CONSUMER_GROUP_DESCRIBE,
    kind="response",
    valid="0-1",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("groups", array(DescribedGroup)),
    ],
)
