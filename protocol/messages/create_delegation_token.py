"""CreateDelegationToken (key 38): a delegation token for the requester or, from v3, for another
owner (KIP-48, KIP-373). v2 is flexible; v3 names the owner and answers the token's requester."""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT32, INT64, STRING, array, f, message, struct

CreatableRenewers = struct(
    "CreatableRenewers",
    [
        f("principal_type", STRING),
        f("principal_name", STRING),
    ],
)

CreateDelegationTokenRequest = message(
    "CreateDelegationTokenRequest",
    api_key=ApiKey.CREATE_DELEGATION_TOKEN,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("owner_principal_type", STRING, "3+", null="3+"),
        f("owner_principal_name", STRING, "3+", null="3+"),
        f("renewers", array(CreatableRenewers)),
        f("max_lifetime_ms", INT64),
    ],
)

CreateDelegationTokenResponse = message(
    "CreateDelegationTokenResponse",
    api_key=ApiKey.CREATE_DELEGATION_TOKEN,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("error_code", INT16),
        f("principal_type", STRING),
        f("principal_name", STRING),
        f("token_requester_principal_type", STRING, "3+"),
        f("token_requester_principal_name", STRING, "3+"),
        f("issue_timestamp_ms", INT64),
        f("expiry_timestamp_ms", INT64),
        f("max_timestamp_ms", INT64),
        f("token_id", STRING),
        f("hmac", BYTES),
        f("throttle_time_ms", INT32),
    ],
)
