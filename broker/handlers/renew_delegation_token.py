"""RenewDelegationToken (KIP-48), as Kafka's KafkaApis and its KRaft controller answer it:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (PLAINTEXT, one-way TLS, a token-authenticated session:
expiry -1), DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND (no token has the HMAC),
DELEGATION_TOKEN_EXPIRED, DELEGATION_TOKEN_OWNER_MISMATCH (only the owner and the renewers may
renew); then the token expires ``renew_period_ms`` from now (at most, and by default,
``delegation.token.expiry.time.ms``), never past its maximum timestamp."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._tokens import ERROR_TIMESTAMP, change_expiry
from broker.registry import error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.renew_delegation_token import (
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)


@handler(ApiKey.RENEW_DELEGATION_TOKEN, "0-2", no_acl=True, blocking=True)
def handle_renew_delegation_token(
    ctx: RequestContext, request: RenewDelegationTokenRequest
) -> RenewDelegationTokenResponse:
    principal, mac, period = ctx.session.principal, bytes(request.hmac), request.renew_period_ms
    return change_expiry(
        ctx,
        RenewDelegationTokenResponse,
        lambda tokens: tokens.renew(principal, mac, period),
        "renew",
    )


@error_response(ApiKey.RENEW_DELEGATION_TOKEN)
def renew_delegation_token_error(
    request: RenewDelegationTokenRequest, code: ErrorCode, message: str | None
) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=ERROR_TIMESTAMP)
