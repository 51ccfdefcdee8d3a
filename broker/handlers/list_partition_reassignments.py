"""ListPartitionReassignments (KIP-455): the ongoing reassignments, each with its full replica
set and the replicas being added and removed
(:meth:`~coordination.metadata.store.MetadataStore.list_partition_reassignments`).
NOT_CONTROLLER (top level) on a broker that is not the controller."""

from __future__ import annotations

import asyncio

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)


@handler(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, "0", acl=(AclOperation.DESCRIBE, ResourceType.CLUSTER)
)
async def handle_list_partition_reassignments(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    wanted = None
    if request.topics is not None:
        wanted = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    try:
        ongoing = await asyncio.to_thread(
            ctx.services.metadata.list_partition_reassignments, wanted
        )
    except KafkaApiError as e:
        return ListPartitionReassignmentsResponse(
            throttle_time_ms=0, error_code=e.error_code, error_message=str(e), topics=[]
        )
    topics: dict[str, list[OngoingPartitionReassignment]] = {}
    for (topic, p), a in sorted(ongoing.items()):
        topics.setdefault(topic, []).append(
            OngoingPartitionReassignment(
                partition_index=p,
                replicas=list(a.replicas),
                adding_replicas=list(a.adding),
                removing_replicas=list(a.removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[OngoingTopicReassignment(name=t, partitions=ps) for t, ps in topics.items()],
    )


@error_response(ApiKey.LIST_PARTITION_REASSIGNMENTS)
def list_partition_reassignments_error(
    request: ListPartitionReassignmentsRequest, code: ErrorCode, message: str | None
) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=code, error_message=message, topics=[]
    )
