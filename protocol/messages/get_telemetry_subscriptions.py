"""GetTelemetrySubscriptions (key 71, KIP-714): a client asks which of its metrics the broker
wants and how often.

The first request carries the zero client instance id and the broker assigns one; the answer
names the subscription (an id, the metric name prefixes, the push interval, the compression
types and largest payload the broker accepts, delta temporality). v0 only, flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, array, f, message

GetTelemetrySubscriptionsRequest = message(
    "GetTelemetrySubscriptionsRequest",
    api_key=ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[
        f("client_instance_id", UUID),
    ],
)

GetTelemetrySubscriptionsResponse = message(
    "GetTelemetrySubscriptionsResponse",
    api_key=ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("client_instance_id", UUID),
        f("subscription_id", INT32),
        f("accepted_compression_types", array(INT8)),
        f("push_interval_ms", INT32),
        f("telemetry_max_bytes", INT32),
        f("delta_temporality", BOOL),
        f("requested_metrics", array(STRING)),
    ],
)
