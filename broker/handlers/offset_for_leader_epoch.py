"""OffsetForLeaderEpoch: the end offset of a leader epoch, from the leader-epoch cache. Clients
use it after a leader change to detect log truncation (KIP-320); Metadata reports epochs."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from protocol.schema import Struct


def _partition(ctx: RequestContext, topic: str, p: Struct, *, cluster: bool) -> EpochEndOffset:
    result = EpochEndOffset(partition=p.partition, error_code=ErrorCode.NONE)
    if not cluster and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic):
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    try:
        part = ctx.services.replica_manager.partition_or_raise(topic, p.partition)
        result.leader_epoch, result.end_offset = part.last_offset_for_leader_epoch(
            p.leader_epoch, current_leader_epoch=p.current_leader_epoch
        )
    except KafkaApiError as e:
        result.error_code = e.error_code
    return result


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH, "0-4", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
def handle_offset_for_leader_epoch(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    # Kafka's rule, whoever asks (a follower or, since KIP-320, a consumer): CLUSTER_ACTION on
    # the cluster answers every topic, else DESCRIBE on each
    cluster = ctx.authorize(
        AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
    )
    return OffsetForLeaderEpochResponse(
        throttle_time_ms=0,
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[_partition(ctx, t.topic, p, cluster=cluster) for p in t.partitions],
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def offset_for_leader_epoch_error(
    request: OffsetForLeaderEpochRequest, code: ErrorCode, message: str | None
) -> OffsetForLeaderEpochResponse:
    return OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[
                    EpochEndOffset(partition=p.partition, error_code=code) for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
