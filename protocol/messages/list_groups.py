"""ListGroups (key 16): the groups a broker coordinates.

v1 adds throttle time, v3 is flexible, v4 filters by state and returns each group's state
(KIP-518), v5 filters by type and returns each group's type (KIP-848).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, STRING, array, f, message, struct

ListGroupsRequest = message(
    "ListGroupsRequest",
    api_key=ApiKey.LIST_GROUPS,
    kind="request",
    valid="0-5",
    flexible="3+",
    fields=[
        f("states_filter", array(STRING), "4+"),
        f("types_filter", array(STRING), "5+"),
    ],
)

ListedGroup = struct(
    "ListedGroup",
    [
        f("group_id", STRING),
        f("protocol_type", STRING),
        f("group_state", STRING, "4+"),
        f("group_type", STRING, "5+"),
    ],
)

ListGroupsResponse = message(
    "ListGroupsResponse",
    api_key=ApiKey.LIST_GROUPS,
    kind="response",
    valid="0-5",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f("groups", array(ListedGroup)),
    ],
)
