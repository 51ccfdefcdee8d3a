"""Delegation tokens in ZooKeeper, both ways with Kafka 3.9 (ZooKeeper mode): a token Odradek
made is loaded by a Kafka broker started on the same ZooKeeper chroot (with the same
``delegation.token.secret.key``), which lets it log in and describes it with the same HMAC; a
token Kafka made is loaded by an Odradek broker started afterwards, and logs in there. The two
write and read Kafka's ``/delegation_token/tokens/<id>`` znodes, and derive the same HMAC from a
token id."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from protocol.messages.create_delegation_token import CreateDelegationTokenRequest
from protocol.messages.describe_delegation_token import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaBroker, zk_version
from tests.support.ports import free_port
from tests.support.sasl_client import logs_in, sasl_login
from tests.support.secure_broker import PASSWORDS, plain_jaas
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

SECRET = "interchange-token-secret"
SCRAM = "SCRAM-SHA-256"
#: both brokers: a SASL_PLAINTEXT listener beside PLAINTEXT, alice's PLAIN password, tokens on
SASL = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    ),
    "delegation.token.secret.key": SECRET,
    "broker.id": "0",
    "zookeeper.session.timeout.ms": "6000",
    "offsets.topic.replication.factor": "1",
}


def _create(address: str) -> tuple[str, bytes]:
    conn, code = sasl_login(address, "PLAIN", "alice", PASSWORDS["alice"])
    assert code == 0
    try:
        created = conn.call(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 2)
    finally:
        conn.close()
    assert created.error_code == 0, created
    return created.token_id, bytes(created.hmac)


def _described(address: str) -> dict[str, bytes]:
    conn, code = sasl_login(address, "PLAIN", "alice", PASSWORDS["alice"])
    assert code == 0
    try:
        owners = [DescribeDelegationTokenOwner(principal_type="User", principal_name="alice")]
        answer = conn.call(DescribeDelegationTokenRequest(owners=owners), 2)
    finally:
        conn.close()
    assert answer.error_code == 0, answer
    return {t.token_id: bytes(t.hmac) for t in answer.tokens}


def _token_logs_in(address: str, token: tuple[str, bytes]) -> bool:
    token_id, mac = token
    return logs_in(address, SCRAM, token_id, base64.b64encode(mac).decode(), token=True)


def test_tokens_cross_between_odradek_and_kafka(
    reference_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    chroot = reference_zookeeper.chroot_connect("token-interchange")
    odradek_settings = {
        **SASL,
        "zookeeper.connect": chroot,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    }
    odradek = BrokerProcess(
        tmp_path / "odradek" / "data", odradek_settings, log_path=tmp_path / "odradek.log"
    )
    with odradek:
        ours = _create(odradek.address("SASL_PLAINTEXT"))
        assert _token_logs_in(odradek.address("SASL_PLAINTEXT"), ours)

    kafka = KafkaBroker(tmp_path / "kafka", zk_version(), zookeeper_connect=chroot)
    kafka_sasl = f"127.0.0.1:{free_port()}"
    kafka.overrides = {
        **{k: v for k, v in SASL.items() if k != "broker.id"},
        "listeners": f"PLAINTEXT://{kafka.bootstrap},SASL_PLAINTEXT://{kafka_sasl}",
    }
    with kafka:
        # Kafka loads Odradek's token at start: the same HMAC, and it logs in
        assert _described(kafka_sasl)[ours[0]] == ours[1]
        assert _token_logs_in(kafka_sasl, ours)
        theirs = _create(kafka_sasl)

    with odradek:
        address = odradek.address("SASL_PLAINTEXT")
        wait_for(lambda: theirs[0] in _described(address), timeout=30, what="Kafka's token")
        assert _described(address) == {ours[0]: ours[1], theirs[0]: theirs[1]}
        assert _token_logs_in(address, theirs)
        assert not _token_logs_in(address, (theirs[0], b"\x00" * 64))
