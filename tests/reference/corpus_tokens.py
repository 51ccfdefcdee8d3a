"""The delegation token corpus (KIP-48, KIP-373): CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken and DescribeDelegationToken, and a SCRAM login with a token.

* :func:`plaintext_token_scenarios` (the main corpus, every version): a PLAINTEXT listener
  refuses every token request (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
* :func:`token_scenarios` (the secured corpus, on its SASL_PLAINTEXT listener, against Kafka
  4.x, which speaks v1 and up): a user logged in with PLAIN creates, describes, renews and
  expires tokens, another user may not renew them, a token logs in over SCRAM (``tokenauth``)
  and its session may not use the token APIs.

Each broker picks its own token ids, HMACs and timestamps: an answer's id and HMAC are compared
for being set (and the HMAC's length), a created token's expiry and maximum relative to its
issue time, a renewal's or expiry's timestamp in whole seconds from when it arrived, a described
token's expiry in whole minutes from then. A description's tokens are sorted (Kafka lists them
in hash order).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from protocol.api_keys import ApiKey
from protocol.messages.create_delegation_token import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from protocol.messages.describe_delegation_token import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.scram import ScramClient
from tests.reference.corpus import versions
from tests.support.differential import Context, Exchange, Scenario

#: the secret both brokers of the secured corpus sign tokens with
SECRET_KEY = "corpus-token-secret"
DAY_MS = 86_400_000
WEEK_MS = 7 * DAY_MS


def _user(name: str) -> list[CreatableRenewers]:
    return [CreatableRenewers(principal_type="User", principal_name=name)]


def _owners(*names: str) -> list[DescribeDelegationTokenOwner]:
    return [DescribeDelegationTokenOwner(principal_type="User", principal_name=n) for n in names]


# --- projections ------------------------------------------------------------------------------


def _secret_parts(answer: dict[str, Any]) -> dict[str, Any]:
    out = dict(answer)
    if out.get("token_id"):
        out["token_id"] = "<token-id>"
    mac = out.get("hmac")
    if isinstance(mac, bytes | bytearray | memoryview) and len(mac):
        out["hmac"] = f"<{len(mac)} bytes>"
    return out


def _created(answer: Any) -> Any:
    """A created token: its id and HMAC set or not, its expiry and maximum after its issue."""
    out = _secret_parts(answer)
    issued = out.get("issue_timestamp_ms")
    if isinstance(issued, int) and issued > 0:
        out["issue_timestamp_ms"] = "<now>"
        out["expiry_timestamp_ms"] = f"issue+{out['expiry_timestamp_ms'] - issued}"
        out["max_timestamp_ms"] = f"issue+{out['max_timestamp_ms'] - issued}"
    return out


def _seconds_from_now(value: int) -> str:
    return f"now+{round((value - time.time() * 1000) / 1000)}s"


def _new_expiry(answer: Any) -> Any:
    """A renewal's or an expiry's answer: the new expiry in whole seconds from now."""
    out = dict(answer)
    expiry = out.get("expiry_timestamp_ms")
    if isinstance(expiry, int) and expiry > 0:
        out["expiry_timestamp_ms"] = _seconds_from_now(expiry)
    return out


def _new_expiry_minutes(answer: Any) -> Any:
    out = dict(answer)
    expiry = out.get("expiry_timestamp_ms")
    if isinstance(expiry, int) and expiry > 0:
        out["expiry_timestamp_ms"] = f"now+{round((expiry - time.time() * 1000) / 60_000)}min"
    return out


def _described(answer: Any) -> Any:
    tokens = []
    for token in answer.get("tokens") or []:
        t = _secret_parts(token)
        issued = t["issue_timestamp"]
        t["issue_timestamp"] = "<set>"
        # renewals move the expiry from their own time: compared in whole minutes from now
        t["expiry_timestamp"] = (
            f"now+{round((t['expiry_timestamp'] - time.time() * 1000) / 60_000)}min"
        )
        t["max_timestamp"] = f"issue+{t['max_timestamp'] - issued}"
        tokens.append(t)
    return {**answer, "tokens": sorted(tokens, key=repr)}


def _session(answer: Any) -> Any:
    """A token session's lifetime: set, at most the token's (a day), or not."""
    lifetime = answer.get("session_lifetime_ms")
    if isinstance(lifetime, int) and 0 < lifetime <= DAY_MS:
        answer = {**answer, "session_lifetime_ms": "<at most a day>"}
    auth = answer.get("auth_bytes")
    if isinstance(auth, bytes | bytearray) and auth:
        text = bytes(auth).decode(errors="replace")
        answer = {**answer, "auth_bytes": [part.split("=", 1)[0] for part in text.split(",")]}
    return answer


# --- exchanges --------------------------------------------------------------------------------


def create(
    key: str,
    *,
    version: int = 3,
    renewers: tuple[str, ...] = (),
    renewer_type: str = "User",
    owner: str | None = None,
    max_lifetime_ms: int = -1,
    label: str = "",
) -> Exchange:
    """CreateDelegationToken; the answer's id and HMAC are kept under ``key``."""
    request = CreateDelegationTokenRequest(
        owner_principal_type="User" if owner else None,
        owner_principal_name=owner,
        renewers=[
            CreatableRenewers(principal_type=renewer_type, principal_name=r) for r in renewers
        ],
        max_lifetime_ms=max_lifetime_ms,
    )

    def capture(ctx: Context, response: Any) -> None:
        if response.error_code == 0:
            ctx.values[key] = (response.token_id, bytes(response.hmac))

    return Exchange(request, version, capture, label=label or f"create {key}", project=_created)


def _hmac_of(key: str) -> Callable[[Context], bytes]:
    def get(ctx: Context) -> bytes:
        token = ctx.values.get(key)
        return token[1] if token else b"no such token"

    return get


def renew(
    key: str, period_ms: int, *, version: int = 2, label: str = "", minutes: bool = False
) -> Exchange:
    """``minutes``: the new expiry compared in whole minutes from now (a token's maximum,
    reached some time after its issue)."""
    mac = _hmac_of(key)
    return Exchange(
        lambda ctx: RenewDelegationTokenRequest(hmac=mac(ctx), renew_period_ms=period_ms),
        version,
        label=label or f"renew {key} by {period_ms} ms",
        project=_new_expiry_minutes if minutes else _new_expiry,
    )


def expire(key: str, period_ms: int, *, version: int = 2, label: str = "") -> Exchange:
    mac = _hmac_of(key)
    return Exchange(
        lambda ctx: ExpireDelegationTokenRequest(hmac=mac(ctx), expiry_time_period_ms=period_ms),
        version,
        label=label or f"expire {key} in {period_ms} ms",
        project=_new_expiry,
    )


def describe(*owners: str, every: bool = False, version: int = 3, label: str = "") -> Exchange:
    request = DescribeDelegationTokenRequest(owners=None if every else _owners(*owners))
    return Exchange(
        request, version, label=label or f"describe {owners or 'all'}", project=_described
    )


def wait_tokens(*keys: str, present: bool = True) -> Exchange:
    """Describes every token until those kept under ``keys`` are listed (or, with
    ``present=False``, no longer listed): a Kafka 4.x broker learns of a token from its
    metadata log, and its controller decides renewals and expiries from that broker's cache,
    a moment after answering."""
    wanted: set[str] = set()

    def build(ctx: Context) -> DescribeDelegationTokenRequest:
        wanted.clear()
        wanted.update(ctx.values[k][0] for k in keys if k in ctx.values)
        return DescribeDelegationTokenRequest(owners=None)

    def until(response: Any) -> bool:
        listed = {t.token_id for t in response.tokens or []}
        return wanted <= listed if present else not wanted & listed

    return Exchange(
        build,
        3,
        label=f"until {', '.join(keys)} {'listed' if present else 'gone'}",
        project=lambda a: {"error_code": a.get("error_code")},
        until=until,
    )


def token_login(key: str, *, mechanism: str = "SCRAM-SHA-256", label: str = "") -> list[Exchange]:
    """A new connection that logs in with the token kept under ``key`` (SCRAM, tokenauth)."""

    def first(ctx: Context) -> SaslAuthenticateRequest:
        token_id, mac = ctx.values.get(key, ("unknown", b""))
        client = ScramClient(
            mechanism,
            token_id,
            base64.b64encode(mac).decode(),
            extensions={"tokenauth": "true"},
        )
        ctx.values["scram"] = client
        return SaslAuthenticateRequest(auth_bytes=client.first())

    def keep(ctx: Context, response: Any) -> None:
        ctx.values["server-first"] = bytes(response.auth_bytes or b"")

    def final(ctx: Context) -> SaslAuthenticateRequest:
        client = ctx.values.get("scram")
        server_first = ctx.values.get("server-first", b"")
        if not isinstance(client, ScramClient) or not server_first:
            return SaslAuthenticateRequest(auth_bytes=b"c=biws,r=,p=")
        return SaslAuthenticateRequest(auth_bytes=client.final(server_first))

    handshake = Exchange(
        SaslHandshakeRequest(mechanism=mechanism), 1, label=f"handshake {mechanism}", fresh=True
    )
    return [
        handshake,
        Exchange(first, 2, keep, label=label or f"log in with {key}", project=_session),
        Exchange(final, 2, label=f"{label or key}: client-final", project=_session),
    ]


def plain_login(user: str, password: str) -> list[Exchange]:
    return [
        Exchange(SaslHandshakeRequest(mechanism="PLAIN"), 1, label="handshake PLAIN", fresh=True),
        Exchange(
            SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()),
            2,
            label=f"log in as {user}",
        ),
    ]


# --- scenarios --------------------------------------------------------------------------------


def plaintext_token_scenarios() -> list[Scenario]:
    """Every version of the four APIs on a PLAINTEXT listener: refused before anything else."""
    out = []
    for v in versions(ApiKey.CREATE_DELEGATION_TOKEN):
        out.append(
            Scenario(
                f"delegation_token/create/v{v}",
                [create("t", version=v, renewers=("bob",), owner="erin" if v >= 3 else None)],
            )
        )
    for v in versions(ApiKey.RENEW_DELEGATION_TOKEN):
        out.append(Scenario(f"delegation_token/renew/v{v}", [renew("t", 1000, version=v)]))
    for v in versions(ApiKey.EXPIRE_DELEGATION_TOKEN):
        out.append(Scenario(f"delegation_token/expire/v{v}", [expire("t", -1, version=v)]))
    for v in versions(ApiKey.DESCRIBE_DELEGATION_TOKEN):
        out.append(Scenario(f"delegation_token/describe/v{v}", [describe(every=True, version=v)]))
    return out


def token_scenarios(listener: str, users: dict[str, str]) -> list[Scenario]:
    """On a SASL listener offering PLAIN (``users``: alice and admin) and SCRAM-SHA-256; against
    Kafka 4.x. Every scenario expires the tokens it made, so that a description lists only its
    own."""
    alice = plain_login("alice", users["alice"])
    admin = plain_login("admin", users["admin"])
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"delegation_token/{name}", exchanges, prefer="4", listener=listener))

    add(
        "lifecycle",
        [
            *alice,
            *[create(f"t{v}", version=v, renewers=("admin",)) for v in (1, 2, 3)],
            create("short", max_lifetime_ms=3_600_000, label="a shorter maximum lifetime"),
            create("long", max_lifetime_ms=30 * DAY_MS, label="a longer one than the broker's"),
            create("erin's", owner="erin", label="for another owner (v3)"),
            wait_tokens("t1", "t2", "t3", "short", "long", "erin's"),
            renew("short", DAY_MS, label="past its maximum", minutes=True),
            *[describe(every=True, version=v) for v in (1, 2, 3)],
            describe("alice"),
            describe("admin", label="a renewer's"),
            describe("erin", label="another owner's, requested by alice"),
            describe("nobody"),
            describe(label="an empty owner list"),
            *[renew("t1", 1000, version=v) for v in (1, 2)],
            renew("t2", -1, label="the default renewal"),
            renew("t3", 30 * DAY_MS, label="past the expiry time"),
            renew("unknown", 1000, label="an HMAC no token has"),
            renew("erin's", 1000, label="by its requester, not owner"),
            *[expire("t1", 60_000, version=v) for v in (1, 2)],
            expire("t1", -1, label="at once"),
            wait_tokens("t1", present=False),
            renew("t1", 1000, label="once expired"),
            expire("t1", -1, label="again"),
            describe("alice"),
            *admin,
            renew("t2", 5000, label="by a renewer"),
            expire("short", 1000, label="by another user"),
            expire("t2", -1, label="by a renewer, at once"),
            expire("erin's", -1, label="by another user, at once"),
            *alice,
            *[expire(k, -1) for k in ("t3", "short", "long")],
            wait_tokens("t2", "t3", "short", "long", present=False),
            describe(every=True, label="erin's token left"),
        ],
    )
    add(
        "refusals",
        [
            *alice,
            create("group", renewers=("readers",), renewer_type="Group", label="a Group renewer"),
            create("ttl", max_lifetime_ms=1, label="a token that lives 1 ms"),
            wait_tokens("ttl"),
            renew("ttl", 1000, label="an expired token"),
            expire("ttl", 1000, label="an expired token, later"),
            expire("ttl", -1, label="an expired token, at once"),
            wait_tokens("ttl", present=False),
        ],
    )
    add(
        "login",
        [
            *alice,
            create("t", renewers=("admin",)),
            wait_tokens("t"),
            *token_login("t"),
            describe(every=True, label="from a token's session"),
            create("u", label="from a token's session"),
            renew("t", 1000, label="from a token's session"),
            expire("t", -1, label="from a token's session"),
            *token_login("t", mechanism="SCRAM-SHA-256", label="log in again"),
            *alice,
            expire("t", -1),
            wait_tokens("t", present=False),
            *token_login("t", label="an expired token"),
            *token_login("never", label="a token that does not exist"),
        ],
    )
    return out
