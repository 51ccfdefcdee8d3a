"""The ACL authorizer with real clients (issue 18): ACLs created, described and deleted with
confluent-kafka's admin client; a user with only READ on a topic prefix consumes those topics
and nothing else, cannot produce, cannot see other topics, cannot join a group without GROUP
READ, cannot delete topics; a super user can; deleted ACLs stop applying; authorized operations
are answered truthfully.

One standalone broker (module scope) per class name Kafka accepts for its built-in authorizer
(``authorizer.class.name``: ZooKeeper mode's ``kafka.security.authorizer.AclAuthorizer`` and
KRaft's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``; both select Odradek's ACL
authorizer, and every test runs against each): PLAINTEXT for the tests' own admin work
(``User:ANONYMOUS`` is a super user there), SASL_PLAINTEXT with PLAIN users admin (super user),
alice and bob. Denials are logged and counted (``odradek_authorization_denied_total``)."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.broker_process import BrokerProcess
from tests.support.metrics import scrape
from tests.support.secure_broker import PASSWORDS, plain_jaas
from tests.support.waiting import wait_for
from tests.support.zookeeper import free_port

AUTHORIZERS = (
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
)


@pytest.fixture(scope="module", params=AUTHORIZERS, ids=["AclAuthorizer", "StandardAuthorizer"])
def acl_broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    metrics_port = free_port()
    proc = BrokerProcess(
        tmp_path_factory.mktemp("acl-broker") / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
            "authorizer.class.name": request.param,
            "super.users": "User:admin;User:ANONYMOUS",
            "metrics.port": str(metrics_port),
        },
    )
    proc.metrics_port = metrics_port  # type: ignore[attr-defined]
    proc.start()
    yield proc
    proc.stop()


def denials(broker: BrokerProcess) -> dict[tuple[str, str], float]:
    """``odradek_authorization_denied_total`` by (operation, resource type)."""
    found = {}
    for name, value in scrape(broker.metrics_port).items():  # type: ignore[attr-defined]
        m = re.fullmatch(
            r'odradek_authorization_denied_total\{operation="(\w+)",resource_type="(\w+)"\}', name
        )
        if m:
            found[(m.group(1), m.group(2))] = value
    return found


def sasl(broker: BrokerProcess, user: str, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
        **extra,
    }


def client_settings(broker: BrokerProcess, user: str) -> dict[str, object]:
    return {k: v for k, v in sasl(broker, user).items() if k != "bootstrap.servers"}


def admin_of(broker: BrokerProcess, user: str | None = None) -> AdminClient:
    if user is None:
        return AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    return AdminClient(sasl(broker, user))


def topic_acl(name: str, pattern: ResourcePatternType, user: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW
    )


def group_acl(name: str, user: str, op: AclOperation = AclOperation.READ) -> AclBinding:
    return AclBinding(
        ResourceType.GROUP,
        name,
        ResourcePatternType.LITERAL,
        f"User:{user}",
        "*",
        op,
        AclPermissionType.ALLOW,
    )


def create_acls(admin: AdminClient, bindings: list[AclBinding]) -> None:
    for future in admin.create_acls(bindings).values():
        future.result(30)


def produce(broker: BrokerProcess, topic: str, n: int = 10) -> None:
    producer = Producer({"bootstrap.servers": broker.address("PLAINTEXT")})
    for i in range(n):
        producer.produce(topic, b"v%d" % i)
    assert producer.flush(30) == 0


def group_consume(
    broker: BrokerProcess, user: str, topic: str, group: str, n: int, **settings: object
) -> list:
    """Subscribes with ``group``; returns the values read, or raises the first error."""
    consumer = Consumer(
        sasl(broker, user, **{"group.id": group, "auto.offset.reset": "earliest", **settings})
    )
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_acl_matrix(acl_broker):
    root = admin_of(acl_broker)
    topics = ["orders-eu", "orders-us", "payroll"]
    for f in root.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        f.result(30)
    for t in topics:
        produce(acl_broker, t)
    create_acls(
        root,
        [
            topic_acl("orders-", ResourcePatternType.PREFIXED, "alice", AclOperation.READ),
            group_acl("alice-group", "alice"),
        ],
    )
    described = root.describe_acls(
        AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            "User:alice",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    ).result(30)
    assert {(b.restype, b.name, b.resource_pattern_type) for b in described} == {
        (ResourceType.TOPIC, "orders-", ResourcePatternType.PREFIXED),
        (ResourceType.GROUP, "alice-group", ResourcePatternType.LITERAL),
    }

    denied_before = denials(acl_broker)
    # alice consumes the prefix with her group
    assert len(group_consume(acl_broker, "alice", "orders-eu", "alice-group", 10)) == 10
    # ...but sees only those topics
    alice = admin_of(acl_broker, "alice")
    visible = set(alice.list_topics(timeout=30).topics)
    assert {"orders-eu", "orders-us"} <= visible and "payroll" not in visible
    # ...cannot read another topic
    with pytest.raises(KafkaException) as read_error:
        group_consume(acl_broker, "alice", "payroll", "alice-group", 1)
    assert read_error.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # ...cannot produce
    errors: list[KafkaError] = []
    producer = Producer(sasl(acl_broker, "alice", **{"message.timeout.ms": 10000}))
    producer.produce("orders-eu", b"nope", callback=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # ...cannot join a group without GROUP READ
    with pytest.raises(KafkaException) as group_error:
        group_consume(acl_broker, "alice", "orders-eu", "someone-elses-group", 1)
    assert group_error.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    # ...cannot delete topics; a super user can
    with pytest.raises(KafkaException) as delete_error:
        alice.delete_topics(["orders-us"])["orders-us"].result(30)
    assert delete_error.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    superuser = admin_of(acl_broker, "admin")
    superuser.delete_topics(["payroll"])["payroll"].result(30)
    # each denial above was counted (payroll is refused at Metadata, the group at
    # FindCoordinator: DESCRIBE, as in Kafka)
    denied = denials(acl_broker)
    for denial in (
        ("DESCRIBE", "TOPIC"),
        ("WRITE", "TOPIC"),
        ("DESCRIBE", "GROUP"),
        ("DELETE", "TOPIC"),
    ):
        assert denied.get(denial, 0) > denied_before.get(denial, 0), denial

    # authorized operations, truthfully
    ops = alice.describe_topics(TopicCollection(["orders-eu"]), include_authorized_operations=True)
    assert set(ops["orders-eu"].result(30).authorized_operations) == {
        AclOperation.READ,
        AclOperation.DESCRIBE,
    }
    cluster = superuser.describe_cluster(include_authorized_operations=True)
    assert AclOperation.ALTER in set(cluster.result(30).authorized_operations)
    groups = alice.describe_consumer_groups(["alice-group"], include_authorized_operations=True)
    assert set(groups["alice-group"].result(30).authorized_operations) == {
        AclOperation.READ,
        AclOperation.DESCRIBE,
    }

    # deleted ACLs stop applying
    deleted = root.delete_acls(
        [
            AclBindingFilter(
                ResourceType.TOPIC,
                "orders-",
                ResourcePatternType.PREFIXED,
                "User:alice",
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    )
    assert len(next(iter(deleted.values())).result(30)) == 1
    wait_for(
        lambda: "orders-eu" not in admin_of(acl_broker, "alice").list_topics(timeout=10).topics,
        timeout=30,
        what="the deleted ACL to stop applying",
    )
    log = acl_broker.log()
    assert "Principal = User:alice is Denied Operation = WRITE" in log
    assert "resource = TOPIC:LITERAL:orders-eu" in log


def test_deny_wins_and_acl_errors(acl_broker):
    root = admin_of(acl_broker)
    for f in root.create_topics([NewTopic("ledger-1", 1, 1)]).values():
        f.result(30)
    produce(acl_broker, "ledger-1", 3)
    create_acls(
        root,
        [
            topic_acl("*", ResourcePatternType.LITERAL, "bob", AclOperation.ALL),
            AclBinding(
                ResourceType.TOPIC,
                "ledger-",
                ResourcePatternType.PREFIXED,
                "User:bob",
                "*",
                AclOperation.READ,
                AclPermissionType.DENY,
            ),
        ],
    )
    bob = admin_of(acl_broker, "bob")
    visible = bob.list_topics(timeout=30).topics
    # DESCRIBE is implied by ALL and not denied; READ is denied
    assert "ledger-1" in visible
    with pytest.raises(KafkaException):
        group_consume(acl_broker, "bob", "ledger-1", "bob-group", 1)
    # an ACL on the CLUSTER resource must name kafka-cluster
    bad = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        "User:bob",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as e:
        create_acls(root, [bad])
    assert "kafka-cluster" in str(e.value)
    # only super users (or ALTER on the cluster) may create ACLs
    with pytest.raises(KafkaException) as e:
        create_acls(bob, [group_acl("g", "bob")])
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_consumer_group_protocol_acls(acl_broker):
    """KIP-848 members need READ on their group; a regular expression resolves only to topics
    the member's principal may describe; the member's principal describes its group
    (ConsumerGroupDescribe)."""
    root = admin_of(acl_broker)
    for f in root.create_topics([NewTopic(t, 2, 1) for t in ("k848-ok", "k848-hidden")]).values():
        f.result(30)
    produce(acl_broker, "k848-ok")
    produce(acl_broker, "k848-hidden")
    create_acls(
        root, [topic_acl("k848-ok", ResourcePatternType.LITERAL, "alice", AclOperation.READ)]
    )
    settings = {"group.protocol": "consumer", "group.id": "k848-alice"}
    with pytest.raises(KafkaException) as group_error:
        group_consume(acl_broker, "alice", "k848-ok", "k848-alice", 1, **settings)
    assert group_error.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    create_acls(root, [group_acl("k848-alice", "alice")])
    consumer = Consumer(sasl(acl_broker, "alice", **settings, **{"auto.offset.reset": "earliest"}))
    consumer.subscribe(["^k848-.*"])
    got = []
    try:
        deadline = time.monotonic() + 60
        while len(got) < 10 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.topic())
        assert got == ["k848-ok"] * 10
        assert {tp.topic for tp in consumer.assignment()} == {"k848-ok"}
    finally:
        consumer.close()
    alice = admin_of(acl_broker, "alice")  # kept: a collected client drops its futures
    (described,) = alice.describe_consumer_groups(["k848-alice"]).values()
    assert described.result(30).group_id == "k848-alice"
