"""Delegation tokens (KIP-48): the token manager's create/renew/expire/describe/sweep as Kafka's
KRaft controller decides them, the SCRAM login with ``tokenauth=true``, and who may use the
token APIs (Kafka's ``KafkaApis.allowTokenRequests``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.config import BrokerConfig
from broker.handlers._tokens import token_requests_allowed
from broker.net.session import ANONYMOUS, KafkaPrincipal, Session
from broker.security.delegation_tokens import DelegationTokens, create_hmac
from broker.security.scram import ScramError, ScramServer, new_credential
from coordination.metadata.embedded_security import EmbeddedSecurityStore
from protocol.error_codes import ErrorCode
from protocol.scram import ScramClient

DAY = 86_400_000
WEEK = 7 * DAY
ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
CAROL = KafkaPrincipal("User", "carol")


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _store(path: Path) -> EmbeddedSecurityStore:
    store = EmbeddedSecurityStore(path / "odradek-security.json")
    store.start()
    return store


def _tokens(
    path: Path, clock: Clock, secret: str | None = "secret", **extra: str
) -> DelegationTokens:
    settings = dict(extra)
    if secret is not None:
        settings["delegation.token.secret.key"] = secret
    return DelegationTokens(_store(path), BrokerConfig.from_dict(settings), clock_ms=clock)


def test_the_hmac_is_hmac_sha512_of_the_id_under_the_secret() -> None:
    # RFC 4231, test case 2: key "Jefe"
    assert create_hmac("what do ya want for nothing?", "Jefe").hex() == (
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
        "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    )


def test_a_token_lives_a_day_within_a_week_or_its_own_shorter_maximum(
    tmp_path: Path, clock: Clock
) -> None:
    tokens = _tokens(tmp_path, clock)
    token, mac = tokens.create(ALICE, ALICE, [BOB], -1)
    assert (token.issue_timestamp, token.expiry_timestamp, token.max_timestamp) == (
        clock.now,
        clock.now + DAY,
        clock.now + WEEK,
    )
    assert mac == hmac.new(b"secret", token.token_id.encode(), hashlib.sha512).digest()
    assert len(token.token_id) == 22 and not token.token_id.startswith("-")
    assert token.renewers == ("User:bob",)
    short, _ = tokens.create(ALICE, ALICE, [], 3_600_000)
    assert short.expiry_timestamp == short.max_timestamp == clock.now + 3_600_000
    longer, _ = tokens.create(ALICE, ALICE, [], 30 * DAY)
    assert longer.max_timestamp == clock.now + WEEK
    assert set(tokens.store.tokens) == {token.token_id, short.token_id, longer.token_id}


def test_the_broker_settings_bound_every_token(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(
        tmp_path,
        clock,
        **{"delegation.token.max.lifetime.ms": "5000", "delegation.token.expiry.time.ms": "2000"},
    )
    token, mac = tokens.create(ALICE, ALICE, [], -1)
    assert (token.expiry_timestamp - clock.now, token.max_timestamp - clock.now) == (2000, 5000)
    clock.now += 1000
    assert tokens.renew(ALICE, mac, 10_000) == (ErrorCode.NONE, clock.now + 2000)
    clock.now += 1900
    assert tokens.renew(ALICE, mac, -1) == (ErrorCode.NONE, clock.now + 2000)
    clock.now += 1100
    assert tokens.renew(ALICE, mac, -1) == (ErrorCode.NONE, token.max_timestamp)


def test_only_the_owner_and_the_renewers_renew_and_expire(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock)
    # carol asked for a token owned by alice that bob may renew
    token, mac = tokens.create(ALICE, CAROL, [BOB], -1)
    clock.now += 10
    assert tokens.renew(CAROL, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert tokens.renew(BOB, mac, 1000) == (ErrorCode.NONE, clock.now + 1000)
    assert tokens.renew(ALICE, mac, 5000) == (ErrorCode.NONE, clock.now + 5000)
    assert tokens.store.tokens[token.token_id].expiry_timestamp == clock.now + 5000
    assert tokens.expire(CAROL, mac, -1) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert tokens.expire(BOB, mac, 100) == (ErrorCode.NONE, clock.now + 100)
    assert tokens.expire(ALICE, mac, -1) == (ErrorCode.NONE, clock.now)
    assert token.token_id not in tokens.store.tokens
    assert tokens.renew(ALICE, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert tokens.expire(ALICE, mac, -1) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert tokens.renew(ALICE, b"not an hmac", 1000) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_an_expired_token_is_refused_but_may_be_removed(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock)
    _token, mac = tokens.create(ALICE, ALICE, [], 1)
    clock.now += 2
    assert tokens.renew(ALICE, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    assert tokens.expire(ALICE, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    # the owner check comes first, as Kafka's controller makes it
    assert tokens.expire(BOB, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert tokens.renew(BOB, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
    assert tokens.expire(ALICE, mac, -1) == (ErrorCode.NONE, clock.now)


def test_the_sweep_removes_expired_tokens(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock)
    _short, _ = tokens.create(ALICE, ALICE, [], 1000)
    kept, _ = tokens.create(ALICE, ALICE, [], -1)
    assert tokens.sweep() == 0
    clock.now += 1001
    assert tokens.sweep() == 1
    assert set(tokens.store.tokens) == {kept.token_id}


def test_a_description_lists_what_the_requester_may_see(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock)
    mine, _ = tokens.create(ALICE, ALICE, [], -1)
    renewable, _ = tokens.create(CAROL, CAROL, [ALICE], -1)
    requested, _ = tokens.create(BOB, ALICE, [], -1)
    others, _ = tokens.create(CAROL, CAROL, [], -1)

    def ids(owners: list[KafkaPrincipal] | None, allowed: bool = False) -> set[str]:
        return {t.token_id for t, _ in tokens.describe(ALICE, owners, lambda t: allowed)}

    assert ids(None) == {mine.token_id, renewable.token_id, requested.token_id}
    assert ids(None, allowed=True) == set(tokens.store.tokens)
    assert ids([CAROL]) == {renewable.token_id}
    assert ids([CAROL], allowed=True) == {renewable.token_id, others.token_id}
    # an owner filter matches owners, requesters and renewers, as Kafka's ownerOrRenewer
    assert ids([ALICE]) == {mine.token_id, renewable.token_id, requested.token_id}
    found = dict(tokens.describe(ALICE, [BOB], lambda t: False))
    assert found[requested] == tokens.hmac_of(requested.token_id)


def test_tokens_and_their_hmacs_outlive_a_restart(tmp_path: Path, clock: Clock) -> None:
    token, mac = _tokens(tmp_path, clock).create(ALICE, ALICE, [], -1)
    again = _tokens(tmp_path, clock)
    assert again.store.tokens[token.token_id] == token
    assert again.renew(ALICE, mac, 1000) == (ErrorCode.NONE, clock.now + 1000)
    # another secret derives other HMACs: the token is not found by its old one
    other = _tokens(tmp_path, clock, secret="another")
    assert other.renew(ALICE, mac, 1000) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_without_a_secret_tokens_are_off(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock, secret=None)
    assert not tokens.enabled
    assert tokens.scram_lookup("SCRAM-SHA-256", "anything") is None
    assert tokens.sweep() == 0
    assert not _tokens(tmp_path, clock, secret="").enabled


def _login(server: ScramServer, username: str, password: str, *, tokenauth: bool = True) -> bytes:
    client = ScramClient(
        server.mechanism,
        username,
        password,
        extensions={"tokenauth": "true"} if tokenauth else None,
    )
    server_first = server.evaluate(client.first())
    return server.evaluate(client.final(server_first))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner(tmp_path: Path, clock: Clock, mechanism: str) -> None:
    tokens = _tokens(tmp_path, clock)
    token, mac = tokens.create(ALICE, CAROL, [], -1)
    password = base64.b64encode(mac).decode()
    server = ScramServer(mechanism, lambda m, u: None, tokens.scram_lookup)
    assert _login(server, token.token_id, password).startswith(b"v=")
    assert server.complete
    assert (server.username, server.authorization_id) == (token.token_id, "alice")
    assert server.token_expiry_ms == token.expiry_timestamp

    wrong = ScramServer(mechanism, lambda m, u: None, tokens.scram_lookup)
    with pytest.raises(ScramError):
        _login(wrong, token.token_id, base64.b64encode(b"x" * 64).decode())
    unknown = ScramServer(mechanism, lambda m, u: None, tokens.scram_lookup)
    with pytest.raises(ScramError, match="Invalid tokenId"):
        _login(unknown, "no-such-token", password)
    without = ScramServer(mechanism, lambda m, u: None)
    with pytest.raises(ScramError, match="Invalid tokenId"):
        _login(without, token.token_id, password)


def test_without_tokenauth_the_user_name_is_a_user(tmp_path: Path, clock: Clock) -> None:
    tokens = _tokens(tmp_path, clock)
    token, _mac = tokens.create(ALICE, ALICE, [], -1)
    users = {token.token_id: new_credential("SCRAM-SHA-256", "user's own password")}
    server = ScramServer("SCRAM-SHA-256", lambda m, u: users.get(u), tokens.scram_lookup)
    _login(server, token.token_id, "user's own password", tokenauth=False)
    assert server.authorization_id == token.token_id and server.token_expiry_ms is None
    token_server = ScramServer("SCRAM-SHA-256", lambda m, u: users.get(u), tokens.scram_lookup)
    with pytest.raises(ScramError):
        _login(token_server, token.token_id, "user's own password")


@pytest.mark.parametrize(
    ("protocol", "principal", "token", "allowed"),
    [
        ("PLAINTEXT", ANONYMOUS, False, False),
        ("SSL", ANONYMOUS, False, False),
        ("SSL", KafkaPrincipal("User", "CN=client"), False, True),
        ("SASL_PLAINTEXT", ALICE, False, True),
        ("SASL_SSL", ALICE, False, True),
        ("SASL_PLAINTEXT", ALICE, True, False),
        ("SASL_SSL", ALICE, True, False),
    ],
)
def test_who_may_use_the_token_apis(
    protocol: str, principal: KafkaPrincipal, token: bool, allowed: bool
) -> None:
    session = Session.accepted("L", protocol, ("127.0.0.1", 1))
    session.principal = principal
    session.token_authenticated = token
    assert token_requests_allowed(SimpleNamespace(session=session)) is allowed  # type: ignore[arg-type]
