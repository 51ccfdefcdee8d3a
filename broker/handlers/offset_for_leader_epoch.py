"""OffsetForLeaderEpoch: the end offset of a leader epoch, from the leader-epoch cache. Clients
use it after a leader change to detect log truncation (KIP-320); Metadata reports epochs."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from protocol.schema import Struct


def _partition(ctx: RequestContext, topic: str, p: Struct) -> Struct:
    result = EpochEndOffset(partition=p.partition, error_code=ErrorCode.NONE)
    part, code = ctx.broker.replica_manager.leader_partition(topic, p.partition)
    if part is None:
        result.error_code = code
        return result
    current = p.current_leader_epoch
    if current >= 0 and current != part.leader_epoch:
        result.error_code = (
            ErrorCode.FENCED_LEADER_EPOCH
            if current < part.leader_epoch
            else ErrorCode.UNKNOWN_LEADER_EPOCH
        )
        return result
    epoch, end_offset = part.log.end_offset_for_epoch(p.leader_epoch)
    result.leader_epoch, result.end_offset = epoch, end_offset
    return result


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH, "0-4")
def handle_offset_for_leader_epoch(ctx: RequestContext, request: Struct) -> Struct:
    return OffsetForLeaderEpochResponse(
        throttle_time_ms=0,
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic, partitions=[_partition(ctx, t.topic, p) for p in t.partitions]
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def offset_for_leader_epoch_error(request: Struct, code: ErrorCode, message: str | None) -> Struct:
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
