"""SyncGroup (key 14): the leader hands out assignments; every member receives its own.

v1 adds throttle time, v3 the group instance id (static membership), v4 is flexible, v5 carries
the protocol type and name both ways so each side can check them (KIP-559).
"""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT32, STRING, array, f, message, struct

SyncGroupRequestAssignment = struct(
    "SyncGroupRequestAssignment",
    [
        f("member_id", STRING),
        f("assignment", BYTES),
    ],
)

SyncGroupRequest = message(
    "SyncGroupRequest",
    api_key=ApiKey.SYNC_GROUP,
    kind="request",
    valid="0-5",
    flexible="4+",
    fields=[
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", null="3+", default=None),
        f("protocol_type", STRING, "5+", null="5+", default=None),
        f("protocol_name", STRING, "5+", null="5+", default=None),
        f("assignments", array(SyncGroupRequestAssignment)),
    ],
)

SyncGroupResponse = message(
    "SyncGroupResponse",
    api_key=ApiKey.SYNC_GROUP,
    kind="response",
    valid="0-5",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f("protocol_type", STRING, "5+", null="5+", default=None),
        f("protocol_name", STRING, "5+", null="5+", default=None),
        f("assignment", BYTES),
    ],
)
