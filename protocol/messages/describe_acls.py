"""DescribeAcls (key 29): list the ACLs matching a filter.

v1 adds the resource pattern type (KIP-290; v0 filters and results are LITERAL, 3); v2 is
flexible; v3 adds the USER resource type. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

#: Kafka's PatternType.LITERAL: what v0 filters and results mean
PATTERN_TYPE_LITERAL = 3

DescribeAclsRequest = message(
    "DescribeAclsRequest",
    api_key=ApiKey.DESCRIBE_ACLS,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("resource_type_filter", INT8),
        f("resource_name_filter", STRING, null="0+"),
        f("pattern_type_filter", INT8, "1+", default=PATTERN_TYPE_LITERAL),
        f("principal_filter", STRING, null="0+"),
        f("host_filter", STRING, null="0+"),
        f("operation", INT8),
        f("permission_type", INT8),
    ],
)

AclDescription = struct(
    "AclDescription",
    [
        f("principal", STRING),
        f("host", STRING),
        f("operation", INT8),
        f("permission_type", INT8),
    ],
)

DescribeAclsResource = struct(
    "DescribeAclsResource",
    [
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("pattern_type", INT8, "1+", default=PATTERN_TYPE_LITERAL),
        f("acls", array(AclDescription)),
    ],
)

DescribeAclsResponse = message(
    "DescribeAclsResponse",
    api_key=ApiKey.DESCRIBE_ACLS,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("resources", array(DescribeAclsResource)),
    ],
)
