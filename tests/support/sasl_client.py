"""A raw connection that has logged in on a SASL listener, for tests that speak the protocol
directly (``tests.support.differential.Connection``): PLAIN, or SCRAM with a user's password or
a delegation token's id and base64 HMAC (the ``tokenauth`` extension, KIP-48)."""

from __future__ import annotations

from protocol.error_codes import ErrorCode
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.scram import ScramClient
from tests.support.differential import CLOSED, Connection


def sasl_login(
    address: str, mechanism: str, user: str, password: str, *, token: bool = False
) -> tuple[Connection, int]:
    """The connection and the login's error code (SASL_AUTHENTICATION_FAILED when the broker
    closed the connection)."""
    conn = Connection(address)
    failed = ErrorCode.SASL_AUTHENTICATION_FAILED
    handshake = conn.call(SaslHandshakeRequest(mechanism=mechanism), 1)
    if handshake is CLOSED or handshake.error_code:
        return conn, failed if handshake is CLOSED else handshake.error_code
    if mechanism == "PLAIN":
        answer = conn.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2)
        return conn, failed if answer is CLOSED else answer.error_code
    client = ScramClient(
        mechanism, user, password, extensions={"tokenauth": "true"} if token else None
    )
    first = conn.call(SaslAuthenticateRequest(auth_bytes=client.first()), 2)
    if first is CLOSED or first.error_code:
        return conn, failed
    final = conn.call(SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)), 2)
    return conn, failed if final is CLOSED else final.error_code


def logs_in(address: str, mechanism: str, user: str, password: str, *, token: bool = False) -> bool:
    conn, code = sasl_login(address, mechanism, user, password, token=token)
    conn.close()
    return code == ErrorCode.NONE
