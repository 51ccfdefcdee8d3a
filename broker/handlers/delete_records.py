"""DeleteRecords: move a partition's log start offset forward (offset -1: to the high watermark).
Segments wholly below the new start are removed by the next retention pass."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from protocol.schema import Struct
from storage.errors import StorageError

HIGH_WATERMARK = -1


def _partition(ctx: RequestContext, topic: str, p: Struct) -> Struct:
    result = DeleteRecordsPartitionResult(
        partition_index=p.partition_index, low_watermark=-1, error_code=ErrorCode.NONE
    )
    part, code = ctx.broker.replica_manager.leader_partition(topic, p.partition_index)
    if part is None:
        result.error_code = code
        return result
    plog = part.log
    offset = plog.high_watermark if p.offset == HIGH_WATERMARK else p.offset
    if offset < 0 or offset > plog.high_watermark:
        result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
    try:
        result.low_watermark = plog.delete_records_before(offset)
    except StorageError as e:
        result.error_code = ErrorCode.of(e.error_code)
    return result


@handler(ApiKey.DELETE_RECORDS, "0-2")
def handle_delete_records(ctx: RequestContext, request: Struct) -> Struct:
    return DeleteRecordsResponse(
        throttle_time_ms=0,
        topics=[
            DeleteRecordsTopicResult(
                name=t.name, partitions=[_partition(ctx, t.name, p) for p in t.partitions]
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.DELETE_RECORDS)
def delete_records_error(request: Struct, code: ErrorCode, message: str | None) -> Struct:
    return DeleteRecordsResponse(
        topics=[
            DeleteRecordsTopicResult(
                name=t.name,
                partitions=[
                    DeleteRecordsPartitionResult(
                        partition_index=p.partition_index, low_watermark=-1, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
