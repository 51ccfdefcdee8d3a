"""TLS settings beyond server authentication and mutual TLS (issue 18), each on a listener of its
own on one broker, with real clients: an encrypted private key (``ssl.key.password``, from a file
and inline), ``ssl.client.auth=requested`` (clients with and without a certificate connect, as
different principals), ``ssl.enabled.protocols`` (a client that cannot speak the one version
enabled is refused) and ``ssl.cipher.suites`` (only the suite listed is negotiated); and bad
values stop the start-up with a message saying what to change.

Listeners of the module's broker (the certificates are made by tests/support/certs.py):

==========  ===========================================================================
ENCFILE     ``ssl.keystore.location``: an encrypted PKCS#8 key + chain, ``ssl.key.password``
ENCINLINE   ``ssl.keystore.key`` (encrypted, inline) + ``ssl.keystore.certificate.chain``
REQUESTED   ``ssl.client.auth=requested``; an ACL lets only the client certificate's principal
            write topic ``guarded`` (``allow.everyone.if.no.acl.found=true`` for the rest)
TLS13       ``ssl.enabled.protocols=TLSv1.3``
TLS12       ``ssl.enabled.protocols=TLSv1.2``
SUITE       ``ssl.cipher.suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`` (the certificate is
            ECDSA); enabled protocols left at TLSv1.2,TLSv1.3
==========  ===========================================================================
"""

from __future__ import annotations

import re
import socket
import ssl

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from protocol.error_codes import ErrorCode
from tests.integration.broker_process import BrokerProcess
from tests.support.certs import KEY_PASSWORD, TlsFiles, make_tls_files
from tests.support.kafka_clients import consume_from_start, create_topic
from tests.support.raw_client import api_versions, call

LISTENERS = ("PLAINTEXT", "ENCFILE", "ENCINLINE", "REQUESTED", "TLS13", "TLS12", "SUITE")
SUITE = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
SUITE_OPENSSL = "ECDHE-ECDSA-AES128-GCM-SHA256"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles):
    proc = BrokerProcess(
        tmp_path_factory.mktemp("tls-settings") / "data",
        {
            "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
            "listener.security.protocol.map": ",".join(
                f"{name}:{'PLAINTEXT' if name == 'PLAINTEXT' else 'SSL'}" for name in LISTENERS
            ),
            "inter.broker.listener.name": "PLAINTEXT",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca),
            "listener.name.encfile.ssl.keystore.location": str(tls.server_encrypted),
            "listener.name.encfile.ssl.key.password": KEY_PASSWORD,
            "listener.name.encinline.ssl.keystore.location": "",
            "listener.name.encinline.ssl.keystore.key": tls.server_encrypted_key_pem,
            "listener.name.encinline.ssl.keystore.certificate.chain": tls.server_chain_pem,
            "listener.name.encinline.ssl.key.password": KEY_PASSWORD,
            "listener.name.requested.ssl.client.auth": "requested",
            "listener.name.tls13.ssl.enabled.protocols": "TLSv1.3",
            "listener.name.tls12.ssl.enabled.protocols": "TLSv1.2",
            "listener.name.suite.ssl.cipher.suites": SUITE,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        },
    )
    proc.start()
    yield proc
    proc.stop()


def ssl_client(tls: TlsFiles, *, cert: bool = False) -> dict[str, str]:
    conf = {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca)}
    if cert:
        conf["ssl.certificate.location"] = str(tls.client_cert)
        conf["ssl.key.location"] = str(tls.client_key)
    return conf


def produce(broker: BrokerProcess, listener: str, topic: str, conf: dict[str, str]) -> list:
    """Produces three records through ``listener``; returns the delivery errors (None: ok)."""
    results: list = []
    producer = Producer(
        {"bootstrap.servers": broker.address(listener), "message.timeout.ms": 15000, **conf}
    )
    for i in range(3):
        producer.produce(topic, b"v%d" % i, callback=lambda err, msg: results.append(err))
    producer.flush(30)
    return results


def handshake(
    broker: BrokerProcess,
    listener: str,
    tls: TlsFiles,
    *,
    minimum: ssl.TLSVersion | None = None,
    maximum: ssl.TLSVersion | None = None,
    ciphers: str | None = None,
) -> tuple[str, str] | str:
    """A Python TLS client limited as asked: (version, cipher) once ApiVersions is answered
    over the connection, or ``refused: <reason>``."""
    ctx = ssl.create_default_context(cafile=str(tls.ca))
    if minimum is not None:
        ctx.minimum_version = minimum
    if maximum is not None:
        ctx.maximum_version = maximum
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    try:
        with (
            socket.create_connection(("127.0.0.1", broker.ports[listener]), timeout=10) as raw,
            ctx.wrap_socket(raw, server_hostname="localhost") as sock,
        ):
            assert call(sock, api_versions(), 3).error_code == ErrorCode.NONE
            version, cipher = sock.version(), sock.cipher()
            assert version is not None and cipher is not None
            return version, cipher[0]
    except (ssl.SSLError, ConnectionError) as e:
        return f"refused: {e}"


@pytest.mark.parametrize("listener", ["ENCFILE", "ENCINLINE"])
def test_an_encrypted_private_key_with_its_password(tls_broker, tls, topic_name, listener):
    assert produce(tls_broker, listener, topic_name, ssl_client(tls)) == [None] * 3
    got = consume_from_start(tls_broker.address(listener), topic_name, 1, 3, client=ssl_client(tls))
    assert sorted(m.value() for m in got) == [b"v0", b"v1", b"v2"]
    assert KEY_PASSWORD not in tls_broker.log()


def test_client_auth_requested_takes_clients_with_and_without_a_certificate(tls_broker, tls):
    create_topic(tls_broker.address("PLAINTEXT"), "guarded")
    admin = AdminClient({"bootstrap.servers": tls_broker.address("PLAINTEXT")})
    only_the_certificate = AclBinding(
        ResourceType.TOPIC,
        "guarded",
        ResourcePatternType.LITERAL,
        f"User:{tls.client_dn}",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for f in admin.create_acls([only_the_certificate]).values():
        f.result(30)
    # with a certificate: User:CN=client-app,O=Client Org,C=DE, allowed to write
    assert produce(tls_broker, "REQUESTED", "guarded", ssl_client(tls, cert=True)) == [None] * 3
    # without: connected all the same, as User:ANONYMOUS, which the ACL leaves out
    refused = produce(tls_broker, "REQUESTED", "guarded", ssl_client(tls))
    assert [e.code() for e in refused] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3
    anonymous = AdminClient(
        {"bootstrap.servers": tls_broker.address("REQUESTED"), **ssl_client(tls)}
    )
    assert "guarded" not in anonymous.list_topics(timeout=10).topics  # connected, not shown
    log = tls_broker.log()
    assert (
        f"TLS client authenticated: principal User:{tls.client_dn} from 127.0.0.1 on listener "
        "REQUESTED" in log
    )
    assert re.search(
        r"Principal = User:ANONYMOUS is Denied Operation = (DESCRIBE|WRITE) from host = "
        r"127\.0\.0\.1 on resource = TOPIC:LITERAL:guarded",
        log,
    )


def test_enabled_protocols_refuse_a_client_without_a_common_version(tls_broker, tls):
    v12, v13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    assert handshake(tls_broker, "TLS13", tls)[0] == "TLSv1.3"
    assert str(handshake(tls_broker, "TLS13", tls, maximum=v12)).startswith("refused")
    assert handshake(tls_broker, "TLS12", tls)[0] == "TLSv1.2"
    assert str(handshake(tls_broker, "TLS12", tls, minimum=v13)).startswith("refused")
    # a real client on each
    assert produce(tls_broker, "TLS13", "versions", ssl_client(tls)) == [None] * 3
    assert produce(tls_broker, "TLS12", "versions", ssl_client(tls)) == [None] * 3
    log = tls_broker.log()
    assert "TLS handshake failed: client 127.0.0.1:" in log
    assert "on listener TLS13" in log and "on listener TLS12" in log


def test_cipher_suites_allow_only_the_suites_listed(tls_broker, tls):
    # only a TLS 1.2 suite listed: TLS 1.2 with it, as Java does (no TLS 1.3 suite, no TLS 1.3)
    assert handshake(tls_broker, "SUITE", tls) == ("TLSv1.2", SUITE_OPENSSL)
    other = handshake(
        tls_broker,
        "SUITE",
        tls,
        maximum=ssl.TLSVersion.TLSv1_2,
        ciphers="ECDHE-ECDSA-AES256-GCM-SHA384",
    )
    assert str(other).startswith("refused")
    assert produce(tls_broker, "SUITE", "suites", ssl_client(tls)) == [None] * 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"ssl.keystore.location": "ENCRYPTED"},
            "listener SSL://127.0.0.1:0 (SSL): ssl.keystore.location: the private key in ",
        ),
        (
            {"ssl.keystore.location": "ENCRYPTED", "ssl.key.password": "not-it"},
            "cannot decrypt the private key with ssl.key.password (a wrong password?)",
        ),
        (
            {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
            "names the TLS 1.3 suite(s) TLS_AES_128_GCM_SHA256, but Odradek serves TLS 1.3 with "
            "all of",
        ),
    ],
)
def test_bad_tls_settings_stop_the_start_up(tmp_path, tls, settings, message):
    values = {k: str(tls.server_encrypted) if v == "ENCRYPTED" else v for k, v in settings.items()}
    proc = BrokerProcess(
        tmp_path / "data",
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server),
            **values,
        },
    )
    with pytest.raises(RuntimeError, match="did not start"):
        proc.start()
    proc.stop()
    log = proc.log()
    assert "broker failed to start" in log and message in log
    assert "Traceback" not in log and "not-it" not in log and "PRIVATE KEY" not in log
