"""DescribeAcls: the ACL bindings matching a filter (DESCRIBE on the cluster), grouped by
resource pattern; without an authorizer the answer is SECURITY_DISABLED."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._acls import NO_AUTHORIZER, InvalidAcl, binding_filter
from broker.registry import error_response, handler
from coordination.metadata.security import ResourcePattern
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)


@handler(ApiKey.DESCRIBE_ACLS, "0-3", acl=(AclOperation.DESCRIBE, ResourceType.CLUSTER))
def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    security = ctx.services.security
    authorizer = security.authorizer if security is not None else None
    if authorizer is None:
        return describe_acls_error(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    r = request
    try:
        flt = binding_filter(
            r.resource_type_filter,
            r.resource_name_filter,
            r.pattern_type_filter,
            r.principal_filter,
            r.host_filter,
            r.operation,
            r.permission_type,
        )
    except InvalidAcl as err:
        return describe_acls_error(request, err.error_code, str(err))
    grouped: dict[ResourcePattern, list[AclDescription]] = {}
    for b in authorizer.acls(flt):
        e = b.entry
        grouped.setdefault(b.pattern, []).append(
            AclDescription(
                principal=e.principal,
                host=e.host,
                operation=int(e.operation),
                permission_type=int(e.permission),
            )
        )
    return DescribeAclsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        resources=[
            DescribeAclsResource(
                resource_type=int(p.resource_type),
                resource_name=p.name,
                pattern_type=int(p.pattern_type),
                acls=acls,
            )
            for p, acls in grouped.items()
        ],
    )


def describe_acls_error(
    request: DescribeAclsRequest, code: ErrorCode, message: str | None
) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=code, error_message=message, resources=[])


error_response(ApiKey.DESCRIBE_ACLS)(describe_acls_error)
