"""Per-connection identity: who is on the other end, through which listener.

Kafka keeps this in ``KafkaChannel`` and ``RequestContext``: the principal (``User:ANONYMOUS``
until SASL or a TLS client certificate says otherwise), the listener name and its security
protocol, the client's address, and the client software it announced in ApiVersions v3+
(KIP-511). A :class:`Session` is created when a connection is accepted and lives as long as it.

Authentication state lives here too: on a ``PLAINTEXT``/``SSL`` listener a session is
authenticated from the start; on a ``SASL_*`` listener it is not until the SASL exchange
(SaslHandshake, SaslAuthenticate) completes, and the dispatcher serves nothing else before that.

Thread-safety: owned by one connection, on one processor loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """Kafka's ``KafkaPrincipal``: ``<type>:<name>``, e.g. ``User:alice``."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class SaslState(Enum):
    """Where a connection's SASL exchange stands (Kafka's ``SaslServerAuthenticator`` states)."""

    HANDSHAKE = "handshake"  # ApiVersions or SaslHandshake expected
    AUTHENTICATE = "authenticate"  # SaslAuthenticate (or raw tokens after a v0 handshake)
    COMPLETE = "complete"
    FAILED = "failed"


class SaslExchange(Protocol):
    """One SASL exchange in progress on a session, as the dispatcher's gate and the
    SaslHandshake/SaslAuthenticate handlers drive it. Implemented by
    :class:`broker.security.sasl.SaslServerAuthenticator` (defined here, not imported, because
    the security package builds on the network layer)."""

    #: the client sent SaslAuthenticate v1+, so it can re-authenticate (KIP-368)
    client_supports_reauth: bool

    @property
    def state(self) -> SaslState: ...

    @property
    def raw_tokens(self) -> bool:
        """Tokens travel as raw size-prefixed frames (after a v0 SaslHandshake), not in
        SaslAuthenticate requests."""

    @property
    def mechanism(self) -> str | None: ...

    @property
    def principal(self) -> KafkaPrincipal | None:
        """Who authenticated, once :attr:`complete`."""

    @property
    def user(self) -> str | None:
        """The user name the client tried (for the audit log of a failure)."""

    @property
    def token_authenticated(self) -> bool:
        """The principal authenticated with a delegation token (KIP-48)."""

    @property
    def reauthenticating(self) -> bool: ...

    @property
    def what(self) -> str:
        """``"authentication"`` or ``"re-authentication"``, for messages."""

    @property
    def complete(self) -> bool: ...

    def handshake(self, version: int, mechanism: str) -> bool:
        """Whether SaslHandshake ``version`` may go on with ``mechanism``."""

    def authenticate(self, token: bytes) -> bytes:
        """The answer to one client token (raises on failure)."""

    def session_lifetime_ms(self) -> int:
        """The authenticated session's lifetime (0: unlimited)."""


#: Security protocols whose sessions start authenticated (no SASL exchange).
_NO_SASL = frozenset({"PLAINTEXT", "SSL"})


@dataclass(slots=True)
class Session:
    """One connection's identity and authentication state."""

    listener: str
    security_protocol: str
    #: the peer's (host, port)
    peer: tuple[str, int]
    principal: KafkaPrincipal = ANONYMOUS
    authenticated: bool = False
    #: what the client announced in ApiVersions v3+ (KIP-511), for metrics and logs
    client_software_name: str = ""
    client_software_version: str = ""
    #: SASL mechanism the session authenticated with (None: none, or not yet)
    sasl_mechanism: str | None = field(default=None)
    #: the SASL exchange in progress, or None
    authenticator: SaslExchange | None = None
    #: the principal authenticated with a delegation token (KIP-48): Kafka's
    #: ``KafkaPrincipal.tokenAuthenticated``; such a session may not use the token APIs
    token_authenticated: bool = False
    #: when the SASL session expires (time.monotonic_ns; 0: never): a client must
    #: re-authenticate before then (KIP-368, connections.max.reauth.ms)
    reauth_deadline_ns: int = 0
    #: when the last re-authentication began (time.monotonic_ns; 0: none yet): Kafka takes at
    #: most one a second (KafkaChannel.maybeBeginServerReauthentication)
    reauth_started_ns: int = 0

    @classmethod
    def accepted(cls, listener: str, security_protocol: str, peer: tuple[str, int]) -> Session:
        return cls(
            listener,
            security_protocol,
            peer,
            authenticated=security_protocol in _NO_SASL,
        )

    @property
    def client_host(self) -> str:
        return self.peer[0]
