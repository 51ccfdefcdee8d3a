"""GetTelemetrySubscriptions (KIP-714): which metrics a client should push and how often
(:mod:`broker.telemetry`). No ACL: Kafka authorizes nothing for it. The client is matched on its
instance id, client id, the software name and version it announced in ApiVersions, and its
address and port."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from broker.telemetry import ACCEPTED_COMPRESSION
from coordination.errors import KafkaApiError
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from protocol.primitives import ZERO_UUID


def client_attributes(ctx: RequestContext) -> dict[str, str | None]:
    """What subscriptions match on (Kafka's ClientMetricsInstanceMetadata), but for the
    instance id."""
    session = ctx.session
    return {
        "client_id": ctx.client_id,
        "client_software_name": session.client_software_name or None,
        "client_software_version": session.client_software_version or None,
        "client_source_address": session.peer[0],
        "client_source_port": str(session.peer[1]),
    }


@handler(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, "0", no_acl=True)
def handle_get_telemetry_subscriptions(
    ctx: RequestContext, request: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    telemetry = ctx.services.telemetry
    if telemetry is None:
        raise KafkaApiError("client telemetry is not enabled", ErrorCode.UNSUPPORTED_VERSION)
    result = telemetry.get_subscriptions(request.client_instance_id, client_attributes(ctx))
    if result.error != ErrorCode.NONE:
        return GetTelemetrySubscriptionsResponse(
            throttle_time_ms=0,
            error_code=result.error,
            client_instance_id=ZERO_UUID,
            accepted_compression_types=[],
            requested_metrics=[],
        )
    return GetTelemetrySubscriptionsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        client_instance_id=result.instance_id,
        subscription_id=result.subscription_id,
        accepted_compression_types=list(ACCEPTED_COMPRESSION),
        push_interval_ms=result.push_interval_ms,
        telemetry_max_bytes=telemetry.telemetry_max_bytes,
        delta_temporality=True,
        requested_metrics=list(result.metrics),
    )


@error_response(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
def get_telemetry_subscriptions_error(
    request: GetTelemetrySubscriptionsRequest, code: ErrorCode, message: str | None
) -> GetTelemetrySubscriptionsResponse:
    return GetTelemetrySubscriptionsResponse(
        error_code=code,
        client_instance_id=ZERO_UUID,
        accepted_compression_types=[],
        requested_metrics=[],
    )
