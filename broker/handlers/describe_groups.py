"""DescribeGroups: state, protocol, members (metadata and assignments once Stable).

An unknown group is "Dead" with no error before v6, GROUP_ID_NOT_FOUND from v6 (KIP-1043). A
KIP-848 consumer group is answered as Kafka does: like a group that does not exist ("Dead";
v6: GROUP_ID_NOT_FOUND, "Group X is not a classic group."); ConsumerGroupDescribe describes it.
Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED otherwise); ``authorized_operations``
is what the authorizer allows this principal on the group.
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from coordination.group.config import DEAD_GROUP, NOT_CLASSIC_GROUP
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)


def _describe(ctx: RequestContext, group_id: str, include_ops: bool) -> DescribedGroup:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return DescribedGroup(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
        )
    code, summary = coordinator(ctx).describe_group(group_id)
    missing = (summary is DEAD_GROUP or summary is NOT_CLASSIC_GROUP) and ctx.api_version >= 6
    message = None
    if missing:
        message = (
            f"Group {group_id} is not a classic group."
            if summary is NOT_CLASSIC_GROUP
            else f"Group {group_id} not found."
        )
    return DescribedGroup(
        error_code=ErrorCode.GROUP_ID_NOT_FOUND if missing else code,
        error_message=message,
        group_id=group_id,
        group_state=summary.state,
        protocol_type=summary.protocol_type,
        protocol_data=summary.protocol,
        members=[
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in summary.members
        ],
        authorized_operations=ctx.authorized_operations(ResourceType.GROUP, group_id)
        if include_ops
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


@handler(ApiKey.DESCRIBE_GROUPS, "0-6", acl=(AclOperation.DESCRIBE, ResourceType.GROUP))
def handle_describe_groups(
    ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    include_ops = ctx.api_version >= 3 and bool(request.include_authorized_operations)
    return DescribeGroupsResponse(
        throttle_time_ms=0,
        groups=[_describe(ctx, g, include_ops) for g in request.groups],
    )


@error_response(ApiKey.DESCRIBE_GROUPS)
def describe_groups_error(
    request: DescribeGroupsRequest, code: ErrorCode, message: str | None
) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(
        groups=[
            DescribedGroup(
                error_code=code,
                group_id=g,
                group_state="",
                protocol_type="",
                protocol_data="",
                members=[],
            )
            for g in request.groups
        ]
    )
