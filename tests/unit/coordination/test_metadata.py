"""Topic rules both metadata stores share, and the embedded store following them."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordination.errors import InvalidReplicaAssignment, InvalidTopic
from coordination.metadata.assignment import new_partition_states, validate_assignment
from coordination.metadata.embedded import EmbeddedMetadataStore
from coordination.metadata.view import (
    BrokerInfo,
    ClusterView,
    Endpoint,
    PartitionState,
    topics_colliding,
    validate_topic_name,
)


def test_topic_collisions() -> None:
    assert topics_colliding("a.b", ["a_b", "a.b", "c"]) == ["a_b"]
    assert topics_colliding("x", ["y"]) == []
    validate_topic_name("a.b", existing=["a.b", "c"])
    with pytest.raises(InvalidTopic, match="collides with existing topics: a_b"):
        validate_topic_name("a.b", existing=["a_b"])


def test_validate_assignment() -> None:
    brokers = {1, 2, 3}
    assert validate_assignment([(1, 2), (2, 3)], brokers) == [[1, 2], [2, 3]]
    for bad, message in [
        ([[1], []], "empty"),
        ([[1, 1]], "Duplicate"),
        ([[1, 7]], "Unknown broker"),
        ([[1, 2], [2]], "same number of replicas"),
    ]:
        with pytest.raises(InvalidReplicaAssignment, match=message):
            validate_assignment(bad, brokers)
    with pytest.raises(InvalidReplicaAssignment, match="same number of replicas"):
        validate_assignment([[1, 2]], brokers, replication_factor=3)
    with pytest.raises(InvalidReplicaAssignment, match="by 2 but 1 assignments"):
        validate_assignment([[1, 2]], brokers, partitions_added=2)


def test_new_partition_states() -> None:
    assert new_partition_states([[2, 1], [1, 2]], first_partition=3) == (
        PartitionState(3, 2, 0, (2, 1), (2, 1)),
        PartitionState(4, 1, 0, (1, 2), (1, 2)),
    )


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedMetadataStore:
    broker = BrokerInfo(0, (Endpoint("PLAINTEXT", "localhost", 9092),))
    s = EmbeddedMetadataStore(tmp_path / "metadata.json", broker)
    s.start()
    return s


def test_embedded_store_refuses_colliding_names(store: EmbeddedMetadataStore) -> None:
    store.create_topic("a.b", 1, 1, {})
    with pytest.raises(InvalidTopic, match="collides"):
        store.create_topic("a_b", 1, 1, {})


def test_embedded_store_checks_added_partitions_like_kafka(store: EmbeddedMetadataStore) -> None:
    store.create_topic("t", 1, 1, {})
    with pytest.raises(InvalidReplicaAssignment, match="empty"):
        store.create_partitions("t", 2, assignment=[[]])
    with pytest.raises(InvalidReplicaAssignment, match="by 1 but 2 assignments"):
        store.create_partitions("t", 2, assignment=[[0], [0]])
    grown = store.create_partitions("t", 2, assignment=[[0]])
    assert grown.partitions[1] == PartitionState(1, 0, 0, (0,), (0,))


def test_embedded_store_tells_listeners_after_releasing_its_lock(
    store: EmbeddedMetadataStore,
) -> None:
    free: list[bool] = []

    def listener(old: ClusterView, new: ClusterView) -> None:
        acquired = store._lock.acquire(blocking=False)
        if acquired:
            store._lock.release()
        free.append(acquired)
        assert store.view is new

    store.add_listener(listener)
    store.create_topic("t", 1, 1, {})
    store.create_partitions("t", 2)
    store.set_topic_configs("t", {"retention.ms": "1"})
    store.delete_topic("t")
    store.create_topic("dry", 1, 1, {}, validate_only=True)
    assert free == [True] * 4


def test_embedded_alter_partition_is_a_compare_and_set(store: EmbeddedMetadataStore) -> None:
    from coordination.errors import InvalidUpdateVersion, UnknownTopic
    from coordination.metadata.view import LeaderAndIsr

    topic = store.create_topic("t", 1, 1, {})
    state = topic.partitions[0]
    new = store.alter_partition(
        "t", 0, LeaderAndIsr(state.leader, state.leader_epoch, ()), partition_epoch=0
    )
    assert new.isr == () and new.partition_epoch == 1
    assert store.view.topics["t"].partitions[0] == new
    with pytest.raises(InvalidUpdateVersion):  # the old epoch is stale now
        store.alter_partition("t", 0, LeaderAndIsr(0, 0, (0,)), partition_epoch=0)
    with pytest.raises(UnknownTopic):
        store.alter_partition("t", 5, LeaderAndIsr(0, 0, (0,)), partition_epoch=1)
    # it survives a restart
    again = EmbeddedMetadataStore(store.path, store.broker)
    again.start()
    assert again.view.topics["t"].partitions[0].partition_epoch == 1


def test_embedded_store_answers_storage_error_on_a_failed_write(
    store: EmbeddedMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk must answer KAFKA_STORAGE_ERROR and change nothing (a fault that cannot be
    produced for real in a unit test: the integration suite fills a real tmpfs)."""
    import coordination.metadata.embedded as embedded
    from coordination.errors import KafkaApiError
    from protocol.error_codes import ErrorCode

    def full(path: object, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embedded, "write_atomically", full)
    with pytest.raises(KafkaApiError) as e:
        store.create_topic("t", 1, 1, {})
    assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "t" not in store.view.topics


def test_embedded_store_keeps_client_metrics_subscriptions(store: EmbeddedMetadataStore) -> None:
    seen = []
    store.add_listener(lambda old, new: seen.append(dict(new.client_metrics)))
    store.set_client_metrics_configs("all", {"metrics": "*", "interval.ms": "1000"})
    assert dict(store.view.client_metrics["all"]) == {"metrics": "*", "interval.ms": "1000"}
    assert seen and "all" in seen[-1]
    again = EmbeddedMetadataStore(store.path, store.broker)
    again.start()
    assert dict(again.view.client_metrics["all"]) == {"metrics": "*", "interval.ms": "1000"}
    again.set_client_metrics_configs("all", {})
    assert "all" not in again.view.client_metrics


def test_embedded_store_keeps_group_configs(store: EmbeddedMetadataStore) -> None:
    store.set_group_configs("g", {"consumer.session.timeout.ms": "50000"})
    again = EmbeddedMetadataStore(store.path, store.broker)
    again.start()
    assert dict(again.view.group_configs["g"]) == {"consumer.session.timeout.ms": "50000"}
    again.set_group_configs("g", {})
    assert "g" not in again.view.group_configs
