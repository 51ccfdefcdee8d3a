"""LeaveGroup (key 13): members leave a classic consumer group.

v0-2 name one member; v1 adds throttle time. v3 batches: ``members`` lists member ids with their
group instance ids (KIP-345) and the response answers per member. v4 is flexible, v5 adds a
per-member ``reason`` (KIP-800).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

MemberIdentity = struct(
    "MemberIdentity",
    [
        f("member_id", STRING, "3+"),
        f("group_instance_id", STRING, "3+", null="3+", default=None),
        f("reason", STRING, "5+", null="5+", default=None),
    ],
)

LeaveGroupRequest = message(
    "LeaveGroupRequest",
    api_key=ApiKey.LEAVE_GROUP,
    kind="request",
    valid="0-5",
    flexible="4+",
    fields=[
        f("group_id", STRING),
        f("member_id", STRING, "0-2"),
        f("members", array(MemberIdentity), "3+"),
    ],
)

MemberResponse = struct(
    "MemberResponse",
    [
        f("member_id", STRING, "3+"),
        f("group_instance_id", STRING, "3+", null="3+"),
        f("error_code", INT16, "3+"),
    ],
)

LeaveGroupResponse = message(
    "LeaveGroupResponse",
    api_key=ApiKey.LEAVE_GROUP,
    kind="response",
    valid="0-5",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f("members", array(MemberResponse), "3+"),
    ],
)
