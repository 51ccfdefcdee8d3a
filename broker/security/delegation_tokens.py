"""Delegation tokens (KIP-48, KIP-373), as Kafka's ``DelegationTokenControlManager`` and
``DelegationTokenManager`` keep them.

* A token is a random id (Kafka's ``Uuid`` string) and an HMAC: HmacSHA512 of the id under
  ``delegation.token.secret.key``, which every broker shares. The security store keeps each
  token's :class:`TokenInformation` (owner, requester, renewers, issue, expiry and maximum
  timestamps), never its HMAC; each broker derives the HMAC again.
* A client authenticates with a token over SCRAM (either mechanism) with the ``tokenauth=true``
  extension, the token id as user name and the base64 HMAC as password. The session's
  principal is ``User:<owner's name>``, marked token-authenticated (such a session may not
  create, renew, expire or describe tokens), and lives at most until the token expires.
* Create, renew and expire follow the KRaft controller (Kafka 4): a renewal moves the expiry
  by at most ``delegation.token.expiry.time.ms``, never past the token's maximum; an expiry
  period below zero removes the token at once. Expired tokens are removed every
  ``delegation.token.expiry.check.interval.ms``.

Thread-safety: writes serialise on a lock (the store is written on a handler's thread); the
lookups read immutable snapshots rebuilt when the store publishes a change.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import NamedTuple

from broker.config import BrokerConfig
from broker.net.session import KafkaPrincipal
from broker.security.principal import parse_principal
from broker.security.scram import MECHANISMS, ScramCredential, new_credential
from coordination.metadata.security import SecurityStore, TokenInformation, TokenSnapshot
from coordination.metadata.view import random_kafka_uuid, uuid_to_base64
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: Kafka's ScramMechanism.minIterations, the iterations of a token's SCRAM credentials
TOKEN_SCRAM_ITERATIONS = 4096
USER_TYPE = "User"


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's ``createHmac``: HmacSHA512 of the token id's UTF-8 bytes under the secret's."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def _sum(now: int, duration: int) -> int:
    """``now + duration``, saturating at Java's Long.MAX_VALUE as the controller's ``sum``."""
    return min(now + duration, 2**63 - 1)


class TokenAuth(NamedTuple):
    """What a SCRAM exchange with ``tokenauth=true`` needs of a token (a
    :data:`broker.security.scram.TokenLookup` answer)."""

    credential: ScramCredential
    owner_name: str
    expiry_timestamp: int


class DelegationTokens:
    """The broker's delegation tokens: the operations of the four token APIs and the SCRAM
    lookup of a token-authenticated login."""

    def __init__(
        self,
        store: SecurityStore,
        config: BrokerConfig,
        *,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.store = store
        secret = config["delegation.token.secret.key"]
        self._secret: str | None = str(secret) if secret else None
        self.max_lifetime_ms = int(config["delegation.token.max.lifetime.ms"])
        self.renew_time_ms = int(config["delegation.token.expiry.time.ms"])
        self.check_interval_ms = int(config["delegation.token.expiry.check.interval.ms"])
        self._clock_ms = clock_ms
        #: re-entrant: a write publishes the store's new snapshot to :meth:`_update` on the
        #: writer's thread
        self._lock = threading.RLock()
        #: base64 HMAC -> token id, for the tokens of the store's last snapshot
        self._by_hmac: Mapping[str, str] = MappingProxyType({})
        #: (mechanism, token id) -> the token's SCRAM credential, made on first use
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self._sweeper: threading.Thread | None = None
        self._stopping = threading.Event()
        store.add_token_listener(self._update)
        self._update(store.tokens)

    @property
    def enabled(self) -> bool:
        return self._secret is not None

    def hmac_of(self, token_id: str) -> bytes:
        assert self._secret is not None
        return create_hmac(token_id, self._secret)

    def _update(self, tokens: TokenSnapshot) -> None:
        if self._secret is None:
            return
        by_hmac = {base64.b64encode(self.hmac_of(t)).decode(): t for t in tokens}
        self._by_hmac = MappingProxyType(by_hmac)
        with self._lock:
            for key in [k for k in self._credentials if k[1] not in tokens]:
                del self._credentials[key]

    def _token_for_hmac(self, mac: bytes) -> TokenInformation | None:
        token_id = self._by_hmac.get(base64.b64encode(mac).decode())
        return self.store.tokens.get(token_id) if token_id is not None else None

    # -- the APIs ------------------------------------------------------------------------------

    def create(
        self,
        owner: KafkaPrincipal,
        requester: KafkaPrincipal,
        renewers: Iterable[KafkaPrincipal],
        max_lifetime_ms: int,
    ) -> tuple[TokenInformation, bytes]:
        """A new token (the caller checked that it is enabled and the renewers are users).
        Raises SecurityStoreError."""
        now = self._clock_ms()
        lifetime = self.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ts = _sum(now, lifetime)
        token = TokenInformation(
            token_id=uuid_to_base64(random_kafka_uuid()),
            owner=str(owner),
            requester=str(requester),
            renewers=tuple(str(r) for r in renewers),
            issue_timestamp=now,
            max_timestamp=max_ts,
            expiry_timestamp=min(max_ts, _sum(now, self.renew_time_ms)),
        )
        with self._lock:
            self.store.put_token(token)
        log.info("created delegation token %s for owner %s", token.token_id, token.owner)
        return token, self.hmac_of(token.token_id)

    def renew(self, principal: KafkaPrincipal, mac: bytes, period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp). Raises SecurityStoreError."""
        with self._lock:
            now = self._clock_ms()
            token = self._token_for_hmac(mac)
            if token is None:
                return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
            if token.max_timestamp < now or token.expiry_timestamp < now:
                return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
            if not _may_renew(token, principal):
                return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
            renew = self.renew_time_ms
            if period_ms > 0:
                renew = min(renew, period_ms)
            expiry = min(token.max_timestamp, now + renew)
            self.store.put_token(replace(token, expiry_timestamp=expiry))
        log.info("renewed delegation token %s for owner %s", token.token_id, token.owner)
        return ErrorCode.NONE, expiry

    def expire(
        self, principal: KafkaPrincipal, mac: bytes, period_ms: int
    ) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp): a negative period removes the token at once.
        Raises SecurityStoreError."""
        with self._lock:
            now = self._clock_ms()
            token = self._token_for_hmac(mac)
            if token is None:
                return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
            if not _may_renew(token, principal):
                return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
            if period_ms < 0:
                self.store.remove_token(token.token_id)
                log.info("expired delegation token %s for owner %s", token.token_id, token.owner)
                return ErrorCode.NONE, now
            if token.max_timestamp < now or token.expiry_timestamp < now:
                return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
            expiry = min(token.max_timestamp, _sum(now, period_ms))
            self.store.put_token(replace(token, expiry_timestamp=expiry))
        log.info("set the expiry of delegation token %s to %d", token.token_id, expiry)
        return ErrorCode.NONE, expiry

    def describe(
        self,
        requester: KafkaPrincipal,
        owners: list[KafkaPrincipal] | None,
        may_describe: Callable[[TokenInformation], bool],
    ) -> list[tuple[TokenInformation, bytes]]:
        """Kafka's ``DelegationTokenManager.filterToken``: the tokens of ``owners`` (None:
        every token) that the requester owns, requested or renews, or may otherwise describe
        (``may_describe``: DESCRIBE on the token, or DESCRIBE_TOKENS on its owner)."""
        out = []
        for token in self.store.tokens.values():
            if owners is not None and not any(_owner_or_renewer(token, o) for o in owners):
                continue
            if _owner_or_renewer(token, requester) or may_describe(token):
                out.append((token, self.hmac_of(token.token_id)))
        return out

    def sweep(self) -> int:
        """Removes the expired tokens (Kafka's ``expireTokens``); returns how many."""
        if not self.enabled:
            return 0
        removed = 0
        with self._lock:
            now = self._clock_ms()
            for token in list(self.store.tokens.values()):
                if token.max_timestamp < now or token.expiry_timestamp < now:
                    self.store.remove_token(token.token_id)
                    log.info("delegation token %s of owner %s expired", token.token_id, token.owner)
                    removed += 1
        return removed

    def start(self) -> None:
        """The thread that removes expired tokens every ``check_interval_ms`` (as each of
        Kafka's ZooKeeper-mode brokers does; removing a token twice is harmless)."""
        if not self.enabled or self._sweeper is not None:
            return
        self._sweeper = threading.Thread(
            target=self._sweep_loop, name="delegation-token-expiry", daemon=True
        )
        self._sweeper.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout=5)

    def _sweep_loop(self) -> None:
        while not self._stopping.wait(self.check_interval_ms / 1000):
            try:
                self.sweep()
            except Exception as e:  # noqa: BLE001 - the store unavailable: try again next time
                log.warning("could not remove expired delegation tokens: %s", e)

    # -- authentication ------------------------------------------------------------------------

    def scram_lookup(self, mechanism: str, token_id: str) -> TokenAuth | None:
        """The SCRAM credential of a token (the base64 HMAC as password, Kafka's
        ``prepareScramCredentials``), or None for an unknown token or when tokens are off."""
        if self._secret is None or mechanism not in MECHANISMS:
            return None
        token = self.store.tokens.get(token_id)
        if token is None:
            return None
        key = (mechanism, token_id)
        credential = self._credentials.get(key)
        if credential is None:
            password = base64.b64encode(self.hmac_of(token_id)).decode()
            credential = new_credential(mechanism, password, TOKEN_SCRAM_ITERATIONS)
            with self._lock:
                self._credentials[key] = credential
        return TokenAuth(credential, parse_principal(token.owner).name, token.expiry_timestamp)


def _may_renew(token: TokenInformation, principal: KafkaPrincipal) -> bool:
    """Who may renew or expire a token: its owner and its renewers (not its requester)."""
    p = str(principal)
    return p == token.owner or p in token.renewers


def _owner_or_renewer(token: TokenInformation, principal: KafkaPrincipal) -> bool:
    """Kafka's ``TokenInformation.ownerOrRenewer``: the owner, the requester or a renewer."""
    p = str(principal)
    return p == token.owner or p == token.requester or p in token.renewers
