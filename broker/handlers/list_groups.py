"""ListGroups: the groups this broker coordinates (v4: filter by state, v5: by type: "classic" or
"consumer", case-insensitive; an unknown type matches no group, as in Kafka)."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse


@handler(ApiKey.LIST_GROUPS, "0-5", acl=(AclOperation.DESCRIBE, ResourceType.GROUP))
def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    version = ctx.api_version
    states = request.states_filter if version >= 4 else []
    types = {t.lower() for t in request.types_filter} if version >= 5 else set()
    code, groups = coordinator(ctx).list_groups(states)
    if types:
        groups = [g for g in groups if g.group_type in types]
    # DESCRIBE on the cluster lists every group; otherwise only those the principal may describe
    if not ctx.authorize(
        AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
    ):
        groups = [
            g
            for g in groups
            if ctx.authorize(
                AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id, log_denied=False
            )
        ]
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=code,
        groups=[
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in sorted(groups, key=lambda g: g.group_id)
        ],
    )


@error_response(ApiKey.LIST_GROUPS)
def list_groups_error(
    request: ListGroupsRequest, code: ErrorCode, message: str | None
) -> ListGroupsResponse:
    return ListGroupsResponse(error_code=code, groups=[])
