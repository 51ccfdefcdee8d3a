"""CreateAcls (key 30): add ACL bindings.

v1 adds the resource pattern type (KIP-290; v0 bindings are LITERAL, 3); v2 is flexible; v3 adds
the USER resource type. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

#: Kafka's PatternType.LITERAL: what v0 bindings mean
PATTERN_TYPE_LITERAL = 3

AclCreation = struct(
    "AclCreation",
    [
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("resource_pattern_type", INT8, "1+", default=PATTERN_TYPE_LITERAL),
        f("principal", STRING),
        f("host", STRING),
        f("operation", INT8),
        f("permission_type", INT8),
    ],
)

CreateAclsRequest = message(
    "CreateAclsRequest",
    api_key=ApiKey.CREATE_ACLS,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("creations", array(AclCreation)),
    ],
)

AclCreationResult = struct(
    "AclCreationResult",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
    ],
)

CreateAclsResponse = message(
    "CreateAclsResponse",
    api_key=ApiKey.CREATE_ACLS,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(AclCreationResult)),
    ],
)
