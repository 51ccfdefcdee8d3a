"""SaslAuthenticate: one round of SASL tokens after a v1 SaslHandshake (KIP-152).

A failed exchange is answered SASL_AUTHENTICATION_FAILED with a message that says the
authentication failed and with which mechanism (never whether the user exists), then the
connection closes. On success, v1+ tells the client the session lifetime
(``connections.max.reauth.ms``, KIP-368; 0: unlimited). Without a handshake first, a SASL
listener's connection closes unanswered (the dispatcher, as Kafka's SaslServerAuthenticator);
an authenticated connection, or one that needs no authentication, is answered
ILLEGAL_SASL_STATE (Kafka's KafkaApis).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.net.session import SaslState
from broker.registry import error_response, handler
from broker.security.sasl import SaslFailure, complete_authentication, fail_authentication
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)


@handler(ApiKey.SASL_AUTHENTICATE, "0-2", before_authentication=True)
def handle_sasl_authenticate(
    ctx: RequestContext, request: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    session = ctx.session
    security = ctx.services.security
    auth = session.authenticator
    if security is None or auth is None or auth.state is not SaslState.AUTHENTICATE:
        message = "SaslAuthenticate before a successful SaslHandshake"
        if security is not None and ctx.conn is not None and not session.authenticated:
            fail_authentication(ctx.conn, auth, security.audit, message)
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message, auth_bytes=b""
        )
    assert ctx.conn is not None
    if ctx.api_version > 0:
        auth.client_supports_reauth = True
    try:
        token = auth.authenticate(bytes(request.auth_bytes or b""))
    except SaslFailure as e:
        fail_authentication(ctx.conn, auth, security.audit, str(e))
        return SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            error_message=e.client_message,
            auth_bytes=b"",
        )
    lifetime_ms = 0
    if auth.complete:
        lifetime_ms = complete_authentication(ctx.conn, auth, security.audit)
    return SaslAuthenticateResponse(
        error_code=ErrorCode.NONE, auth_bytes=token, session_lifetime_ms=lifetime_ms
    )


@error_response(ApiKey.SASL_AUTHENTICATE)
def sasl_authenticate_error(
    request: SaslAuthenticateRequest, code: ErrorCode, message: str | None
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")
