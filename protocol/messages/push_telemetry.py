"""PushTelemetry (key 72, KIP-714): a client pushes its metrics, as an OpenTelemetry
``MetricsData`` protobuf (:mod:`protocol.otlp`), possibly compressed with one of the codecs the
subscription accepted. ``terminating`` is the client's last push. v0 only, flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, BYTES, INT8, INT16, INT32, UUID, f, message

PushTelemetryRequest = message(
    "PushTelemetryRequest",
    api_key=ApiKey.PUSH_TELEMETRY,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("client_instance_id", UUID),
        f("subscription_id", INT32),
        f("terminating", BOOL),
        f("compression_type", INT8),
        f("metrics", BYTES),
    ],
)

PushTelemetryResponse = message(
    "PushTelemetryResponse",
    api_key=ApiKey.PUSH_TELEMETRY,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
    ],
)
