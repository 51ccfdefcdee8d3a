"""RenewDelegationToken (key 39): moves a token's expiry (KIP-48). v2 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT32, INT64, f, message

RenewDelegationTokenRequest = message(
    "RenewDelegationTokenRequest",
    api_key=ApiKey.RENEW_DELEGATION_TOKEN,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("hmac", BYTES),
        f("renew_period_ms", INT64),
    ],
)

RenewDelegationTokenResponse = message(
    "RenewDelegationTokenResponse",
    api_key=ApiKey.RENEW_DELEGATION_TOKEN,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("error_code", INT16),
        f("expiry_timestamp_ms", INT64),
        f("throttle_time_ms", INT32),
    ],
)
