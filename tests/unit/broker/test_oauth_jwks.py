"""Signed OAuth tokens (KIP-768): RSA (PKCS #1 v1.5 and PSS) and ECDSA (P-256, P-384)
signatures made by the ``cryptography`` package verify with our integers and fail when
tampered with; the validator's claim checks (exp, iat, nbf, aud, iss, sub, the clock skew) and
the JWKS's key selection, refresh and rotation, as Kafka's ValidatorAccessTokenValidator over
jose4j takes and refuses tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from broker.security.oauth_jwks import JwksError, JwksSource, JwtValidator, parse_jwks
from broker.security.oauthbearer import IllegalToken
from tests.support.oauth_idp import SigningKey as Key
from tests.support.oauth_idp import b64u
from tests.support.waiting import wait_for

NOW_MS = 1_800_000_000_000
NOW = NOW_MS // 1000
CLAIMS = {"sub": "svc", "iat": NOW - 10, "exp": NOW + 600, "aud": "kafka", "iss": "https://idp"}


def validator(
    keys: list[Key], fetch: Callable[[str], bytes] | None = None, **kw: Any
) -> JwtValidator:
    document = json.dumps({"keys": [k.jwk for k in keys]}).encode()
    source = JwksSource("https://idp/jwks", fetch=fetch or (lambda url: document))
    return JwtValidator(source, clock_ms=lambda: NOW_MS, **kw)


@pytest.mark.parametrize(
    "alg", ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"]
)
def test_each_algorithm_verifies_and_a_tampered_token_does_not(alg: str) -> None:
    key = Key(alg, "k1")
    v = validator([key])
    token = v(key.token(CLAIMS))
    assert token.principal_name == "svc" and token.lifetime_ms == (NOW + 600) * 1000
    head, _body, sig = key.token(CLAIMS).split(".")
    forged = b64u(json.dumps({**CLAIMS, "sub": "admin"}).encode())
    with pytest.raises(IllegalToken):
        v(f"{head}.{forged}.{sig}")
    other = Key(alg, "k1")
    with pytest.raises(IllegalToken):
        v(other.token(CLAIMS))


@pytest.mark.parametrize(("curve", "hash_name"), [("P-256", "sha256"), ("P-384", "sha384")])
def test_ecdsa_agrees_with_openssl(curve: str, hash_name: str) -> None:
    """Signatures of ``cryptography`` (OpenSSL) over many messages verify, and each changed
    part (message, r, s, the key) fails, including r and s at the edges of their range."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import (
        decode_dss_signature,
        encode_dss_signature,
    )

    from broker.security.oauth_jwks import CURVES, ecdsa_verify

    c = CURVES[curve]
    ours = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1()}[curve]
    algorithm = ec.ECDSA({"sha256": hashes.SHA256(), "sha384": hashes.SHA384()}[hash_name])
    key = ec.generate_private_key(ours)
    pub = key.public_key().public_numbers()
    other = ec.generate_private_key(ours).public_key().public_numbers()

    def sig(r: int, s: int) -> bytes:
        return r.to_bytes(c.size, "big") + s.to_bytes(c.size, "big")

    for i in range(25):
        message = b"message %d" % i
        r, s = decode_dss_signature(key.sign(message, algorithm))
        assert ecdsa_verify(c, pub.x, pub.y, hash_name, message, sig(r, s))
        assert not ecdsa_verify(c, pub.x, pub.y, hash_name, message + b".", sig(r, s))
        assert not ecdsa_verify(c, pub.x, pub.y, hash_name, message, sig(r ^ 1, s))
        assert not ecdsa_verify(c, pub.x, pub.y, hash_name, message, sig(r, s ^ 1))
        assert not ecdsa_verify(c, other.x, other.y, hash_name, message, sig(r, s))
        # (r, n - s) is the same signature's other form: valid for OpenSSL, as for Java
        assert ecdsa_verify(c, pub.x, pub.y, hash_name, message, sig(r, c.n - s))
        key.public_key().verify(encode_dss_signature(r, c.n - s), message, algorithm)
    for r, s in ((0, 1), (1, 0), (c.n, 1), (1, c.n)):
        assert not ecdsa_verify(c, pub.x, pub.y, hash_name, b"m", sig(r, s))
    assert not ecdsa_verify(c, pub.x, pub.y + 1, hash_name, b"m", sig(1, 1))  # not on the curve
    assert not ecdsa_verify(c, pub.x, pub.y, hash_name, b"m", sig(1, 1)[:-1])


@pytest.mark.parametrize(
    ("claims", "settings"),
    [
        ({**CLAIMS, "exp": NOW - 31}, {}),  # expired beyond the 30 s skew
        ({k: v for k, v in CLAIMS.items() if k != "exp"}, {}),
        ({k: v for k, v in CLAIMS.items() if k != "iat"}, {}),  # Kafka requires iat
        ({**CLAIMS, "nbf": NOW + 60}, {}),
        ({k: v for k, v in CLAIMS.items() if k != "sub"}, {}),
        ({**CLAIMS, "sub": " "}, {}),
        ({**CLAIMS, "exp": "later"}, {}),
        (CLAIMS, {"expected_audience": ("other",)}),
        ({k: v for k, v in CLAIMS.items() if k != "aud"}, {"expected_audience": ("kafka",)}),
        (CLAIMS, {"expected_issuer": "https://elsewhere"}),
    ],
)
def test_claims_kafka_refuses(claims: dict[str, Any], settings: dict[str, Any]) -> None:
    key = Key("RS256", "k1")
    with pytest.raises(IllegalToken):
        validator([key], **settings)(key.token(claims))


def test_claims_kafka_takes() -> None:
    key = Key("ES256", "k1")
    v = validator(
        [key],
        expected_audience=("other", "kafka"),
        expected_issuer="https://idp",
        sub_claim="client_id",
        scope_claim="scp",
    )
    token = v(key.token({**CLAIMS, "exp": NOW - 29, "aud": ["x", "kafka"], "client_id": "app",
                         "scp": ["read", "write"], "nbf": NOW + 29}))  # fmt: skip
    assert token.principal_name == "app" and token.scope == frozenset({"read", "write"})


def test_unsigned_or_malformed_tokens_are_refused() -> None:
    key = Key("RS256", "k1")
    v = validator([key])
    head, body, _sig = key.token(CLAIMS).split(".")
    none = b64u(json.dumps({"alg": "none"}).encode())
    for token in (f"{none}.{body}.", f"{none}.{body}.x", f"{head}.{body}", "a.b.c", f"{head}..x"):
        with pytest.raises(IllegalToken):
            v(token)


def test_keys_are_chosen_by_kid_and_a_rotated_key_is_fetched() -> None:
    old, new = Key("RS256", "old"), Key("RS256", "new")
    documents = [{"keys": [old.jwk]}, {"keys": [old.jwk, new.jwk]}]
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return json.dumps(documents[min(len(fetched) - 1, 1)]).encode()

    clock = [0]
    source = JwksSource(
        "https://idp/jwks", fetch=fetch, clock_ms=lambda: clock[0], background=False
    )
    v = JwtValidator(source, clock_ms=lambda: NOW_MS)
    assert v(old.token(CLAIMS)).principal_name == "svc"
    assert len(fetched) == 1 and not source.wanted.is_set()
    # a token signed by a key the JWKS does not hold yet: refused, and a refresh asked for
    with pytest.raises(IllegalToken):
        v(new.token(CLAIMS))
    assert source.wanted.is_set()
    source.refresh()  # (the refresh thread's work)
    assert len(fetched) == 2 and not source.wanted.is_set()
    assert v(new.token(CLAIMS)).principal_name == "svc"
    # as Kafka's RefreshingHttpsJwks: an unknown key id asks for a refresh once a minute
    unknown = Key("RS256", "unknown")
    with pytest.raises(IllegalToken):
        v(unknown.token(CLAIMS))
    assert source.wanted.is_set()
    source.wanted.clear()
    clock[0] += 59_999
    with pytest.raises(IllegalToken):
        v(unknown.token(CLAIMS))
    assert not source.wanted.is_set()
    with pytest.raises(IllegalToken):  # another id asks at once
        v(Key("RS256", "another").token(CLAIMS))
    assert source.wanted.is_set()
    source.wanted.clear()
    clock[0] += 1
    with pytest.raises(IllegalToken):
        v(unknown.token(CLAIMS))
    assert source.wanted.is_set()
    source.wanted.clear()
    with pytest.raises(IllegalToken):  # an id too long to be a key's asks for nothing
        v(Key("RS256", "k" * 1001).token(CLAIMS))
    assert not source.wanted.is_set()


def test_a_failed_refresh_tries_again_with_a_doubling_wait() -> None:
    key = Key("RS256", "k")
    outcomes = ["ok", "fail", "fail", "ok"]
    tries: list[float] = []

    def fetch(url: str) -> bytes:
        tries.append(time.monotonic())
        if outcomes[len(tries) - 1] == "fail":
            raise OSError("connection refused")
        return json.dumps({"keys": [key.jwk]}).encode()

    source = JwksSource(
        "https://idp/jwks",
        fetch=fetch,
        retry_backoff_ms=20,
        retry_backoff_max_ms=10_000,
        background=False,
    )
    assert source.refresh_retrying()
    assert len(tries) == 4
    assert tries[2] - tries[1] >= 0.02 and tries[3] - tries[2] >= 0.04
    # every try fails: after retry.backoff.max.ms it gives up and keeps the keys it has
    outcomes.extend(["fail"] * 20)
    source.retry_backoff_max_ms = 50
    assert not source.refresh_retrying()
    assert 5 <= len(tries) <= 9 and [k.kid for k in source.keys] == ["k"]


def test_the_refresh_thread_fetches_when_asked() -> None:
    key = Key("ES256", "k")
    calls: list[int] = []

    def fetch(url: str) -> bytes:
        calls.append(1)
        return json.dumps({"keys": [key.jwk] if len(calls) > 1 else []}).encode()

    source = JwksSource("https://idp/jwks", fetch=fetch, retry_backoff_ms=0)
    try:
        v = JwtValidator(source, clock_ms=lambda: NOW_MS)
        with pytest.raises(IllegalToken):
            v(key.token(CLAIMS))
        wait_for(lambda: len(source.keys) == 1, timeout=10, what="the refreshed JWKS")
        assert v(key.token(CLAIMS)).principal_name == "svc"
    finally:
        source.close()


def test_a_jwks_that_cannot_be_read_is_refused() -> None:
    with pytest.raises(JwksError):
        parse_jwks(b"[]")
    with pytest.raises(JwksError):
        JwksSource("https://idp/jwks", fetch=lambda url: b"not json")

    def unreachable(url: str) -> bytes:
        raise OSError("connection refused")

    with pytest.raises(JwksError):
        JwksSource("https://idp/jwks", fetch=unreachable)
    # keys of other uses or unknown types are skipped, not fatal
    others = [{"kty": "oct", "k": "x"}, {"kty": "RSA", "use": "enc", "n": "AQ", "e": "AQAB"}]
    assert parse_jwks(json.dumps({"keys": others}).encode()) == []
