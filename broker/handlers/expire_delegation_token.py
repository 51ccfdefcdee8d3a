"""ExpireDelegationToken (KIP-48), as Kafka's KafkaApis and its KRaft controller answer it:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (PLAINTEXT, one-way TLS, a token-authenticated session:
expiry -1), DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND,
DELEGATION_TOKEN_OWNER_MISMATCH (only the owner and the renewers); a negative
``expiry_time_period_ms`` removes the token at once (expiry: now); otherwise an expired token is
DELEGATION_TOKEN_EXPIRED, and a live one expires that period from now, never past its maximum
timestamp."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._tokens import ERROR_TIMESTAMP, change_expiry
from broker.registry import error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.expire_delegation_token import (
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
)


@handler(ApiKey.EXPIRE_DELEGATION_TOKEN, "0-2", no_acl=True, blocking=True)
def handle_expire_delegation_token(
    ctx: RequestContext, request: ExpireDelegationTokenRequest
) -> ExpireDelegationTokenResponse:
    principal, mac = ctx.session.principal, bytes(request.hmac)
    period = request.expiry_time_period_ms
    return change_expiry(
        ctx,
        ExpireDelegationTokenResponse,
        lambda tokens: tokens.expire(principal, mac, period),
        "expire",
    )


@error_response(ApiKey.EXPIRE_DELEGATION_TOKEN)
def expire_delegation_token_error(
    request: ExpireDelegationTokenRequest, code: ErrorCode, message: str | None
) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)
