"""OffsetDelete (KIP-496): delete some committed offsets of a group; not those of topics a live
consumer group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC)."""

from __future__ import annotations

import asyncio

from broker.coordinators.scheduler import future_callback
from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)


@handler(ApiKey.OFFSET_DELETE, "0", acl=(AclOperation.DELETE, ResourceType.GROUP))
async def handle_offset_delete(
    ctx: RequestContext, request: OffsetDeleteRequest
) -> OffsetDeleteResponse:
    ctx.require(AclOperation.DELETE, ResourceType.GROUP, request.group_id)
    view = ctx.services.metadata.view
    known: list[tuple[str, int]] = []
    unknown: set[tuple[str, int]] = set()
    denied: set[tuple[str, int]] = set()
    for t in request.topics:
        may_read = ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not may_read:
                denied.add(tp)
            elif view.partition(*tp) is not None:
                known.append(tp)
            else:
                unknown.add(tp)
    future, callback = future_callback(asyncio.get_running_loop(), tuple)
    coordinator(ctx).delete_offsets(
        group_id=request.group_id,
        partitions=known,
        callback=lambda code, results: callback((code, results)),
    )
    code, results = await future
    if code != ErrorCode.NONE:
        return OffsetDeleteResponse(error_code=code, throttle_time_ms=0, topics=[])
    return OffsetDeleteResponse(
        error_code=ErrorCode.NONE,
        throttle_time_ms=0,
        topics=[
            OffsetDeleteResponseTopic(
                name=t.name,
                partitions=[
                    OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
                        if (t.name, p.partition_index) in denied
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        if (t.name, p.partition_index) in unknown
                        else results.get((t.name, p.partition_index), ErrorCode.NONE),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.OFFSET_DELETE)
def offset_delete_error(
    request: OffsetDeleteRequest, code: ErrorCode, message: str | None
) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code, topics=[])
