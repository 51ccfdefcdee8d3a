"""AlterPartitionReassignments (KIP-455): start, replace or cancel (null replicas) partition
reassignments (:meth:`~coordination.metadata.store.MetadataStore.
alter_partition_reassignments`). The answer comes once the controller has written them; the data
then moves by replication. NOT_CONTROLLER (top level) on a broker that is not the controller."""

from __future__ import annotations

import asyncio

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)


@handler(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, "0-1", acl=(AclOperation.ALTER, ResourceType.CLUSTER)
)
async def handle_alter_partition_reassignments(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    # as in Kafka, a partition named twice takes its last target
    wanted: dict[tuple[str, int], list[int] | None] = {}
    for t in request.topics:
        for rp in t.partitions:
            wanted[(t.name, rp.partition_index)] = (
                None if rp.replicas is None else list(rp.replicas)
            )
    try:
        results = await asyncio.to_thread(
            ctx.services.metadata.alter_partition_reassignments,
            wanted,
            # KIP-860: v1 may refuse a change of replication factor
            allow_replication_factor_change=ctx.api_version < 1
            or request.allow_replication_factor_change,
        )
    except KafkaApiError as e:
        return AlterPartitionReassignmentsResponse(
            throttle_time_ms=0,
            allow_replication_factor_change=request.allow_replication_factor_change,
            error_code=e.error_code,
            error_message=str(e),
            responses=[],
        )
    topics: dict[str, list[ReassignablePartitionResponse]] = {}
    for (topic, p), r in results.items():
        topics.setdefault(topic, []).append(
            ReassignablePartitionResponse(
                partition_index=p,
                error_code=r.error,
                # the error's own message when there is no other, as Kafka's ApiError answers
                error_message=r.message
                if r.message is not None or r.error == ErrorCode.NONE
                else r.error.message,
            )
        )
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=[ReassignableTopicResponse(name=t, partitions=ps) for t, ps in topics.items()],
    )


@error_response(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
def alter_partition_reassignments_error(
    request: AlterPartitionReassignmentsRequest, code: ErrorCode, message: str | None
) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=code,
        error_message=message,
        responses=[],
    )
