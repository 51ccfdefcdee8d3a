"""DeleteAcls: remove the ACL bindings matching each filter (ALTER on the cluster) and return
them; without an authorizer the answer is SECURITY_DISABLED."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._acls import NO_AUTHORIZER, InvalidAcl, binding_filter
from broker.registry import error_response, handler
from broker.security.authorizer import AclBindingFilter
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)


@handler(ApiKey.DELETE_ACLS, "0-3", acl=(AclOperation.ALTER, ResourceType.CLUSTER), blocking=True)
def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    security = ctx.services.security
    authorizer = security.authorizer if security is not None else None
    if authorizer is None:
        return delete_acls_error(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results: list[DeleteAclsFilterResult | None] = []
    filters: list[tuple[int, AclBindingFilter]] = []
    for r in request.filters:
        try:
            flt = binding_filter(r.resource_type_filter, r.resource_name_filter,
                                 r.pattern_type_filter, r.principal_filter, r.host_filter,
                                 r.operation, r.permission_type)  # fmt: skip
        except InvalidAcl as e:
            results.append(
                DeleteAclsFilterResult(
                    error_code=e.error_code, error_message=str(e), matching_acls=[]
                )
            )
            continue
        filters.append((len(results), flt))
        results.append(None)
    outcomes = authorizer.delete_acls([flt for _, flt in filters])
    for (i, _), (deleted, error) in zip(filters, outcomes, strict=True):
        results[i] = DeleteAclsFilterResult(
            error_code=ErrorCode.UNKNOWN_SERVER_ERROR if error is not None else ErrorCode.NONE,
            error_message=str(error) if error is not None else None,
            matching_acls=[
                DeleteAclsMatchingAcl(
                    error_code=ErrorCode.NONE,
                    resource_type=int(b.pattern.resource_type),
                    resource_name=b.pattern.name,
                    pattern_type=int(b.pattern.pattern_type),
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=int(b.entry.operation),
                    permission_type=int(b.entry.permission),
                )
                for b in deleted
            ],
        )
    return DeleteAclsResponse(
        throttle_time_ms=0, filter_results=[r for r in results if r is not None]
    )


def delete_acls_error(
    request: DeleteAclsRequest, code: ErrorCode, message: str | None
) -> DeleteAclsResponse:
    return DeleteAclsResponse(
        filter_results=[
            DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=[])
            for _ in request.filters
        ]
    )


error_response(ApiKey.DELETE_ACLS)(delete_acls_error)
