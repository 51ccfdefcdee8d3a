"""ControlledShutdown (ZooKeeper mode, sent by brokers to the controller): moves the leadership
of the asking broker's partitions to other in-sync replicas and answers the partitions it still
leads (:meth:`~coordination.metadata.store.MetadataStore.controlled_shutdown`). A broker that is
not the controller answers NOT_CONTROLLER; a standalone broker has nothing to move."""

from __future__ import annotations

import asyncio

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)


@handler(ApiKey.CONTROLLED_SHUTDOWN, "0-3", acl=(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER))
async def handle_controlled_shutdown(
    ctx: RequestContext, request: ControlledShutdownRequest
) -> ControlledShutdownResponse:
    metadata = ctx.services.metadata
    try:
        # the controller's work runs on the metadata store's thread; this loop keeps serving
        remaining = await asyncio.to_thread(
            metadata.controlled_shutdown, request.broker_id, request.broker_epoch
        )
    except KafkaApiError as e:
        return ControlledShutdownResponse(error_code=e.error_code, remaining_partitions=[])
    return ControlledShutdownResponse(
        error_code=ErrorCode.NONE,
        remaining_partitions=[
            RemainingPartition(topic_name=t, partition_index=p) for t, p in remaining
        ],
    )


@error_response(ApiKey.CONTROLLED_SHUTDOWN)
def controlled_shutdown_error(
    request: ControlledShutdownRequest, code: ErrorCode, message: str | None
) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(error_code=code, remaining_partitions=[])
