"""DescribeGroups (key 15): state, protocol and members of classic groups.

v1 adds throttle time, v3 authorized operations (requested with
``include_authorized_operations``), v4 each member's group instance id, v5 is flexible, v6 answers
GROUP_ID_NOT_FOUND with an error message for unknown groups (KIP-1043).
"""

from protocol.api_keys import ApiKey
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import BOOL, BYTES, INT16, INT32, STRING, array, f, message, struct

DescribeGroupsRequest = message(
    "DescribeGroupsRequest",
    api_key=ApiKey.DESCRIBE_GROUPS,
    kind="request",
    valid="0-6",
    flexible="5+",
    fields=[
        f("groups", array(STRING)),
        f("include_authorized_operations", BOOL, "3+"),
    ],
)

DescribedGroupMember = struct(
    "DescribedGroupMember",
    [
        f("member_id", STRING),
        f("group_instance_id", STRING, "4+", null="4+", default=None),
        f("client_id", STRING),
        f("client_host", STRING),
        f("member_metadata", BYTES),
        f("member_assignment", BYTES),
    ],
)

DescribedGroup = struct(
    "DescribedGroup",
    [
        f("error_code", INT16),
        f("error_message", STRING, "6+", null="6+", default=None),
        f("group_id", STRING),
        f("group_state", STRING),
        f("protocol_type", STRING),
        f("protocol_data", STRING),
        f("members", array(DescribedGroupMember)),
        f("authorized_operations", INT32, "3+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

DescribeGroupsResponse = message(
    "DescribeGroupsResponse",
    api_key=ApiKey.DESCRIBE_GROUPS,
    kind="response",
    valid="0-6",
    flexible="5+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("groups", array(DescribedGroup)),
    ],
)
