"""DeleteRecords: move a partition's log start offset forward (offset -1: to the high watermark);
the partition checks and applies it. Segments wholly below the new start are removed."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from protocol.schema import Struct


def _partition(ctx: RequestContext, topic: str, p: Struct) -> DeleteRecordsPartitionResult:
    result = DeleteRecordsPartitionResult(
        partition_index=p.partition_index, low_watermark=-1, error_code=ErrorCode.NONE
    )
    if not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, topic):
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    try:
        part = ctx.services.replica_manager.partition_or_raise(topic, p.partition_index)
        result.low_watermark = part.delete_records_on_leader(p.offset)
    except KafkaApiError as e:
        result.error_code = e.error_code
    return result


@handler(ApiKey.DELETE_RECORDS, "0-2", acl=(AclOperation.DELETE, ResourceType.TOPIC))
def handle_delete_records(
    ctx: RequestContext, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
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
def delete_records_error(
    request: DeleteRecordsRequest, code: ErrorCode, message: str | None
) -> DeleteRecordsResponse:
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
