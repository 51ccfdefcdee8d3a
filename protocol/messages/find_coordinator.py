"""FindCoordinator (key 10): which broker coordinates a group, transaction or share group.

v1 adds ``key_type`` (group or transaction) and throttle time and an error message in the
response; v3 is flexible. v4 batches: the request carries ``coordinator_keys`` and the response a
``coordinators`` entry per key instead of one top-level node (KIP-699). v5 may answer
TRANSACTION_ABORTABLE (KIP-890), v6 accepts share-group keys (KIP-932).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

#: ``key_type`` values.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2

FindCoordinatorRequest = message(
    "FindCoordinatorRequest",
    api_key=ApiKey.FIND_COORDINATOR,
    kind="request",
    valid="0-6",
    flexible="3+",
    fields=[
        f("key", STRING, "0-3"),
        f("key_type", INT8, "1+", default=KEY_TYPE_GROUP),
        f("coordinator_keys", array(STRING), "4+"),
    ],
)

Coordinator = struct(
    "Coordinator",
    [
        f("key", STRING, "4+"),
        f("node_id", INT32, "4+"),
        f("host", STRING, "4+"),
        f("port", INT32, "4+"),
        f("error_code", INT16, "4+"),
        f("error_message", STRING, "4+", null="4+"),
    ],
)

FindCoordinatorResponse = message(
    "FindCoordinatorResponse",
    api_key=ApiKey.FIND_COORDINATOR,
    kind="response",
    valid="0-6",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "0-3"),
        f("error_message", STRING, "1-3", null="1-3"),
        f("node_id", INT32, "0-3"),
        f("host", STRING, "0-3"),
        f("port", INT32, "0-3"),
        f("coordinators", array(Coordinator), "4+"),
    ],
)
