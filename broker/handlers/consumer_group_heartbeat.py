"""ConsumerGroupHeartbeat (KIP-848): a member of a consumer group joins, heartbeats, reports its
owned partitions and leaves; the answer carries its member epoch and, when it changed (or on a
full request), its assignment.

v0: an empty member id on join gets one from the coordinator; v1 (KIP-1082) requires the member
to bring its own, and adds ``subscribed_topic_regex``. Served only while
``group.coordinator.rebalance.protocols`` includes ``consumer`` (UNSUPPORTED_VERSION otherwise,
and ApiVersions does not list it).

Authorization as Kafka's ``KafkaApis``: READ on the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE
on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED); a regular expression resolves only
to topics the member's principal may DESCRIBE.
"""

from __future__ import annotations

import uuid

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._groups import client_host, coordinator, respond
from broker.registry import error_response, handler
from coordination.group.consumer import HeartbeatRequest, HeartbeatResult
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)


def consumer_protocol_enabled(ctx: RequestContext) -> bool:
    """``group.coordinator.rebalance.protocols`` includes ``consumer``."""
    return "consumer" in coordinator(ctx).config.rebalance_protocols


def _response(result: HeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if result.assignment is not None:
        assignment = Assignment(
            topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in sorted(result.assignment.items(), key=lambda item: str(item[0]))
            ]
        )
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=result.error,
        error_message=result.message,
        member_id=result.member_id if result.error == ErrorCode.NONE else None,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )


@handler(ApiKey.CONSUMER_GROUP_HEARTBEAT, "0-1", acl=(AclOperation.READ, ResourceType.GROUP))
def handle_consumer_group_heartbeat(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse | Later:
    if not consumer_protocol_enabled(ctx):
        return _response(
            HeartbeatResult(
                ErrorCode.UNSUPPORTED_VERSION,
                "The consumer group protocol is disabled (group.coordinator.rebalance.protocols)",
            )
        )
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(HeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))  # no message
    names = request.subscribed_topic_names
    if names and not all(
        ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t) for t in names
    ):
        return _response(HeartbeatResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    owned: dict[uuid.UUID, frozenset[int]] | None = None
    if request.topic_partitions is not None:
        owned = {}
        for tp in request.topic_partitions:
            owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    answer: Answer[HeartbeatResult] = Answer()
    coordinator(ctx).consumer_group_heartbeat(
        HeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=request.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
            server_assignor=request.server_assignor,
            owned=owned,
            client_id=ctx.client_id,
            client_host=client_host(ctx),
            api_version=ctx.api_version,
            may_describe=None
            if ctx.services.authorizer is None
            else lambda topic: ctx.authorize(
                AclOperation.DESCRIBE, ResourceType.TOPIC, topic, log_denied=False
            ),
        ),
        answer,
    )
    return respond(answer, _response)


@error_response(ApiKey.CONSUMER_GROUP_HEARTBEAT)
def consumer_group_heartbeat_error(
    request: ConsumerGroupHeartbeatRequest, code: ErrorCode, message: str | None
) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
