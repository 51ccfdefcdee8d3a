"""DescribeDelegationToken (key 41): the tokens of some owners (null: every token the requester
may see), with their HMACs (KIP-48). v2 is flexible; v3 answers each token's requester
(KIP-373)."""

from protocol.api_keys import ApiKey
from protocol.schema import BYTES, INT16, INT32, INT64, STRING, array, f, message, struct

DescribeDelegationTokenOwner = struct(
    "DescribeDelegationTokenOwner",
    [
        f("principal_type", STRING),
        f("principal_name", STRING),
    ],
)

DescribeDelegationTokenRequest = message(
    "DescribeDelegationTokenRequest",
    api_key=ApiKey.DESCRIBE_DELEGATION_TOKEN,
    kind="request",
    valid="0-3",
    flexible="2+",
    fields=[
        f("owners", array(DescribeDelegationTokenOwner), null="0+"),
    ],
)

DescribedDelegationTokenRenewer = struct(
    "DescribedDelegationTokenRenewer",
    [
        f("principal_type", STRING),
        f("principal_name", STRING),
    ],
)

DescribedDelegationToken = struct(
    "DescribedDelegationToken",
    [
        f("principal_type", STRING),
        f("principal_name", STRING),
        f("token_requester_principal_type", STRING, "3+"),
        f("token_requester_principal_name", STRING, "3+"),
        f("issue_timestamp", INT64),
        f("expiry_timestamp", INT64),
        f("max_timestamp", INT64),
        f("token_id", STRING),
        f("hmac", BYTES),
        f("renewers", array(DescribedDelegationTokenRenewer)),
    ],
)

DescribeDelegationTokenResponse = message(
    "DescribeDelegationTokenResponse",
    api_key=ApiKey.DESCRIBE_DELEGATION_TOKEN,
    kind="response",
    valid="0-3",
    flexible="2+",
    fields=[
        f("error_code", INT16),
        f("tokens", array(DescribedDelegationToken)),
        f("throttle_time_ms", INT32),
    ],
)
