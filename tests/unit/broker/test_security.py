"""The security pieces on their own: JAAS parsing, SCRAM (RFC 7677's test vector and Kafka's
credential strings), SASL state, principals from certificates and mapping rules, the ACL
authorizer's rules and cache, quota rates and throttle times, per-listener configuration."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.net.session import KafkaPrincipal, SaslState
from broker.security.authorizer import AclAuthorizer, AclBindingFilter
from broker.security.jaas import JaasConfigError, parse_jaas_config, plain_users
from broker.security.principal import SslPrincipalMapper, distinguished_name
from broker.security.quotas import ClientQuotaManager
from broker.security.sasl import (
    ListenerSasl,
    SaslFailure,
    SaslServerAuthenticator,
    ScramCredentialCache,
    _PlainUsersFile,
)
from broker.security.scram import (
    ScramClient,
    ScramError,
    ScramServer,
    credential_from_string,
    credential_to_string,
    new_credential,
)
from coordination.metadata.embedded_security import EmbeddedSecurityStore
from coordination.metadata.security import (
    AccessControlEntry,
    AclBinding,
    ResourcePattern,
    SecurityStoreError,
    TokenDataError,
    TokenInformation,
    TokenSnapshot,
    decode_acls,
    decode_token,
    encode_acls,
    encode_token,
    entity_path,
    parse_entity_path,
    sanitize,
)
from protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
ADMIN = KafkaPrincipal("User", "admin")


# -- JAAS ---------------------------------------------------------------------------------------


def test_jaas_as_kafka_users_write_it():
    modules = parse_jaas_config(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" password="admin-secret"\n'
        '  user_admin="admin-secret" user_alice="al\\"ice" user_bob=bare;'
    )
    assert modules[0].flag == "required"
    assert plain_users(modules[0].options) == {
        "admin": "admin-secret",
        "alice": 'al"ice',
        "bob": "bare",
    }


@pytest.mark.parametrize(
    "text",
    [
        "",
        "org.Module required username=x",  # no ;
        "org.Module mandatory;",  # bad flag
        'org.Module required username="x" =;',
    ],
)
def test_bad_jaas_is_refused_without_quoting_values(text):
    with pytest.raises(JaasConfigError) as e:
        parse_jaas_config(text + ' password="s3cr3t"' if text else text)
    assert "s3cr3t" not in str(e.value)


# -- SCRAM --------------------------------------------------------------------------------------


def test_rfc7677_test_vector():
    """RFC 7677 section 3: user "user", password "pencil"."""
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    client.nonce = "rOprNGfwEbeRWgbNEkqO"
    client._bare = f"n=user,r={client.nonce}"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = client.final(server_first)
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_kafkas_credential_string(mechanism):
    cred = new_credential(mechanism, "secret", 4096)
    text = credential_to_string(cred)
    assert text.startswith("salt=") and text.endswith(",iterations=4096")
    assert credential_from_string(text) == cred
    server = ScramServer(mechanism, lambda m, u: cred if u == "alice" else None)
    client = ScramClient(mechanism, "alice", "secret")
    first = server.evaluate(client.first())
    client.verify(server.evaluate(client.final(first)))
    assert server.complete and server.username == "alice"
    # wrong password: refused at the proof
    server = ScramServer(mechanism, lambda m, u: cred)
    bad = ScramClient(mechanism, "alice", "nope")
    with pytest.raises(ScramError, match="invalid password"):
        server.evaluate(bad.final(server.evaluate(bad.first())))
    # unknown user: refused at once, the client is told only that it failed
    with pytest.raises(ScramError) as e:
        ScramServer(mechanism, lambda m, u: None).evaluate(client.first())
    assert e.value.client_message is None


def test_scram_refuses_what_kafka_refuses():
    cred = new_credential("SCRAM-SHA-256", "x", 4096)
    lookup = lambda m, u: cred  # noqa: E731
    with pytest.raises(ScramError, match="channel binding"):
        ScramServer("SCRAM-SHA-256", lookup).evaluate(b"p=tls-unique,,n=a,r=abc")
    with pytest.raises(ScramError) as e:
        ScramServer("SCRAM-SHA-256", lookup).evaluate(b"n,a=bob,n=alice,r=abc")
    assert "authorization id" in (e.value.client_message or "")
    weak = new_credential("SCRAM-SHA-256", "x", 1000)
    with pytest.raises(ScramError, match="fewer than 4096"):
        ScramServer("SCRAM-SHA-256", lambda m, u: weak).evaluate(b"n,,n=a,r=abc")
    with pytest.raises(ValueError):
        credential_from_string("salt=AAAA,stored_key=AAAA,iterations=4096")


def test_saslname_escapes():
    cred = new_credential("SCRAM-SHA-256", "pw", 4096)
    seen = []
    server = ScramServer("SCRAM-SHA-256", lambda m, u: seen.append(u) or cred)
    client = ScramClient("SCRAM-SHA-256", "a,b=c", "pw")
    server.evaluate(client.first())
    assert seen == ["a,b=c"]


# -- the SASL exchange ----------------------------------------------------------------------------


def listener_sasl(tmp_path, reauth_ms: int = 0) -> ListenerSasl:
    users = tmp_path / "users.properties"
    users.write_text("carol=carol-secret\n")
    scram = ScramCredentialCache()
    scram.update(
        {
            "users/alice": {
                "SCRAM-SHA-512": credential_to_string(new_credential("SCRAM-SHA-512", "pw"))
            }
        }
    )
    return ListenerSasl(
        "SASL_PLAINTEXT",
        ["PLAIN", "SCRAM-SHA-512"],
        {"alice": "alice-secret"},
        _PlainUsersFile(str(users)),
        scram,
        {"PLAIN": reauth_ms},
    )


def test_plain_users_from_jaas_and_file(tmp_path):
    sasl = listener_sasl(tmp_path, reauth_ms=5000)
    for user, password in (("alice", "alice-secret"), ("carol", "carol-secret")):
        auth = SaslServerAuthenticator(sasl)
        assert auth.handshake(1, "PLAIN")
        assert auth.authenticate(f"\0{user}\0{password}".encode()) == b""
        assert auth.complete and auth.principal == KafkaPrincipal("User", user)
        assert auth.session_lifetime_ms() == 5000
    auth = SaslServerAuthenticator(sasl)
    auth.handshake(1, "PLAIN")
    with pytest.raises(SaslFailure) as e:
        auth.authenticate(b"\0alice\0wrong")
    assert e.value.client_message == "Authentication failed: Invalid username or password"
    assert auth.state is SaslState.FAILED
    assert not SaslServerAuthenticator(sasl).handshake(1, "GSSAPI")


def test_reauthentication_keeps_mechanism_and_principal(tmp_path):
    sasl = listener_sasl(tmp_path)
    assert not SaslServerAuthenticator(sasl, reauth_of=("PLAIN", ALICE)).handshake(
        1, "SCRAM-SHA-512"
    )
    auth = SaslServerAuthenticator(sasl, reauth_of=("PLAIN", ALICE))
    auth.handshake(1, "PLAIN")
    with pytest.raises(SaslFailure) as e:
        auth.authenticate(b"\0carol\0carol-secret")
    assert "Cannot change principals during re-authentication" in e.value.client_message


def test_config_refuses_unsupported_mechanisms():
    config = BrokerConfig.from_dict(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,GSSAPI",
        }
    )
    with pytest.raises(ConfigError, match="GSSAPI"):
        ListenerSasl.from_config(config, "SASL_PLAINTEXT", ScramCredentialCache())


# -- principals ---------------------------------------------------------------------------------


def test_distinguished_name_as_java_prints_it():
    cert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "Acme, Inc."),),
            (("organizationalUnitName", "eng"),),
            (("commonName", "alice"),),
        )
    }
    assert distinguished_name(cert) == "CN=alice,OU=eng,O=Acme\\, Inc.,C=DE"


def test_ssl_principal_mapping_rules():
    mapper = SslPrincipalMapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,DEFAULT"
    )
    assert mapper.name("CN=kafka1,OU=ServiceUsers,O=Acme,C=DE") == "kafka1"
    assert mapper.name("CN=Alice,OU=ENG,O=Acme,C=DE") == "alice@eng"
    assert mapper.name("CN=bob,O=Acme") == "CN=bob,O=Acme"
    assert SslPrincipalMapper("RULE:^CN=(.*)$/$1/U").name("CN=x") == "X"
    with pytest.raises(ValueError):
        SslPrincipalMapper("RULE:nope")


# -- the ACL authorizer -------------------------------------------------------------------------


def allow(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, AclPermissionType.ALLOW)


def deny(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, AclPermissionType.DENY)


@pytest.fixture
def store(tmp_path):
    s = EmbeddedSecurityStore(tmp_path / "security.json")
    s.start()
    return s


def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pattern)


def test_acl_rules(store):
    authz = AclAuthorizer(store, super_users=[ADMIN])
    authz.create_acls(
        [
            AclBinding(
                topic("orders-", PatternType.PREFIXED), allow("User:alice", AclOperation.READ)
            ),
            AclBinding(
                topic("orders-secret", PatternType.PREFIXED), deny("User:alice", AclOperation.ALL)
            ),
            AclBinding(topic("*"), allow("User:bob", AclOperation.WRITE, host="10.0.0.1")),
            AclBinding(topic("audit"), allow("User:*", AclOperation.ALTER_CONFIGS)),
        ]
    )

    def can(who, op, name, host="127.0.0.1"):
        return authz.authorize(who, host, op, ResourceType.TOPIC, name)

    assert can(ALICE, AclOperation.READ, "orders-eu")
    assert can(ALICE, AclOperation.DESCRIBE, "orders-eu")  # implied by READ
    assert not can(ALICE, AclOperation.WRITE, "orders-eu")
    assert not can(ALICE, AclOperation.READ, "orders-secret-1")  # DENY wins
    assert not can(ALICE, AclOperation.READ, "payroll")  # no ACL: denied
    assert can(BOB, AclOperation.WRITE, "anything", host="10.0.0.1")  # wildcard resource
    assert not can(BOB, AclOperation.WRITE, "anything", host="10.0.0.2")  # other host
    assert can(BOB, AclOperation.DESCRIBE_CONFIGS, "audit")  # User:*, implied by ALTER_CONFIGS
    assert can(ADMIN, AclOperation.DELETE, "payroll")  # super user
    assert authz.authorized_operations(ALICE, "h", ResourceType.TOPIC, "orders-x") == [
        AclOperation.READ,
        AclOperation.DESCRIBE,
    ]
    assert authz.authorize_any(ALICE, "h", AclOperation.READ, ResourceType.TOPIC)
    assert not authz.authorize_any(ALICE, "h", AclOperation.WRITE, ResourceType.TOPIC)
    # the cache follows changes
    assert can(ALICE, AclOperation.READ, "orders-eu")
    deleted = authz.delete_acls(
        [
            AclBindingFilter(
                ResourceType.TOPIC,
                "orders-eu",
                PatternType.MATCH,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ALLOW,
            )
        ]
    )
    # MATCH reaches every pattern that applies to the name: the wildcard too
    assert [b.pattern.name for b in deleted[0][0]] == ["*", "orders-"]
    assert not can(ALICE, AclOperation.READ, "orders-eu")


def test_allow_everyone_if_no_acl_found(store):
    authz = AclAuthorizer(store, allow_everyone_if_no_acl_found=True)
    assert authz.authorize(ALICE, "h", AclOperation.WRITE, ResourceType.TOPIC, "t")
    authz.create_acls([AclBinding(topic("t"), allow("User:bob", AclOperation.WRITE))])
    assert not authz.authorize(ALICE, "h", AclOperation.WRITE, ResourceType.TOPIC, "t")


def test_acls_persist_in_kafkas_json(store, tmp_path):
    entries = {allow("User:alice", AclOperation.READ), deny("User:*", AclOperation.ALL, "1.2.3.4")}
    data = encode_acls(entries)
    assert (
        b'{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}' in data
    )
    assert decode_acls(data) == entries
    AclAuthorizer(store).create_acls([AclBinding(topic("x"), e) for e in entries])
    reloaded = EmbeddedSecurityStore(tmp_path / "security.json")
    reloaded.start()
    assert reloaded.acls[topic("x")] == entries


def test_sanitized_entity_paths():
    assert sanitize("user@example.com") == "user%40example.com"
    assert sanitize("a b*c") == "a%20b%2Ac"
    path = entity_path(user="CN=alice,O=x", client_id="c 1")
    assert path == "users/CN%3Dalice%2CO%3Dx/clients/c%201"
    assert parse_entity_path(path) == ("CN=alice,O=x", "c 1", False, False)
    assert entity_path(default_user=True) == "users/<default>"
    assert parse_entity_path("users/<default>/clients/x") == (None, "x", True, False)


# -- delegation tokens (KIP-48) -----------------------------------------------------------------

TOKEN = TokenInformation(
    token_id="abc",
    owner="User:alice",
    requester="User:alice",
    renewers=("User:bob",),
    issue_timestamp=1,
    max_timestamp=3,
    expiry_timestamp=2,
)


def token(token_id: str, **changes: Any) -> TokenInformation:
    return dataclasses.replace(TOKEN, token_id=token_id, **changes)


def test_token_json_as_kafka_writes_it():
    assert encode_token(TOKEN) == (
        b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aalice",'
        b'"renewers":["User%3Abob"],"issueTimestamp":1,"maxTimestamp":3,'
        b'"expiryTimestamp":2,"tokenId":"abc"}'
    )
    assert decode_token(encode_token(TOKEN)) == TOKEN
    odd = token(
        "t 1",
        owner="User:CN=alice,O=x",
        requester="User:admin*",
        renewers=("User:a b", "Group:ops"),
    )
    data = encode_token(odd)
    assert b'"owner":"User%3ACN%3Dalice%2CO%3Dx"' in data
    assert b'"tokenRequester":"User%3Aadmin%2A"' in data
    assert b'"renewers":["User%3Aa%20b","Group%3Aops"]' in data
    assert decode_token(data) == odd
    assert decode_token(encode_token(token("x", renewers=()))).renewers == ()


@pytest.mark.parametrize("version", [1, 2])
def test_token_json_before_version_3_has_the_owner_as_requester(version):
    data = (
        b'{"version":%d,"owner":"User%%3Aalice","renewers":["User%%3Abob"],'
        b'"issueTimestamp":1,"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"abc"}' % version
    )
    assert decode_token(data) == TOKEN
    # a version 1 or 2 document's tokenRequester, if any, is not read
    doc = json.loads(data)
    doc["tokenRequester"] = "User%3Abob"
    assert decode_token(json.dumps(doc).encode()).requester == "User:alice"


_GOOD = json.loads(encode_token(TOKEN))


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'"a string"',
        json.dumps({**_GOOD, "version": 0}).encode(),
        json.dumps({**_GOOD, "version": 4}).encode(),
        json.dumps({**_GOOD, "version": "three"}).encode(),
        json.dumps({k: v for k, v in _GOOD.items() if k != "tokenId"}).encode(),
        json.dumps({k: v for k, v in _GOOD.items() if k != "expiryTimestamp"}).encode(),
        json.dumps({k: v for k, v in _GOOD.items() if k != "tokenRequester"}).encode(),
        json.dumps({**_GOOD, "owner": "alice"}).encode(),
        json.dumps({**_GOOD, "owner": "%3Aalice"}).encode(),
        json.dumps({**_GOOD, "renewers": ["bob"]}).encode(),
        json.dumps({**_GOOD, "renewers": 5}).encode(),
        json.dumps({**_GOOD, "issueTimestamp": "soon"}).encode(),
        json.dumps({**_GOOD, "maxTimestamp": None}).encode(),
    ],
)
def test_unreadable_token_json_is_refused(data):
    with pytest.raises(TokenDataError):
        decode_token(data)


def token_store(path: Path) -> tuple[EmbeddedSecurityStore, list[TokenSnapshot]]:
    """A started store and the snapshots its token listeners were given."""
    seen: list[TokenSnapshot] = []
    s = EmbeddedSecurityStore(path)
    s.add_token_listener(seen.append)
    s.start()
    return s, seen


def test_embedded_tokens_put_replace_remove_and_persist(tmp_path):
    path = tmp_path / "security.json"
    s, _ = token_store(path)
    assert dict(s.tokens) == {}
    other = token("def", owner="User:bob", requester="User:admin", renewers=())
    s.put_token(TOKEN)
    s.put_token(other)
    assert dict(s.tokens) == {"abc": TOKEN, "def": other}
    renewed = token("abc", expiry_timestamp=3)
    s.put_token(renewed)
    assert dict(s.tokens) == {"abc": renewed, "def": other}
    # on disk: each token under its id, in Kafka's JSON
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    assert doc["tokens"] == {
        "abc": json.loads(encode_token(renewed)),
        "def": json.loads(encode_token(other)),
    }
    assert dict(token_store(path)[0].tokens) == {"abc": renewed, "def": other}

    s.remove_token("abc")
    s.remove_token("abc")  # absent: nothing to do
    s.remove_token("never-there")
    assert dict(s.tokens) == {"def": other}
    assert dict(token_store(path)[0].tokens) == {"def": other}
    s.remove_token("def")
    assert json.loads(path.read_text())["tokens"] == {}
    assert dict(token_store(path)[0].tokens) == {}


def test_embedded_token_listeners_are_told_of_each_change(tmp_path):
    path = tmp_path / "security.json"
    s, seen = token_store(path)
    assert [dict(snapshot) for snapshot in seen] == [{}]  # at start
    s.put_token(TOKEN)
    s.put_token(TOKEN)  # no change: nobody is told
    s.remove_token("abc")
    s.remove_token("abc")
    assert [dict(snapshot) for snapshot in seen] == [{}, {"abc": TOKEN}, {}]
    assert seen[-1] is s.tokens
    s.put_token(TOKEN)
    # a store on the same file publishes what it loaded at start
    assert [dict(snapshot) for snapshot in token_store(path)[1]] == [{"abc": TOKEN}]


def test_embedded_file_without_tokens_loads(tmp_path):
    """A file written before tokens were kept: no ``tokens`` key, no tokens."""
    path = tmp_path / "security.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "acls": [],
                "configs": {"users/alice": {"producer_byte_rate": "1024"}},
            }
        )
    )
    s, seen = token_store(path)
    assert dict(s.tokens) == {}
    assert [dict(snapshot) for snapshot in seen] == [{}]
    assert dict(s.entity_configs["users/alice"]) == {"producer_byte_rate": "1024"}
    s.put_token(TOKEN)
    assert dict(token_store(path)[0].tokens) == {"abc": TOKEN}
    assert dict(token_store(path)[0].entity_configs["users/alice"]) == {
        "producer_byte_rate": "1024"
    }


def test_embedded_unreadable_token_is_skipped(tmp_path, caplog):
    path = tmp_path / "security.json"
    unreadable = {k: v for k, v in json.loads(encode_token(token("bad"))).items() if k != "owner"}
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "acls": [],
                "configs": {},
                "tokens": {
                    "abc": json.loads(encode_token(TOKEN)),
                    "bad": unreadable,
                    "worse": "not a token",
                },
            }
        )
    )
    s, _ = token_store(path)
    assert dict(s.tokens) == {"abc": TOKEN}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("unreadable delegation token bad" in w for w in warnings), warnings
    assert any("unreadable delegation token worse" in w for w in warnings), warnings


def test_embedded_token_write_failure_changes_nothing(tmp_path):
    s, seen = token_store(tmp_path / "security.json")
    s.put_token(TOKEN)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    s.path = blocker / "security.json"  # its directory cannot be made
    with pytest.raises(SecurityStoreError):
        s.put_token(token("def"))
    with pytest.raises(SecurityStoreError):
        s.remove_token("abc")
    assert dict(s.tokens) == {"abc": TOKEN}
    assert [dict(snapshot) for snapshot in seen] == [{}, {"abc": TOKEN}]
    s.path = tmp_path / "security.json"
    s.put_token(token("def"))  # the failed put was rolled back: written now
    assert set(token_store(s.path)[0].tokens) == {"abc", "def"}


# -- quotas -------------------------------------------------------------------------------------


def test_quota_resolution_order_and_throttle():
    m = ClientQuotaManager("producer_byte_rate", samples=11, window_seconds=1)
    m.update(
        {
            "users/alice": {"producer_byte_rate": "1000"},
            "users/<default>": {"producer_byte_rate": "5000"},
            "clients/app": {"producer_byte_rate": "100"},
        }
    )
    assert m._match("alice", "app").limit == 1000  # user before client-id
    assert m._match("bob", "app").limit == 5000  # default user before client-id
    assert m._match("bob", "app").key == ("bob", "")  # each user its own budget
    # 10 s worth at once is within the quota (Kafka's rate spans at least 10 windows)
    assert m.record("alice", "x", 10_000, 0) == 0
    throttle = m.record("alice", "x", 5_000, 100)
    # back within 1000 B/s once enough of the window has passed
    assert 4_000 <= throttle <= 12_000
    assert m.record("alice", "x", 0, 100 + throttle) == 0
    unlimited = ClientQuotaManager("consumer_byte_rate", samples=11, window_seconds=1)
    unlimited.update({})
    assert not unlimited.enabled and unlimited.record("a", "b", 10**9, 0) == 0


# -- configuration ------------------------------------------------------------------------------


def test_listener_and_mechanism_prefixes():
    config = BrokerConfig.from_dict(
        {
            "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.jaas.config": "broker-wide",
            "listener.name.external.sasl.jaas.config": "listener-wide",
            "listener.name.external.scram-sha-256.sasl.jaas.config": "scram only",
            "listener.name.external.ssl.client.auth": "required",
            "listener.name.external.no.such.key": "x",
        }
    )
    assert (
        config.for_listener("EXTERNAL", "sasl.jaas.config", mechanism="SCRAM-SHA-256")
        == "scram only"
    )
    assert config.for_listener("EXTERNAL", "sasl.jaas.config", mechanism="PLAIN") == "listener-wide"
    assert config.for_listener("INTERNAL", "sasl.jaas.config") == "broker-wide"
    assert config.for_listener("EXTERNAL", "ssl.client.auth") == "required"
    assert config.for_listener("INTERNAL", "ssl.client.auth") == "none"
    assert "listener.name.external.no.such.key" in config.unknown
    assert config.inter_broker_listener_name == "INTERNAL"


def test_inter_broker_listener_rules():
    with pytest.raises(ConfigError, match="only one of"):
        BrokerConfig.from_dict(
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "SSL"}
        )
    with pytest.raises(ConfigError, match=r"advertised\.listeners"):
        BrokerConfig.from_dict({"inter.broker.listener.name": "NOPE"})
    config = BrokerConfig.from_dict(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "security.inter.broker.protocol": "SSL",
        }
    )
    assert config.inter_broker_listener_name == "SSL"


def test_properties_escapes_for_inline_pem():
    from broker.config import read_properties

    props = read_properties(
        "ssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\n"
        "x=a\\\\b\\u0041\n"
    )
    assert (
        props["ssl.keystore.key"] == "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
    )
    assert props["x"] == "a\\bA"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    from tests.support.certs import make_tls_files

    return make_tls_files(tmp_path_factory.mktemp("certs"))


def _tls_config(tls_files, **settings: str) -> BrokerConfig:
    return BrokerConfig.load(
        None,
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls_files.server),
            **settings,
        },
    )


def test_tls_versions_and_suites_as_jsse_applies_them(tls_files):
    import ssl

    from broker.security.tls import server_context

    def versions(**settings: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
        ctx = server_context(_tls_config(tls_files, **settings), "SSL")
        return ctx.minimum_version, ctx.maximum_version

    v12, v13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    assert versions() == (v12, v13)
    assert versions(**{"ssl.enabled.protocols": "TLSv1.3"}) == (v13, v13)
    # a list of TLS 1.2 suites only: TLS 1.3 cannot be negotiated (no suite of its own)
    suite = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    assert versions(**{"ssl.cipher.suites": suite}) == (v12, v12)
    ctx = server_context(_tls_config(tls_files, **{"ssl.cipher.suites": suite}), "SSL")
    assert [c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"] == [
        "ECDHE-ECDSA-AES128-GCM-SHA256"
    ]
    # all of OpenSSL's TLS 1.3 suites, and nothing else: TLS 1.2 is off
    tls13 = "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256"
    assert versions(**{"ssl.cipher.suites": tls13}) == (v13, v13)
    assert versions(**{"ssl.cipher.suites": f"{tls13},{suite}"}) == (v12, v13)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ssl.enabled.protocols": "TLSv1.4"}, "ssl.enabled.protocols: TLSv1.4 (expected some of"),
        ({"ssl.enabled.protocols": ""}, "ssl.enabled.protocols: empty"),
        (
            {"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_NOTHING,ECDHE-ECDSA-AES128-GCM-SHA256"},
            "unknown or unavailable cipher suite(s) ECDHE-ECDSA-NOTHING (Kafka's IANA names",
        ),
        (
            {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
            "names the TLS 1.3 suite(s) TLS_AES_128_GCM_SHA256, but Odradek serves TLS 1.3 "
            "with all of",
        ),
        (
            {
                "ssl.enabled.protocols": "TLSv1.3",
                "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            },
            "ssl.cipher.suites: no suite for the versions of ssl.enabled.protocols (TLSv1.3)",
        ),
        ({"ssl.client.auth": "sometimes"}, "expected none, requested or required"),
        (
            {"listener.name.ssl.ssl.keystore.location": "ENCRYPTED"},
            "listener.name.ssl.ssl.keystore.location: the private key in ",
        ),
        (
            {
                "listener.name.ssl.ssl.keystore.location": "ENCRYPTED",
                "ssl.key.password": "not-it",
            },
            "cannot decrypt the private key with ssl.key.password (a wrong password?)",
        ),
        (
            {
                "ssl.keystore.location": "",
                "ssl.keystore.certificate.chain": "CHAIN",
                "ssl.keystore.key": "ENCRYPTED-KEY",
            },
            "the private key given inline is encrypted: set ssl.key.password",
        ),
    ],
)
def test_bad_tls_settings_are_refused_clearly(tls_files, settings, message):
    from broker.security.tls import server_context

    values = {}
    for key, value in settings.items():
        if value == "ENCRYPTED":
            value = str(tls_files.server_encrypted)
        elif value == "CHAIN":
            value = tls_files.server_chain_pem
        elif value == "ENCRYPTED-KEY":
            value = tls_files.server_encrypted_key_pem
        values[key] = value
    with pytest.raises(ConfigError) as refused:
        server_context(_tls_config(tls_files, **values), "SSL")
    assert message in str(refused.value)
    assert "PRIVATE KEY" not in str(refused.value) and "not-it" not in str(refused.value)


def test_encrypted_keys_with_their_password(tls_files):
    from broker.security.tls import server_context
    from tests.support.certs import KEY_PASSWORD

    for settings in (
        {"ssl.keystore.location": str(tls_files.server_encrypted)},
        {
            "ssl.keystore.location": "",
            "ssl.keystore.certificate.chain": tls_files.server_chain_pem,
            "ssl.keystore.key": tls_files.server_encrypted_key_pem,
        },
    ):
        server_context(
            _tls_config(tls_files, **settings, **{"ssl.key.password": KEY_PASSWORD}), "SSL"
        )
