"""DescribeClientQuotas: the quotas of the user/client-id and ip entities matching the filter
(KIP-546, KIP-612; DESCRIBE_CONFIGS on the cluster). Components match an entity type by exact
name (match type 0), as the default entity (1) or any (2); ``strict`` leaves out entities with
types the filter does not name. A filter names user/client-id components or an ip component,
not both; with no component and ``strict`` off, every entity matches."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._quotas import CLIENT_ID, IP, USER, path_to_entity, quota_keys
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_client_quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribedQuotaEntity,
    DescribedQuotaEntry,
    DescribedQuotaValue,
)


@handler(
    ApiKey.DESCRIBE_CLIENT_QUOTAS,
    "0-1",
    acl=(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER),
)
def handle_describe_client_quotas(
    ctx: RequestContext, request: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    security = ctx.services.security
    assert security is not None
    components = {}
    for c in request.components:
        if c.entity_type in components:
            return describe_client_quotas_error(
                request, ErrorCode.INVALID_REQUEST,
                f"Duplicate {c.entity_type} filter component entity type")  # fmt: skip
        if c.entity_type not in (USER, CLIENT_ID, IP):
            return describe_client_quotas_error(
                request, ErrorCode.UNSUPPORTED_VERSION,
                f"Custom entity type '{c.entity_type}' not supported")  # fmt: skip
        components[c.entity_type] = c
    if IP in components and (USER in components or CLIENT_ID in components):
        return describe_client_quotas_error(
            request,
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.",
        )
    entries = []
    for path, configs in sorted(security.store.entity_configs.items()):
        entity = path_to_entity(path)
        if entity is None:
            continue
        if request.strict and set(entity) - set(components):
            continue
        ok = True
        for entity_type, c in components.items():
            if entity_type not in entity:
                ok = False
            elif c.match_type == MATCH_EXACT:
                ok = entity[entity_type] is not None and entity[entity_type] == c.match
            elif c.match_type == MATCH_DEFAULT:
                ok = entity[entity_type] is None
            if not ok:
                break
        values = []
        for key in quota_keys(path):
            raw = configs.get(key)
            if raw is None:
                continue
            try:
                values.append(DescribedQuotaValue(key=key, value=float(raw)))
            except ValueError:
                continue
        if ok and values:
            entries.append(
                DescribedQuotaEntry(
                    entity=[
                        DescribedQuotaEntity(entity_type=t, entity_name=n)
                        for t, n in entity.items()
                    ],
                    values=values,
                )
            )
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, entries=entries
    )


def describe_client_quotas_error(
    request: DescribeClientQuotasRequest, code: ErrorCode, message: str | None
) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(error_code=code, error_message=message, entries=None)


error_response(ApiKey.DESCRIBE_CLIENT_QUOTAS)(describe_client_quotas_error)
