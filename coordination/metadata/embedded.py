"""The embedded metadata store: standalone mode, no ZooKeeper.

On disk: one JSON document, ``<log dir>/odradek-metadata.json``::

    {"version": 1, "cluster_id": "<22 chars>", "next_producer_id": 0,
     "topics": {"<name>": {"topic_id": "<22 chars>", "internal": false,
                           "configs": {"retention.ms": "1000"},
                           "partitions": [{"leader": 0, "leader_epoch": 0,
                                           "replicas": [0], "isr": [0]}]}}}

Every change writes a new file and renames it over the old one (after fsync), so a crash leaves
either the old or the new document, never a torn one. Kafka's tools ignore the file: it is not a
partition directory.

Thread-safety: writers serialise on a lock; readers use the immutable ``view``. Listeners are
called after the lock is released, on the writer's thread.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from coordination.errors import (
    InvalidPartitions,
    InvalidUpdateVersion,
    KafkaApiError,
    TopicExists,
    UnknownTopic,
)
from coordination.metadata.assignment import (
    assign_replicas,
    new_partition_states,
    validate_assignment,
)
from coordination.metadata.election import (
    ElectionType,
    admin_election,
    election_failure_message,
)
from coordination.metadata.reassignment import ReplicaAssignment, validate_target
from coordination.metadata.store import (
    ApiResult,
    ElectionResult,
    MetadataStore,
    TopicPartition,
)
from coordination.metadata.view import (
    BrokerInfo,
    ClusterView,
    LeaderAndIsr,
    PartitionState,
    TopicMetadata,
    random_kafka_uuid,
    uuid_from_base64,
    uuid_to_base64,
    validate_topic_name,
)
from protocol.error_codes import ErrorCode
from storage.files import write_atomically

log = logging.getLogger(__name__)

FILE_NAME = "odradek-metadata.json"
FORMAT_VERSION = 1


class EmbeddedMetadataStore(MetadataStore):
    """Metadata for a single broker, kept in one file beside its logs."""

    def __init__(self, path: Path, broker: BrokerInfo, *, cluster_id: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.broker = broker
        self._lock = threading.Lock()
        self._next_producer_id = 0
        self._view = ClusterView(
            cluster_id=cluster_id or "",
            controller_id=broker.broker_id,
            brokers=MappingProxyType({broker.broker_id: broker}),
            topics=MappingProxyType({}),
        )
        self._wanted_cluster_id = cluster_id

    @property
    def view(self) -> ClusterView:
        return self._view

    @property
    def is_controller(self) -> bool:
        return True

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self.path.exists():
                self._load()
            else:
                cluster_id = self._wanted_cluster_id or uuid_to_base64(random_kafka_uuid())
                self._view = ClusterView(
                    cluster_id, self.broker.broker_id, self._view.brokers, MappingProxyType({})
                )
                self._save()
            log.info(
                "metadata: cluster %s, %d topics (%s)",
                self._view.cluster_id,
                len(self._view.topics),
                self.path,
            )

    def stop(self) -> None:
        pass

    def _load(self) -> None:
        doc = json.loads(self.path.read_text())
        if doc.get("version") != FORMAT_VERSION:
            raise RuntimeError(f"{self.path}: unsupported metadata format {doc.get('version')}")
        topics = {}
        for name, t in doc["topics"].items():
            parts = tuple(
                PartitionState(
                    partition=i,
                    leader=p["leader"],
                    leader_epoch=p["leader_epoch"],
                    replicas=tuple(p["replicas"]),
                    isr=tuple(p["isr"]),
                    partition_epoch=p.get("partition_epoch", 0),
                )
                for i, p in enumerate(t["partitions"])
            )
            topics[name] = TopicMetadata(
                name=name,
                topic_id=uuid_from_base64(t["topic_id"]),
                partitions=parts,
                configs=MappingProxyType(dict(t.get("configs", {}))),
                internal=bool(t.get("internal", False)),
            )
        self._next_producer_id = int(doc.get("next_producer_id", 0))
        broker_configs = {
            str(entity): MappingProxyType({str(k): str(v) for k, v in configs.items()})
            for entity, configs in dict(doc.get("broker_configs", {})).items()
        }
        client_metrics = {
            str(name): MappingProxyType({str(k): str(v) for k, v in configs.items()})
            for name, configs in dict(doc.get("client_metrics", {})).items()
        }
        group_configs = {
            str(name): MappingProxyType({str(k): str(v) for k, v in configs.items()})
            for name, configs in dict(doc.get("group_configs", {})).items()
        }
        features = {str(k): int(v) for k, v in dict(doc.get("features", {})).items()}
        cluster_id = doc["cluster_id"]
        if self._wanted_cluster_id and self._wanted_cluster_id != cluster_id:
            raise RuntimeError(
                f"{self.path} belongs to cluster {cluster_id}, but cluster.id is "
                f"{self._wanted_cluster_id}"
            )
        self._view = ClusterView(
            cluster_id,
            self.broker.broker_id,
            self._view.brokers,
            MappingProxyType(topics),
            MappingProxyType(broker_configs),
            MappingProxyType(client_metrics),
            group_configs=MappingProxyType(group_configs),
            features=MappingProxyType(features),
            features_epoch=int(doc.get("features_epoch", 0)),
        )

    def _document(self, view: ClusterView) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "cluster_id": view.cluster_id,
            "next_producer_id": self._next_producer_id,
            "broker_configs": {e: dict(c) for e, c in sorted(view.broker_configs.items())},
            "client_metrics": {n: dict(c) for n, c in sorted(view.client_metrics.items())},
            "group_configs": {n: dict(c) for n, c in sorted(view.group_configs.items())},
            "features": dict(sorted(view.features.items())),
            "features_epoch": view.features_epoch,
            "topics": {
                name: {
                    "topic_id": uuid_to_base64(t.topic_id),
                    "internal": t.internal,
                    "configs": dict(t.configs),
                    "partitions": [
                        {
                            "leader": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "partition_epoch": p.partition_epoch,
                            "replicas": list(p.replicas),
                            "isr": list(p.isr),
                        }
                        for p in t.partitions
                    ],
                }
                for name, t in sorted(view.topics.items())
            },
        }

    def _save(self, view: ClusterView | None = None) -> None:
        """Writes the document (atomically); an I/O error (a full disk) answers
        KAFKA_STORAGE_ERROR and changes nothing."""
        data = json.dumps(self._document(view or self._view), indent=1).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, data)
        except OSError as e:
            log.error("cannot write %s: %s", self.path, e)
            raise KafkaApiError(
                f"cannot write the metadata file: {e.strerror or e}", ErrorCode.KAFKA_STORAGE_ERROR
            ) from None

    def _topic(self, name: str) -> TopicMetadata:
        """The topic ``name`` (under the lock), or UnknownTopic."""
        topic = self._view.topics.get(name)
        if topic is None:
            raise UnknownTopic(f"Topic '{name}' does not exist.")
        return topic

    def _publish(self, name: str, topic: TopicMetadata | None) -> tuple[ClusterView, ClusterView]:
        """Saves and publishes a new view with topic ``name`` set to ``topic`` (None: deleted),
        under the lock; returns (old, new) for the listeners, which are told after the lock is
        released: it is not reentrant, and they re-read the current view under their own locks,
        so the order they hear of changes in is free."""
        old = self._view
        topics = dict(old.topics)
        if topic is None:
            del topics[name]
        else:
            topics[name] = topic
        new = replace(old, topics=MappingProxyType(topics))
        self._save(new)
        self._view = new
        return old, new

    # -- changes -----------------------------------------------------------------------------

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
        with self._lock:
            if name in self._view.topics:
                raise TopicExists(f"Topic '{name}' already exists.")
            validate_topic_name(name, existing=self._view.topics)
            if assignment is not None:
                layout = validate_assignment(assignment, self._view.brokers)
            else:
                brokers = list(self._view.brokers.values())
                layout = assign_replicas(brokers, num_partitions, replication_factor)
            topic = TopicMetadata(
                name=name,
                topic_id=random_kafka_uuid(),
                partitions=new_partition_states(layout),
                configs=MappingProxyType(dict(configs)),
                internal=internal,
            )
            if validate_only:
                return topic
            change = self._publish(name, topic)
        self._notify(*change)
        return topic

    def delete_topic(self, name: str) -> TopicMetadata:
        with self._lock:
            topic = self._topic(name)
            change = self._publish(name, None)
        self._notify(*change)
        return topic

    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        with self._lock:
            topic = self._topic(name)
            current = len(topic.partitions)
            if total_count <= current:
                raise InvalidPartitions(
                    f"Topic currently has {current} partitions, {total_count} would not be an "
                    "increase."
                )
            rf = len(topic.partitions[0].replicas) if topic.partitions else 1
            if assignment is not None:
                layout = validate_assignment(
                    assignment,
                    self._view.brokers,
                    replication_factor=rf,
                    partitions_added=total_count - current,
                )
            else:
                brokers = list(self._view.brokers.values())
                layout = assign_replicas(
                    brokers, total_count - current, rf, first_partition=current
                )
            new = new_partition_states(layout, first_partition=current)
            updated = replace(topic, partitions=topic.partitions + new)
            if validate_only:
                return updated
            change = self._publish(name, updated)
        self._notify(*change)
        return updated

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        with self._lock:
            updated = replace(self._topic(name), configs=MappingProxyType(dict(configs)))
            change = self._publish(name, updated)
        self._notify(*change)
        return updated

    def alter_partition(
        self, topic: str, partition: int, new: LeaderAndIsr, *, partition_epoch: int
    ) -> PartitionState:
        with self._lock:
            meta = self._topic(topic)
            if not 0 <= partition < len(meta.partitions):
                raise UnknownTopic(f"{topic}-{partition} does not exist.")
            current = meta.partitions[partition]
            if current.partition_epoch != partition_epoch:
                raise InvalidUpdateVersion(
                    f"{topic}-{partition}: partition epoch {partition_epoch} is stale "
                    f"(the store has {current.partition_epoch})"
                )
            state = replace(
                current,
                leader=new.leader,
                leader_epoch=new.leader_epoch,
                isr=tuple(new.isr),
                partition_epoch=partition_epoch + 1,
            )
            partitions = list(meta.partitions)
            partitions[partition] = state
            change = self._publish(topic, replace(meta, partitions=tuple(partitions)))
        self._notify(*change)
        return state

    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        self._set_named_configs(
            lambda v: v.broker_configs, lambda v, m: replace(v, broker_configs=m), entity, configs
        )

    def set_client_metrics_configs(self, name: str, configs: Mapping[str, str]) -> None:
        self._set_named_configs(
            lambda v: v.client_metrics, lambda v, m: replace(v, client_metrics=m), name, configs
        )

    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        self._set_named_configs(
            lambda v: v.group_configs, lambda v, m: replace(v, group_configs=m), group_id, configs
        )

    def _set_named_configs(
        self,
        get: Callable[[ClusterView], Mapping[str, Mapping[str, str]]],
        put: Callable[[ClusterView, Mapping[str, Mapping[str, str]]], ClusterView],
        name: str,
        configs: Mapping[str, str],
    ) -> None:
        """Replaces ``name``'s configs in one of the view's maps of named configs (an empty
        mapping removes them), saved before the view changes."""
        with self._lock:
            old = self._view
            named = dict(get(old))
            if configs:
                named[name] = MappingProxyType(dict(configs))
            else:
                named.pop(name, None)
            new = put(old, MappingProxyType(named))
            self._save(new)
            self._view = new
        self._notify(old, new)

    def update_features(self, levels: Mapping[str, int]) -> None:
        with self._lock:
            old = self._view
            new = replace(
                old,
                features=MappingProxyType(dict(sorted({**old.features, **levels}.items()))),
                features_epoch=old.features_epoch + 1,
            )
            self._save(new)
            self._view = new
        self._notify(old, new)

    def allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        with self._lock:
            start = self._next_producer_id
            self._next_producer_id = start + size
            self._save()
            return start, start + size - 1

    # -- the controller's duties: one broker, so little to do -----------------------------------

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        """Standalone: no other broker to hand leadership to (and none asks)."""
        return []

    def elect_leaders(
        self, election_type: ElectionType, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ElectionResult]:
        """Kafka's rules with this broker as the only live one: a standalone partition's leader
        is its only replica, so elections are not needed."""
        results: dict[TopicPartition, ElectionResult] = {}
        changes: list[tuple[ClusterView, ClusterView]] = []
        with self._lock:
            view = self._view
            if partitions is None:
                partitions = [
                    (t.name, p.partition) for t in view.topics.values() for p in t.partitions
                ]
            live = set(view.brokers)
            for topic, index in partitions:
                state = view.partition(topic, index)
                if state is None:
                    results[(topic, index)] = ElectionResult(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                    )
                    continue
                outcome = admin_election(
                    election_type, state.leader, state.isr, state.replicas, live
                )
                if outcome.change is None:
                    message = None
                    if outcome.error != ErrorCode.ELECTION_NOT_NEEDED:
                        message = election_failure_message(topic, index, election_type)
                    results[(topic, index)] = ElectionResult(outcome.error, message)
                    continue
                leader, isr = outcome.change
                meta = self._topic(topic)
                new_state = replace(
                    state,
                    leader=leader,
                    leader_epoch=state.leader_epoch + 1,
                    isr=isr,
                    partition_epoch=state.partition_epoch + 1,
                )
                parts = list(meta.partitions)
                parts[index] = new_state
                changes.append(self._publish(topic, replace(meta, partitions=tuple(parts))))
                view = self._view
                results[(topic, index)] = ElectionResult(ErrorCode.NONE, None, leader)
        for change in changes:
            self._notify(*change)
        return results

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, ApiResult]:
        """Kafka's checks with this broker as the only live one: a target naming another broker
        is refused (INVALID_REPLICA_ASSIGNMENT: not alive), so the only valid target is the
        current replica (nothing moves), and there is never a reassignment to cancel."""
        view = self._view
        results: dict[TopicPartition, ApiResult] = {}
        for (topic, index), target in reassignments.items():
            state = view.partition(topic, index)
            if state is None:
                results[(topic, index)] = ApiResult(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif target is None:
                results[(topic, index)] = ApiResult(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
            else:
                current = ReplicaAssignment(state.replicas)
                problem = validate_target(
                    target,
                    current,
                    view.brokers,
                    allow_replication_factor_change=allow_replication_factor_change,
                )
                if problem is not None:
                    results[(topic, index)] = ApiResult(*problem)
                else:
                    results[(topic, index)] = ApiResult(ErrorCode.NONE)
        return results

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        return {}
