"""DeleteGroups: delete empty groups and their committed offsets (tombstones in
``__consumer_offsets``). v3 adds a message to each group's result, which Kafka 4.4 leaves null
for the errors a group can have here (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, authorization), as
Odradek does."""

from __future__ import annotations

import asyncio

from broker.coordinators.scheduler import future_callback
from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)


@handler(ApiKey.DELETE_GROUPS, "0-3", acl=(AclOperation.DELETE, ResourceType.GROUP))
async def handle_delete_groups(
    ctx: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    allowed = [
        g for g in request.groups_names if ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, g)
    ]
    results: dict[str, ErrorCode] = {}
    if allowed:
        future, callback = future_callback(asyncio.get_running_loop(), dict)
        coordinator(ctx).delete_groups(allowed, callback)
        results = dict(await future)
    for g in request.groups_names:
        results.setdefault(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeletableGroupResult(group_id=g, error_code=results[g]) for g in request.groups_names
        ],
    )


@error_response(ApiKey.DELETE_GROUPS)
def delete_groups_error(
    request: DeleteGroupsRequest, code: ErrorCode, message: str | None
) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names]
    )
