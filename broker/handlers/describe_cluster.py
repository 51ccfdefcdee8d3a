"""DescribeCluster: the cluster id, the controller and the live brokers (admin clients).

v2 (KIP-1073) may ask for fenced brokers too and marks each broker ``is_fenced``. A broker of
Odradek is in the cluster while it is registered, and a registered broker serves: none is ever
fenced, so the list is the same either way and ``is_fenced`` is false."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers.metadata import cluster_operations
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_cluster import (
    ENDPOINT_TYPE_BROKER,
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)


@handler(ApiKey.DESCRIBE_CLUSTER, "0-2", acl=(AclOperation.DESCRIBE, ResourceType.CLUSTER))
def handle_describe_cluster(
    ctx: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    if request.endpoint_type != ENDPOINT_TYPE_BROKER:
        # a broker's listener serves broker endpoints only; controllers answer on their own
        # listener (KIP-919), so asking a broker for them is a mismatch, as Kafka answers
        return DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="This listener serves broker endpoints, not controller endpoints.",
            endpoint_type=ENDPOINT_TYPE_BROKER,
        )
    view = ctx.services.metadata.view
    brokers = []
    for b in sorted(view.brokers.values(), key=lambda b: b.broker_id):
        if not any(ep.listener == ctx.listener for ep in b.endpoints):
            continue
        ep = b.endpoint(ctx.listener)
        brokers.append(
            DescribeClusterBroker(
                broker_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack, is_fenced=False
            )
        )
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        endpoint_type=ENDPOINT_TYPE_BROKER,
        cluster_id=view.cluster_id,
        controller_id=view.controller_id,
        brokers=brokers,
        cluster_authorized_operations=cluster_operations(
            ctx, bool(request.include_cluster_authorized_operations)
        ),
    )


@error_response(ApiKey.DESCRIBE_CLUSTER)
def describe_cluster_error(
    request: DescribeClusterRequest, code: ErrorCode, message: str | None
) -> DescribeClusterResponse:
    return DescribeClusterResponse(error_code=code, error_message=message)
