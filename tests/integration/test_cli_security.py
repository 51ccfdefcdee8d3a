"""The command line's later commands as a user drives them (subprocess, both formats) against a
real broker with SASL, TLS and the ACL authorizer: ``acl``, ``user`` (SCRAM), ``quota``,
``transaction``, ``token`` (delegation tokens) and ``group describe`` of a KIP-848 consumer
group, connecting with ``--command-config`` (Kafka client properties) and with the security
flags."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.integration.broker_process import BrokerProcess
from tests.support.certs import TlsFiles, make_tls_files
from tests.support.cli import as_json, odradek, rows, unique
from tests.support.secure_broker import PASSWORDS, plain_jaas
from tests.support.waiting import wait_for

ALICE_PASSWORD = "alice-scram-secret"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("cli-secure") / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
            "SASL_SSL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS",
            "group.initial.rebalance.delay.ms": "0",
            "delegation.token.secret.key": "cli-token-secret",
        },
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def admin_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Kafka client properties for the admin over SASL/PLAIN, as kafka-*.sh --command-config."""
    path = tmp_path_factory.mktemp("props") / "admin.properties"
    path.write_text(
        "# the admin user\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        f'    username="admin" password="{PASSWORDS["admin"]}";\n'
    )
    return path


def as_admin(secured: BrokerProcess, admin_config: Path, *args: str, fmt: str | None = None) -> Any:
    common = ["-b", secured.address("SASL_PLAINTEXT"), "--command-config", str(admin_config)]
    if fmt == "json":
        return as_json(*args, *common)
    return odradek(*args, *common)


def test_users_acls_and_quotas_over_sasl_and_tls(
    secured: BrokerProcess, admin_config: Path, tls: TlsFiles
) -> None:
    # user create/describe (SCRAM), as the admin authenticated by --command-config
    out = as_admin(secured, admin_config, "user", "create", "alice", "--password", ALICE_PASSWORD)
    assert "alice" in out.stdout
    users = as_admin(secured, admin_config, "user", "describe", "alice", fmt="json")
    assert users == [
        {
            "user": "alice",
            "credentials": [
                {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
            ],
        }
    ]
    assert "SCRAM-SHA-512" in as_admin(secured, admin_config, "user", "describe").stdout

    # alice logs in with the flags: SCRAM over SASL_PLAINTEXT, then over SASL_SSL (TLS)
    topic = unique("secured")
    as_admin(secured, admin_config, "topic", "create", topic, "--partitions", "2")
    alice = [
        "--sasl-username", "alice", "--sasl-password", ALICE_PASSWORD,
    ]  # fmt: skip
    listed = as_json(
        "topic", "list", "-b", secured.address("SASL_PLAINTEXT"),
        "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512", *alice,
    )  # fmt: skip
    assert topic not in [t["name"] for t in listed]  # no DESCRIBE ACL yet: hidden
    wrong = odradek(
        "topic", "list", "-b", secured.address("SASL_PLAINTEXT"),
        "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-256",
        "--sasl-username", "alice", "--sasl-password", "nope", check=False,
    )  # fmt: skip
    assert wrong.returncode == 1 and "SASL_AUTHENTICATION_FAILED" in wrong.stderr
    # final at once, as in Kafka's clients: not retried as an unreachable cluster until the
    # command's timeout (30 s)
    assert "no broker reachable" not in wrong.stderr

    # acl create/list/delete in both formats (kafka-acls' options)
    created = as_admin(
        secured, admin_config, "acl", "create", "--allow-principal", "User:alice",
        "--operation", "DESCRIBE", "--operation", "READ", "--topic", "secured-",
        "--resource-pattern-type", "PREFIXED", fmt="json",
    )  # fmt: skip
    assert {(a["operation"], a["pattern_type"]) for a in created} == {
        ("DESCRIBE", "PREFIXED"),
        ("READ", "PREFIXED"),
    }
    acls = as_admin(secured, admin_config, "acl", "list", "--principal", "User:alice", fmt="json")
    assert sorted((a["resource_name"], a["operation"], a["permission"]) for a in acls) == [
        ("secured-", "DESCRIBE", "ALLOW"),
        ("secured-", "READ", "ALLOW"),
    ]
    table = as_admin(secured, admin_config, "acl", "list").stdout
    assert "PRINCIPAL" in table and "User:alice" in table and "PREFIXED" in table
    ssl_listed = as_json(
        "topic", "list", "-b", secured.address("SASL_SSL"), "--security-protocol", "SASL_SSL",
        "--sasl-mechanism", "SCRAM-SHA-256", "--ssl-cafile", str(tls.ca), *alice,
    )  # fmt: skip
    assert topic in [t["name"] for t in ssl_listed]  # the ACL applies
    unverified = odradek(
        "topic", "list", "-b", secured.address("SASL_SSL"), "--security-protocol", "SASL_SSL",
        "--sasl-mechanism", "SCRAM-SHA-256", *alice, check=False,
    )  # fmt: skip
    assert unverified.returncode == 1 and "TLS with" in unverified.stderr
    assert "self-signed certificate" in unverified.stderr  # the test CA, not in the system's
    assert "no broker reachable" not in unverified.stderr
    deleted = as_admin(
        secured, admin_config, "acl", "delete", "--principal", "User:alice", "--topic",
        "secured-", "--resource-pattern-type", "PREFIXED", "--operation", "READ", fmt="json",
    )  # fmt: skip
    assert [(a["operation"], a["principal"]) for a in deleted] == [("READ", "User:alice")]
    left = as_admin(secured, admin_config, "acl", "list", "--principal", "User:alice", fmt="json")
    assert [a["operation"] for a in left] == ["DESCRIBE"]
    # the table of what was deleted, then nothing left to match
    header, table = rows(
        as_admin(
            secured, admin_config, "acl", "delete", "--principal", "User:alice", "--topic",
            "secured-", "--resource-pattern-type", "PREFIXED",
        ).stdout
    )  # fmt: skip
    assert header == [
        "RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION",
    ]  # fmt: skip
    assert table == [["TOPIC", "secured-", "PREFIXED", "User:alice", "*", "DESCRIBE", "ALLOW"]]
    assert as_admin(secured, admin_config, "acl", "list", "--principal", "User:alice").stdout == (
        "no ACLs\n"
    )
    again = as_admin(secured, admin_config, "acl", "delete", "--principal", "User:alice")
    assert again.stdout == "no ACL matched\n"
    refused = odradek("acl", "delete", "-b", secured.address("PLAINTEXT"), check=False)
    assert refused.returncode == 1 and "--force" in refused.stderr

    # quotas of a user and of the users' default
    as_admin(secured, admin_config, "quota", "set", "producer_byte_rate=1048576", "--user", "alice")
    as_admin(secured, admin_config, "quota", "set", "consumer_byte_rate=2048", "--user-default")
    quotas = as_admin(secured, admin_config, "quota", "describe", fmt="json")
    assert {
        "user": "alice",
        "client_id": None,
        "ip": None,
        "quotas": {"producer_byte_rate": 1048576.0},
    } in quotas
    assert {
        "user": "<default>",
        "client_id": None,
        "ip": None,
        "quotas": {"consumer_byte_rate": 2048.0},
    } in quotas
    assert "producer_byte_rate" in as_admin(secured, admin_config, "quota", "describe").stdout
    as_admin(secured, admin_config, "quota", "delete", "producer_byte_rate", "--user", "alice")
    only = as_admin(secured, admin_config, "quota", "describe", "--user", "alice", fmt="json")
    assert only == []
    # an IP address's connection creation rate (KIP-612)
    as_admin(
        secured, admin_config, "quota", "set", "connection_creation_rate=50", "--ip", "10.1.2.3"
    )
    ips = as_admin(secured, admin_config, "quota", "describe", "--ip", "10.1.2.3", fmt="json")
    assert ips == [
        {
            "user": None,
            "client_id": None,
            "ip": "10.1.2.3",
            "quotas": {"connection_creation_rate": 50.0},
        }
    ]
    as_admin(
        secured, admin_config, "quota", "delete", "connection_creation_rate", "--ip", "10.1.2.3"
    )
    assert (
        as_admin(secured, admin_config, "quota", "describe", "--ip", "10.1.2.3", fmt="json") == []
    )

    # user delete: alice can no longer log in
    as_admin(secured, admin_config, "user", "delete", "alice")
    gone = odradek(
        "topic", "list", "-b", secured.address("SASL_PLAINTEXT"),
        "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "SCRAM-SHA-512", *alice,
        check=False,
    )  # fmt: skip
    assert gone.returncode == 1 and "SASL_AUTHENTICATION_FAILED" in gone.stderr
    assert "no broker reachable" not in gone.stderr


def test_transaction_commands(secured: BrokerProcess) -> None:
    b = secured.address("PLAINTEXT")
    topic = unique("txn")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    txn_id = unique("tx")
    producer = Producer({"bootstrap.servers": b, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(30)  # a transaction left open: Ongoing

    listed = wait_for(
        lambda: [
            t for t in as_json("transaction", "list", "-b", b) if t["transactional_id"] == txn_id
        ],
        "the transactional id listed",
    )
    assert listed[0]["state"] == "Ongoing" and listed[0]["producer_id"] >= 0
    assert txn_id in odradek("transaction", "list", "--state", "Ongoing", "-b", b).stdout
    # KIP-1152: by a pattern of the transactional id (RE2 syntax, the whole id)
    pattern = ("--transactional-id-pattern", f"{txn_id[:-2]}.*")
    assert [t["transactional_id"] for t in as_json("transaction", "list", *pattern, "-b", b)] == [
        txn_id
    ]
    assert (
        txn_id
        not in odradek(
            "transaction", "list", "--transactional-id-pattern", txn_id[:-2], "-b", b
        ).stdout
    )
    refused = odradek(
        "transaction", "list", "--transactional-id-pattern", "[", "-b", b, check=False
    )
    assert refused.returncode != 0 and "INVALID_REGULAR_EXPRESSION" in refused.stderr
    described = as_json("transaction", "describe", txn_id, "-b", b)
    assert described["state"] == "Ongoing"
    assert described["producer_id"] == listed[0]["producer_id"]
    assert described["partitions"] == [f"{topic}-0"]
    producers = as_json("transaction", "describe-producers", "--topic", topic, "-b", b)
    assert {p["producer_id"] for p in producers} == {described["producer_id"]}
    open_partition = next(p for p in producers if p["partition"] == 0)
    assert open_partition["current_transaction_start_offset"] >= 0
    assert (
        "PRODUCER-ID"
        in odradek("transaction", "describe-producers", "--topic", topic, "-b", b).stdout
    )
    producer.abort_transaction(30)
    missing = odradek("transaction", "describe", unique("none"), "-b", b, check=False)
    assert missing.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr


def test_group_describe_of_a_kip848_consumer_group(secured: BrokerProcess) -> None:
    b = secured.address("PLAINTEXT")
    topic = unique("cg")
    odradek("topic", "create", topic, "--partitions", "3", "-b", b)
    odradek("topic", "produce", topic, "-b", b, stdin="\n".join(f"v{i}" for i in range(30)) + "\n")
    group = unique("g848")
    consumer = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    try:
        got = 0
        deadline = time.monotonic() + 60
        while got < 30 and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                got += 1
        consumer.commit(asynchronous=False)

        def described() -> dict[str, Any] | None:
            d = as_json("group", "describe", group, "-b", b)
            members = d["members"]
            return d if members and len(members[0]["assignment"]) == 3 else None

        d = wait_for(described, "the member with its 3 partitions")
        assert d["type"] == "consumer" and d["state"] == "Stable"
        assert d["assignor"] in ("uniform", "range")
        member = d["members"][0]
        assert member["subscription"] == [topic]
        assert (
            member["assignment"]
            == member["target_assignment"]
            == [f"{topic}-{p}" for p in range(3)]
        )
        assert member["member_epoch"] >= 1
        table = odradek("group", "describe", group, "-b", b).stdout
        assert "TARGET-ASSIGNMENT" in table and "consumer" in table
        lag = as_json("group", "lag", group, "-b", b)
        # partitions with records were committed at their end; the owner is the member
        assert lag and all(r["lag"] in (0, None) for r in lag)
        assert {r["consumer_id"] for r in lag} == {member["member_id"]}
    finally:
        consumer.close()
    # a classic group is still described by DescribeGroups
    classic = as_json("group", "describe", unique("nobody"), "-b", b)
    assert classic["type"] == "classic" and json.dumps(classic)


def test_delegation_token_commands(secured: BrokerProcess, admin_config: Path) -> None:
    created = as_admin(
        secured, admin_config, "token", "create", "--renewer-principal", "User:alice",
        "--max-life-time-period", "3600000", fmt="json",
    )  # fmt: skip
    (token,) = created
    assert (token["owner"], token["requester"], token["renewers"]) == (
        "User:admin",
        "User:admin",
        ["User:alice"],
    )
    assert len(token["token_id"]) == 22 and token["hmac"]
    described = as_admin(secured, admin_config, "token", "describe", fmt="json")
    assert [t["token_id"] for t in described] == [token["token_id"]]
    assert described[0]["hmac"] == token["hmac"] and described[0]["renewers"] == ["User:alice"]
    mine = as_admin(secured, admin_config, "token", "describe", "--owner-principal", "User:admin")
    assert token["token_id"] in mine.stdout
    renewed = as_admin(
        secured, admin_config, "token", "renew", "--hmac", token["hmac"],
        "--renew-time-period", "60000",
    )  # fmt: skip
    assert "Renewed" in renewed.stdout
    # the token APIs are refused on a PLAINTEXT listener, as in Kafka
    refused = odradek("token", "describe", "-b", secured.bootstrap, check=False)
    assert refused.returncode == 1 and "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" in refused.stderr
    expired = as_admin(secured, admin_config, "token", "expire", "--hmac", token["hmac"])
    assert "removed" in expired.stdout
    assert as_admin(secured, admin_config, "token", "describe", fmt="json") == []
