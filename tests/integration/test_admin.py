"""Admin APIs through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as KNewPartitions
from kafka.admin import NewTopic as KNewTopic
from kafka.errors import TopicAlreadyExistsError

from tests.support.waiting import wait_for


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def kadmin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    yield client
    client.close()


def test_confluent_create_describe_alter_partitions_delete(admin, topic_name):
    futures = admin.create_topics([NewTopic(topic_name, 3, 1, config={"retention.ms": "123456"})])
    futures[topic_name].result(10)
    md = admin.list_topics(timeout=10)
    assert len(md.topics[topic_name].partitions) == 3
    assert md.topics[topic_name].partitions[0].leader == 0

    (cfg,) = admin.describe_configs([ConfigResource("topic", topic_name)]).values()
    entries = cfg.result(10)
    assert entries["retention.ms"].value == "123456"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["cleanup.policy"].value == "delete"

    res = ConfigResource(
        "topic",
        topic_name,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    for f in admin.incremental_alter_configs([res]).values():
        f.result(10)
    (cfg,) = admin.describe_configs([ConfigResource("topic", topic_name)]).values()
    entries = cfg.result(10)
    assert entries["cleanup.policy"].value == "compact"
    assert entries["retention.ms"].value == "604800000"

    admin.create_partitions([NewPartitions(topic_name, 5)])[topic_name].result(10)
    assert len(admin.list_topics(timeout=10).topics[topic_name].partitions) == 5

    admin.delete_topics([topic_name])[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_confluent_create_errors(admin, topic_name):
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        admin.create_topics([NewTopic(topic_name + "-rf", 1, 3)])[topic_name + "-rf"].result(10)
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        admin.create_topics([NewTopic(topic_name + "-cfg", 1, 1, config={"no.such": "1"})])[
            topic_name + "-cfg"
        ].result(10)
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions(topic_name, 1)])[topic_name].result(10)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC"):
        admin.delete_topics([topic_name + "-missing"])[topic_name + "-missing"].result(10)


def test_confluent_describe_cluster_and_broker_configs(admin):
    cluster = admin.describe_cluster().result(10)
    assert len(cluster.cluster_id) == 22 and [n.id for n in cluster.nodes] == [0]
    (cfg,) = admin.describe_configs([ConfigResource("broker", "0")]).values()
    entries = cfg.result(10)
    assert entries["num.partitions"].value == "1"
    assert entries["message.max.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value


def test_kafka_python_admin(kadmin, topic_name):
    kadmin.create_topics(
        [KNewTopic(topic_name, 2, 1, topic_configs={"retention.bytes": "1000000"})]
    )
    with pytest.raises(TopicAlreadyExistsError):
        kadmin.create_topics([KNewTopic(topic_name, 2, 1)], raise_errors=True)
    assert topic_name in kadmin.list_topics()
    described = kadmin.describe_configs([KConfigResource("TOPIC", topic_name)])
    assert described["topic"][topic_name]["retention.bytes"]["value"] == "1000000"
    kadmin.alter_configs(
        [KConfigResource("TOPIC", topic_name, configs={"retention.bytes": "2000000"})]
    )
    described = kadmin.describe_configs([KConfigResource("TOPIC", topic_name)])
    assert described["topic"][topic_name]["retention.bytes"]["value"] == "2000000"
    kadmin.create_partitions({topic_name: KNewPartitions(4)})
    (desc,) = kadmin.describe_topics([topic_name])
    assert len(desc["partitions"]) == 4
    kadmin.delete_topics([topic_name])
    assert topic_name not in kadmin.list_topics()


def test_controller_duties_on_a_standalone_broker(admin, kadmin, broker, topic_name):
    """One broker is its own controller: preferred and unclean elections are not needed, a
    reassignment can only name this broker, and ControlledShutdown has nothing to move."""
    from confluent_kafka import ElectionType, KafkaError
    from confluent_kafka import TopicPartition as CTP
    from kafka import TopicPartition as KTP
    from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

    from protocol.messages.controlled_shutdown import ControlledShutdownRequest
    from tests.support import raw_client

    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    for election in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        results = admin.elect_leaders(election, [CTP(topic_name, 0)]).result(30)
        (error,) = results.values()
        assert error is not None and error.code() == KafkaError.ELECTION_NOT_NEEDED
    tp = KTP(topic_name, 0)
    assert kadmin.alter_partition_reassignments({tp: [0]}) == {tp: None}
    assert kadmin.alter_partition_reassignments({tp: [0, 1]}) == {
        tp: InvalidReplicationAssignmentError
    }
    assert kadmin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
    assert kadmin.list_partition_reassignments() == {}
    sock = raw_client.connect(broker.bootstrap)
    try:
        for version in range(4):
            r = raw_client.call(sock, ControlledShutdownRequest(broker_id=0), version)
            assert (r.error_code, r.remaining_partitions) == (0, [])
    finally:
        sock.close()


def test_alter_replica_log_dirs_answers_per_partition(fresh_broker, tmp_path, topic_name):
    """Each partition gets Kafka's answer; a move to the other log dir is accepted and done
    (the partition ends up there, DescribeLogDirs reports it as current with lag 0)."""
    from kafka import KafkaAdminClient as Admin
    from kafka.errors import (
        LogDirNotFoundError,
        NoError,
        UnknownTopicOrPartitionError,
    )
    from kafka.structs import TopicPartitionReplica as TPR

    dirs = [tmp_path / "a", tmp_path / "b"]
    proc = fresh_broker(**{"log.dirs": ",".join(str(d) for d in dirs)})
    confluent = AdminClient({"bootstrap.servers": proc.bootstrap})
    confluent.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    here = next(d for d in dirs if (d / f"{topic_name}-0").is_dir())
    there = next(d for d in dirs if d != here)
    client = Admin(bootstrap_servers=proc.bootstrap, request_timeout_ms=10000)
    try:
        replica = TPR(topic_name, 0, 0)
        assert client.alter_replica_log_dirs({replica: str(here)}) == {replica: NoError}
        assert client.alter_replica_log_dirs({replica: "/elsewhere"}) == {
            replica: LogDirNotFoundError
        }
        missing = TPR(topic_name, 7, 0)  # no such partition: Kafka's answer
        assert client.alter_replica_log_dirs({missing: str(here)}) == {
            missing: UnknownTopicOrPartitionError
        }
        assert client.alter_replica_log_dirs({replica: str(there)}) == {replica: NoError}
        wait_for(lambda: (there / f"{topic_name}-0").is_dir(), "the partition moved")
        wait_for(lambda: not (here / f"{topic_name}-0").is_dir(), "the old copy renamed")

        def located() -> list[tuple[str, int, int, bool]]:
            (broker_dirs,) = client.describe_log_dirs({topic_name: [0]})
            return [
                (d["log_dir"], p["partition_index"], p["offset_lag"], p["is_future_key"])
                for d in broker_dirs["log_dirs"]
                for t in d["topics"]
                for p in t["partitions"]
            ]

        wait_for(lambda: located() == [(str(there), 0, 0, False)], "reported in its new dir")
    finally:
        client.close()
