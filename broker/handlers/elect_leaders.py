"""ElectLeaders (KIP-183, KIP-460): the controller elects preferred (type 0) or, for partitions
without a live leader, unclean (type 1) leaders
(:meth:`~coordination.metadata.store.MetadataStore.elect_leaders`), and the answer comes once
this broker's metadata shows them. As in Kafka's ZooKeeper mode, a broker that is not the
controller answers NOT_CONTROLLER for each partition; with every partition asked for (null
``topic_partitions``), partitions whose election was not needed are left out of the answer."""

from __future__ import annotations

import asyncio

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.metadata.election import ElectionType
from coordination.metadata.store import ElectionResult
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)


@handler(ApiKey.ELECT_LEADERS, "0-2", acl=(AclOperation.ALTER, ResourceType.CLUSTER))
async def handle_elect_leaders(
    ctx: RequestContext, request: ElectLeadersRequest
) -> ElectLeadersResponse:
    try:
        election_type = ElectionType(request.election_type)
    except ValueError:
        return _every_partition_failed(
            request, ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}"
        )
    wanted = None
    if request.topic_partitions is not None:
        wanted = list(
            dict.fromkeys((t.topic, p) for t in request.topic_partitions for p in t.partitions)
        )
    results = await asyncio.to_thread(ctx.services.metadata.elect_leaders, election_type, wanted)
    if wanted is None:
        results = {tp: r for tp, r in results.items() if r.error != ErrorCode.ELECTION_NOT_NEEDED}
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        replica_election_results=_by_topic(results),
    )


def _message(r: ElectionResult) -> str | None:
    """The result's message, else its error's own, as Kafka's ApiError answers (none without
    an error)."""
    if r.message is not None or r.error == ErrorCode.NONE:
        return r.message
    return r.error.message


def _by_topic(results: dict[tuple[str, int], ElectionResult]) -> list[ReplicaElectionResult]:
    topics: dict[str, list[PartitionResult]] = {}
    for (topic, p), r in results.items():
        topics.setdefault(topic, []).append(
            PartitionResult(partition_id=p, error_code=r.error, error_message=_message(r))
        )
    return [ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in topics.items()]


@error_response(ApiKey.ELECT_LEADERS)
def elect_leaders_error(
    request: ElectLeadersRequest, code: ErrorCode, message: str | None
) -> ElectLeadersResponse:
    return _every_partition_failed(request, code, message)


def _every_partition_failed(
    request: ElectLeadersRequest, code: ErrorCode, message: str | None
) -> ElectLeadersResponse:
    """Kafka's error answer: the error at the top and for every partition asked for."""
    partitions = request.topic_partitions or []
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=code,
        replica_election_results=[
            ReplicaElectionResult(
                topic=t.topic,
                partition_result=[
                    PartitionResult(partition_id=p, error_code=code, error_message=message)
                    for p in t.partitions
                ],
            )
            for t in partitions
        ],
    )
