"""WriteTxnMarkers: a transaction coordinator on another broker asks this partition leader to
end transactions with commit or abort control batches (broker to broker; CLUSTER_ACTION on the
cluster). Each marker is appended like Kafka's coordinator-origin appends: INVALID_PRODUCER_EPOCH
for an older producer epoch, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch,
NOT_LEADER_OR_FOLLOWER where this broker does not lead. A marker on a ``__consumer_offsets``
partition completes the producer's transactional offset commits there."""

from __future__ import annotations

from broker.coordinators.markers import write_markers_locally
from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)


@handler(ApiKey.WRITE_TXN_MARKERS, "0-2", acl=(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER))
def handle_write_txn_markers(
    ctx: RequestContext, request: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    services = ctx.services
    now = ctx.now_ms()
    results = []
    for marker in request.markers:
        tps = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        errors = write_markers_locally(
            services.replica_manager,
            services.groups.coordinator,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            committed=marker.transaction_result,
            coordinator_epoch=marker.coordinator_epoch,
            partitions=tps,
            now_ms=now,
        )
        results.append(
            WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(
                                partition_index=p, error_code=errors[(t.name, p)]
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in marker.topics
                ],
            )
        )
    return WriteTxnMarkersResponse(markers=results)


@error_response(ApiKey.WRITE_TXN_MARKERS)
def write_txn_markers_error(
    request: WriteTxnMarkersRequest, code: ErrorCode, message: str | None
) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(
        markers=[
            WritableTxnMarkerResult(
                producer_id=m.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=p, error_code=code)
                            for p in t.partition_indexes
                        ],
                    )
                    for t in m.topics
                ],
            )
            for m in request.markers
        ]
    )
