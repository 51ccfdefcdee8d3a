"""JoinGroup (key 11): join a classic consumer group and take part in a rebalance.

v1 adds the rebalance timeout, v2 throttle time. From v4 a new member without a member id is
answered MEMBER_ID_REQUIRED with its id and must join again (KIP-394). v5 adds the group instance
id (static membership), v6 is flexible, v7 returns the protocol type (KIP-559), v8 adds
``reason`` (KIP-800), v9 ``skip_assignment`` (KIP-814). Kafka 4.0.1 restored v0-1 (KAFKA-19444).
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, BYTES, INT16, INT32, STRING, array, f, message, struct

JoinGroupRequestProtocol = struct(
    "JoinGroupRequestProtocol",
    [
        f("name", STRING),
        f("metadata", BYTES),
    ],
)

JoinGroupRequest = message(
    "JoinGroupRequest",
    api_key=ApiKey.JOIN_GROUP,
    kind="request",
    valid="0-9",
    flexible="6+",
    fields=[
        f("group_id", STRING),
        f("session_timeout_ms", INT32),
        f("rebalance_timeout_ms", INT32, "1+", default=-1),
        f("member_id", STRING),
        f("group_instance_id", STRING, "5+", null="5+", default=None),
        f("protocol_type", STRING),
        f("protocols", array(JoinGroupRequestProtocol)),
        f("reason", STRING, "8+", null="8+", default=None),
    ],
)

JoinGroupResponseMember = struct(
    "JoinGroupResponseMember",
    [
        f("member_id", STRING),
        f("group_instance_id", STRING, "5+", null="5+", default=None),
        f("metadata", BYTES),
    ],
)

JoinGroupResponse = message(
    "JoinGroupResponse",
    api_key=ApiKey.JOIN_GROUP,
    kind="response",
    valid="0-9",
    flexible="6+",
    fields=[
        f("throttle_time_ms", INT32, "2+"),
        f("error_code", INT16),
        f("generation_id", INT32, default=-1),
        f("protocol_type", STRING, "7+", null="7+", default=None),
        f("protocol_name", STRING, null="7+"),
        f("leader", STRING),
        f("skip_assignment", BOOL, "9+", default=False),
        f("member_id", STRING),
        f("members", array(JoinGroupResponseMember)),
    ],
)
