"""TLS and SASL with real clients (issue 18): confluent-kafka, kafka-python, aiokafka and kcat over
SSL (server authentication and mutual TLS), SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256/512, and
SASL_SSL, producing and consuming every codec; wrong passwords, unknown users, wrong mechanisms,
expired or unknown client certificates, plaintext on the TLS port and garbage are refused with
the right error or a closed connection and logged, while other connections go on; KIP-368
re-authentication; sensitive configs hidden.

One broker (module scope) has every kind of listener (tests/support/secure_broker.py); the
certificates are made by the test (tests/support/certs.py)."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as ATP
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer

from broker.security.scram import ScramClient
from protocol.error_codes import ErrorCode
from protocol.headers import encode_request
from protocol.messages.metadata import MetadataRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.records.batch import iter_batches
from tests.integration.broker_process import BrokerProcess
from tests.support.certs import TlsFiles, make_tls_files
from tests.support.kafka_clients import consume_from_start
from tests.support.metrics import scrape
from tests.support.ports import free_port
from tests.support.raw_client import api_versions, call, connect, is_closed, read_frame
from tests.support.secure_broker import (
    MODES,
    PASSWORDS,
    REAUTH_MS,
    aiokafka_config,
    kafka_python_config,
    kcat_args,
    librdkafka_config,
    secure_settings,
)
from tests.support.waiting import wait_for

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 20


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles):
    data = tmp_path_factory.mktemp("secure-broker") / "data"
    metrics_port = free_port()
    proc = BrokerProcess(data, secure_settings(tls, **{"metrics.port": str(metrics_port)}))
    proc.metrics_port = metrics_port  # type: ignore[attr-defined]
    proc.start()
    admin = AdminClient({"bootstrap.servers": proc.address("PLAINTEXT")})
    upserts = [
        UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, 4096), password.encode())
        for user, password in PASSWORDS.items()
        for mech in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)
    yield proc
    proc.stop()


def bootstrap(broker: BrokerProcess, mode: str) -> str:
    return broker.address(MODES[mode][0])


def _values(codec: str) -> list[bytes]:
    return [f"{codec}-{i}".encode() * 20 for i in range(PER_CODEC)]


EXPECTED = sorted(v for codec in CODECS for v in _values(codec))


def stored_codecs(broker: BrokerProcess, topic: str) -> set[str]:
    """The compression codecs of the batches in the topic's (one) partition, read from its
    segment files: what the client really sent (the topic keeps the producer's codec)."""
    names = dict(enumerate(CODECS))
    found = set()
    for segment in sorted((Path(broker.data_dir) / f"{topic}-0").glob("*.log")):
        for _, header in iter_batches(segment.read_bytes()):
            found.add(names[header.compression])
    return found


# -- every client, every mode, every codec ---------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_confluent_kafka(secure, tls, topic_name, mode):
    conf = {"bootstrap.servers": bootstrap(secure, mode), **librdkafka_config(mode, tls)}
    for codec in CODECS:
        producer = Producer({**conf, "compression.type": codec, "linger.ms": 5, "acks": "all"})
        for v in _values(codec):
            producer.produce(topic_name, v)
        assert producer.flush(30) == 0
    got = consume_from_start(
        bootstrap(secure, mode), topic_name, 1, len(EXPECTED), client=librdkafka_config(mode, tls)
    )
    assert sorted(m.value() for m in got) == EXPECTED
    assert stored_codecs(secure, topic_name) == set(CODECS)


@pytest.mark.parametrize("mode", list(MODES))
def test_kafka_python(secure, tls, topic_name, mode):
    conf = {"bootstrap_servers": bootstrap(secure, mode), **kafka_python_config(mode, tls)}
    for codec in CODECS:
        producer = KafkaProducer(
            **conf, compression_type=None if codec == "none" else codec, linger_ms=5
        )
        futures = [producer.send(topic_name, v) for v in _values(codec)]
        producer.flush(30)
        for f in futures:
            f.get(10)
        producer.close()
    consumer = KafkaConsumer(
        topic_name, **conf, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    got = sorted(m.value for m in consumer)
    consumer.close()
    assert got == EXPECTED
    assert stored_codecs(secure, topic_name) == set(CODECS)


@pytest.mark.parametrize("mode", list(MODES))
def test_aiokafka(secure, tls, topic_name, mode):
    async def run() -> list[bytes]:
        conf = {"bootstrap_servers": bootstrap(secure, mode), **aiokafka_config(mode, tls)}
        for codec in CODECS:
            producer = AIOKafkaProducer(
                **conf, compression_type=None if codec == "none" else codec, linger_ms=5
            )
            await producer.start()
            try:
                for v in _values(codec):
                    await producer.send(topic_name, v)
                await producer.flush()
            finally:
                await producer.stop()
        consumer = AIOKafkaConsumer(**conf, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([ATP(topic_name, 0)])
            await consumer.seek_to_beginning(ATP(topic_name, 0))
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < len(EXPECTED) and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=2000)
                for msgs in batch.values():
                    got.extend(m.value for m in msgs)
            return got
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(run())) == EXPECTED
    assert stored_codecs(secure, topic_name) == set(CODECS)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed (make test does)")
@pytest.mark.parametrize("mode", list(MODES))
def test_kcat(secure, tls, topic_name, mode):
    """kcat 1.7.1 on librdkafka 2.0.2 (Debian's), built with zstd: every codec, like the
    other clients (``-z zstd`` needs Produce v7 and Fetch v10, which the broker offers)."""
    base = ["kcat", "-b", bootstrap(secure, mode), *kcat_args(mode, tls)]
    for codec in CODECS:
        lines = "".join(v.decode() + "\n" for v in _values(codec))
        subprocess.run(
            [*base, "-P", "-t", topic_name, "-z", codec, "-p", "0"],
            input=lines.encode(),
            check=True,
            timeout=60,
        )
    out = subprocess.run(
        [*base, "-C", "-t", topic_name, "-e", "-o", "beginning", "-f", "%s\n"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert sorted(line.encode() for line in out.stdout.decode().splitlines()) == EXPECTED
    assert stored_codecs(secure, topic_name) == set(CODECS)


# -- refused, logged, and nobody else hurt ----------------------------------------------------


def sasl_connect(
    broker: BrokerProcess, mechanism: str, *, listener: str = "SASL_PLAINTEXT"
) -> socket.socket:
    sock = connect(broker.address(listener))
    answer = call(sock, SaslHandshakeRequest(mechanism=mechanism), 1)
    assert answer.error_code == ErrorCode.NONE, answer
    return sock


def authenticate(sock: socket.socket, token: bytes, version: int = 2, cid: int = 2):
    return call(sock, SaslAuthenticateRequest(auth_bytes=token), version, cid)


def plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


class BackgroundProducer:
    """A healthy client that keeps producing while the others misbehave."""

    def __init__(self, broker: BrokerProcess, tls: TlsFiles, topic: str) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap(broker, "SASL_PLAIN"),
                "linger.ms": 1,
                **librdkafka_config("SASL_PLAIN", tls),
            }
        )
        self.topic = topic
        self.sent = self.delivered = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _done(self, err, msg) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.producer.produce(self.topic, b"still here", callback=self._done)
            self.sent += 1
            self.producer.poll(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert self.producer.flush(30) == 0


@pytest.fixture
def bystander(secure, tls, topic_name):
    producer = BackgroundProducer(secure, tls, topic_name + "-bystander")
    wait_for(lambda: producer.delivered > 0, timeout=30, what="the bystander's first delivery")
    yield producer
    before = producer.delivered
    time.sleep(0.3)
    producer.stop()
    assert producer.errors == []
    assert producer.delivered == producer.sent and producer.delivered > before


def failures(broker: BrokerProcess, listener: str) -> float:
    """``odradek_authentication_total{result="failure"}`` of ``listener``, every mechanism."""
    return sum(
        value
        for name, value in scrape(broker.metrics_port).items()
        if name.startswith("odradek_authentication_total{")
        and f'listener="{listener}"' in name
        and 'result="failure"' in name
    )


def test_sasl_failures_are_answered_then_closed(secure, bystander):
    failed_before = failures(secure, "SASL_PLAINTEXT")
    # PLAIN, wrong password: SASL_AUTHENTICATION_FAILED with Kafka's message, then closed
    sock = sasl_connect(secure, "PLAIN")
    answer = authenticate(sock, plain("alice", "wrong"))
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert is_closed(sock)
    # PLAIN, unknown user: the same answer (no user enumeration)
    sock = sasl_connect(secure, "PLAIN")
    answer = authenticate(sock, plain("mallory", "x"))
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert is_closed(sock)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        generic = (
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {mechanism}"
        )
        # SCRAM, unknown user: refused at the first message
        sock = sasl_connect(secure, mechanism)
        answer = authenticate(sock, ScramClient(mechanism, "mallory", "x").first())
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            generic,
        )
        assert is_closed(sock)
        # SCRAM, wrong password: refused at the proof
        sock = sasl_connect(secure, mechanism)
        client = ScramClient(mechanism, "alice", "wrong")
        first = authenticate(sock, client.first())
        assert first.error_code == ErrorCode.NONE
        answer = authenticate(sock, client.final(bytes(first.auth_bytes)), cid=3)
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            generic,
        )
        assert is_closed(sock)
    # a mechanism the listener does not offer
    sock = connect(secure.address("SASL_PLAINTEXT"))
    answer = call(sock, SaslHandshakeRequest(mechanism="GSSAPI"), 1)
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert sorted(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert is_closed(sock)
    # nothing is served before authentication: a failed authentication, as in Kafka
    sock = connect(secure.address("SASL_PLAINTEXT"))
    early = sock.getsockname()[1]
    sock.sendall(encode_request(MetadataRequest(topics=None), 12, 1))
    assert is_closed(sock)
    # after SaslHandshake only SaslAuthenticate: anything else is answered ILLEGAL_SASL_STATE,
    # then the connection closes (Kafka's SaslServerAuthenticator)
    sock = sasl_connect(secure, "PLAIN")
    during = sock.getsockname()[1]
    assert call(sock, api_versions(), 3, 2).error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert is_closed(sock)
    # SaslAuthenticate with no handshake: closed unanswered
    sock = connect(secure.address("SASL_PLAINTEXT"))
    sock.sendall(encode_request(SaslAuthenticateRequest(auth_bytes=plain("alice", "x")), 2, 1))
    assert is_closed(sock)
    secure.wait_for_log(f"from 127.0.0.1:{during} on listener SASL_PLAINTEXT")
    log = secure.log()
    assert "authentication failed: user alice" in log and "wrong password" in log
    assert "authentication failed: user mallory" in log
    assert "unsupported SASL mechanism 'GSSAPI'" in log
    assert (
        f"authentication failed: user (unknown) from 127.0.0.1:{early} on listener "
        "SASL_PLAINTEXT (SASL -): METADATA before authentication" in log
    )
    assert (
        f"authentication failed: user (unknown) from 127.0.0.1:{during} on listener "
        "SASL_PLAINTEXT (SASL PLAIN): Unexpected Kafka request of type API_VERSIONS during SASL "
        "authentication" in log
    )
    assert "alice-secret" not in log and "wrong" not in log.replace("wrong password", "")
    # every refusal above is counted: 2 PLAIN, 2 x 2 SCRAM, GSSAPI, the three out of turn
    assert failures(secure, "SASL_PLAINTEXT") - failed_before == 10


def test_real_clients_see_the_authentication_error(secure, tls, bystander, caplog):
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap(secure, "SASL_PLAIN"),
            **librdkafka_config("SASL_PLAIN", tls, password="not-it"),
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any("Invalid username or password" in e for e in errors), errors
    del producer
    from kafka.errors import KafkaError as KPError

    # kafka-python 3 retries a refused bootstrap connection until bootstrap_timeout_ms (30 s by
    # default; against Kafka too) and then raises a timeout; the refusal itself is logged
    caplog.set_level(logging.WARNING, logger="kafka")
    with pytest.raises(KPError):
        KafkaProducer(
            bootstrap_servers=bootstrap(secure, "SCRAM-SHA-256"),
            **{**kafka_python_config("SCRAM-SHA-256", tls), "sasl_plain_password": "nope"},
            bootstrap_timeout_ms=5000,
        )
    assert "SaslAuthenticationFailedError" in caplog.text, caplog.text


def test_tls_refusals(secure, tls, bystander):
    host, port = "127.0.0.1", secure.ports["MTLS"]

    def tls_client(cert: Path | None, key: Path | None) -> str:
        ctx = ssl.create_default_context(cafile=str(tls.ca))
        if cert is not None:
            ctx.load_cert_chain(str(cert), str(key))
        try:
            with (
                socket.create_connection((host, port), timeout=10) as raw,
                ctx.wrap_socket(raw, server_hostname=host) as s,
            ):
                # TLS 1.3: the server's refusal of a client certificate arrives on read
                s.sendall(encode_request(api_versions(), 3, 1))
                data = s.recv(4)
                return "answered" if data else "closed"
        except (ssl.SSLError, OSError) as e:
            return f"refused: {e}"

    assert tls_client(tls.client_cert, tls.client_key) == "answered"
    assert tls_client(tls.expired_cert, tls.expired_key).startswith(("refused", "closed"))
    assert tls_client(tls.rogue_cert, tls.rogue_key).startswith(("refused", "closed"))
    assert tls_client(None, None).startswith(("refused", "closed"))
    # a plaintext client on a TLS port, and garbage before any handshake: each refusal is
    # logged with the client's address (its port tells the connections apart)
    sasl_failures = failures(secure, "SASL_PLAINTEXT")
    tls_failures = {
        name: value
        for name, value in scrape(secure.metrics_port).items()
        if name.startswith("odradek_tls_handshake_failures_total")
    }
    expected = []
    for listener in ("SSL", "SASL_SSL"):
        sock = connect(secure.address(listener))
        port = sock.getsockname()[1]
        sock.sendall(encode_request(api_versions(), 3, 1))
        assert closed_after_alert(sock)
        expected.append(f"TLS handshake failed: client 127.0.0.1:{port} on listener {listener}: ")
    garbage = b"\x16\x03\x01\x00\x05garbage-garbage-garbage" * 4
    for listener in ("SSL", "SASL_PLAINTEXT", "PLAINTEXT"):
        sock = connect(secure.address(listener))
        port = sock.getsockname()[1]
        sock.sendall(garbage)
        assert closed_after_alert(sock)
        expected.append(
            {
                "SSL": f"TLS handshake failed: client 127.0.0.1:{port} on listener SSL: ",
                # before authentication on a SASL listener: a failed authentication
                "SASL_PLAINTEXT": f"authentication failed: user (unknown) from 127.0.0.1:{port} "
                "on listener SASL_PLAINTEXT (SASL -): refused a frame",
                "PLAINTEXT": f"closing connection from 127.0.0.1:{port} on listener PLAINTEXT: "
                "refused a frame",
            }[listener]
        )
    for line in expected:
        secure.wait_for_log(line)
    assert failures(secure, "SASL_PLAINTEXT") == sasl_failures + 1
    after = scrape(secure.metrics_port)
    for listener, more in (("SSL", 2), ("SASL_SSL", 1)):
        name = f'odradek_tls_handshake_failures_total{{listener="{listener}"}}'
        assert after[name] == tls_failures.get(name, 0) + more
    log = secure.log()
    assert re.search(
        r"TLS handshake failed: client 127\.0\.0\.1:\d+ on listener MTLS: .*expired", log
    )
    assert "TLS handshake failed: client" in log and "on listener SSL" in log
    assert f"principal User:{tls.client_dn} from 127.0.0.1 on listener MTLS" in log


def closed_after_alert(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whether the peer closes the connection, having sent at most a TLS alert (a record of
    type 21) first, and never a Kafka response."""
    sock.settimeout(timeout)
    received = b""
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                break
            received += data
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return False
    finally:
        sock.close()
    return received == b"" or received[:1] == b"\x15"


def test_raw_sasl_tokens_after_a_v0_handshake(secure):
    sock = connect(secure.address("SASL_PLAINTEXT"))
    assert call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == ErrorCode.NONE
    token = plain("bob", PASSWORDS["bob"])
    sock.sendall(struct.pack(">i", len(token)) + token)
    assert read_frame(sock) == b""  # PLAIN's empty answer, as a raw frame
    answer = call(sock, MetadataRequest(topics=[]), 12, 3)
    assert answer.cluster_id
    sock.close()


def test_sasl_ssl_with_scram_by_hand(secure):
    """The SASL exchange over TLS, token by token (SCRAM-SHA-256 proofs and the server's
    signature checked by our own client)."""
    ctx = ssl.create_default_context(cafile=None)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", secure.ports["SASL_SSL"]), timeout=10)
    sock = ctx.wrap_socket(raw, server_hostname="localhost")
    assert call(sock, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1).error_code == 0
    client = ScramClient("SCRAM-SHA-256", "bob", PASSWORDS["bob"])
    first = authenticate(sock, client.first(), 1)
    final = authenticate(sock, client.final(bytes(first.auth_bytes)), 1, cid=3)
    assert final.error_code == ErrorCode.NONE
    client.verify(bytes(final.auth_bytes))
    assert final.session_lifetime_ms == 0
    assert call(sock, MetadataRequest(topics=[]), 12, 4).cluster_id
    sock.close()


# -- KIP-368 re-authentication ------------------------------------------------------------------


def test_sessions_expire_without_reauthentication(secure):
    sock = connect(secure.address("REAUTH"))
    assert call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    answer = authenticate(sock, plain("bob", PASSWORDS["bob"]), 1)
    assert answer.error_code == ErrorCode.NONE and answer.session_lifetime_ms == REAUTH_MS
    assert call(sock, MetadataRequest(topics=[]), 12, 3).cluster_id
    # re-authenticating in band keeps the connection
    assert call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1, 4).error_code == 0
    again = authenticate(sock, plain("bob", PASSWORDS["bob"]), 1, cid=5)
    assert again.error_code == ErrorCode.NONE and again.session_lifetime_ms == REAUTH_MS
    # at most one re-authentication a second (Kafka's KafkaChannel): sooner, the handshake is
    # answered ILLEGAL_SASL_STATE and the session goes on
    answer = call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1, 6)
    assert (answer.error_code, answer.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
    assert call(sock, MetadataRequest(topics=[]), 12, 7).cluster_id
    time.sleep(1.1)
    # another principal may not take the connection over
    assert call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1, 8).error_code == 0
    other = authenticate(sock, plain("alice", PASSWORDS["alice"]), 1, cid=9)
    assert other.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals during re-authentication" in other.error_message
    assert is_closed(sock)
    # a session past its lifetime is closed at its next request
    sock = connect(secure.address("REAUTH"))
    assert call(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    assert authenticate(sock, plain("bob", PASSWORDS["bob"]), 1).error_code == 0
    time.sleep(REAUTH_MS / 1000 + 0.5)
    sock.sendall(encode_request(MetadataRequest(topics=[]), 12, 3))
    assert is_closed(sock)
    secure.wait_for_log("did not re-authenticate in time")


def test_librdkafka_reauthenticates(secure, tls, topic_name):
    conf = {
        "bootstrap.servers": secure.address("REAUTH"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": PASSWORDS["alice"],
    }
    producer = Producer({**conf, "linger.ms": 1})
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic_name, b"x")
        sent += 1
        producer.poll(0.05)
    assert producer.flush(30) == 0
    got = consume_from_start(secure.address("PLAINTEXT"), topic_name, 1, sent)
    assert len(got) == sent
    secure.wait_for_log("re-authentication succeeded: principal User:alice")


# -- configs, metrics, credentials --------------------------------------------------------------


def test_sensitive_configs_are_hidden(secure):
    admin = AdminClient({"bootstrap.servers": secure.address("PLAINTEXT")})
    resource = ConfigResource(ConfigResource.Type.BROKER, "0")
    entries = admin.describe_configs([resource])[resource].result(30)
    jaas = entries["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.is_sensitive and jaas.value is None
    key = entries["listener.name.sasl_ssl.ssl.keystore.key"]
    assert key.is_sensitive and key.value is None
    assert entries["sasl.jaas.config"].is_sensitive
    assert entries["ssl.keystore.location"].value.endswith("server.pem")
    assert "admin-secret" not in secure.log()
    assert "PRIVATE KEY" not in secure.log()


def test_metrics_count_authentications(secure):
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{secure.metrics_port}/metrics", timeout=10)
        .read()
        .decode()
    )
    assert re.search(
        r'odradek_authentication_total\{listener="SASL_PLAINTEXT",mechanism="PLAIN",'
        r'result="success"\} [1-9]',
        text,
    )
    assert "odradek_tls_handshake_failures_total" in text


def test_scram_credentials_are_described_never_shown(secure):
    admin = AdminClient({"bootstrap.servers": secure.address("PLAINTEXT")})
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(30)
    infos = {(i.mechanism, i.iterations) for i in described.scram_credential_infos}
    assert infos == {(ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 4096)}
    stored = (Path(secure.data_dir) / "odradek-security.json").read_text()
    assert re.search(r'"SCRAM-SHA-256": "salt=[^,"]+,stored_key=[^,"]+,server_key=[^,"]+,'
                     r'iterations=4096"', stored)  # fmt: skip
    assert "alice-secret" not in stored
