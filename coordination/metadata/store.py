"""The metadata store interface: where topics, partitions, configs and brokers live.

Two stores implement it: :class:`coordination.metadata.embedded.EmbeddedMetadataStore` (one file
beside the logs; standalone mode) and :class:`coordination.zk.store.ZkMetadataStore` (Kafka's
ZooKeeper layout; cluster mode).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NamedTuple

from coordination.metadata.election import ElectionType
from coordination.metadata.reassignment import ReplicaAssignment
from coordination.metadata.view import ClusterView, LeaderAndIsr, PartitionState, TopicMetadata
from protocol.error_codes import ErrorCode

Listener = Callable[[ClusterView, ClusterView], None]
TopicPartition = tuple[str, int]


class ElectionResult(NamedTuple):
    """One partition's answer to an ElectLeaders request: NONE with the leader elected, or the
    error (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ...) and its message."""

    error: ErrorCode
    message: str | None = None
    leader: int = -1


class ApiResult(NamedTuple):
    """One partition's answer to an admin request: an error code and its message."""

    error: ErrorCode
    message: str | None = None


class MetadataStore(ABC):
    """Where topics, partitions, configs and brokers live. Thread-safe."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()

    @property
    @abstractmethod
    def view(self) -> ClusterView:
        """The current snapshot (cheap; never blocks)."""

    def add_listener(self, listener: Listener) -> None:
        """``listener(old, new)`` is called after every change, on the thread that made it."""
        with self._listeners_lock:
            self._listeners.append(listener)

    def _notify(self, old: ClusterView, new: ClusterView) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(old, new)

    @property
    def is_controller(self) -> bool:
        """Whether this broker is the cluster's active controller (a standalone broker is its
        own)."""
        return False

    @property
    def broker_epoch(self) -> int:
        """This broker's epoch in the cluster (ZooKeeper: its registration's czxid); -1 when
        the store has none."""
        return -1

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        internal: bool = False,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Raises TopicExists, InvalidTopic, InvalidPartitions, InvalidReplicationFactor..."""

    @abstractmethod
    def delete_topic(self, name: str) -> TopicMetadata:
        """Raises UnknownTopic."""

    @abstractmethod
    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata: ...

    @abstractmethod
    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        """Replaces the topic's config overrides."""

    @abstractmethod
    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Replaces the dynamic broker configs of ``entity`` (a broker id as a string, or
        :data:`~coordination.metadata.view.DEFAULT_BROKER_ENTITY`); an empty mapping removes
        them. Every broker's view shows the change (``ClusterView.broker_configs``)."""

    @abstractmethod
    def set_client_metrics_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replaces the configs of the client metrics subscription ``name`` (KIP-714); an empty
        mapping removes it. Every broker's view shows the change
        (``ClusterView.client_metrics``)."""

    @abstractmethod
    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replaces the configs of group ``group_id`` (KIP-848's group configs); an empty
        mapping removes them. Every broker's view shows the change
        (``ClusterView.group_configs``)."""

    @abstractmethod
    def update_features(self, levels: Mapping[str, int]) -> None:
        """Finalizes each feature of ``levels`` at its level (KIP-584), the others unchanged,
        and bumps the features' epoch. Every broker's view shows the change
        (``ClusterView.features``). The caller validated the levels."""

    @abstractmethod
    def allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        """A fresh block of producer ids, [start, end] inclusive, never handed out before."""

    @abstractmethod
    def alter_partition(
        self, topic: str, partition: int, new: LeaderAndIsr, *, partition_epoch: int
    ) -> PartitionState:
        """Compare-and-set of a partition's leader, leader epoch and ISR: applied only if the
        partition is still at ``partition_epoch``; returns the new state (with its new partition
        epoch). Raises InvalidUpdateVersion when stale, UnknownTopic when the partition is gone.
        The leader proposes ISR changes with it (Kafka's ZooKeeper-mode ISR updates, KIP-497's
        AlterPartition in KRaft)."""

    def report_offline_replicas(self, partitions: Collection[TopicPartition]) -> None:
        """This broker's replicas in log dirs it took offline (an I/O error, a full disk:
        KIP-112), all of them each time. In a cluster the controller then moves their
        leadership to other in-sync replicas and takes them out of the ISRs; standalone there
        is no other replica (nothing to do). Returns at once (never blocks on the store)."""
        return None

    # -- the controller's duties (Kafka's KafkaController APIs) ---------------------------------

    @abstractmethod
    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        """Moves the leadership of ``broker_id``'s replicated partitions to other in-sync
        replicas and takes it out of the ISRs it follows in (Kafka's ``doControlledShutdown``);
        returns the replicated partitions it still leads. Raises NotController when this broker
        is not the controller, KafkaApiError STALE_BROKER_EPOCH / BROKER_NOT_AVAILABLE."""

    @abstractmethod
    def elect_leaders(
        self, election_type: ElectionType, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ElectionResult]:
        """Elects leaders (KIP-460): the preferred replica, or with UNCLEAN an out-of-sync
        replica of a partition without a live leader. ``None``: every partition. Returns once
        this store's view shows the leaders elected. NOT_CONTROLLER per partition when this
        broker is not the controller (as Kafka's ZooKeeper-mode brokers answer)."""

    @abstractmethod
    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, ApiResult]:
        """Starts reassignments to the target replicas given (KIP-455), or cancels those whose
        target is None; without ``allow_replication_factor_change`` (KIP-860) a target of another
        replication factor is refused. Raises NotController when this broker is not the
        controller."""

    @abstractmethod
    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """The ongoing reassignments (of ``partitions`` only, when given). Raises NotController
        when this broker is not the controller."""
