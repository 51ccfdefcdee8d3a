"""ExpireDelegationToken (key 40): brings a token's expiry forward, or (a negative period)
removes it at once (KIP-48). v2 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT32, INT64, f, message

ExpireDelegationTokenRequest = message(
    "ExpireDelegationTokenRequest",
    api_key=ApiKey.EXPIRE_DELEGATION_TOKEN,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("hmac", BYTES),
        f("expiry_time_period_ms", INT64),
    ],
)

ExpireDelegationTokenResponse = message(
    "ExpireDelegationTokenResponse",
    api_key=ApiKey.EXPIRE_DELEGATION_TOKEN,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("error_code", INT16),
        f("expiry_timestamp_ms", INT64),
        f("throttle_time_ms", INT32),
    ],
)
