"""Signed OAuth tokens for SASL/OAUTHBEARER (KIP-768), as Kafka's
``OAuthBearerValidatorCallbackHandler`` validates them: a JWT signed by the identity provider,
checked against the keys of its JWKS (``sasl.oauthbearer.jwks.endpoint.url``).

A token is taken when (Kafka's ``ValidatorAccessTokenValidator``):

* it is a compact JWS of three non-empty parts whose header names an algorithm other than
  ``none`` (RS256/384/512, PS256/384/512, ES256/384) and a key of the JWKS (by ``kid``, or the
  only key of its type) whose signature verifies;
* it has ``exp`` (not passed, less ``sasl.oauthbearer.clock.skew.seconds``), ``iat``, and
  ``nbf`` if present not in the future (with the skew);
* its ``aud`` holds one of ``sasl.oauthbearer.expected.audience`` and its ``iss`` is
  ``sasl.oauthbearer.expected.issuer``, when those are set;
* its subject claim (``sasl.oauthbearer.sub.claim.name``, ``sub``) is a non-blank string.

Anything else is an invalid token (``{"status":"invalid_token"}``, the reason logged). The
scope claim (``sasl.oauthbearer.scope.claim.name``) is read but, as in Kafka, not required.

The JWKS comes from a ``file:`` URL (read at start, as Kafka's ``JwksFileVerificationKeyResolver``)
or an ``https:``/``http:`` one, fetched at start and, by a thread of its own, every
``sasl.oauthbearer.jwks.endpoint.refresh.ms``, and again (at most every
``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms``) when a token names a key it does not hold (a
rotated key: that token is refused, the next one from the client is taken). Signatures are
verified with Python's integers (RSA, RFC 8017; ECDSA on P-256 and P-384, FIPS 186-4): no key is
secret here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.security.oauthbearer import IllegalToken, ValidatedToken

log = logging.getLogger(__name__)

#: Kafka's class names for this validator (the second is 3.x's, deprecated)
VALIDATOR_CLASSES = frozenset(
    {
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
    }
)
UNSECURED_VALIDATOR_CLASS = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)


class JwksError(Exception):
    """The JWKS cannot be read (a start-up error when it happens at start)."""


def b64url(text: str) -> bytes:
    """Base64url without padding (RFC 7515); raises ValueError."""
    if not all(c.isalnum() or c in "-_" for c in text):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as e:
        raise ValueError(str(e)) from None


def _int(text: str) -> int:
    return int.from_bytes(b64url(text), "big")


# --- RSA (RFC 8017: RSASSA-PKCS1-v1_5 and RSASSA-PSS verification) ----------------------------

_DIGEST_INFO = {
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}


def _rsa_em(n: int, e: int, signature: bytes) -> bytes | None:
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return None
    s = int.from_bytes(signature, "big")
    if s >= n:
        return None
    return pow(s, e, n).to_bytes(k, "big")


def rsa_pkcs1_verify(n: int, e: int, hash_name: str, message: bytes, signature: bytes) -> bool:
    em = _rsa_em(n, e, signature)
    if em is None:
        return False
    t = _DIGEST_INFO[hash_name] + hashlib.new(hash_name, message).digest()
    if len(em) < len(t) + 11:
        return False
    expected = b"\x00\x01" + b"\xff" * (len(em) - len(t) - 3) + b"\x00" + t
    return em == expected


def _mgf1(seed: bytes, length: int, hash_name: str) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.new(hash_name, seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def rsa_pss_verify(n: int, e: int, hash_name: str, message: bytes, signature: bytes) -> bool:
    """EMSA-PSS with MGF1 of the same hash and a salt as long as the hash (RFC 7518)."""
    em_full = _rsa_em(n, e, signature)
    if em_full is None:
        return False
    mod_bits = n.bit_length()
    em_bits = mod_bits - 1
    em_len = (em_bits + 7) // 8
    em = em_full[-em_len:]
    if len(em_full) > em_len and any(em_full[: len(em_full) - em_len]):
        return False
    h_len = hashlib.new(hash_name).digest_size
    s_len = h_len
    if em_len < h_len + s_len + 2 or em[-1] != 0xBC:
        return False
    masked_db, h = em[: em_len - h_len - 1], em[em_len - h_len - 1 : -1]
    zero_bits = 8 * em_len - em_bits
    if zero_bits and masked_db[0] >> (8 - zero_bits):
        return False
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1(h, len(masked_db), hash_name), strict=True))
    db = bytes([db[0] & (0xFF >> zero_bits)]) + db[1:]
    pad = em_len - h_len - s_len - 2
    if db[:pad] != b"\x00" * pad or db[pad] != 0x01:
        return False
    salt = db[-s_len:]
    m_hash = hashlib.new(hash_name, message).digest()
    return hashlib.new(hash_name, b"\x00" * 8 + m_hash + salt).digest() == h


# --- ECDSA (FIPS 186-4) on the NIST curves JWS uses -------------------------------------------


@dataclass(frozen=True)
class Curve:
    p: int
    a: int
    b: int
    gx: int
    gy: int
    n: int
    size: int  # bytes of a coordinate


CURVES = {
    "P-256": Curve(
        p=0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF,
        a=-3,
        b=0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B,
        gx=0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
        gy=0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
        n=0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
        size=32,
    ),
    "P-384": Curve(
        p=int(
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFE"
            "FFFFFFFF0000000000000000FFFFFFFF",
            16,
        ),
        a=-3,
        b=int(
            "B3312FA7E23EE7E4988E056BE3F82D19181D9C6EFE8141120314088F5013875A"
            "C656398D8A2ED19D2A85C8EDD3EC2AEF",
            16,
        ),
        gx=int(
            "AA87CA22BE8B05378EB1C71EF320AD746E1D3B628BA79B9859F741E082542A38"
            "5502F25DBF55296C3A545E3872760AB7",
            16,
        ),
        gy=int(
            "3617DE4A96262C6F5D9E98BF9292DC29F8F41DBD289A147CE9DA3113B5F0B8C0"
            "0A60B1CE1D7E819D7A431D7C90EA0E5F",
            16,
        ),
        n=int(
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF"
            "581A0DB248B0A77AECEC196ACCC52973",
            16,
        ),
        size=48,
    ),
}

Point = tuple[int, int] | None


def _add(c: Curve, p1: Point, p2: Point) -> Point:
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2:
        if (y1 + y2) % c.p == 0:
            return None
        slope = (3 * x1 * x1 + c.a) * pow(2 * y1, -1, c.p) % c.p
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, c.p) % c.p
    x3 = (slope * slope - x1 - x2) % c.p
    return x3, (slope * (x1 - x3) - y1) % c.p


#: a point in Jacobian coordinates (X, Y, Z): x = X / Z^2, y = Y / Z^3; None at infinity
Jacobian = tuple[int, int, int] | None


def _double(c: Curve, q: Jacobian) -> Jacobian:
    if q is None:
        return None
    x, y, z = q
    if y == 0:
        return None
    p = c.p
    yy = y * y % p
    s = 4 * x * yy % p
    zz = z * z % p
    m = (3 * x * x + c.a * zz * zz) % p
    x3 = (m * m - 2 * s) % p
    return x3, (m * (s - x3) - 8 * yy * yy) % p, 2 * y * z % p


def _add_affine(c: Curve, q: Jacobian, point: tuple[int, int]) -> Jacobian:
    """``q`` + an affine ``point`` (Z = 1): no inversion."""
    x2, y2 = point
    if q is None:
        return x2, y2, 1
    x1, y1, z1 = q
    p = c.p
    z1z1 = z1 * z1 % p
    h = (x2 * z1z1 - x1) % p
    r = (y2 * z1 * z1z1 - y1) % p
    if h == 0:
        return _double(c, q) if r == 0 else None
    hh = h * h % p
    hhh = h * hh % p
    v = x1 * hh % p
    x3 = (r * r - hhh - 2 * v) % p
    return x3, (r * (v - x3) - y1 * hhh) % p, z1 * h % p


def _mul_add(c: Curve, u1: int, u2: int, q: tuple[int, int]) -> Point:
    """u1 * G + u2 * q, in one pass over the bits of both (Shamir's trick), in Jacobian
    coordinates: the one inversion is the last step's."""
    g = (c.gx, c.gy)
    both = _add(c, g, q)
    acc: Jacobian = None
    for i in range(max(u1.bit_length(), u2.bit_length()) - 1, -1, -1):
        acc = _double(c, acc)
        bits = (u1 >> i & 1) | (u2 >> i & 1) << 1
        if bits == 1:
            acc = _add_affine(c, acc, g)
        elif bits == 2:
            acc = _add_affine(c, acc, q)
        elif bits == 3 and both is not None:
            acc = _add_affine(c, acc, both)
    if acc is None:
        return None
    x, y, z = acc
    zi = pow(z, -1, c.p)
    zi2 = zi * zi % c.p
    return x * zi2 % c.p, y * zi2 * zi % c.p


def ecdsa_verify(
    curve: Curve, x: int, y: int, hash_name: str, message: bytes, signature: bytes
) -> bool:
    """A JWS ECDSA signature: r and s, each ``curve.size`` bytes (RFC 7518 section 3.4)."""
    if len(signature) != 2 * curve.size:
        return False
    if not (0 <= x < curve.p and 0 <= y < curve.p):
        return False
    if (y * y - (x * x * x + curve.a * x + curve.b)) % curve.p:
        return False  # the key is not on the curve
    r = int.from_bytes(signature[: curve.size], "big")
    s = int.from_bytes(signature[curve.size :], "big")
    if not (0 < r < curve.n and 0 < s < curve.n):
        return False
    digest = hashlib.new(hash_name, message).digest()
    z = int.from_bytes(digest, "big") >> max(0, 8 * len(digest) - curve.n.bit_length())
    w = pow(s, -1, curve.n)
    point = _mul_add(curve, z * w % curve.n, r * w % curve.n, (x, y))
    return point is not None and point[0] % curve.n == r


# --- JWKs ------------------------------------------------------------------------------------

#: JWS algorithm -> (key type, hash, scheme)
ALGORITHMS = {
    "RS256": ("RSA", "sha256", "pkcs1"),
    "RS384": ("RSA", "sha384", "pkcs1"),
    "RS512": ("RSA", "sha512", "pkcs1"),
    "PS256": ("RSA", "sha256", "pss"),
    "PS384": ("RSA", "sha384", "pss"),
    "PS512": ("RSA", "sha512", "pss"),
    "ES256": ("EC", "sha256", "P-256"),
    "ES384": ("EC", "sha384", "P-384"),
}


@dataclass(frozen=True)
class Jwk:
    """A public key of the JWKS (RSA or EC); other keys are skipped."""

    kty: str
    kid: str | None
    alg: str | None
    params: tuple[int, ...]  # (n, e) or (x, y)
    crv: str | None = None

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> Jwk | None:
        kty = doc.get("kty")
        use = doc.get("use")
        if use not in (None, "sig"):
            return None
        kid = doc.get("kid") if isinstance(doc.get("kid"), str) else None
        alg = doc.get("alg") if isinstance(doc.get("alg"), str) else None
        try:
            if kty == "RSA":
                return cls("RSA", kid, alg, (_int(doc["n"]), _int(doc["e"])))
            if kty == "EC" and doc.get("crv") in CURVES:
                return cls("EC", kid, alg, (_int(doc["x"]), _int(doc["y"])), doc["crv"])
        except (KeyError, TypeError, ValueError):
            log.warning("skipping an unreadable key of the JWKS (kid %s)", kid)
        return None

    def verify(self, alg: str, message: bytes, signature: bytes) -> bool:
        kty, hash_name, scheme = ALGORITHMS[alg]
        if kty != self.kty or (self.alg is not None and self.alg != alg):
            return False
        if kty == "RSA":
            n, e = self.params
            check = rsa_pss_verify if scheme == "pss" else rsa_pkcs1_verify
            return check(n, e, hash_name, message, signature)
        if self.crv != scheme:
            return False
        x, y = self.params
        return ecdsa_verify(CURVES[scheme], x, y, hash_name, message, signature)


def parse_jwks(data: bytes) -> list[Jwk]:
    """Raises JwksError for a document that is not a JWKS."""
    try:
        doc = json.loads(data)
        keys = doc["keys"]
        if not isinstance(keys, list):
            raise TypeError("keys is not a list")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise JwksError(f"not a JWKS: {e}") from None
    return [k for k in (Jwk.parse(d) for d in keys if isinstance(d, dict)) if k is not None]


#: Kafka's RefreshingHttpsJwks: how long a key id missing from the JWKS waits before it may ask
#: for a refresh again, how many such ids are remembered, and the longest id that may ask
MISSING_KEY_ID_WAIT_MS = 60_000
MISSING_KEY_IDS = 16
MAX_KEY_ID_LENGTH = 1000


class JwksSource:
    """The keys of ``url`` (``file:``, ``http:``, ``https:``), as Kafka's
    ``RefreshingHttpsJwks`` keeps them. An http(s) JWKS is fetched again by a thread of its own
    every ``refresh_ms``, and at once when a token names a key it does not hold: that token is
    refused, as Kafka refuses it while it refreshes, and the client's next login finds the new
    key. A key id asks for that at most once per :data:`MISSING_KEY_ID_WAIT_MS` (the last
    :data:`MISSING_KEY_IDS` ids are remembered; an id longer than :data:`MAX_KEY_ID_LENGTH`
    asks for nothing). A refresh whose fetch fails tries again after ``retry_backoff_ms``, the
    wait doubling, for at most ``retry_backoff_max_ms``; then the keys already read stay until
    the next refresh. No login waits for the identity provider. Thread-safe: the key list is
    replaced whole."""

    def __init__(
        self,
        url: str,
        *,
        refresh_ms: int = 3_600_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 10_000,
        fetch: Callable[[str], bytes] | None = None,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
        background: bool = True,
    ) -> None:
        self.url = url
        self.refresh_ms = refresh_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self._fetch = fetch or _fetch_url
        self._clock_ms = clock_ms
        self.keys: list[Jwk] = []
        #: a refresh asked for by a token naming an unknown key (the thread's wake-up)
        self.wanted = threading.Event()
        self._stopping = threading.Event()
        #: key id -> when it may ask for a refresh again (least recently asked first)
        self._missing: OrderedDict[str, int] = OrderedDict()
        self._missing_lock = threading.Lock()
        self.refresh()  # at start: a JWKS that cannot be read stops the broker
        self._thread: threading.Thread | None = None
        if background and self.refreshes:
            self._thread = threading.Thread(target=self._run, name="jwks-refresh", daemon=True)
            self._thread.start()

    @property
    def refreshes(self) -> bool:
        return not self.url.startswith("file:")

    def refresh(self) -> None:
        """One fetch; raises JwksError."""
        self.wanted.clear()
        try:
            data = self._fetch(self.url)
        except (OSError, ValueError) as e:
            raise JwksError(f"cannot read the JWKS at {self.url}: {e}") from None
        self.keys = parse_jwks(data)
        log.info("JWKS %s: %d key(s)", self.url, len(self.keys))

    def refresh_retrying(self) -> bool:
        """A refresh, its fetch tried again after a failure (see the class docstring); False
        when every try failed or the source was closed meanwhile."""
        end = self._clock_ms() + self.retry_backoff_max_ms
        attempt = 0
        while True:
            attempt += 1
            try:
                self.refresh()
                return True
            except JwksError as e:
                wait = min(self.retry_backoff_ms * 2 ** (attempt - 1), end - self._clock_ms())
                if wait <= 0:
                    log.warning("%s (keeping the keys already read)", e)
                    return False
                log.warning("%s (attempt %d; trying again in %d ms)", e, attempt, wait)
                if self._stopping.wait(wait / 1000):
                    return False

    def candidates(self, kid: str | None, alg: str) -> list[Jwk]:
        """The keys a token's header may name; for an unknown ``kid``, none, and a refresh is
        asked for (see the class docstring)."""
        keys = self._select(kid, alg)
        if not keys and kid is not None and self.refreshes and len(kid) <= MAX_KEY_ID_LENGTH:
            now = self._clock_ms()
            with self._missing_lock:
                again = self._missing.get(kid)
                if again is None or again <= now:
                    self._missing[kid] = now + MISSING_KEY_ID_WAIT_MS
                    self._missing.move_to_end(kid)
                    while len(self._missing) > MISSING_KEY_IDS:
                        self._missing.popitem(last=False)
                    self.wanted.set()
        return keys

    def close(self) -> None:
        self._stopping.set()
        self.wanted.set()

    def _run(self) -> None:
        while True:
            self.wanted.wait(self.refresh_ms / 1000)
            if self._stopping.is_set():
                return
            if self.refresh_retrying():
                with self._missing_lock:
                    for key in self.keys:
                        if key.kid is not None:
                            self._missing.pop(key.kid, None)

    def _select(self, kid: str | None, alg: str) -> list[Jwk]:
        kty = ALGORITHMS[alg][0]
        keys = [k for k in self.keys if k.kty == kty]
        if kid is not None:
            return [k for k in keys if k.kid == kid]
        return keys


def _fetch_url(url: str) -> bytes:
    if url.startswith("file:"):
        with urllib.request.urlopen(url) as f:  # noqa: S310 - the operator's own file: URL
            return bytes(f.read())
    if not url.startswith(("https:", "http:")):
        raise ValueError(f"unsupported URL scheme: {url}")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as f:  # noqa: S310 - an http(s) URL
        return bytes(f.read())


# --- the validator ------------------------------------------------------------------------------


@dataclass
class JwtValidator:
    """Kafka's ``ValidatorAccessTokenValidator`` over a :class:`JwksSource`."""

    jwks: JwksSource
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    clock_skew_s: int = 30
    clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000

    def __call__(self, token: str) -> ValidatedToken:
        parts = token.split(".")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise IllegalToken(
                "Malformed JWT provided; expected three sections (header, payload, and signature)"
            )
        try:
            header = json.loads(b64url(parts[0]))
            claims = json.loads(b64url(parts[1]))
            signature = b64url(parts[2])
        except (ValueError, UnicodeDecodeError) as e:
            raise IllegalToken(f"Could not validate the access token: malformed JWT: {e}") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise IllegalToken("Could not validate the access token: malformed JWT")
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise IllegalToken(f"Could not validate the access token: algorithm {alg!r} refused")
        kid = header.get("kid") if isinstance(header.get("kid"), str) else None
        signed = f"{parts[0]}.{parts[1]}".encode()
        if not any(k.verify(alg, signed, signature) for k in self.jwks.candidates(kid, alg)):
            raise IllegalToken(
                f"Could not validate the access token: no key of the JWKS (kid {kid}) verifies "
                f"its {alg} signature"
            )
        now_s = self.clock_ms() / 1000
        skew = self.clock_skew_s
        exp = self._numeric(claims, "exp", required=True)
        iat = self._numeric(claims, "iat", required=True)
        nbf = self._numeric(claims, "nbf", required=False)
        assert exp is not None and iat is not None
        if now_s - skew >= exp:
            raise IllegalToken(f"Could not validate the access token: expired at {exp}")
        if nbf is not None and now_s + skew < nbf:
            raise IllegalToken(f"Could not validate the access token: not before {nbf}")
        if self.expected_audience:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if not any(a in self.expected_audience for a in audiences):
                raise IllegalToken(
                    f"Could not validate the access token: audience {aud!r} is not one of "
                    f"{list(self.expected_audience)}"
                )
        if self.expected_issuer is not None and claims.get("iss") != self.expected_issuer:
            raise IllegalToken(
                f"Could not validate the access token: issuer {claims.get('iss')!r} is not "
                f"{self.expected_issuer!r}"
            )
        sub = claims.get(self.sub_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise IllegalToken(
                f"Could not validate the access token: no '{self.sub_claim}' claim"
                if sub is None
                else f"The {self.sub_claim} value must be a non-empty string"
            )
        scope_raw = claims.get(self.scope_claim)
        scopes = [scope_raw] if isinstance(scope_raw, str) else scope_raw
        scope = frozenset(
            s.strip() for s in (scopes if isinstance(scopes, list) else []) if isinstance(s, str)
        )
        if any(not s for s in scope):
            raise IllegalToken(f"The {self.scope_claim} value must be non-empty")
        return ValidatedToken(
            principal_name=sub.strip(),
            lifetime_ms=round(exp * 1000),
            scope=scope,
            start_time_ms=round(iat * 1000),
        )

    @staticmethod
    def _numeric(claims: Mapping[str, Any], name: str, *, required: bool) -> float | None:
        value = claims.get(name)
        if value is None:
            if required:
                raise IllegalToken(f"Could not validate the access token: no '{name}' claim")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise IllegalToken(f"Could not extract the '{name}' claim from the access token")
        if value < 0:
            raise IllegalToken(f"The {name} value must be non-negative")
        return float(value)
