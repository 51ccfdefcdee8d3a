"""Delegation tokens (KIP-48) as a Kafka user drives them: Kafka's own ``kafka-delegation-tokens``
tool (4.x) creates, describes, renews and expires tokens on a SASL listener of a standalone
broker, and Kafka's Java clients log in with a token (SCRAM with ``tokenauth=true``), as a Spark
or Flink job handed a token does. The token APIs themselves are compared with Kafka's answers by
the differential corpus (tests/reference/corpus_tokens.py)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.support.secure_broker import PASSWORDS, plain_jaas


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    home = tmp_path_factory.mktemp("tokens")
    proc = BrokerProcess(
        home / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
            "delegation.token.secret.key": "tool-test-secret",
        },
        log_path=home / "broker.log",
    )
    proc.start()
    yield proc
    proc.stop()


def _properties(path: Path, jaas: str, mechanism: str) -> Path:
    path.write_text(
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\nsasl.jaas.config={jaas}\n"
    )
    return path


def _as_alice(tmp_path: Path) -> Path:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="alice" password="{PASSWORDS["alice"]}";'
    )
    return _properties(tmp_path / "alice.properties", jaas, "PLAIN")


def _with_token(tmp_path: Path, token_id: str, hmac: str, mechanism: str) -> Path:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{token_id}" password="{hmac}" tokenauth="true";'
    )
    return _properties(tmp_path / f"token-{mechanism}.properties", jaas, mechanism)


def test_kafka_delegation_tokens_tool_and_a_token_login(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    from tests.support.kafka_reference import kraft_version, run_tool, tool_class

    version = kraft_version()
    tool = tool_class(version, "kafka-delegation-tokens")
    topics = tool_class(version, "kafka-topics")
    alice = ["--bootstrap-server", broker.address("SASL_PLAINTEXT")]
    alice += ["--command-config", str(_as_alice(tmp_path))]

    created = run_tool(
        version, tool, *alice, "--create", "--max-life-time-period", "-1",
        "--renewer-principal", "User:bob",
    ).stdout  # fmt: skip
    token_id = re.search(r"tokenId\s*:\s*(\S+)", created)
    assert token_id, created
    row = next(line for line in created.splitlines() if line.startswith(token_id.group(1)))
    token, hmac, owner, requester, renewers = row.split()[:5]
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]"), row

    # the tool's --describe without an owner sends an empty owner list, which Kafka (and so
    # Odradek) answers with no token at all
    mine = ("--describe", "--owner-principal", "User:alice")
    described = run_tool(version, tool, *alice, *mine).stdout
    assert token in described and hmac in described, described
    renewed = run_tool(
        version, tool, *alice, "--renew", "--renew-time-period", "3600000", "--hmac", hmac
    ).stdout
    assert "Completed renew operation" in renewed, renewed

    # a Java client logs in with the token: alice's session, on both SCRAM mechanisms
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with_token = ["--bootstrap-server", broker.address("SASL_PLAINTEXT")]
        with_token += ["--command-config", str(_with_token(tmp_path, token, hmac, mechanism))]
        name = f"token-{mechanism.lower()}-{int(time.time() * 1000)}"
        run_tool(version, topics, *with_token, "--create", "--topic", name)
        assert name in run_tool(version, topics, *with_token, "--list").stdout.split()
        # ... whose session may not use the token APIs
        refused = run_tool(version, tool, *with_token, *mine, check=False)
        assert "DelegationTokenRequestNotAllowed" in refused.stdout + refused.stderr or (
            "not allowed" in (refused.stdout + refused.stderr)
        ), refused

    expired = run_tool(
        version, tool, *alice, "--expire", "--expiry-time-period", "-1", "--hmac", hmac
    ).stdout
    assert "Completed expire operation" in expired, expired
    assert token not in run_tool(version, tool, *alice, *mine).stdout
    gone = ["--bootstrap-server", broker.address("SASL_PLAINTEXT")]
    gone += ["--command-config", str(_with_token(tmp_path, token, hmac, "SCRAM-SHA-256"))]
    refused = run_tool(version, topics, *gone, "--list", check=False, timeout=90)
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stdout + refused.stderr, refused
