"""ConsumerGroupDescribe (KIP-848): consumer groups with their epochs, assignor and members
(subscriptions, current and target assignments). A group that does not exist, or is a classic
group, answers GROUP_ID_NOT_FOUND; v1 adds each member's type (KIP-1099: 0 classic protocol,
1 consumer protocol).

Authorization as Kafka's ``KafkaApis``: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED), and
on every topic its members subscribe to or are assigned (TOPIC_AUTHORIZATION_FAILED for the
group otherwise: a principal sees no topic it may not describe).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.handlers.consumer_group_heartbeat import consumer_protocol_enabled
from broker.registry import error_response, handler
from coordination.group.consumer_describe import DescribedPartitions
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.messages.consumer_group_describe import (
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    Member,
    TopicPartitions,
)


def _assignment(parts: tuple[DescribedPartitions, ...]) -> Assignment:
    return Assignment(
        topic_partitions=[
            TopicPartitions(
                topic_id=p.topic_id, topic_name=p.topic_name, partitions=list(p.partitions)
            )
            for p in parts
        ]
    )


def _describe(ctx: RequestContext, group_id: str, include_ops: bool) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(
            error_code=ErrorCode.INVALID_GROUP_ID,
            group_id=group_id,
            group_state="",
            assignor_name="",
            members=[],
        )
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return DescribedGroup(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            group_id=group_id,
            group_state="",
            assignor_name="",
            members=[],
        )
    g = coordinator(ctx).consumer_group_describe(group_id)
    topics = {t for m in g.members for t in m.subscribed_topic_names}
    topics |= {p.topic_name for m in g.members for p in (*m.assignment, *m.target_assignment)}
    if not all(ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t) for t in topics):
        return DescribedGroup(
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            error_message="The described group uses topics that the client is not authorized "
            "to describe.",
            group_id=group_id,
            group_state="",
            assignor_name="",
            members=[],
        )
    ok = g.error == ErrorCode.NONE
    return DescribedGroup(
        error_code=g.error,
        error_message=g.message,
        group_id=group_id,
        group_state=g.state,
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor_name=g.assignor,
        members=[
            Member(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                # "" without a regex, as Kafka answers (its member records' default)
                subscribed_topic_regex=m.subscribed_topic_regex or "",
                assignment=_assignment(m.assignment),
                target_assignment=_assignment(m.target_assignment),
                member_type=m.member_type,
            )
            for m in g.members
        ],
        authorized_operations=ctx.authorized_operations(ResourceType.GROUP, group_id)
        if include_ops and ok
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


@handler(ApiKey.CONSUMER_GROUP_DESCRIBE, "0-1", acl=(AclOperation.DESCRIBE, ResourceType.GROUP))
def handle_consumer_group_describe(
    ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    if not consumer_protocol_enabled(ctx):
        return _all_failed(request, ErrorCode.UNSUPPORTED_VERSION, None)
    include_ops = bool(request.include_authorized_operations)
    return ConsumerGroupDescribeResponse(
        throttle_time_ms=0,
        groups=[_describe(ctx, g, include_ops) for g in request.group_ids],
    )


@error_response(ApiKey.CONSUMER_GROUP_DESCRIBE)
def consumer_group_describe_error(
    request: ConsumerGroupDescribeRequest, code: ErrorCode, message: str | None
) -> ConsumerGroupDescribeResponse:
    return _all_failed(request, code, message)


def _all_failed(
    request: ConsumerGroupDescribeRequest, code: ErrorCode, message: str | None
) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        groups=[
            DescribedGroup(
                error_code=code,
                error_message=message,
                group_id=g,
                group_state="",
                assignor_name="",
                members=[],
            )
            for g in request.group_ids
        ]
    )
