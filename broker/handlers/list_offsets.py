"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), latest tiered
(-5) and earliest pending upload (-6: both -1 without tiered storage), and the first offset whose
timestamp is >= T. A sentinel is taken from the version that introduced it on (v7 -3, v8 -4, v9
-5, v11 -6); before it, or an unknown negative timestamp, is UNSUPPORTED_VERSION for that
partition, as Kafka answers. v0 answers with the old-style offsets array. Each topic needs
DESCRIBE (TOPIC_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from broker.replication.partition import FetchIsolation
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_offsets import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.schema import Struct

READ_COMMITTED = 1

#: the first version that takes each timestamp sentinel
SENTINEL_SINCE = {
    LATEST_TIMESTAMP: 0,
    EARLIEST_TIMESTAMP: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}


def _partition(
    ctx: RequestContext, topic: str, p: Struct, isolation: FetchIsolation
) -> ListOffsetsPartitionResponse:
    version = ctx.api_version
    result = ListOffsetsPartitionResponse(
        partition_index=p.partition_index, error_code=ErrorCode.NONE
    )
    if p.timestamp < 0 and SENTINEL_SINCE.get(p.timestamp, version + 1) > version:
        result.error_code = ErrorCode.UNSUPPORTED_VERSION
        return result
    try:
        part = ctx.services.replica_manager.partition_or_raise(topic, p.partition_index)
        found = part.fetch_offset_for_timestamp(
            p.timestamp, isolation=isolation, current_leader_epoch=p.current_leader_epoch
        )
    except KafkaApiError as e:
        result.error_code = e.error_code
        return result
    except ValueError:
        result.error_code = ErrorCode.INVALID_REQUEST
        return result
    if version == 0:
        if found is not None:
            result.old_style_offsets = [found.offset]
        elif p.timestamp not in (LATEST_TIMESTAMP, EARLIEST_TIMESTAMP):
            result.old_style_offsets = [part.high_watermark]
        return result
    if found is None:
        result.offset, result.timestamp = -1, -1
    else:
        result.offset, result.timestamp = found.offset, found.timestamp
        result.leader_epoch = found.leader_epoch
    return result


@handler(ApiKey.LIST_OFFSETS, "0-11", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    isolation = (
        FetchIsolation.TXN_COMMITTED
        if ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
        else FetchIsolation.HIGH_WATERMARK
    )
    return ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=[_partition(ctx, t.name, p, isolation) for p in t.partitions]
                if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)
                else [
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.LIST_OFFSETS)
def list_offsets_error(
    request: ListOffsetsRequest, code: ErrorCode, message: str | None
) -> ListOffsetsResponse:
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
