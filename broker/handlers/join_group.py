"""JoinGroup: join a classic group; the answer waits for the rebalance to complete.

The coordinator calls back (from whichever thread completes the rebalance); the result is handed
to this request's processor loop with ``call_soon_threadsafe``. From v4 a member without an id is
answered MEMBER_ID_REQUIRED first (KIP-394), unless it is static (``group_instance_id``, v5+).
"""

from __future__ import annotations

import asyncio

from broker.coordinators.scheduler import future_callback
from broker.dispatch import RequestContext
from broker.handlers._groups import client_host, coordinator
from broker.registry import error_response, handler
from coordination.group.config import JoinRequest
from coordination.group.metadata import JoinResult
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)


def _response(result: JoinResult, version: int) -> JoinGroupResponse:
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name
        if result.protocol_name is not None or version >= 7
        else "",
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ],
    )


@handler(ApiKey.JOIN_GROUP, "0-9", acl=(AclOperation.READ, ResourceType.GROUP))
async def handle_join_group(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.api_version
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refused: JoinGroupResponse = join_group_error(
            request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None, version
        )
        return refused
    instance_id = request.group_instance_id if version >= 5 else None
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else -1
    if rebalance_timeout < 0:
        rebalance_timeout = request.session_timeout_ms
    future, callback = future_callback(asyncio.get_running_loop(), JoinResult)
    coordinator(ctx).join_group(
        JoinRequest(
            group_id=request.group_id,
            member_id=request.member_id or "",
            group_instance_id=instance_id,
            require_known_member_id=version >= 4 and instance_id is None,
            client_id=ctx.header.client_id or "",
            client_host=client_host(ctx),
            rebalance_timeout_ms=rebalance_timeout,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
            supports_skip_assignment=version >= 9,
            reason=request.reason if version >= 8 else None,
        ),
        callback,
    )
    result = await future
    return _response(result, version)


@error_response(ApiKey.JOIN_GROUP)
def join_group_error(
    request: JoinGroupRequest, code: ErrorCode, message: str | None, version: int
) -> JoinGroupResponse:
    """Kafka's JoinGroupRequest.getErrorResponse: no member id, and a null protocol name from
    v7 (before, the field cannot be null: "")."""
    return JoinGroupResponse(
        error_code=code,
        generation_id=-1,
        protocol_name=None if version >= 7 else "",
        leader="",
        member_id="",
    )
