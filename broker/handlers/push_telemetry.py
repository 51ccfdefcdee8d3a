"""PushTelemetry (KIP-714): a client's metrics, decoded and exposed on the metrics endpoint
(:mod:`broker.telemetry`). No ACL: Kafka authorizes nothing for it."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers.get_telemetry_subscriptions import client_attributes
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.push_telemetry import PushTelemetryRequest, PushTelemetryResponse


@handler(ApiKey.PUSH_TELEMETRY, "0", no_acl=True)
def handle_push_telemetry(
    ctx: RequestContext, request: PushTelemetryRequest
) -> PushTelemetryResponse:
    telemetry = ctx.services.telemetry
    if telemetry is None:
        raise KafkaApiError("client telemetry is not enabled", ErrorCode.UNSUPPORTED_VERSION)
    error = telemetry.push(
        request.client_instance_id,
        client_attributes(ctx),
        subscription_id=request.subscription_id,
        terminating=request.terminating,
        compression_type=request.compression_type,
        payload=bytes(request.metrics or b""),
    )
    return PushTelemetryResponse(throttle_time_ms=0, error_code=error)


@error_response(ApiKey.PUSH_TELEMETRY)
def push_telemetry_error(
    request: PushTelemetryRequest, code: ErrorCode, message: str | None
) -> PushTelemetryResponse:
    return PushTelemetryResponse(error_code=code)
