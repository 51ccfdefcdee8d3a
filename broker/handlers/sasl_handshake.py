"""SaslHandshake: the client names a SASL mechanism (KIP-43); v1 means the tokens follow in
SaslAuthenticate requests (KIP-152), v0 that they follow as raw frames.

On a listener without SASL, or on a session already authenticated whose listener does not
allow re-authentication, the answer is ILLEGAL_SASL_STATE (Kafka's KafkaApis). A mechanism the
listener does not enable is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, then the
connection closes. On an authenticated session with ``connections.max.reauth.ms``, a handshake
begins re-authentication (KIP-368) with the same mechanism, at most once a second (sooner, the
answer is ILLEGAL_SASL_STATE, as Kafka's); another mechanism is answered NONE, then the
connection closes.
"""

from __future__ import annotations

import time

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from broker.security.sasl import SaslServerAuthenticator, fail_authentication
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

#: Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS
_REAUTH_INTERVAL_NS = 1_000_000_000


@handler(ApiKey.SASL_HANDSHAKE, "0-1", before_authentication=True)
def handle_sasl_handshake(
    ctx: RequestContext, request: SaslHandshakeRequest
) -> SaslHandshakeResponse:
    session = ctx.session
    security = ctx.services.security
    sasl = security.sasl.get(session.listener) if security is not None else None
    if sasl is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    auth = session.authenticator
    if session.authenticated:
        now = time.monotonic_ns()
        if (
            not session.reauth_deadline_ns
            or session.sasl_mechanism is None
            or (session.reauth_started_ns and now - session.reauth_started_ns < _REAUTH_INTERVAL_NS)
        ):
            # no re-authentication here, or one less than a second after the last began:
            # Kafka's KafkaApis.handleSaslHandshakeRequest answers, with no mechanisms
            return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
        session.reauth_started_ns = now
        auth = SaslServerAuthenticator(sasl, reauth_of=(session.sasl_mechanism, session.principal))
    elif auth is None:
        auth = SaslServerAuthenticator(sasl)
    session.authenticator = auth
    mechanism = request.mechanism or ""
    if auth.handshake(ctx.api_version, mechanism):
        return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=sasl.enabled)
    assert security is not None and ctx.conn is not None
    if auth.reauthenticating and mechanism in sasl.enabled:
        # Kafka's SaslServerAuthenticator accepts the handshake, then starts no exchange: the
        # connection fails
        reason = (
            f"SASL mechanism '{mechanism}' requested by client is not supported for "
            f"re-authentication of mechanism '{session.sasl_mechanism}'"
        )
        fail_authentication(ctx.conn, auth, security.audit, reason)
        return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=sasl.enabled)
    reason = f"unsupported SASL mechanism {mechanism!r} (enabled: {', '.join(sasl.enabled)})"
    fail_authentication(ctx.conn, auth, security.audit, reason)
    return SaslHandshakeResponse(
        error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=sasl.enabled
    )


@error_response(ApiKey.SASL_HANDSHAKE)
def sasl_handshake_error(
    request: SaslHandshakeRequest, code: ErrorCode, message: str | None
) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=code, mechanisms=[])
