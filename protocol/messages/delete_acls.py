"""DeleteAcls (key 31): remove the ACL bindings matching filters, returning what matched.

v1 adds the resource pattern type (KIP-290; v0 filters and matches are LITERAL, 3); v2 is flexible;
v3 adds the USER resource type. Kafka 4 dropped v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

#: Kafka's PatternType.LITERAL: what v0 filters and matches mean
PATTERN_TYPE_LITERAL = 3

DeleteAclsFilter = struct(
    "DeleteAclsFilter",
    [
        f("resource_type_filter", INT8),
        f("resource_name_filter", STRING, null="0+"),
        f("pattern_type_filter", INT8, "1+", default=PATTERN_TYPE_LITERAL),
        f("principal_filter", STRING, null="0+"),
        f("host_filter", STRING, null="0+"),
        f("operation", INT8),
        f("permission_type", INT8),
    ],
)

DeleteAclsRequest = message(
    "DeleteAclsRequest",
    api_key=ApiKey.DELETE_ACLS,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("filters", array(DeleteAclsFilter)),
    ],
)

DeleteAclsMatchingAcl = struct(
    "DeleteAclsMatchingAcl",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("pattern_type", INT8, "1+", default=PATTERN_TYPE_LITERAL),
        f("principal", STRING),
        f("host", STRING),
        f("operation", INT8),
        f("permission_type", INT8),
    ],
)

DeleteAclsFilterResult = struct(
    "DeleteAclsFilterResult",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("matching_acls", array(DeleteAclsMatchingAcl)),
    ],
)

DeleteAclsResponse = message(
    "DeleteAclsResponse",
    api_key=ApiKey.DELETE_ACLS,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("filter_results", array(DeleteAclsFilterResult)),
    ],
)
