"""coordination.zk.data: Kafka's znode JSON, byte for byte, and tolerant decoding."""

from __future__ import annotations

import uuid

import pytest

from coordination.metadata.view import BrokerInfo, Endpoint
from coordination.zk import data as zd


def test_cluster_id() -> None:
    assert zd.encode_cluster_id("abc") == b'{"version":"1","id":"abc"}'
    assert zd.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"
    with pytest.raises(zd.ZkDataError):
        zd.decode_cluster_id(b"")
    with pytest.raises(zd.ZkDataError):
        zd.decode_cluster_id(b'{"version":"1"}')


def test_broker_registration_is_kafkas_v5() -> None:
    broker = BrokerInfo(
        1, (Endpoint("PLAINTEXT", "host", 9092), Endpoint("SSL", "::1", 9093)), rack="r1"
    )
    data = zd.encode_broker_registration(
        broker, timestamp_ms=1700000000000, security_protocol_map={"SSL": "SSL"}
    )
    assert data == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
        b'"endpoints":["PLAINTEXT://host:9092","SSL://[::1]:9093"],"jmx_port":-1,"port":9092,'
        b'"host":"host","timestamp":"1700000000000","rack":"r1","version":5}'
    )
    assert zd.decode_broker_registration(1, data) == broker


def test_broker_registration_without_plaintext_listener() -> None:
    broker = BrokerInfo(2, (Endpoint("CLIENT", "h", 1),))
    data = zd.encode_broker_registration(
        broker, timestamp_ms=0, security_protocol_map={"CLIENT": "SSL"}
    )
    doc = zd.from_json(data, "x")
    assert doc["host"] is None and doc["port"] == -1
    assert doc["listener_security_protocol_map"] == {"CLIENT": "SSL"}
    assert "rack" not in doc


def test_old_broker_registrations_decode() -> None:
    v1 = b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    assert zd.decode_broker_registration(3, v1) == BrokerInfo(
        3, (Endpoint("PLAINTEXT", "h", 9092),)
    )
    v4 = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:1"],"rack":"x","jmx_port":-1,"host":"h",'
        b'"timestamp":"1","port":1,"version":4}'
    )
    assert zd.decode_broker_registration(3, v4).rack == "x"
    with pytest.raises(zd.ZkDataError):
        zd.decode_broker_registration(3, b'{"endpoints":["nonsense"]}')
    with pytest.raises(zd.ZkDataError):
        zd.decode_broker_registration(3, b"[1]")


def test_topic_assignment() -> None:
    topic_id = uuid.UUID(int=1)
    data = zd.encode_topic_assignment(topic_id, {1: [2, 3], 0: [1, 2]})
    assert data == (
        b'{"version":3,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},'
        b'"removing_replicas":{},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ"}'
    )
    decoded = zd.decode_topic_assignment("t", data)
    assert decoded.topic_id == topic_id
    assert decoded.partitions == {0: (1, 2), 1: (2, 3)}
    legacy = zd.decode_topic_assignment("t", b'{"version":1,"partitions":{"0":[1]}}')
    assert legacy.topic_id is None and legacy.partitions == {0: (1,)}
    with pytest.raises(zd.ZkDataError):
        zd.decode_topic_assignment("t", b'{"partitions":{"x":[1]}}')


def test_partition_state() -> None:
    data = zd.encode_partition_state(1, 4, [1, 2], 3)
    assert data == b'{"version":1,"leader":1,"leader_epoch":4,"controller_epoch":3,"isr":[1,2]}'
    state = zd.decode_partition_state("t", 0, data, 7)
    assert state == zd.LeaderIsrAndControllerEpoch(1, 4, (1, 2), 3, 7)
    with pytest.raises(zd.ZkDataError):
        zd.decode_partition_state("t", 0, b'{"leader":true}')


def test_controller_and_epoch() -> None:
    assert zd.encode_controller(2, 5) == (
        b'{"version":2,"brokerid":2,"timestamp":"5","kraftControllerEpoch":-1}'
    )
    assert zd.decode_controller(zd.encode_controller(2, 5)) == 2
    assert zd.decode_controller(b"3") == 3  # before Kafka 0.8.2
    assert zd.encode_controller_epoch(0) == b"0"
    assert zd.decode_controller_epoch(b"12") == 12
    with pytest.raises(zd.ZkDataError):
        zd.decode_controller_epoch(b"x")


def test_configs_and_notifications() -> None:
    assert zd.encode_entity_config({"a": "1"}) == b'{"version":1,"config":{"a":"1"}}'
    assert zd.decode_entity_config("p", b'{"version":1,"config":{"a":"1"}}') == {"a": "1"}
    assert zd.decode_entity_config("p", b"") == {}
    assert zd.encode_config_change("topics/t") == b'{"version":2,"entity_path":"topics/t"}'
    assert zd.decode_config_change(b'{"version":2,"entity_path":"topics/t"}') == ("topics", "t")
    assert zd.decode_config_change(b'{"version":1,"entity_type":"topics"}') is None
    assert zd.config_change_sequence("config_change_0000000042") == 42
    assert zd.config_change_sequence("other") is None


def test_producer_id_block_and_feature() -> None:
    data = zd.encode_producer_id_block(1, 0, 999)
    assert data == b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}'
    assert zd.decode_producer_id_block(data) == (1, 0, 999)
    assert zd.decode_producer_id_block(b"") is None
    assert zd.encode_feature_znode() == b'{"version":2,"status":1,"features":{}}'


def test_paths() -> None:
    assert zd.partition_state_path("t", 3) == "/brokers/topics/t/partitions/3/state"
    assert zd.parse_partition_state_path("/brokers/topics/t/partitions/3/state") == ("t", 3)
    assert zd.parse_partition_state_path("/brokers/topics/t/partitions/3") is None
    assert zd.parse_topic_path("/brokers/topics/t") == "t"
    assert zd.parse_topic_path("/brokers/topics/t/partitions") is None
    assert zd.PERSISTENT_PATHS[:3] == ("/consumers", "/brokers/ids", "/brokers/topics")
    assert "/config/ips" in zd.PERSISTENT_PATHS


def test_endpoints() -> None:
    assert zd.parse_endpoint("SSL://[::1]:9093") == Endpoint("SSL", "::1", 9093)
    assert zd.parse_endpoint("PLAINTEXT://:9092") == Endpoint("PLAINTEXT", "", 9092)


def test_isr_change_notification_round_trip() -> None:
    data = zd.encode_isr_change_notification([("t", 0), ("u", 3)])
    assert (
        data
        == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
    )
    assert zd.decode_isr_change_notification(data) == [("t", 0), ("u", 3)]
    with pytest.raises(zd.ZkDataError):
        zd.decode_isr_change_notification(b'{"version":1}')


def test_log_dir_event_notification_is_kafkas() -> None:
    """Kafka's LogDirEventNotificationSequenceZNode: version, broker, event 1 (LogDirFailure)."""
    assert zd.encode_log_dir_event(3) == b'{"version":1,"broker":3,"event":1}'
    assert zd.decode_log_dir_event(b'{"version":1,"broker":3,"event":1}') == 3
    assert zd.LOG_DIR_EVENT_NOTIFICATION_PATH == "/log_dir_event_notification"
    assert zd.LOG_DIR_EVENT_PREFIX == "log_dir_event_"
    with pytest.raises(zd.ZkDataError):
        zd.decode_log_dir_event(b'{"version":1}')


def test_offline_replicas_round_trip() -> None:
    data = zd.encode_offline_replicas(4294967298, [("u", 3), ("t", 0)])
    assert data == (
        b'{"version":1,"broker_epoch":4294967298,'
        b'"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
    )
    assert zd.decode_offline_replicas(2, data) == (4294967298, frozenset({("t", 0), ("u", 3)}))
    assert zd.offline_replicas_path(2) == "/brokers/offline_replicas/2"
    with pytest.raises(zd.ZkDataError):
        zd.decode_offline_replicas(2, b'{"version":1,"broker_epoch":1}')
    with pytest.raises(zd.ZkDataError):
        zd.decode_offline_replicas(2, b'{"version":1,"partitions":[]}')


def test_admin_reassignment_and_preferred_election_znodes() -> None:
    data = zd.encode_reassign_partitions({("t", 1): [2, 3], ("a", 0): [1]})
    assert data == (
        b'{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},'
        b'{"topic":"t","partition":1,"replicas":[2,3]}]}'
    )
    assert zd.decode_reassign_partitions(data) == {("a", 0): (1,), ("t", 1): (2, 3)}
    data = zd.encode_preferred_replica_election([("t", 0), ("t", 2)])
    assert (
        data
        == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":2}]}'
    )
    assert zd.decode_preferred_replica_election(data) == [("t", 0), ("t", 2)]
    with pytest.raises(zd.ZkDataError):
        zd.decode_reassign_partitions(b'{"version":1,"partitions":[{"partition":0}]}')
    with pytest.raises(zd.ZkDataError):
        zd.decode_preferred_replica_election(b"[]")
