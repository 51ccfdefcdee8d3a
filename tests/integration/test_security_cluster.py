"""Security across a cluster (issue 18): two broker processes on one real ZooKeeper. SCRAM users
created with AlterUserScramCredentials on one broker log in on the other; ACLs created with
confluent-kafka's admin client on one broker apply on every broker without a restart, and stop
applying once deleted on another; everything is stored where Kafka's ZooKeeper mode stores it
(``/config/users/<user>``, ``/kafka-acl/...``, with change notifications). A delegation token
made on one broker logs in on the other, until it is expired there
(``/delegation_token/tokens/<id>``, Kafka's layout)."""

from __future__ import annotations

import base64
import json
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from protocol.messages.create_delegation_token import CreateDelegationTokenRequest
from protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from tests.integration.broker_process import BrokerProcess
from tests.support.client_quotas import describe_quota, set_quota
from tests.support.kafka_clients import consume_from_start
from tests.support.raw_client import answered_from
from tests.support.sasl_client import logs_in as logs_in_raw
from tests.support.sasl_client import sasl_login
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper
SCRAM = "SCRAM-SHA-256"


@pytest.fixture(scope="module")
def cluster(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory):
    connect = zookeeper.chroot_connect()
    tmp = tmp_path_factory.mktemp("secure-cluster")
    brokers = []
    for broker_id in (1, 2):
        home = tmp / f"broker-{broker_id}"
        home.mkdir()
        brokers.append(
            BrokerProcess(
                home / "data",
                {
                    "broker.id": str(broker_id),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "4000",
                    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                    "super.users": "User:ANONYMOUS",
                    "offsets.topic.replication.factor": "1",
                    "delegation.token.secret.key": "cluster-token-secret",
                },
                log_path=home / "broker.log",
            ).start()
        )
    zk = KazooClient(hosts=connect)
    zk.start(timeout=10)
    yield brokers, zk
    zk.stop()
    zk.close()
    for b in brokers:
        b.stop()


def scram(broker: BrokerProcess, user: str, password: str, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def logs_in(broker: BrokerProcess, user: str, password: str) -> bool:
    errors: list[str] = []
    admin = AdminClient(
        {**scram(broker, user, password), "error_cb": lambda e: errors.append(str(e))}
    )
    try:
        admin.list_topics(timeout=5)
    except Exception:
        return False
    finally:
        admin.poll(0)
    return not any("uthentication" in e for e in errors)


def test_scram_users_created_on_one_broker_log_in_on_another(cluster):
    (b1, b2), zk = cluster
    admin1 = AdminClient({"bootstrap.servers": b1.address("PLAINTEXT")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    upsert = UserScramCredentialUpsertion("carol", info, b"carol-secret")
    for f in admin1.alter_user_scram_credentials([upsert]).values():
        f.result(30)
    # stored as Kafka stores it, with a change notification
    doc = json.loads(zk.get("/config/users/carol")[0])
    assert doc["version"] == 1
    assert doc["config"]["SCRAM-SHA-256"].startswith("salt=")
    assert doc["config"]["SCRAM-SHA-256"].endswith(",iterations=8192")
    changes = [
        json.loads(zk.get(f"/config/changes/{c}")[0]) for c in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "users/carol"} in changes
    wait_for(lambda: logs_in(b2, "carol", "carol-secret"), timeout=30, what="carol on broker 2")
    assert logs_in(b1, "carol", "carol-secret")
    assert not logs_in(b2, "carol", "wrong")


def test_acls_apply_on_every_broker_without_restart(cluster):
    (b1, b2), zk = cluster
    admin1 = AdminClient({"bootstrap.servers": b1.address("PLAINTEXT")})
    admin2 = AdminClient({"bootstrap.servers": b2.address("PLAINTEXT")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    for f in admin1.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("dave", info, b"dave-secret")]
    ).values():
        f.result(30)
    topic = "shared-ledger"
    admin1.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)

    # both brokers lead a partition
    def leaders() -> set[int]:
        meta = admin1.list_topics(topic, timeout=10).topics[topic]
        return {p.leader for p in meta.partitions.values()}

    wait_for(lambda: leaders() == {1, 2}, timeout=30, what="a leader on each broker")

    def produce_all() -> list[KafkaError | None]:
        results: list[KafkaError | None] = []
        producer = Producer(scram(b2, "dave", "dave-secret", **{"message.timeout.ms": 8000}))
        for p in (0, 1):
            producer.produce(topic, b"x", partition=p, callback=lambda e, m: results.append(e))
        producer.flush(30)
        return results

    denied = produce_all()
    assert [e.code() for e in denied if e is not None] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ] * 2
    binding = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:dave",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for f in admin1.create_acls([binding]).values():
        f.result(30)
    doc = json.loads(zk.get(f"/kafka-acl/Topic/{topic}")[0])
    assert doc == {
        "version": 1,
        "acls": [
            {"principal": "User:dave", "permissionType": "Allow", "operation": "Write", "host": "*"}
        ],
    }
    notes = [zk.get(f"/kafka-acl-changes/{c}")[0] for c in zk.get_children("/kafka-acl-changes")]
    assert f"TOPIC:{topic}".encode() in notes
    # both brokers (the partition leaders) now let dave write, without a restart
    wait_for(lambda: produce_all() == [None, None], timeout=30, what="the ACL on both brokers")
    got = consume_from_start(b1.address("PLAINTEXT"), topic, 2, 2)
    assert len(got) >= 2
    # deleted on the other broker: it stops applying everywhere
    flt = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:dave",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deleted = next(iter(admin2.delete_acls([flt]).values())).result(30)
    assert len(deleted) == 1
    assert zk.exists(f"/kafka-acl/Topic/{topic}") is None

    def all_denied() -> bool:
        results = produce_all()
        return all(
            e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in results
        )

    wait_for(all_denied, timeout=30, what="the deleted ACL to stop applying on both brokers")
    # prefixed ACLs go to /kafka-acl-extended, and their notifications are JSON
    prefixed = AclBinding(
        ResourceType.GROUP,
        "dave-",
        ResourcePatternType.PREFIXED,
        "User:dave",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for f in admin2.create_acls([prefixed]).values():
        f.result(30)
    assert zk.exists("/kafka-acl-extended/prefixed/Group/dave-") is not None
    events = [
        json.loads(zk.get(f"/kafka-acl-extended-changes/{c}")[0])
        for c in zk.get_children("/kafka-acl-extended-changes")
    ]
    assert {
        "version": 1,
        "resourceType": "GROUP",
        "name": "dave-",
        "patternType": "PREFIXED",
    } in events


def test_a_token_made_on_one_broker_logs_in_on_another(cluster):
    (b1, b2), zk = cluster
    admin1 = AdminClient({"bootstrap.servers": b1.address("PLAINTEXT")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = UserScramCredentialUpsertion("dana", info, b"dana-secret")
    for f in admin1.alter_user_scram_credentials([upsert]).values():
        f.result(30)
    sasl1, sasl2 = b1.address("SASL_PLAINTEXT"), b2.address("SASL_PLAINTEXT")
    wait_for(lambda: logs_in_raw(sasl1, SCRAM, "dana", "dana-secret"), timeout=30, what="dana")
    conn, _ = sasl_login(sasl1, SCRAM, "dana", "dana-secret")
    created = conn.call(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
    conn.close()
    assert created.error_code == 0, created
    token_id, password = created.token_id, base64.b64encode(created.hmac).decode()
    # stored as Kafka's ZooKeeper mode stores it, with a change notification naming it
    doc = json.loads(zk.get(f"/delegation_token/tokens/{token_id}")[0])
    assert doc["owner"] == "User%3Adana" and doc["tokenId"] == token_id and doc["version"] == 3
    notices = [zk.get(f"/delegation_token/token_changes/{c}")[0] for c in
               zk.get_children("/delegation_token/token_changes")]  # fmt: skip
    assert token_id.encode() in notices

    def token_logs_in(address: str) -> bool:
        return logs_in_raw(address, SCRAM, token_id, password, token=True)

    wait_for(lambda: token_logs_in(sasl2), timeout=30, what="the token on broker 2")
    conn, _ = sasl_login(sasl2, SCRAM, "dana", "dana-secret")
    expired = conn.call(
        ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2
    )
    conn.close()
    assert expired.error_code == 0, expired
    assert not zk.exists(f"/delegation_token/tokens/{token_id}")
    wait_for(lambda: not token_logs_in(sasl1), timeout=30, what="the token refused on broker 1")


def max_throttle_ms(broker: BrokerProcess, topic: str, settings: dict[str, object]) -> int:
    """Produces 1.5 MB as fast as the client goes, to a topic led by ``broker``, and returns the
    largest ``throttle_time_ms`` librdkafka saw (its ``throttle`` statistics) before the
    records were acknowledged or a throttle showed. A 100 kB/s quota lets through about 10 s
    worth (1 MB) at once, then throttles."""
    seen = [0]

    def stats(text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            seen[0] = max(seen[0], int(b.get("throttle", {}).get("max", 0)))

    producer = Producer(
        {
            "bootstrap.servers": broker.address("PLAINTEXT"),
            "linger.ms": 5,
            "statistics.interval.ms": 200,
            "stats_cb": stats,
            **settings,
        }
    )
    for _ in range(1500):
        producer.produce(topic, b"t" * 1000)
    deadline = time.monotonic() + 30
    while not seen[0] and producer.flush(0.2) and time.monotonic() < deadline:
        pass
    producer.poll(0.5)  # a statistics callback after the last acknowledgement
    producer.purge()
    producer.flush(10)
    return seen[0]


def quota_on(broker: BrokerProcess, entity_type: str, name: str, quota: tuple, what: str) -> None:
    """Waits until the broker's DescribeClientQuotas answers the entity's one quota."""
    wait_for(
        lambda: describe_quota(broker.address("PLAINTEXT"), entity_type, name) == [quota],
        timeout=30,
        what=what,
    )


def test_quotas_set_on_one_broker_apply_on_another(cluster):
    """Client quotas written through broker 1 land where Kafka's ZooKeeper mode keeps them
    (``/config/clients/<client-id>``, ``/config/users/<user>`` beside the user's SCRAM
    credentials, with change notifications), and broker 2 applies them without a restart: its
    DescribeClientQuotas shows them and producers on it are throttled; a client without a quota
    is not."""
    (b1, b2), zk = cluster
    admin1 = AdminClient({"bootstrap.servers": b1.address("PLAINTEXT")})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    for f in admin1.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("erin", info, b"erin-secret")]
    ).values():
        f.result(30)
    topic = "quota-ledger"
    admin1.create_topics([NewTopic(topic, 1, replica_assignment=[[2]])])[topic].result(30)
    write = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:erin",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for f in admin1.create_acls([write]).values():
        f.result(30)
    set_quota(b1.address("PLAINTEXT"), [("client-id", "capped")], "producer_byte_rate", 100_000)
    set_quota(b1.address("PLAINTEXT"), [("user", "erin")], "producer_byte_rate", 100_000)
    # Kafka's layout: the entity's znode holds every config of the entity
    assert json.loads(zk.get("/config/clients/capped")[0]) == {
        "version": 1,
        "config": {"producer_byte_rate": "100000"},
    }
    erin = json.loads(zk.get("/config/users/erin")[0])
    assert erin["version"] == 1 and erin["config"]["producer_byte_rate"] == "100000"
    assert erin["config"]["SCRAM-SHA-256"].startswith("salt=")
    changes = [
        json.loads(zk.get(f"/config/changes/{c}")[0]) for c in zk.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "clients/capped"} in changes
    assert {"version": 2, "entity_path": "users/erin"} in changes
    # broker 2 follows the notifications
    quota_on(
        b2,
        "client-id",
        "capped",
        ("capped", "producer_byte_rate", 100_000.0),
        "the client-id quota on broker 2",
    )
    quota_on(
        b2, "user", "erin", ("erin", "producer_byte_rate", 100_000.0), "the user quota on broker 2"
    )
    admin2 = AdminClient({"bootstrap.servers": b2.address("PLAINTEXT")})
    erins = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:erin",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    wait_for(
        lambda: len(admin2.describe_acls(erins).result(30)) == 1,
        timeout=30,
        what="erin's ACL on broker 2",
    )
    # ... and applies them to the clients connected to it (the topic's only replica)
    assert max_throttle_ms(b2, topic, {"client.id": "capped"}) > 0
    erin_on_b2 = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "erin",
        "sasl.password": "erin-secret",
        "bootstrap.servers": b2.address("SASL_PLAINTEXT"),
    }
    assert max_throttle_ms(b2, topic, erin_on_b2) > 0
    assert max_throttle_ms(b2, topic, {"client.id": "uncapped"}) == 0

    # an IP address's connection creation rate (KIP-612): in /config/ips, applied by broker 2 to
    # connections from that address (a burst of 10 at 1 per second, then throttled)
    set_quota(b1.address("PLAINTEXT"), [("ip", "127.0.0.9")], "connection_creation_rate", 1)
    assert json.loads(zk.get("/config/ips/127.0.0.9")[0]) == {
        "version": 1,
        "config": {"connection_creation_rate": "1"},
    }
    quota_on(
        b2,
        "ip",
        "127.0.0.9",
        ("127.0.0.9", "connection_creation_rate", 1.0),
        "the ip quota on broker 2",
    )
    results = [answered_from(b2.address("PLAINTEXT"), "127.0.0.9") for _ in range(15)]
    assert results[:10] == [True] * 10 and False in results, results


def test_brokers_replicate_over_a_sasl_ssl_inter_broker_listener(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
):
    """Replica fetchers connect with TLS and SASL/PLAIN on inter.broker.listener.name (and the
    authorizer lets the brokers' principal, a super user, fetch as followers)."""
    from tests.support.certs import make_tls_files
    from tests.support.secure_broker import plain_jaas

    tmp = tmp_path_factory.mktemp("sasl-ssl-cluster")
    tls = make_tls_files(tmp / "certs")
    connect = zookeeper.chroot_connect()
    brokers = []
    try:
        for broker_id in (11, 12):
            home = tmp / f"broker-{broker_id}"
            home.mkdir()
            brokers.append(
                BrokerProcess(
                    home / "data",
                    {
                        "broker.id": str(broker_id),
                        "zookeeper.connect": connect,
                        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
                        "inter.broker.listener.name": "INTERNAL",
                        "sasl.enabled.mechanisms": "PLAIN",
                        "sasl.mechanism.inter.broker.protocol": "PLAIN",
                        "listener.name.internal.plain.sasl.jaas.config": plain_jaas(),
                        "ssl.keystore.type": "PEM",
                        "ssl.keystore.location": str(tls.server),
                        "ssl.truststore.type": "PEM",
                        "ssl.truststore.location": str(tls.ca),
                        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                        "super.users": "User:admin;User:ANONYMOUS",
                        "offsets.topic.replication.factor": "1",
                    },
                    log_path=home / "broker.log",
                ).start()
            )
        admin = AdminClient({"bootstrap.servers": brokers[0].address("PLAINTEXT")})
        topic = "replicated-securely"
        admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(30)
        producer = Producer({"bootstrap.servers": brokers[0].address("PLAINTEXT"), "acks": "all"})
        for i in range(50):
            producer.produce(topic, b"r%d" % i)
        assert producer.flush(30) == 0

        def follower_has_everything() -> bool:
            meta = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
            follower = next(b for b in brokers if int(b.overrides["broker.id"]) != meta.leader)
            directory = follower.data_dir / f"{topic}-0"
            segment = directory / "00000000000000000000.log"
            return len(meta.isrs) == 2 and segment.exists() and segment.stat().st_size > 0

        wait_for(
            follower_has_everything, timeout=60, what="the follower to replicate over TLS+SASL"
        )
        logs = "".join(b.log() for b in brokers)
        assert "authentication succeeded: principal User:admin" in logs
        assert "on listener INTERNAL (SASL PLAIN)" in logs
    finally:
        for b in brokers:
            b.stop()
