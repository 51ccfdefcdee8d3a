"""Heartbeat (key 12): a classic group member tells its coordinator it is alive.

v1 adds throttle time, v3 the group instance id (static membership), v4 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, f, message

HeartbeatRequest = message(
    "HeartbeatRequest",
    api_key=ApiKey.HEARTBEAT,
    kind="request",
    valid="0-4",
    flexible="4+",
    fields=[
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", null="3+", default=None),
    ],
)

HeartbeatResponse = message(
    "HeartbeatResponse",
    api_key=ApiKey.HEARTBEAT,
    kind="response",
    valid="0-4",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
    ],
)
