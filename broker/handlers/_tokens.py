"""What the four delegation token APIs share (KIP-48): whether this connection may use them,
as Kafka's ``KafkaApis.allowTokenRequests`` decides, and the token manager."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from broker.dispatch import RequestContext
from broker.net.session import ANONYMOUS
from broker.security.delegation_tokens import DelegationTokens
from coordination.metadata.security import SecurityStoreError
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

R = TypeVar("R")

#: Kafka's ``DelegationTokenManager.ErrorTimestamp``: the timestamps of a refused request
ERROR_TIMESTAMP = -1


def token_requests_allowed(ctx: RequestContext) -> bool:
    """Not on a PLAINTEXT listener, not over one-way TLS (no client certificate), not from a
    session that authenticated with a delegation token."""
    session = ctx.session
    protocol = session.security_protocol
    if session.token_authenticated or protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and session.principal == ANONYMOUS)


def token_manager(ctx: RequestContext) -> DelegationTokens | None:
    """The broker's delegation tokens, None when they are disabled (no
    ``delegation.token.secret.key``)."""
    security = ctx.services.security
    tokens = security.tokens if security is not None else None
    return tokens if tokens is not None and tokens.enabled else None


def change_expiry(
    ctx: RequestContext,
    response: Callable[..., R],
    change: Callable[[DelegationTokens], tuple[ErrorCode, int]],
    what: str,
) -> R:
    """RenewDelegationToken's and ExpireDelegationToken's answer, as Kafka's KafkaApis and
    controller give it: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1), then
    DELEGATION_TOKEN_AUTH_DISABLED (expiry 0, the controller's default), then what ``change``
    decides; a store that cannot be written answers UNKNOWN_SERVER_ERROR (logged)."""
    if not token_requests_allowed(ctx):
        return response(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            expiry_timestamp_ms=ERROR_TIMESTAMP,
        )
    tokens = token_manager(ctx)
    if tokens is None:
        return response(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, expiry_timestamp_ms=0)
    try:
        code, expiry = change(tokens)
    except SecurityStoreError as e:
        log.warning("could not %s a delegation token: %s", what, e)
        code, expiry = ErrorCode.UNKNOWN_SERVER_ERROR, ERROR_TIMESTAMP
    return response(error_code=code, expiry_timestamp_ms=expiry)
