"""What this broker knows of the cluster's ZooKeeper state, and the view built from it (Kafka's
``MetadataCache`` fed from ZooKeeper).

Every broker reads ZooKeeper itself: the live brokers (``/brokers/ids``), the topics and their
assignments (``/brokers/topics/<t>``), each partition's state znode, topic configs (re-read
when a ``/config/changes`` notification names them), and the replicas brokers took offline with
a log dir (``/brokers/offline_replicas/<id>``: the controller elects around them, and Metadata
answers them among the offline replicas). Each read re-arms a one-shot watch whose
callback only *posts* an event; the store's worker thread handles events by calling the loaders
here, then publishes :meth:`ZkClusterCache.build_view`.

Thread-safety: owned by the store's worker thread (start-up aside); watch callbacks run on
kazoo's threads and only post events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from coordination.metadata.view import (
    INTERNAL_TOPICS,
    BrokerInfo,
    ClusterView,
    PartitionState,
    TopicMetadata,
)
from coordination.zk import data as zd
from coordination.zk.client import ZkClient
from protocol.primitives import ZERO_UUID

log = logging.getLogger(__name__)

#: An event for the store's worker: ("brokers",), ("topic", name), ("state", topic, p)...
Event = tuple[Any, ...]
Post = Callable[[Event], None]


@dataclass(frozen=True)
class CachedTopic:
    """What this broker knows of ``/brokers/topics/<t>``."""

    assignment: zd.TopicAssignment
    zk_version: int


class ZkClusterCache:
    def __init__(self, zk: ZkClient, post: Post) -> None:
        self.zk = zk
        self.post = post
        self.brokers: dict[int, BrokerInfo] = {}
        self.broker_epochs: dict[int, int] = {}
        self.topics: dict[str, CachedTopic] = {}
        self.states: dict[tuple[str, int], zd.LeaderIsrAndControllerEpoch] = {}
        self.configs: dict[str, dict[str, str]] = {}
        #: ``/config/brokers/<entity>``: dynamic broker configs by entity (``<default>`` or an id)
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}
        self.group_configs: dict[str, dict[str, str]] = {}
        self.last_config_change = -1
        #: ``/brokers/offline_replicas/<id>``: broker id -> (the broker epoch it was written
        #: under, the replicas in the broker's offline log dirs)
        self.offline_replicas: dict[int, tuple[int, frozenset[tuple[str, int]]]] = {}
        #: ``/odradek/features``: finalized feature levels, and their epoch
        #: (:func:`~coordination.zk.data.feature_levels_epoch`; 0 while there is no znode)
        self.features: dict[str, int] = {}
        self.features_epoch = 0

    # -- watches (kazoo's threads: only post) --------------------------------------------------

    def _watch_brokers(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("brokers",))

    def _watch_topics(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("topics",))

    def _watch_topic(self, event: Any) -> None:
        if event.type != "NONE":
            name = zd.parse_topic_path(event.path)
            if name is not None:
                self.post(("topic", name))

    def _watch_state(self, event: Any) -> None:
        if event.type != "NONE":
            parsed = zd.parse_partition_state_path(event.path)
            if parsed is not None:
                self.post(("state", *parsed))

    def _watch_config_changes(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("config_changes",))

    def _watch_offline_replicas(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("offline_replicas",))

    def _watch_features(self, event: Any) -> None:
        if event.type != "NONE":
            self.post(("features",))

    # -- loaders -------------------------------------------------------------------------------

    def load_brokers(self) -> None:
        ids = self.zk.children(zd.BROKER_IDS_PATH, self._watch_brokers) or []
        brokers: dict[int, BrokerInfo] = {}
        epochs: dict[int, int] = {}
        for child in ids:
            try:
                broker_id = int(child)
            except ValueError:
                continue
            got = self.zk.get(zd.broker_path(broker_id))
            if got is None:
                continue
            try:
                brokers[broker_id] = zd.decode_broker_registration(broker_id, got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring broker %d: %s", broker_id, e)
                continue
            epochs[broker_id] = got[1].czxid
        gone = set(self.brokers) - set(brokers)
        new = set(brokers) - set(self.brokers)
        if gone or new:
            log.info(
                "live brokers: %s (new %s, gone %s)", sorted(brokers), sorted(new), sorted(gone)
            )
        self.brokers = brokers
        self.broker_epochs = epochs

    def load_offline_replicas(self) -> None:
        """Every ``/brokers/offline_replicas/<id>`` (watching the list and each node)."""
        children = self.zk.children(zd.OFFLINE_REPLICAS_PATH, self._watch_offline_replicas)
        if children is None:
            # not created yet (a cluster of older brokers): watch for it
            self.zk.exists(zd.OFFLINE_REPLICAS_PATH, self._watch_offline_replicas)
            children = []
        records: dict[int, tuple[int, frozenset[tuple[str, int]]]] = {}
        for child in children:
            try:
                broker_id = int(child)
            except ValueError:
                continue
            got = self.zk.get(zd.offline_replicas_path(broker_id), self._watch_offline_replicas)
            if got is None:
                continue
            try:
                records[broker_id] = zd.decode_offline_replicas(broker_id, got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring the offline replicas of broker %d: %s", broker_id, e)
        if records != self.offline_replicas:
            for broker_id, (_, partitions) in sorted(records.items()):
                if self.offline_replicas.get(broker_id, (0, frozenset()))[1] != partitions:
                    log.info(
                        "broker %d has %d replica(s) in offline log dirs: %s",
                        broker_id,
                        len(partitions),
                        ", ".join(f"{t}-{p}" for t, p in sorted(partitions)[:20]),
                    )
            self.offline_replicas = records

    def load_features(self) -> None:
        """``/odradek/features`` (watched, created or not)."""
        got = self.zk.get(zd.FEATURE_LEVELS_PATH, self._watch_features)
        if got is None:
            self.zk.exists(zd.FEATURE_LEVELS_PATH, self._watch_features)
            self.features, self.features_epoch = {}, 0
            return
        try:
            features = zd.decode_feature_levels(got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring the finalized feature levels: %s", e)
            return
        if features != self.features:
            log.info("finalized feature levels: %s", features)
        self.features, self.features_epoch = features, zd.feature_levels_epoch(got[1].version)

    def offline_replicas_by_broker(self) -> dict[int, frozenset[tuple[str, int]]]:
        """The offline replicas of registered brokers, each as written under the broker's
        current registration (a record of an older session of the broker does not count)."""
        epochs = self.broker_epochs
        return {
            broker_id: partitions
            for broker_id, (epoch, partitions) in self.offline_replicas.items()
            if partitions and epochs.get(broker_id) == epoch
        }

    def load_topic_list(self, *, full: bool = False) -> None:
        names = self.zk.children(zd.TOPICS_PATH, self._watch_topics) or []
        for gone in set(self.topics) - set(names):
            self.forget_topic(gone)
        for name in names:
            if full or name not in self.topics:
                self.load_topic(name, full=full)

    def forget_topic(self, name: str) -> None:
        old = self.topics.pop(name, None)
        self.configs.pop(name, None)
        if old is not None:
            for p in old.assignment.partitions:
                self.states.pop((name, p), None)

    def load_topic(self, name: str, *, full: bool = False) -> None:
        got = self.zk.get(zd.topic_path(name), self._watch_topic)
        if got is None:
            self.forget_topic(name)
            return
        data, stat = got
        try:
            assignment = zd.decode_topic_assignment(name, data)
        except zd.ZkDataError as e:
            # Keep what we knew: a topic that vanishes from the view has its logs deleted.
            log.warning("ignoring an unreadable version of topic %s: %s", name, e)
            return
        old = self.topics.get(name)
        if old is not None and old.assignment.topic_id != assignment.topic_id:
            self.forget_topic(name)  # deleted and created again between two reads
            old = None
            full = True
        self.topics[name] = CachedTopic(assignment, stat.version)
        if old is not None:
            for p in set(old.assignment.partitions) - set(assignment.partitions):
                self.states.pop((name, p), None)
        for p in assignment.partitions:
            if full or old is None or (name, p) not in self.states:
                self.load_state(name, p)
        if full or old is None:
            self.configs[name] = self._read_topic_config(name)

    def load_state(self, topic: str, partition: int) -> None:
        if topic not in self.topics:  # deleted: do not leave an exists-watch behind
            self.states.pop((topic, partition), None)
            return
        path = zd.partition_state_path(topic, partition)
        got = self.zk.get(path, self._watch_state)
        if got is None:
            # Not written yet: watch for its creation.
            if self.zk.exists(path, self._watch_state) is None:
                self.states.pop((topic, partition), None)
                return
            got = self.zk.get(path, self._watch_state)
            if got is None:
                self.states.pop((topic, partition), None)
                return
        data, stat = got
        try:
            state = zd.decode_partition_state(topic, partition, data, stat.version)
        except zd.ZkDataError as e:
            log.warning("ignoring an unreadable partition state: %s", e)
            return
        self.states[(topic, partition)] = state

    def _read_topic_config(self, name: str) -> dict[str, str]:
        path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        got = self.zk.get(path)
        if got is None:
            return {}
        try:
            return zd.decode_entity_config(path, got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring config of topic %s: %s", name, e)
            return {}

    def load_broker_configs(self) -> None:
        """Every ``/config/brokers/<entity>`` (at start and after a reconnection)."""
        entities = self.zk.children(f"{zd.CONFIG_PATH}/{zd.CONFIG_TYPE_BROKERS}") or []
        self.broker_configs = {}
        for entity in entities:
            self._read_broker_config(entity)

    def _read_broker_config(self, entity: str) -> None:
        path = zd.config_entity_path(zd.CONFIG_TYPE_BROKERS, entity)
        got = self.zk.get(path)
        configs: dict[str, str] = {}
        if got is not None:
            try:
                configs = zd.decode_entity_config(path, got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring dynamic broker config %s: %s", entity, e)
        if configs:
            self.broker_configs[entity] = configs
        else:
            self.broker_configs.pop(entity, None)

    def load_named_configs(self, entity_type: str) -> None:
        """Every ``/config/<entity_type>/<name>`` of a type kept by name (client metrics
        subscriptions, group configs), at start and after a reconnection."""
        names = self.zk.children(f"{zd.CONFIG_PATH}/{entity_type}") or []
        self._named_configs(entity_type).clear()
        for name in names:
            self._read_named_config(entity_type, name)

    def _named_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        if entity_type == zd.CONFIG_TYPE_CLIENT_METRICS:
            return self.client_metrics
        return self.group_configs

    def _read_named_config(self, entity_type: str, name: str) -> None:
        path = zd.config_entity_path(entity_type, name)
        got = self.zk.get(path)
        configs: dict[str, str] = {}
        if got is not None:
            try:
                configs = zd.decode_entity_config(path, got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring the configs of %s/%s: %s", entity_type, name, e)
        target = self._named_configs(entity_type)
        if configs:
            target[name] = configs
        else:
            target.pop(name, None)

    def load_config_changes(self, *, initial: bool = False) -> list[tuple[int, str]]:
        """Applies the ``/config/changes`` notifications not seen yet; returns them all, as
        (sequence, child), for the controller's purge."""
        children = self.zk.children(zd.CONFIG_CHANGES_PATH, self._watch_config_changes) or []
        changes = sorted(
            (seq, child)
            for child in children
            if (seq := zd.config_change_sequence(child)) is not None
        )
        if initial:
            # Configs are all (re-)read next; later notifications have larger numbers.
            if changes:
                self.last_config_change = max(self.last_config_change, changes[-1][0])
            return changes
        for seq, child in changes:
            if seq <= self.last_config_change:
                continue
            got = self.zk.get(f"{zd.CONFIG_CHANGES_PATH}/{child}")
            self.last_config_change = seq
            if got is None:
                continue
            try:
                entity = zd.decode_config_change(got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring config change %s: %s", child, e)
                continue
            if entity is None:
                continue
            entity_type, name = entity
            if entity_type == zd.CONFIG_TYPE_TOPICS and name in self.topics:
                self.configs[name] = self._read_topic_config(name)
            elif entity_type == zd.CONFIG_TYPE_BROKERS:
                self._read_broker_config(name)
            elif entity_type in (zd.CONFIG_TYPE_CLIENT_METRICS, zd.CONFIG_TYPE_GROUPS):
                self._read_named_config(entity_type, name)
        return changes

    # -- the view ------------------------------------------------------------------------------

    def build_view(self, cluster_id: str, controller_id: int) -> ClusterView:
        topics: dict[str, TopicMetadata] = {}
        for name, topic in self.topics.items():
            parts = []
            for p in range(len(topic.assignment.partitions)):
                replicas = topic.assignment.partitions.get(p)
                if replicas is None:
                    log.warning("topic %s: partition %d missing from its assignment", name, p)
                    break
                state = self.states.get((name, p))
                if state is None:
                    parts.append(PartitionState(p, -1, -1, replicas, ()))
                else:
                    parts.append(
                        PartitionState(
                            p,
                            state.leader,
                            state.leader_epoch,
                            replicas,
                            state.isr,
                            state.zk_version,
                        )
                    )
            topics[name] = TopicMetadata(
                name=name,
                topic_id=topic.assignment.topic_id or ZERO_UUID,
                partitions=tuple(parts),
                configs=MappingProxyType(dict(self.configs.get(name, {}))),
                internal=name in INTERNAL_TOPICS,
            )
        return ClusterView(
            cluster_id=cluster_id,
            controller_id=controller_id,
            brokers=MappingProxyType(dict(sorted(self.brokers.items()))),
            topics=MappingProxyType(topics),
            broker_configs=MappingProxyType(
                {e: MappingProxyType(dict(c)) for e, c in sorted(self.broker_configs.items())}
            ),
            client_metrics=MappingProxyType(
                {n: MappingProxyType(dict(c)) for n, c in sorted(self.client_metrics.items())}
            ),
            group_configs=MappingProxyType(
                {n: MappingProxyType(dict(c)) for n, c in sorted(self.group_configs.items())}
            ),
            offline_replicas=MappingProxyType(self.offline_replicas_by_broker()),
            features=MappingProxyType(dict(self.features)),
            features_epoch=self.features_epoch,
        )
