"""Heartbeat: a member of a classic group is alive (REBALANCE_IN_PROGRESS: rejoin)."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse


@handler(ApiKey.HEARTBEAT, "0-4", acl=(AclOperation.READ, ResourceType.GROUP))
def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    code = coordinator(ctx).heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if ctx.api_version >= 3 else None,
        generation_id=request.generation_id,
    )
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


@error_response(ApiKey.HEARTBEAT)
def heartbeat_error(
    request: HeartbeatRequest, code: ErrorCode, message: str | None
) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)
