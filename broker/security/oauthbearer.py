"""SASL/OAUTHBEARER (KIP-255, RFC 7628) on the server side, as Kafka's ``OAuthBearerSaslServer``
with its default validator, ``OAuthBearerUnsecuredValidatorCallbackHandler``.

The client's one message (``OAuthBearerClientInitialResponse``)::

    n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]...^A

(``^A`` is ``\\x01``; the other key-value pairs are SASL extensions, which this validator takes
all). A token the validator refuses is not a failure at once: the server answers a JSON error
(``{"status":"invalid_token"}``, or ``insufficient_scope`` with the missing ``scope``), the
client acknowledges it with a lone ``\\x01``, and only then does the exchange fail, with that
JSON as the message. A message that is not a client initial response fails at once.

The unsecured validator reads an unsecured JWS (``<header>.<claims>.``, algorithm ``none``, no
signature), as Kafka's ``OAuthBearerUnsecuredJws`` does (standard base64, as Kafka's decoder),
and checks: the principal claim (``sub``, or the ``unsecuredValidatorPrincipalClaimName``
option) is a non-blank string; ``exp`` is present and in the future (less
``unsecuredValidatorAllowableClockSkewMs``); ``iat``, if present, not in the future and
before ``exp``; the scope claim (``scope``, or ``unsecuredValidatorScopeClaimName``) holds
every scope of ``unsecuredValidatorRequiredScope``. The options are those of the listener's
OAUTHBEARER ``sasl.jaas.config`` (``OAuthBearerLoginModule``). Such tokens carry no signature:
this validator is for development and tests, as Kafka documents it; a production listener
validates signed tokens (:mod:`broker.security.oauth_jwks`).

Sans-IO: messages in, messages out.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

OAUTHBEARER = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SEPARATOR = "\x01"

#: OAuthBearerUnsecuredValidatorCallbackHandler's JAAS options
PRINCIPAL_CLAIM_OPTION = "unsecuredValidatorPrincipalClaimName"
SCOPE_CLAIM_OPTION = "unsecuredValidatorScopeClaimName"
REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope"
CLOCK_SKEW_OPTION = "unsecuredValidatorAllowableClockSkewMs"

# OAuthBearerClientInitialResponse's grammar
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_CLIENT_INITIAL = re.compile(
    f"n,(?:a=(?P<authzid>{_SASLNAME}))?,{SEPARATOR}"
    f"(?P<kvpairs>(?:{_KEY}={_VALUE}{SEPARATOR})*){SEPARATOR}"
)
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")


class OAuthBearerError(Exception):
    """The exchange failed. ``str()`` is logged; :attr:`client_message` is what the client is
    told (None: Kafka's generic message for a SASL failure)."""

    def __init__(self, log_message: str, client_message: str | None = None) -> None:
        super().__init__(log_message)
        self.client_message = client_message


class OAuthBearerConfigError(ValueError):
    """The listener's validator options cannot be used (a start-up error)."""


class IllegalToken(Exception):
    """A token the validator refuses (Kafka's ``OAuthBearerIllegalTokenException``): ``str()``
    is logged; ``failure_scope`` is the required scope when scope was missing."""

    def __init__(self, message: str, failure_scope: str | None = None) -> None:
        super().__init__(message)
        self.failure_scope = failure_scope


class MalformedToken(Exception):
    """A token Kafka's validator fails on outright (no JSON error challenge): the exchange
    fails."""


@dataclass(frozen=True)
class ValidatedToken:
    """Kafka's ``OAuthBearerToken``: whom the token names, until when (ms), and its scope."""

    principal_name: str
    lifetime_ms: int
    scope: frozenset[str] = frozenset()
    start_time_ms: int | None = None


#: a validator: the token's compact serialization -> the token, or raises IllegalToken
Validator = Callable[[str], ValidatedToken]


def parse_scope(text: str) -> list[str]:
    """Kafka's ``OAuthBearerScopeUtils.parseScope``: space-delimited scope items (NQCHAR)."""
    items = []
    for item in text.split(" "):
        if not item:
            continue
        if not _SCOPE_ITEM.fullmatch(item):
            raise OAuthBearerConfigError(f"Invalid scope value: {item}")
        items.append(item)
    return items


def _java_list(items: list[str] | frozenset[str]) -> str:
    """A Java collection's toString (``[a, b]``), as Kafka's messages print scopes."""
    return "[" + ", ".join(items) + "]"


def _b64_json(part: str) -> dict[str, Any]:
    """A JWS part: Java's basic (not URL) base64 decoder, padding optional, then a JSON object
    whose values are kept as Kafka's ``OAuthBearerUnsecuredJws.convert`` keeps them (numbers,
    lists of strings, anything else as text)."""
    if not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", part):
        raise IllegalToken("malformed Base64 URL encoded value")
    bare = part.rstrip("=")
    try:
        raw = base64.b64decode(bare + "=" * (-len(bare) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise IllegalToken("malformed Base64 URL encoded value") from None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise IllegalToken("malformed JSON") from None
    if not isinstance(doc, dict):
        return {}
    return {k: _convert(v) for k, v in doc.items()}


def _text(value: Any) -> str:
    """Jackson's ``asText``: strings as they are, JSON literals as written, containers empty."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return ""


def _convert(value: Any) -> Any:
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return _text(value)


def _type_name(value: Any) -> str:
    if isinstance(value, str):
        return "String"
    if isinstance(value, list):
        return "List"
    if isinstance(value, float):
        return "Double"
    return "Integer" if isinstance(value, int) and abs(value) < 2**31 else "Long"


@dataclass
class UnsecuredValidator:
    """Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler`` with the listener's options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: list[str] = field(default_factory=list)
    clock_skew_ms: int = 0
    clock_ms: Callable[[], int] = field(default=lambda: time.time_ns() // 1_000_000)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        """Raises OAuthBearerConfigError for a negative or unreadable clock skew or a bad scope
        item, as Kafka's handler refuses them."""
        skew_text = (options.get(CLOCK_SKEW_OPTION) or "").strip()
        try:
            skew = int(skew_text) if skew_text else 0
        except ValueError:
            raise OAuthBearerConfigError(
                f"{CLOCK_SKEW_OPTION}: not an integer: {skew_text!r}"
            ) from None
        if skew < 0:
            raise OAuthBearerConfigError(
                f"Allowable clock skew millis must not be negative: {skew_text}"
            )
        return cls(
            principal_claim=(options.get(PRINCIPAL_CLAIM_OPTION) or "").strip() or "sub",
            scope_claim=(options.get(SCOPE_CLAIM_OPTION) or "").strip() or "scope",
            required_scope=parse_scope((options.get(REQUIRED_SCOPE_OPTION) or "").strip()),
            clock_skew_ms=skew,
        )

    def __call__(self, token: str) -> ValidatedToken:
        """Raises IllegalToken, or MalformedToken where Kafka's parser fails outright."""
        # in the order of Kafka's OAuthBearerUnsecuredJws, then its handler's checks
        claims = self._unsecured_jws(token)
        scope = self._scope(claims)
        exp = self._number(claims, "exp")
        if exp is None:
            raise IllegalToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if principal is not None and not isinstance(principal, str):
            raise IllegalToken(
                f"The '{self.principal_claim}' claim was not of type String: "
                f"{_type_name(principal)}"
            )
        if principal is None or not principal.strip():
            raise IllegalToken(f"No principal name in JWT claim: {self.principal_claim}")
        iat = self._number(claims, "iat")
        now = self.clock_ms()
        skew = self.clock_skew_ms
        if iat is not None and 1000 * iat > now + skew:
            raise IllegalToken(
                f"The Issued At value ({iat:f} seconds) was after the indicated time ({now} ms) "
                f"plus allowable clock skew ({skew} ms)"
            )
        if now - skew >= 1000 * exp:
            raise IllegalToken(
                f"The indicated time ({now} ms) minus allowable clock skew ({skew} ms) was on "
                f"or after the Expiration Time value ({exp:f} seconds)"
            )
        if iat is not None and exp <= iat:
            raise IllegalToken(
                f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time "
                f"({iat:f} seconds)"
            )
        for required in self.required_scope:
            if required not in scope:
                raise IllegalToken(
                    f"The provided scope ({_java_list(scope)}) was missing a required scope "
                    f"({required}).  All required scope elements: "
                    f"{_java_list(self.required_scope)}",
                    failure_scope=_java_list(self.required_scope),
                )
        return ValidatedToken(
            principal_name=principal,
            lifetime_ms=_ms(exp),
            scope=scope,
            start_time_ms=_ms(iat) if iat is not None else None,
        )

    @staticmethod
    def _unsecured_jws(token: str) -> dict[str, Any]:
        if ".." in token:
            raise IllegalToken("Malformed compact serialization contains '..'")
        # Java's String.split drops trailing empty strings; Kafka adds back one for a final '.'
        splits = token.split(".")
        while splits and not splits[-1]:
            splits.pop()
        if token.endswith("."):
            splits.append("")
        if len(splits) != 3:
            raise IllegalToken(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                "values"
            )
        header = _b64_json(splits[0])
        claims = _b64_json(splits[1])
        if "alg" not in header:
            # a NullPointerException in Kafka, which closes the connection unanswered
            raise MalformedToken("JWS header must have an Algorithm value")
        if header["alg"] != "none":
            raise IllegalToken("Unsecured JWS must have 'none' for an algorithm")
        if splits[2]:
            raise IllegalToken("Unsecured JWS must not contain a digital signature")
        return claims

    def _scope(self, claims: dict[str, Any]) -> frozenset[str]:
        value = claims.get(self.scope_claim)
        if value is None:
            return frozenset()
        if isinstance(value, str):
            return frozenset([value.strip()]) if value.strip() else frozenset()
        if isinstance(value, list):
            return frozenset(s.strip() for s in value if s.strip())
        raise IllegalToken(
            f"The '{self.scope_claim}' claim was not of type List: {_type_name(value)}"
        )

    @staticmethod
    def _number(claims: dict[str, Any], name: str) -> float | None:
        value = claims.get(name)
        if value is None:
            return None
        if isinstance(value, int | float):
            return float(value)
        raise IllegalToken(f"The '{name}' claim was not of type Number: {_type_name(value)}")


def _ms(seconds: float) -> int:
    """Kafka's ``Math.round(seconds * 1000)`` (half up)."""
    return math.floor(seconds * 1000 + 0.5)


class OAuthBearerServer:
    """One server-side OAUTHBEARER exchange (Kafka's ``OAuthBearerSaslServer``)."""

    def __init__(self, validator: Validator) -> None:
        self._validate = validator
        self.complete = False
        self.token: ValidatedToken | None = None
        #: the SASL extensions the client sent (every one taken)
        self.extensions: dict[str, str] = {}
        #: the JSON error last sent, awaiting the client's ``\\x01``
        self._error: str | None = None
        self.refusal: str | None = None

    def evaluate(self, message: bytes) -> bytes:
        """The answer to the client's message; raises OAuthBearerError."""
        if self.complete:
            raise OAuthBearerError("unexpected OAUTHBEARER message after the exchange completed")
        if message == SEPARATOR.encode() and self._error is not None:
            raise OAuthBearerError(f"the client acknowledged the error {self._error}", self._error)
        self._error = None
        token, authzid, extensions = self._client_initial_response(message)
        try:
            validated = self._validate(token)
        except MalformedToken as e:
            raise OAuthBearerError(f"unreadable token: {e}") from None
        except IllegalToken as e:
            status = "insufficient_scope" if e.failure_scope is not None else "invalid_token"
            error = f'{{"status":"{status}"'
            if e.failure_scope is not None:
                error += f', "scope":"{e.failure_scope}"'
            self._error = error + "}"
            #: why the token was refused (for the log; the client sees only the status)
            self.refusal = str(e)
            return self._error.encode()
        if authzid and authzid != validated.principal_name:
            message_text = (
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({validated.principal_name})"
            )
            raise OAuthBearerError(message_text, message_text)
        self.token = validated
        self.extensions = extensions
        self.complete = True
        return b""

    @staticmethod
    def _client_initial_response(message: bytes) -> tuple[str, str, dict[str, str]]:
        try:
            text = message.decode()
        except UnicodeDecodeError:
            raise OAuthBearerError("Invalid OAUTHBEARER client first message") from None
        m = _CLIENT_INITIAL.fullmatch(text)
        if m is None:
            raise OAuthBearerError("Invalid OAUTHBEARER client first message")
        properties: dict[str, str] = {}
        for pair in m.group("kvpairs").split(SEPARATOR):
            if pair:
                key, _, value = pair.partition("=")
                properties[key] = value
        auth = properties.pop("auth", None)
        if auth is None:
            raise OAuthBearerError("Invalid OAUTHBEARER client first message: 'auth' not specified")
        a = _AUTH.fullmatch(auth)
        if a is None:
            raise OAuthBearerError(
                "Invalid OAUTHBEARER client first message: invalid 'auth' format"
            )
        if a.group("scheme").lower() != "bearer":
            raise OAuthBearerError(
                f"Invalid scheme in OAUTHBEARER client first message: {a.group('scheme')}"
            )
        return a.group("token"), m.group("authzid") or "", properties
