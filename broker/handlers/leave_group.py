"""LeaveGroup: members leave a classic group (v3+: several, by member id or instance id), or
classic protocol members leave a consumer group (answered once that change is durable)."""

from __future__ import annotations

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._groups import coordinator, respond
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberResponse


@handler(ApiKey.LEAVE_GROUP, "0-5", acl=(AclOperation.READ, ResourceType.GROUP))
def handle_leave_group(
    ctx: RequestContext, request: LeaveGroupRequest
) -> LeaveGroupResponse | Later:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    version = ctx.api_version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    answer: Answer[LeaveResults] = Answer()
    coordinator(ctx).leave_group(group_id=request.group_id, members=leaving, callback=answer)
    return respond(answer, lambda result: _response(version, *result))


LeaveResults = tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]


def _response(
    version: int, code: ErrorCode, results: list[tuple[str, str | None, ErrorCode]]
) -> LeaveGroupResponse:
    if version < 3:
        # one member: its error is the request's
        if code == ErrorCode.NONE and results:
            code = results[0][2]
        return LeaveGroupResponse(throttle_time_ms=0, error_code=code)
    return LeaveGroupResponse(
        throttle_time_ms=0,
        error_code=code,
        members=[]
        if code != ErrorCode.NONE
        else [
            MemberResponse(member_id=m, group_instance_id=i, error_code=e) for m, i, e in results
        ],
    )


@error_response(ApiKey.LEAVE_GROUP)
def leave_group_error(
    request: LeaveGroupRequest, code: ErrorCode, message: str | None
) -> LeaveGroupResponse:
    return LeaveGroupResponse(error_code=code)
