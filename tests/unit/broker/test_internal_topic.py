"""FindCoordinator's creation of an internal topic (``__consumer_offsets``,
``__transaction_state``) on first use, with concurrent callers."""

from __future__ import annotations

import threading
import uuid
from types import MappingProxyType
from typing import Any

from broker.coordinators.internal_topic import (
    CoordinatorNode,
    InternalTopicCoordinator,
    InternalTopicSpec,
)
from coordination.metadata.view import (
    BrokerInfo,
    ClusterView,
    Endpoint,
    PartitionState,
    TopicMetadata,
)
from protocol.error_codes import ErrorCode

TOPIC = "__consumer_offsets"


def _view(*, with_topic: bool) -> ClusterView:
    topics = {}
    if with_topic:
        state = PartitionState(0, 1, 0, (1,), (1,), 0)
        topics[TOPIC] = TopicMetadata(TOPIC, uuid.uuid4(), (state,), internal=True)
    return ClusterView(
        cluster_id="c" * 22,
        controller_id=1,
        brokers=MappingProxyType({1: BrokerInfo(1, (Endpoint("PLAINTEXT", "h", 9092),))}),
        topics=MappingProxyType(topics),
    )


class Store:
    """The embedded store's order: the view is published, then the listeners run on the
    creating thread (here: ``listeners()``, which the test scripts)."""

    def __init__(self) -> None:
        self.view = _view(with_topic=False)

    def add_listener(self, listener: Any) -> None:
        pass


class Coordinator:
    def __init__(self) -> None:
        self.partitions: set[int] = set()

    def coordinates(self, partition: int) -> bool:
        return partition in self.partitions


def test_a_caller_that_sees_the_topic_mid_creation_waits_for_the_coordinator() -> None:
    """Three FindCoordinators at once on a new broker: one creates the topic; another arrives
    after the view shows the topic but before the listeners have given the coordinator its
    partition. It waits for the creation, as the ones that came first do, instead of answering
    COORDINATOR_NOT_AVAILABLE (seen in CI: [15, 0, 0])."""
    store = Store()
    coordinator = Coordinator()
    answers: list[CoordinatorNode] = []
    late_caller_blocked: list[bool] = []

    class Admin:
        def create_topic(self, topic: str, **_: Any) -> None:
            store.view = _view(with_topic=True)  # published...
            late = threading.Thread(target=lambda: answers.append(find()))
            late.start()
            late.join(0.3)
            late_caller_blocked.append(late.is_alive())
            coordinator.partitions.add(0)  # ...then the listeners run
            self.late = late

    admin = Admin()
    itc = InternalTopicCoordinator(
        InternalTopicSpec(TOPIC, 1, 1, {}),
        coordinator,  # type: ignore[arg-type]
        broker_id=1,
        metadata=store,  # type: ignore[arg-type]
        admin=admin,  # type: ignore[arg-type]
        log_=None,  # type: ignore[arg-type]
    )

    def find() -> CoordinatorNode:
        return itc.coordinator_node(0, "PLAINTEXT")

    first = find()
    admin.late.join(10)
    assert late_caller_blocked == [True]
    assert first == CoordinatorNode(ErrorCode.NONE, 1, "h", 9092)
    assert answers == [first]
    # once created, callers are answered at once
    assert find() == first
