"""CreateAcls: add ACL bindings (ALTER on the cluster). Each binding is checked as Kafka's
AclApis does (INVALID_REQUEST otherwise) and stored through the authorizer; without an
authorizer the answer is SECURITY_DISABLED."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._acls import NO_AUTHORIZER, InvalidAcl, binding
from broker.registry import error_response, handler
from coordination.metadata.security import AclBinding
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_acls import AclCreationResult, CreateAclsRequest, CreateAclsResponse


@handler(ApiKey.CREATE_ACLS, "0-3", acl=(AclOperation.ALTER, ResourceType.CLUSTER), blocking=True)
def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    security = ctx.services.security
    authorizer = security.authorizer if security is not None else None
    if authorizer is None:
        return create_acls_error(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    results: list[AclCreationResult] = []
    valid: list[tuple[int, AclBinding]] = []
    for c in request.creations:
        try:
            b = binding(c.resource_type, c.resource_name, c.resource_pattern_type,
                        c.principal, c.host, c.operation, c.permission_type)  # fmt: skip
        except InvalidAcl as e:
            results.append(AclCreationResult(error_code=e.error_code, error_message=str(e)))
            continue
        valid.append((len(results), b))
        results.append(AclCreationResult(error_code=ErrorCode.NONE))
    outcomes = authorizer.create_acls([b for _, b in valid])
    for (i, _), error in zip(valid, outcomes, strict=True):
        if error is not None:
            results[i] = AclCreationResult(
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(error)
            )
    return CreateAclsResponse(throttle_time_ms=0, results=results)


def create_acls_error(
    request: CreateAclsRequest, code: ErrorCode, message: str | None
) -> CreateAclsResponse:
    return CreateAclsResponse(
        results=[
            AclCreationResult(error_code=code, error_message=message) for _ in request.creations
        ]
    )


error_response(ApiKey.CREATE_ACLS)(create_acls_error)
