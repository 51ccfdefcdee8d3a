"""TopicAdmin's checks, from its typed config section (TopicAdminConfig)."""

from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest

from broker.admin import TopicAdmin
from broker.config import BrokerConfig, TopicAdminConfig
from coordination.errors import PolicyViolation, TopicDeletionDisabled


class RecordingStore:
    """The two calls TopicAdmin makes on the metadata store, recorded; one live broker."""

    def __init__(self) -> None:
        self.view = SimpleNamespace(topics=MappingProxyType({}), brokers={1: None})
        self.created: list[tuple[str, int, int]] = []

    def create_topic(self, name: str, partitions: int, replication: int, *_a: Any, **_k: Any):
        self.created.append((name, partitions, replication))
        return SimpleNamespace(partitions=[None] * partitions)

    def delete_topic(self, name: str) -> None:
        raise AssertionError(f"{name} deleted")


def admin(**raw: str) -> tuple[TopicAdmin, RecordingStore]:
    store = RecordingStore()
    section = TopicAdminConfig.from_broker(BrokerConfig.from_dict(raw))
    return TopicAdmin(section, store), store  # type: ignore[arg-type]


def test_topics_take_the_sections_defaults_and_limits() -> None:
    topics, store = admin(**{"num.partitions": "3", "default.replication.factor": "1"})
    topics.create_topic("t")
    assert store.created == [("t", 3, 1)]

    topics, _ = admin(**{"max.partitions.per.request": "4"})
    with pytest.raises(PolicyViolation, match=r"max\.partitions\.per\.request is 4\)"):
        topics.create_topic("t", 5, 1)

    topics, _ = admin(**{"max.broker.partitions": "6"})
    with pytest.raises(PolicyViolation, match=r"may hold 6 \(6 per broker"):
        topics.create_topic("t", 7, 1)


def test_deletion_disabled_by_the_section() -> None:
    topics, _ = admin(**{"delete.topic.enable": "false"})
    with pytest.raises(TopicDeletionDisabled, match="Topic deletion is disabled"):
        topics.delete_topic("t")
