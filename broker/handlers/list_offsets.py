"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), and the first
offset whose timestamp is >= T. v0 answers with the old-style offsets array."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.schema import Struct
from storage.errors import StorageError

READ_COMMITTED = 1


def _partition(ctx: RequestContext, topic: str, p: Struct, isolation: int) -> Struct:
    version = ctx.api_version
    result = ListOffsetsPartitionResponse(
        partition_index=p.partition_index, error_code=ErrorCode.NONE
    )
    part, code = ctx.broker.replica_manager.leader_partition(topic, p.partition_index)
    if part is None:
        result.error_code = code
        return result
    epoch = p.current_leader_epoch
    if epoch >= 0 and epoch != part.leader_epoch:
        result.error_code = (
            ErrorCode.FENCED_LEADER_EPOCH
            if epoch < part.leader_epoch
            else ErrorCode.UNKNOWN_LEADER_EPOCH
        )
        return result
    plog = part.log
    # Consumers never see past the high watermark (nor past the last stable offset when
    # read_committed; no transactions yet, so they are equal).
    upper = plog.high_watermark
    try:
        found = plog.fetch_offset_by_timestamp(p.timestamp, max_offset=upper)
    except (StorageError, ValueError) as e:
        result.error_code = ErrorCode.of(getattr(e, "error_code", ErrorCode.INVALID_REQUEST))
        return result
    if version == 0:
        if found is not None:
            result.old_style_offsets = [found.offset]
        elif p.timestamp not in (LATEST_TIMESTAMP, EARLIEST_TIMESTAMP):
            result.old_style_offsets = [upper]
        return result
    if found is None:
        result.offset, result.timestamp = -1, -1
    else:
        result.offset, result.timestamp = found.offset, found.timestamp
        result.leader_epoch = found.leader_epoch
    return result


@handler(ApiKey.LIST_OFFSETS, "0-10")
def handle_list_offsets(ctx: RequestContext, request: Struct) -> Struct:
    isolation = request.isolation_level
    return ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=[_partition(ctx, t.name, p, isolation) for p in t.partitions],
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.LIST_OFFSETS)
def list_offsets_error(request: Struct, code: ErrorCode, message: str | None) -> Struct:
    return ListOffsetsResponse(
        topics=[
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code)
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
