"""The SASL corpus: authentication on a SASL_PLAINTEXT listener, exchange by exchange, as a
client's SASL layer speaks it (KIP-43's SaslHandshake v1 then SaslAuthenticate, KIP-152).

Both brokers enable PLAIN (JAAS users), SCRAM-SHA-256 (a credential the test creates for
``carol`` before the corpus runs) and OAUTHBEARER (Kafka's default, unsecured validator; on the
REAUTH listener it requires a scope). The scenarios cover a mechanism the broker does not
enable, wrong and malformed PLAIN tokens, requests out of order (before the handshake, a second
handshake, SaslAuthenticate with no handshake), a whole SCRAM exchange with the right and a wrong
password and for a user with no credential, OAUTHBEARER tokens taken and refused (the JSON error,
the client's acknowledgement) and malformed client messages, and what an authenticated
connection may do next.
A refused authentication closes the connection in Kafka: the next exchange shows it (the
harness then opens a new one). SCRAM's server messages carry the server's random nonce and the
credential's salt: they are compared for their attribute names only.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.scram import ScramClient
from tests.reference.corpus import metadata
from tests.support.differential import Context, Exchange, Scenario

SASL_LISTENER = "SASL_PLAINTEXT"
#: a second SASL_PLAINTEXT listener whose sessions expire (KIP-368)
REAUTH_LISTENER = "REAUTH"
REAUTH_MS = 600_000
PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
#: the SCRAM-SHA-256 credential the test creates on both brokers
SCRAM_USER, SCRAM_PASSWORD = "carol", "carol-secret"
_PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{u}="{pw}"' for u, pw in PLAIN_USERS.items())
    + ";"
)
_SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
#: the unsecured validator, Kafka's default (the login options are for the broker's own login)
_OAUTH_LOGIN = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin"'
)
#: the scope the REAUTH listener's validator requires
REQUIRED_SCOPE = "kafka"
#: the brokers' settings for both SASL listeners (``listeners`` itself is each broker's)
SETTINGS = {
    "listener.security.protocol.map": (
        f"PLAINTEXT:PLAINTEXT,{SASL_LISTENER}:SASL_PLAINTEXT,{REAUTH_LISTENER}:SASL_PLAINTEXT"
    ),
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": _PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": _SCRAM_JAAS,
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": _OAUTH_LOGIN + ";",
    "listener.name.reauth.plain.sasl.jaas.config": _PLAIN_JAAS,
    "listener.name.reauth.scram-sha-256.sasl.jaas.config": _SCRAM_JAAS,
    "listener.name.reauth.oauthbearer.sasl.jaas.config": (
        _OAUTH_LOGIN + f' unsecuredValidatorRequiredScope="{REQUIRED_SCOPE}";'
    ),
    "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
}


def handshake(mechanism: str, *, version: int = 1, label: str = "") -> Exchange:
    return Exchange(
        SaslHandshakeRequest(mechanism=mechanism), version, label=label or f"handshake {mechanism}"
    )


def authenticate(token: bytes, *, version: int = 2, label: str = "") -> Exchange:
    return Exchange(SaslAuthenticateRequest(auth_bytes=token), version, label=label)


def plain(user: str, password: str) -> bytes:
    return b"\x00" + user.encode() + b"\x00" + password.encode()


# --- SCRAM-SHA-256, the client's side (RFC 5802) ------------------------------------------------


def scram_first(user: str, password: str, *, label: str = "client-first") -> Exchange:
    """The client-first message of a new exchange (its client kept for the final one)."""

    def build(ctx: Context) -> SaslAuthenticateRequest:
        client = ScramClient("SCRAM-SHA-256", user, password)
        ctx.values["scram"] = client
        return SaslAuthenticateRequest(auth_bytes=client.first())

    def capture(ctx: Context, response: Any) -> None:
        ctx.values["server-first"] = bytes(response.auth_bytes or b"")

    return Exchange(build, 2, capture, label=label, project=_attributes)


def scram_final(*, label: str = "client-final") -> Exchange:
    """The client-final message for the server-first message the previous exchange captured."""

    def build(ctx: Context) -> SaslAuthenticateRequest:
        client = ctx.values.get("scram")
        server_first = ctx.values.get("server-first", b"")
        if not isinstance(client, ScramClient) or not isinstance(server_first, bytes):
            return SaslAuthenticateRequest(auth_bytes=b"c=biws,r=,p=")
        return SaslAuthenticateRequest(auth_bytes=client.final(server_first))

    return Exchange(build, 2, label=label, project=_attributes)


def _attributes(answer: Any) -> Any:
    """A SCRAM server message reduced to its attribute names (r=, s=, i=, v=, e=...): its values
    are random or derived from a random salt. An error message is compared as it is."""
    token = answer.get("auth_bytes")
    if isinstance(token, bytes | bytearray) and token:
        text = bytes(token).decode(errors="replace")
        answer = {**answer, "auth_bytes": [part.split("=", 1)[0] for part in text.split(",")]}
    return answer


# --- OAUTHBEARER (KIP-255): unsecured JWS tokens, made when the exchange is sent -------------


def _b64(doc: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode().rstrip("=")


def oauth_token(
    *,
    sub: str | None = "alice",
    exp_in: int | None = 3600,
    iat_in: int | None = -5,
    scope: str | list[str] | None = None,
    header: dict[str, Any] | None = None,
    signature: str = "",
) -> Callable[[], str]:
    """An unsecured JWS (``alg`` none, as librdkafka's and Kafka's unsecured login modules
    write them), its times relative to when it is sent."""

    def make() -> str:
        now = int(time.time())
        claims: dict[str, Any] = {}
        if sub is not None:
            claims["sub"] = sub
        if iat_in is not None:
            claims["iat"] = now + iat_in
        if exp_in is not None:
            claims["exp"] = now + exp_in
        if scope is not None:
            claims["scope"] = scope
        return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}.{signature}"

    return make


def oauth(
    token: Callable[[], str], *, authzid: str = "", extensions: str = "", label: str = ""
) -> Exchange:
    """The OAUTHBEARER client initial response (RFC 7628) carrying ``token``."""

    def build(ctx: Context) -> SaslAuthenticateRequest:
        message = f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token()}\x01"
        return SaslAuthenticateRequest(auth_bytes=f"{message}{extensions}\x01".encode())

    return Exchange(build, 2, label=label or "client initial response", project=_lifetime)


def oauth_ack(label: str = "the client acknowledges the error") -> Exchange:
    return authenticate(b"\x01", label=label)


# --- scenarios ------------------------------------------------------------------------------------


def sasl_scenarios(prefix: str) -> list[Scenario]:
    """Each scenario starts on a new connection; ``then`` marks an exchange sent on a new one
    (after a refusal, which closes the connection: the exchange before it shows that)."""
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        exchanges[0].fresh = True
        out.append(Scenario(f"sasl/{name}", exchanges, listener=SASL_LISTENER))

    def then(exchange: Exchange) -> Exchange:
        exchange.fresh = True
        return exchange

    def api_versions(label: str = "api versions") -> Exchange:
        return Exchange(
            ApiVersionsRequest(client_software_name="odradek-diff", client_software_version="1.0"),
            3,
            label=label,
            project=lambda a: {k: v for k, v in a.items() if k == "error_code"},
        )

    def is_open() -> Exchange:
        return api_versions("is the connection open")

    unknown = [f"{prefix}-unknown"]
    add(
        "mechanisms",
        [
            handshake("GSSAPI", label="a mechanism not enabled"),
            is_open(),
            then(handshake("GSSAPI", version=0, label="v0, a mechanism not enabled")),
            is_open(),
            then(handshake("plain", label="a mechanism's name in lower case")),
            is_open(),
        ],
    )
    refusals = {
        "a wrong password": plain("alice", "wrong"),
        "an unknown user": plain("nobody", "secret"),
        "a token without NULs": b"alice-secret",
        "an empty token": b"",
        "an authorization id of another user": b"admin\x00alice\x00alice-secret",
    }
    steps = [api_versions()]
    for label, token in refusals.items():
        steps += [then(handshake("PLAIN")), authenticate(token, label=label), is_open()]
    add("plain-refusals", steps)
    for v in (0, 1, 2):
        add(
            f"plain-v{v}",
            [
                handshake("PLAIN"),
                authenticate(plain("alice", "alice-secret"), version=v),
                metadata(unknown, label="authenticated"),
                handshake("PLAIN", label="a handshake once authenticated"),
                authenticate(plain("alice", "alice-secret"), label="authenticated again"),
                is_open(),
            ],
        )
    add(
        "out-of-order",
        [
            metadata(unknown, label="before the handshake"),
            then(authenticate(plain("alice", "alice-secret"), label="with no handshake")),
            then(handshake("PLAIN")),
            handshake("PLAIN", label="a second handshake"),
            then(handshake("PLAIN")),
            metadata(unknown, label="between the handshake and the token"),
            then(api_versions("api versions first")),
            handshake("PLAIN"),
            api_versions("api versions between the handshake and the token"),
        ],
    )
    add(
        "scram",
        [
            handshake("SCRAM-SHA-256"),
            scram_first(SCRAM_USER, SCRAM_PASSWORD),
            scram_final(),
            metadata(unknown, label="authenticated"),
        ],
    )
    add(
        "scram-refusals",
        [
            handshake("SCRAM-SHA-256"),
            scram_first(SCRAM_USER, "wrong"),
            scram_final(label="a wrong password"),
            is_open(),
            then(handshake("SCRAM-SHA-256")),
            scram_first("nobody", "secret", label="a user with no credential"),
            is_open(),
            then(handshake("SCRAM-SHA-256")),
            authenticate(b"not a scram message", label="a malformed client-first"),
            is_open(),
        ],
    )

    add("oauthbearer", [handshake("OAUTHBEARER"), oauth(oauth_token()), metadata(unknown)])
    add(
        "oauthbearer-extensions-and-authzid",
        [
            handshake("OAUTHBEARER"),
            oauth(oauth_token(), authzid="alice", extensions="traceId=abc\x01logicalCluster=x\x01"),
            metadata(unknown, label="authenticated"),
            then(handshake("OAUTHBEARER")),
            oauth(oauth_token(), authzid="bob", label="an authorization id of another user"),
            is_open(),
        ],
    )
    refused_tokens = {
        "an expired token": oauth_token(exp_in=-60),
        "a token without exp": oauth_token(exp_in=None),
        "a token without sub": oauth_token(sub=None),
        "a token issued in the future": oauth_token(iat_in=600),
        "a signed token (HS256)": oauth_token(header={"alg": "HS256", "typ": "JWT"}),
        "an unsecured token with a signature": oauth_token(signature="c2lnbmF0dXJl"),
        "not a JWS": lambda: "not-a-jws",
    }
    steps = [api_versions()]
    for label, token in refused_tokens.items():
        steps += [then(handshake("OAUTHBEARER")), oauth(token, label=label), oauth_ack(), is_open()]
    add("oauthbearer-refusals", steps)
    malformed = {
        "no auth": b"n,,\x01\x01",
        "no final separator": b"n,,\x01auth=Bearer abc.def.\x01",
        "an acknowledgement with no error": b"\x01",
    }
    steps = [api_versions()]
    for label, raw in malformed.items():
        steps += [then(handshake("OAUTHBEARER")), authenticate(raw, label=label), is_open()]
    # Kafka fails on its own message for this one and closes unanswered (D31): the next
    # exchange is on a new connection on both sides
    another = b"n,,\x01auth=Basic YWxpY2U=\x01\x01"
    steps += [then(handshake("OAUTHBEARER")), authenticate(another, label="another scheme")]
    steps += [
        then(handshake("OAUTHBEARER")),
        oauth(oauth_token(exp_in=-60), label="a refused token"),
        oauth(oauth_token(), label="then a good one"),
        metadata(unknown, label="authenticated"),
    ]
    add("oauthbearer-malformed", steps)

    # KIP-368: a listener whose sessions last REAUTH_MS tells SaslAuthenticate v1+ clients so,
    # and takes a re-authentication on the open connection: the same mechanism and principal
    def add_reauth(name: str, exchanges: list[Exchange]) -> None:
        exchanges[0].fresh = True
        out.append(Scenario(f"sasl/{name}", exchanges, listener=REAUTH_LISTENER))

    def session(token: bytes, label: str, *, version: int = 2) -> Exchange:
        exchange = authenticate(token, version=version, label=label)
        exchange.project = _lifetime
        return exchange

    alice, admin = plain("alice", "alice-secret"), plain("admin", "admin-secret")
    add_reauth(
        "reauthentication",
        [
            handshake("PLAIN"),
            session(alice, "a session that expires"),
            metadata(unknown, label="authenticated"),
            handshake("PLAIN", label="re-authentication"),
            session(alice, "the same user again"),
            metadata(unknown, label="re-authenticated"),
            handshake("PLAIN", label="again within a second"),
            session(admin, "another user, within a second"),
            is_open(),
        ],
    )
    add_reauth(
        "reauthentication-as-another-user",
        [
            handshake("PLAIN"),
            session(alice, "a session that expires"),
            handshake("PLAIN", label="re-authentication"),
            session(admin, "another user"),
            is_open(),
        ],
    )
    for v in (0, 1):
        add_reauth(
            f"reauthentication-v{v}",
            [
                handshake("PLAIN"),
                session(alice, "a session that expires", version=v),
                handshake("PLAIN", label="re-authentication"),
                session(alice, "the same user again", version=v),
                is_open(),
            ],
        )
    add_reauth(
        "oauthbearer-scope",
        [
            handshake("OAUTHBEARER"),
            oauth(oauth_token(scope="read"), label="without the required scope"),
            oauth_ack(),
            is_open(),
            then(handshake("OAUTHBEARER")),
            oauth(oauth_token(scope=["read", REQUIRED_SCOPE]), label="with it"),
            metadata(unknown, label="authenticated"),
            then(handshake("OAUTHBEARER")),
            oauth(oauth_token(scope=REQUIRED_SCOPE, exp_in=120), label="expiring first"),
        ],
    )
    add_reauth(
        "reauthentication-mechanism",
        [
            handshake("SCRAM-SHA-256"),
            scram_first(SCRAM_USER, SCRAM_PASSWORD),
            scram_final(),
            handshake("PLAIN", label="re-authentication with another mechanism"),
            is_open(),
        ],
    )
    return out


def _lifetime(answer: Any) -> Any:
    """A session's lifetime compared for being set: the broker counts it from its clock (an
    OAuth token's from its ``exp``: in whole minutes)."""
    lifetime = answer.get("session_lifetime_ms")
    if isinstance(lifetime, int) and lifetime > 0:
        if REAUTH_MS - 60_000 <= lifetime <= REAUTH_MS:
            shown = "<set>"  # the REAUTH listener's connections.max.reauth.ms
        else:
            shown = f"<{round(lifetime / 60_000)} min>"  # an OAuth token's exp
        answer = {**answer, "session_lifetime_ms": shown}
    return answer
