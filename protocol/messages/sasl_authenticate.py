"""SaslAuthenticate (key 36): one round of SASL tokens, after a v1 SaslHandshake (KIP-152).

v1 returns the session lifetime (KIP-368: the client must re-authenticate before it ends; 0 means
no limit), v2 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT64, STRING, f, message

SaslAuthenticateRequest = message(
    "SaslAuthenticateRequest",
    api_key=ApiKey.SASL_AUTHENTICATE,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("auth_bytes", BYTES),
    ],
)

SaslAuthenticateResponse = message(
    "SaslAuthenticateResponse",
    api_key=ApiKey.SASL_AUTHENTICATE,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("auth_bytes", BYTES),
        f("session_lifetime_ms", INT64, "1+"),
    ],
)
