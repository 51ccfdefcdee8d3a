"""DeleteGroups (key 42): delete empty consumer groups and their committed offsets.

v1 is v0 (responses are sent before throttling); v2 is flexible; v3 adds each group's error
message. Note Kafka's field name ``groups_names``.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

DeleteGroupsRequest = message(
    "DeleteGroupsRequest",
    api_key=ApiKey.DELETE_GROUPS,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("groups_names", array(STRING)),
    ],
)

DeletableGroupResult = struct(
    "DeletableGroupResult",
    [
        f("group_id", STRING),
        f("error_code", INT16),
        f("error_message", STRING, "3+", null="3+", default=None),
    ],
)

DeleteGroupsResponse = message(
    "DeleteGroupsResponse",
    api_key=ApiKey.DELETE_GROUPS,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(DeletableGroupResult)),
    ],
)
