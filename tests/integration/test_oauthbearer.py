"""SASL/OAUTHBEARER (KIP-255) with real clients, each configured as a Kafka user configures it
against Kafka's default (unsecured) validator: confluent-kafka's unsecured JWT
(``enable.sasl.oauthbearer.unsecure.jwt``) and its ``oauth_cb``, kafka-python's and aiokafka's
token providers, and Kafka's Java clients with ``OAuthBearerLoginModule``'s
``unsecuredLoginStringClaim_sub``. A refused token reaches the client as Kafka's JSON error. The
exchange itself is compared with Kafka's by the SASL corpus (tests/reference/corpus_sasl.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_clients import consume_from_start, create_topic
from tests.support.oauth_idp import IdentityProvider, SigningKey
from tests.support.waiting import wait_for

LISTENER = "SASL_PLAINTEXT"
OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";'
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    home = tmp_path_factory.mktemp("oauthbearer")
    proc = BrokerProcess(
        home / "data",
        {
            "listeners": f"PLAINTEXT://127.0.0.1:0,{LISTENER}://127.0.0.1:0",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{LISTENER}:{LISTENER}",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        },
        log_path=home / "broker.log",
    )
    proc.start()
    yield proc
    proc.stop()


def unsecured_jws(sub: str, *, exp_in: int = 3600, scope: str = "kafka") -> str:
    now = int(time.time())
    parts = [{"alg": "none"}, {"sub": sub, "iat": now, "exp": now + exp_in, "scope": scope}]
    encoded = [base64.b64encode(json.dumps(p).encode()).decode().rstrip("=") for p in parts]
    return ".".join(encoded) + "."


def _authenticated(broker: BrokerProcess, principal: str) -> bool:
    return f"principal User:{principal} " in broker.log_path.read_text()


def _librdkafka(broker: BrokerProcess, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.address(LISTENER),
        "security.protocol": LISTENER,
        "sasl.mechanism": "OAUTHBEARER",
        **extra,
    }


def _refused(broker: BrokerProcess, oauth_cb: Any, status: str) -> None:
    """A librdkafka client whose ``oauth_cb`` token the broker refuses sees Kafka's JSON
    error (``status``) in its error callback."""
    errors: list[str] = []
    client = AdminClient(
        _librdkafka(broker, oauth_cb=oauth_cb, error_cb=lambda e: errors.append(str(e)))
    )
    wait_for(
        lambda: client.poll(0.2) is not None and any(status in e for e in errors),
        timeout=30,
        what=f"the {status} error",
    )


def test_confluent_kafka_with_an_unsecured_jwt(broker: BrokerProcess) -> None:
    topic = f"oauth-ck-{int(time.time() * 1000)}"
    create_topic(broker.bootstrap, topic, 1)
    settings = _librdkafka(
        broker,
        **{
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=carol scope=kafka",
        },
    )
    producer = Producer(settings)
    producer.produce(topic, b"with a token")
    assert producer.flush(30) == 0
    (record,) = consume_from_start(broker.bootstrap, topic, 1, 1, client=None)
    assert record.value() == b"with a token"
    assert _authenticated(broker, "carol")


def test_confluent_kafka_oauth_cb_and_a_refused_token(broker: BrokerProcess) -> None:
    def token(config: str) -> tuple[str, float]:
        return unsecured_jws("dave"), time.time() + 3600

    admin = AdminClient(_librdkafka(broker, oauth_cb=token))
    assert admin.list_topics(timeout=30).brokers
    assert _authenticated(broker, "dave")

    def without_scope(config: str) -> tuple[str, float]:
        return unsecured_jws("erin", scope="other"), time.time() + 3600

    _refused(broker, without_scope, "insufficient_scope")
    assert not _authenticated(broker, "erin")


def test_a_session_lasts_as_long_as_its_token(broker: BrokerProcess) -> None:
    """Tokens that live 4 s: the broker tells librdkafka the session lasts until the token's
    exp (KIP-368), so the client fetches new tokens and re-authenticates on the open
    connection; every record produced meanwhile arrives."""
    topic = f"oauth-short-{int(time.time() * 1000)}"
    create_topic(broker.bootstrap, topic, 1)
    issued: list[float] = []

    def short_lived(config: str) -> tuple[str, float]:
        issued.append(time.time())
        return unsecured_jws("kate", exp_in=4), time.time() + 4

    producer = Producer(_librdkafka(broker, oauth_cb=short_lived, **{"linger.ms": 1}))
    sent = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        producer.produce(topic, b"%d" % sent)
        sent += 1
        producer.poll(0.05)
    assert producer.flush(30) == 0
    assert len(consume_from_start(broker.bootstrap, topic, 1, sent)) == sent
    assert len(issued) >= 2
    wait_for(
        lambda: "re-authentication succeeded: principal User:kate" in broker.log_path.read_text(),
        timeout=10,
        what="a re-authentication with a fresh token",
    )


def test_kafka_python_and_aiokafka_token_providers(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider
    from kafka import KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider as KafkaPythonTokenProvider

    class Provider(KafkaPythonTokenProvider):
        def token(self) -> str:
            return unsecured_jws("frank")

    topic = f"oauth-py-{int(time.time() * 1000)}"
    create_topic(broker.bootstrap, topic, 1)
    producer = KafkaProducer(
        bootstrap_servers=broker.address(LISTENER),
        security_protocol=LISTENER,
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Provider(),
    )
    producer.send(topic, b"kafka-python").get(timeout=30)
    producer.close()
    assert _authenticated(broker, "frank")

    class AsyncProvider(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_jws("grace")

    async def produce() -> None:
        p = AIOKafkaProducer(
            bootstrap_servers=broker.address(LISTENER),
            security_protocol=LISTENER,
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=AsyncProvider(),
        )
        await p.start()
        try:
            await p.send_and_wait(topic, b"aiokafka")
        finally:
            await p.stop()

    asyncio.run(produce())
    assert _authenticated(broker, "grace")
    values = {m.value() for m in consume_from_start(broker.bootstrap, topic, 1, 2)}
    assert values == {b"kafka-python", b"aiokafka"}


def test_kafka_java_clients_with_the_unsecured_login_module(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    from tests.support.kafka_reference import kraft_version, run_tool, tool_class

    version = kraft_version()
    config = tmp_path / "oauth.properties"
    config.write_text(
        f"security.protocol={LISTENER}\n"
        "sasl.mechanism=OAUTHBEARER\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required unsecuredLoginStringClaim_sub="heidi" unsecuredLoginListClaim_scope=",kafka";\n'
    )
    topics = tool_class(version, "kafka-topics")
    common = ["--bootstrap-server", broker.address(LISTENER), "--command-config", str(config)]
    name = f"oauth-java-{int(time.time() * 1000)}"
    run_tool(version, topics, *common, "--create", "--topic", name)
    assert name in run_tool(version, topics, *common, "--list").stdout.split()
    assert _authenticated(broker, "heidi")


# --- signed tokens (KIP-768): a JWKS and a token endpoint on a loopback identity provider ------


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider(SigningKey("RS256", "idp-key-1")).serving() as provider:
        yield provider


@pytest.fixture(scope="module")
def signed_broker(
    tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider
) -> Iterator[BrokerProcess]:
    home = tmp_path_factory.mktemp("oauth-signed")
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    proc = BrokerProcess(
        home / "data",
        {
            "listeners": f"PLAINTEXT://127.0.0.1:0,{LISTENER}://127.0.0.1:0",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{LISTENER}:{LISTENER}",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            f"{prefix}sasl.jaas.config": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"
            ),
            f"{prefix}sasl.server.callback.handler.class": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            ),
            f"{prefix}sasl.oauthbearer.jwks.endpoint.url": f"{idp.url}/jwks",
            f"{prefix}sasl.oauthbearer.expected.audience": "kafka",
            f"{prefix}sasl.oauthbearer.expected.issuer": idp.issuer,
        },
        log_path=home / "broker.log",
    )
    proc.start()
    yield proc
    proc.stop()


def test_signed_tokens_from_oauth_cb(signed_broker: BrokerProcess, idp: IdentityProvider) -> None:
    def token(config: str) -> tuple[str, float]:
        return idp.key.token(idp.claims("ivan")), time.time() + 3600

    admin = AdminClient(_librdkafka(signed_broker, oauth_cb=token))
    assert admin.list_topics(timeout=30).brokers
    assert _authenticated(signed_broker, "ivan")

    stranger = SigningKey("RS256", idp.key.kid)  # another key under the provider's key id

    def forged(config: str) -> tuple[str, float]:
        return stranger.token(idp.claims("mallory")), time.time() + 3600

    _refused(signed_broker, forged, "invalid_token")
    assert not _authenticated(signed_broker, "mallory")


def test_librdkafka_oidc_client_credentials(
    signed_broker: BrokerProcess, idp: IdentityProvider
) -> None:
    topic = f"oauth-oidc-{int(time.time() * 1000)}"
    create_topic(signed_broker.bootstrap, topic, 1)
    producer = Producer(
        _librdkafka(
            signed_broker,
            **{
                "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.client.id": "judy",
                "sasl.oauthbearer.client.secret": "judy-secret",
                "sasl.oauthbearer.token.endpoint.url": f"{idp.url}/token",
                "sasl.oauthbearer.scope": "kafka",
            },
        )
    )
    producer.produce(topic, b"oidc")
    assert producer.flush(30) == 0
    assert _authenticated(signed_broker, "judy")


def test_kafka_java_client_oidc_client_credentials(
    signed_broker: BrokerProcess, idp: IdentityProvider, tmp_path: Path
) -> None:
    from tests.support.kafka_reference import kraft_version, run_tool, tool_class

    version = kraft_version()
    endpoint = f"{idp.url}/token"
    config = tmp_path / "oidc.properties"
    config.write_text(
        f"security.protocol={LISTENER}\n"
        "sasl.mechanism=OAUTHBEARER\n"
        "sasl.login.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
        f"sasl.oauthbearer.token.endpoint.url={endpoint}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required clientId="mike" clientSecret="mike-secret" scope="kafka";\n'
    )
    topics = tool_class(version, "kafka-topics")
    common = [
        "--bootstrap-server",
        signed_broker.address(LISTENER),
        "--command-config",
        str(config),
    ]
    # Kafka 4 fetches tokens only from URLs the JVM allows (KIP-1139's system property)
    allowed = (f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={endpoint}",)
    listed = run_tool(version, topics, *common, "--list", jvm_opts=allowed)
    assert listed.returncode == 0
    assert _authenticated(signed_broker, "mike")
