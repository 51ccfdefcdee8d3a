"""The metadata store interface: where topics, partitions, configs and brokers live.

Two stores implement it: :class:`coordination.metadata.embedded.EmbeddedMetadataStore` (one file
beside the logs; standalone mode) and :class:`coordination.zk.store.ZkMetadataStore` (Kafka's
ZooKeeper layout; cluster mode).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence

from coordination.metadata.view import ClusterView, LeaderAndIsr, PartitionState, TopicMetadata

Listener = Callable[[ClusterView, ClusterView], None]


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
