"""The SASL exchange of a connection (Kafka's ``SaslServerAuthenticator``, KIP-43, KIP-152,
KIP-368): which mechanisms a listener offers, the users they accept, and the state of one
connection's authentication.

The exchange on a ``SASL_PLAINTEXT``/``SASL_SSL`` listener:

1. ApiVersions (optional), then SaslHandshake naming a mechanism of ``sasl.enabled.mechanisms``
   (an other one: UNSUPPORTED_SASL_MECHANISM, then the connection closes);
2. after SaslHandshake v1, the tokens travel in SaslAuthenticate requests; after v0, as raw
   size-prefixed frames (:attr:`SaslServerAuthenticator.raw_tokens`);
3. success: the session is authenticated as ``User:<name>``; failure: SaslAuthenticate answers
   SASL_AUTHENTICATION_FAILED with a message, the failure is logged, the connection closes.

Nothing but these requests is served before success (the dispatcher's gate).

With ``connections.max.reauth.ms`` (per listener and mechanism), SaslAuthenticate v1+ tells the
client its session lifetime; it re-authenticates in-band (a new SaslHandshake + SaslAuthenticate
on the open connection, same mechanism, same principal) before the session expires, or the
connection is closed at its next request.

Mechanisms: PLAIN (users from PlainLoginModule's ``user_<name>`` options and
``sasl.plain.users.file``), SCRAM-SHA-256 and SCRAM-SHA-512 (credentials from the security
store; delegation tokens with ``tokenauth``), OAUTHBEARER (:mod:`broker.security.oauthbearer`:
a token's ``exp`` bounds the session). Passwords are compared in constant time and never
logged.

Thread-safety: an authenticator belongs to one connection; :class:`ListenerSasl` and the
credential cache are read from every processor thread (immutable snapshots).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from broker.config import BrokerConfig, ConfigError, read_properties
from broker.net.connection import Connection
from broker.net.session import KafkaPrincipal, SaslExchange, SaslState
from broker.security.audit import SecurityAudit
from broker.security.jaas import (
    PLAIN_LOGIN_MODULE,
    JaasConfigError,
    module_options,
    parse_jaas_config,
    plain_users,
)
from broker.security.oauth_jwks import (
    UNSECURED_VALIDATOR_CLASS,
    VALIDATOR_CLASSES,
    JwksError,
    JwksSource,
    JwtValidator,
)
from broker.security.oauthbearer import (
    LOGIN_MODULE as OAUTHBEARER_LOGIN_MODULE,
)
from broker.security.oauthbearer import (
    OAUTHBEARER,
    OAuthBearerConfigError,
    OAuthBearerError,
    OAuthBearerServer,
    UnsecuredValidator,
    Validator,
)
from broker.security.scram import (
    MECHANISMS as SCRAM_MECHANISMS,
)
from broker.security.scram import (
    ScramCredential,
    ScramError,
    ScramServer,
    TokenLookup,
    credential_from_string,
)
from coordination.metadata.security import USERS, EntityConfigs, parse_entity_path

log = logging.getLogger(__name__)

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, OAUTHBEARER)


class SaslFailure(Exception):
    """The exchange failed. ``str()`` is logged; :attr:`client_message` is what the client is
    told (never whether the user exists)."""

    def __init__(self, log_message: str, client_message: str, user: str | None = None) -> None:
        super().__init__(log_message)
        self.client_message = client_message
        self.user = user


class ScramCredentialCache:
    """SCRAM credentials by (mechanism, user), rebuilt from the security store's entity
    configs whenever they change (on any broker of the cluster)."""

    def __init__(self) -> None:
        self._credentials: Mapping[tuple[str, str], ScramCredential] = MappingProxyType({})

    def update(self, entities: EntityConfigs) -> None:
        creds: dict[tuple[str, str], ScramCredential] = {}
        for path, configs in entities.items():
            if not path.startswith(USERS + "/"):
                continue
            parsed = parse_entity_path(path)
            if parsed is None or parsed[1] is not None or parsed[2] or parsed[0] is None:
                continue
            for mechanism in SCRAM_MECHANISMS:
                text = configs.get(mechanism)
                if text is None:
                    continue
                try:
                    creds[(mechanism, parsed[0])] = credential_from_string(text)
                except ValueError:
                    log.warning(
                        "ignoring an unreadable %s credential of user %s", mechanism, parsed[0]
                    )
        self._credentials = MappingProxyType(creds)

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, user))


class _PlainUsersFile:
    """``sasl.plain.users.file`` (``user=password`` lines), re-read when its mtime changes."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self._mtime = -1.0
        self._users: dict[str, str] = {}
        self._lock = threading.Lock()

    def users(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError as e:
            log.warning("cannot read sasl.plain.users.file %s: %s", self.path, e.strerror)
            return {}
        with self._lock:
            if mtime != self._mtime:
                self._users = read_properties(self.path.read_text())
                self._mtime = mtime
            return self._users


class ListenerSasl:
    """What one SASL listener offers: its mechanisms, PLAIN's users, SCRAM's credentials and
    the session lifetime per mechanism."""

    def __init__(
        self,
        listener: str,
        enabled: list[str],
        plain_jaas_users: Mapping[str, str],
        plain_file: _PlainUsersFile,
        scram: ScramCredentialCache,
        reauth_ms: Mapping[str, int],
        oauth_validator: Validator | None = None,
    ) -> None:
        self.listener = listener
        self.enabled = list(enabled)
        self._plain_jaas = dict(plain_jaas_users)
        self._plain_file = plain_file
        self.scram = scram
        self.reauth_ms = dict(reauth_ms)
        #: what validates OAUTHBEARER tokens (None: the listener does not offer it)
        self.oauth_validator = oauth_validator
        #: delegation tokens' SCRAM credentials (set once the security store is up; None:
        #: a ``tokenauth`` login fails as for an unknown token)
        self.token_lookup: TokenLookup | None = None

    def plain_password(self, user: str) -> str | None:
        password = self._plain_jaas.get(user)
        if password is None:
            password = self._plain_file.users().get(user)
        return password

    @classmethod
    def from_config(
        cls, config: BrokerConfig, listener: str, scram: ScramCredentialCache
    ) -> ListenerSasl:
        """Raises ConfigError for an unsupported mechanism or an unreadable JAAS config."""
        enabled = [str(m).upper() for m in config.for_listener(listener, "sasl.enabled.mechanisms")]
        if not enabled:
            raise ConfigError(f"listener {listener} uses SASL but sasl.enabled.mechanisms is empty")
        unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
        if unsupported:
            raise ConfigError(
                f"listener {listener}: SASL mechanism(s) {', '.join(unsupported)} are not "
                f"supported (sasl.enabled.mechanisms; supported: {', '.join(SUPPORTED_MECHANISMS)})"
            )
        plain: dict[str, str] = {}
        plain_file = _PlainUsersFile(config["sasl.plain.users.file"])
        if PLAIN in enabled:
            options = _login_options(config, listener, PLAIN, PLAIN_LOGIN_MODULE)
            if options is not None:
                plain = plain_users(options)
            if not plain and plain_file.path is None:
                log.warning(
                    "listener %s offers SASL/PLAIN but no user_<name> option of "
                    "PlainLoginModule (listener.name.%s.plain.sasl.jaas.config) nor "
                    "sasl.plain.users.file names any user: every PLAIN login will fail",
                    listener,
                    listener.lower(),
                )
        reauth = {
            m: int(config.for_listener(listener, "connections.max.reauth.ms", mechanism=m) or 0)
            for m in enabled
        }
        oauth = _oauth_validator(config, listener) if OAUTHBEARER in enabled else None
        return cls(listener, enabled, plain, plain_file, scram, reauth, oauth)


def _login_options(
    config: BrokerConfig, listener: str, mechanism: str, login_module: str
) -> dict[str, str] | None:
    """The options of ``login_module`` in the listener's ``sasl.jaas.config`` for
    ``mechanism`` (None: no JAAS config). Raises ConfigError for one that cannot be read or
    names another module."""
    jaas = config.for_listener(listener, "sasl.jaas.config", mechanism=mechanism)
    if not jaas:
        return None
    try:
        options = module_options(parse_jaas_config(str(jaas)), login_module)
    except JaasConfigError as e:
        raise ConfigError(
            f"listener {listener}: the {mechanism} sasl.jaas.config cannot be read: {e}"
        ) from None
    if options is None:
        raise ConfigError(
            f"listener {listener}: the {mechanism} sasl.jaas.config has no {login_module}"
        )
    return options


def _oauth_validator(config: BrokerConfig, listener: str) -> Validator:
    """The listener's OAUTHBEARER validator: with Kafka's ``OAuthBearerValidatorCallbackHandler``
    as ``sasl.server.callback.handler.class``, signed tokens checked against the JWKS
    (:mod:`broker.security.oauth_jwks`); else Kafka's default, the unsecured one, with the
    options of the listener's OAuthBearerLoginModule (``listener.name.<l>.oauthbearer.
    sasl.jaas.config``). Raises ConfigError."""

    def setting(key: str) -> Any:
        return config.for_listener(listener, key, mechanism=OAUTHBEARER)

    handler = str(setting("sasl.server.callback.handler.class") or "").strip()
    if handler in VALIDATOR_CLASSES:
        url = str(setting("sasl.oauthbearer.jwks.endpoint.url") or "").strip()
        if not url:
            raise ConfigError(
                f"listener {listener}: {handler} needs sasl.oauthbearer.jwks.endpoint.url"
            )
        try:
            jwks = JwksSource(
                url,
                refresh_ms=int(setting("sasl.oauthbearer.jwks.endpoint.refresh.ms")),
                retry_backoff_ms=int(setting("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")),
                retry_backoff_max_ms=int(
                    setting("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")
                ),
            )
        except JwksError as e:
            raise ConfigError(f"listener {listener}: OAUTHBEARER: {e}") from None
        issuer = setting("sasl.oauthbearer.expected.issuer")
        return JwtValidator(
            jwks,
            expected_audience=tuple(setting("sasl.oauthbearer.expected.audience") or ()),
            expected_issuer=str(issuer) if issuer else None,
            sub_claim=str(setting("sasl.oauthbearer.sub.claim.name") or "sub"),
            scope_claim=str(setting("sasl.oauthbearer.scope.claim.name") or "scope"),
            clock_skew_s=int(setting("sasl.oauthbearer.clock.skew.seconds")),
        )
    if handler and handler != UNSECURED_VALIDATOR_CLASS:
        raise ConfigError(
            f"listener {listener}: sasl.server.callback.handler.class {handler} is not "
            f"available (OAUTHBEARER: {', '.join(sorted(VALIDATOR_CLASSES))}, or unset for "
            "the unsecured validator)"
        )
    options = _login_options(config, listener, OAUTHBEARER, OAUTHBEARER_LOGIN_MODULE) or {}
    try:
        return UnsecuredValidator.from_options(options)
    except OAuthBearerConfigError as e:
        raise ConfigError(f"listener {listener}: OAUTHBEARER: {e}") from None


class SaslServerAuthenticator:
    """One connection's SASL exchange (one per authentication or re-authentication)."""

    def __init__(
        self,
        sasl: ListenerSasl,
        *,
        reauth_of: tuple[str, KafkaPrincipal] | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.sasl = sasl
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.raw_tokens = False
        self.reauth_of = reauth_of
        self.principal: KafkaPrincipal | None = None
        #: the principal authenticated with a delegation token (KIP-48)
        self.token_authenticated = False
        #: when the credential expires (ms since the epoch: a delegation token's expiry, an
        #: OAuth token's ``exp``), which bounds the session (None: a password)
        self.credential_expiry_ms: int | None = None
        #: the user name the client tried (for the audit log of a failure)
        self.user: str | None = None
        #: whether the client announced re-authentication support (SaslAuthenticate v1+)
        self.client_supports_reauth = False
        self._scram: ScramServer | None = None
        self._oauth: OAuthBearerServer | None = None
        self._clock_ns = clock_ns

    @property
    def reauthenticating(self) -> bool:
        return self.reauth_of is not None

    @property
    def what(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    def handshake(self, version: int, mechanism: str) -> bool:
        """Whether ``mechanism`` is accepted; afterwards tokens are expected (raw ones after
        a v0 handshake)."""
        if self.state != SaslState.HANDSHAKE:
            self.state = SaslState.FAILED
            return False
        if mechanism not in self.sasl.enabled:
            self.state = SaslState.FAILED
            return False
        if self.reauth_of is not None and self.reauth_of[0] != mechanism:
            self.state = SaslState.FAILED
            return False
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self.state = SaslState.AUTHENTICATE
        if mechanism in SCRAM_MECHANISMS:
            self._scram = ScramServer(mechanism, self.sasl.scram.lookup, self.sasl.token_lookup)
        elif mechanism == OAUTHBEARER:
            assert self.sasl.oauth_validator is not None
            self._oauth = OAuthBearerServer(self.sasl.oauth_validator)
        return True

    def authenticate(self, token: bytes) -> bytes:
        """The answer to one client token; raises :class:`SaslFailure`. ``complete`` tells
        whether the exchange is over (then ``principal`` is set)."""
        if self.state != SaslState.AUTHENTICATE or self.mechanism is None:
            self.state = SaslState.FAILED
            raise SaslFailure(
                f"unexpected SASL token in state {self.state.value}",
                f"Unexpected SaslAuthenticate request in SASL state {self.state.value}",
            )
        mechanism = self.mechanism
        generic = (
            f"Authentication failed during {self.what} due to invalid credentials with SASL "
            f"mechanism {mechanism}"
        )
        try:
            if mechanism == PLAIN:
                response = self._plain(token)
            elif mechanism == OAUTHBEARER:
                response = self._oauthbearer(token)
            else:
                assert self._scram is not None
                try:
                    response = self._scram.evaluate(token)
                finally:
                    self.user = self._scram.username or self.user
                if self._scram.complete:
                    self.credential_expiry_ms = self._scram.token_expiry_ms
                    self.token_authenticated = self.credential_expiry_ms is not None
                    self._complete(KafkaPrincipal("User", self._scram.authorization_id or ""))
        except SaslFailure:
            self.state = SaslState.FAILED
            raise
        except ScramError as e:
            self.state = SaslState.FAILED
            raise SaslFailure(str(e), e.client_message or generic, self.user) from None
        return response

    def _oauthbearer(self, message: bytes) -> bytes:
        """One OAUTHBEARER message: a refused token is answered with the JSON error (the
        client then acknowledges it and the exchange fails with that JSON)."""
        oauth = self._oauth
        assert oauth is not None
        try:
            response = oauth.evaluate(message)
        except OAuthBearerError as e:
            raise SaslFailure(
                str(e),
                e.client_message
                or (
                    f"Authentication failed during {self.what} due to invalid credentials with "
                    f"SASL mechanism {OAUTHBEARER}"
                ),
            ) from None
        if oauth.complete and oauth.token is not None:
            self.user = oauth.token.principal_name
            self.credential_expiry_ms = oauth.token.lifetime_ms
            self._complete(KafkaPrincipal("User", oauth.token.principal_name))
        elif oauth.refusal is not None:
            log.info("OAUTHBEARER token refused (%s): %s", response.decode(), oauth.refusal)
        return response

    def _plain(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise SaslFailure(
                "SASL/PLAIN token is not UTF-8", "Invalid SASL/PLAIN response"
            ) from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise SaslFailure(
                f"SASL/PLAIN token has {len(parts)} fields",
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}",
            )
        authzid, user, password = parts
        self.user = user or None
        if not user:
            raise SaslFailure("empty user name", "Authentication failed: username not specified")
        if not password:
            raise SaslFailure(
                f"empty password for user {user!r}", "Authentication failed: password not specified"
            )
        expected = self.sasl.plain_password(user)
        if expected is None or not hmac.compare_digest(password.encode(), expected.encode()):
            reason = "unknown user" if expected is None else "wrong password"
            raise SaslFailure(
                f"{reason} {user!r}", "Authentication failed: Invalid username or password", user
            )
        if authzid and authzid != user:
            raise SaslFailure(
                f"authorization id differs from user {user!r}",
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
                user,
            )
        self._complete(KafkaPrincipal("User", user))
        return b""

    def _complete(self, principal: KafkaPrincipal) -> None:
        if self.reauth_of is not None and self.reauth_of[1] != principal:
            previous = self.reauth_of[1]
            raise SaslFailure(
                f"re-authentication as {principal} on a connection of {previous}",
                f"Cannot change principals during re-authentication from "
                f"{previous.principal_type}.{previous.name}: "
                f"{principal.principal_type}.{principal.name}",
                principal.name,
            )
        self.principal = principal
        self.state = SaslState.COMPLETE

    @property
    def complete(self) -> bool:
        return self.state == SaslState.COMPLETE

    def session_lifetime_ms(self) -> int:
        """``connections.max.reauth.ms`` of the mechanism, bounded by the credential's expiry
        (a delegation token's, an OAuth token's: Kafka's ``SaslServerAuthenticator.ReauthInfo``);
        0: the session never expires, -1: it has already expired."""
        assert self.mechanism is not None
        reauth = max(0, self.sasl.reauth_ms.get(self.mechanism, 0))
        if self.credential_expiry_ms is None:
            return reauth
        left = self.credential_expiry_ms - time.time_ns() // 1_000_000
        if left <= 0:
            return -1
        return min(left, reauth) if reauth else left


def complete_authentication(conn: Connection, auth: SaslExchange, audit: SecurityAudit) -> int:
    """Marks the connection's session authenticated as ``auth.principal`` (or renews it after
    a re-authentication); returns the session lifetime in ms (0: unlimited)."""
    session = conn.session
    assert auth.principal is not None and auth.mechanism is not None
    session.principal = auth.principal
    session.authenticated = True
    session.sasl_mechanism = auth.mechanism
    session.token_authenticated = auth.token_authenticated
    session.authenticator = None
    lifetime_ms = auth.session_lifetime_ms()
    if lifetime_ms < 0:
        # a token past its expiry: the session is over at once (its next request closes it)
        lifetime_ms = 0
        session.reauth_deadline_ns = time.monotonic_ns()
    else:
        session.reauth_deadline_ns = (
            time.monotonic_ns() + lifetime_ms * 1_000_000 if lifetime_ms else 0
        )
    conn.decoder.max_frame_bytes = conn.max_request_bytes
    audit.authenticated(session, auth.mechanism, reauthentication=auth.reauthenticating)
    return lifetime_ms


def fail_authentication(
    conn: Connection, auth: SaslExchange | None, audit: SecurityAudit, reason: str
) -> None:
    """Logs and counts the failure; the connection closes once its answer is sent."""
    mechanism = auth.mechanism if auth is not None else None
    user = auth.user if auth is not None else None
    audit.authentication_failed(conn.session, mechanism or "", user, reason)
    conn.session.authenticator = None
    conn.close_after_responses(f"SASL {auth.what if auth else 'authentication'} failed: {reason}")
