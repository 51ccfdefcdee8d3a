"""SyncGroup: the leader hands out the assignment; every member waits for its own."""

from __future__ import annotations

import asyncio

from broker.coordinators.scheduler import future_callback
from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from coordination.group.metadata import SyncResult
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse


@handler(ApiKey.SYNC_GROUP, "0-5", acl=(AclOperation.READ, ResourceType.GROUP))
async def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    version = ctx.api_version
    future, callback = future_callback(asyncio.get_running_loop(), SyncResult)
    coordinator(ctx).sync_group(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if version >= 3 else None,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        callback=callback,
    )
    result = await future
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


@error_response(ApiKey.SYNC_GROUP)
def sync_group_error(
    request: SyncGroupRequest, code: ErrorCode, message: str | None
) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=code, assignment=b"")
