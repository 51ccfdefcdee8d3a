"""Admin writes on Kafka's ZooKeeper layout (Kafka's ``AdminZkClient``): topics and their
configs, partitions added, topics marked for deletion.

They work on any broker: the change is written to ZooKeeper, the controller reacts (leaders for
new partitions, deletion), and the call returns once this broker's view shows the result; if it
does not within ``admin_timeout_ms`` the call raises REQUEST_TIMED_OUT (the change itself is
made). Called on the store's worker thread (from a metadata listener) they do not wait.

Thread-safety: any thread; every write is conditional or idempotent, so concurrent admin calls
on several brokers converge.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from coordination.errors import (
    InvalidPartitions,
    InvalidTopic,
    KafkaApiError,
    TopicExists,
    UnknownTopic,
)
from coordination.metadata.assignment import (
    assign_replicas,
    new_partition_states,
    validate_assignment,
)
from coordination.metadata.view import (
    INTERNAL_TOPICS,
    ClusterView,
    TopicMetadata,
    random_kafka_uuid,
)
from coordination.zk import data as zd
from coordination.zk.client import Op, ZkClient, first_failure
from protocol.error_codes import ErrorCode
from protocol.primitives import ZERO_UUID

log = logging.getLogger(__name__)

T = TypeVar("T")


class AwaitView(Protocol):
    """Waits until ``predicate(view)`` returns something before ``deadline`` (monotonic), or
    raises REQUEST_TIMED_OUT."""

    def __call__(
        self, what: str, predicate: Callable[[ClusterView], T | None], deadline: float
    ) -> T: ...


def timed_out(message: str) -> KafkaApiError:
    return KafkaApiError(message, ErrorCode.REQUEST_TIMED_OUT)


class ZkAdmin:
    def __init__(
        self,
        zk: ZkClient,
        *,
        view: Callable[[], ClusterView],
        await_view: AwaitView,
        on_worker: Callable[[], bool],
        deadline: Callable[[], float],
    ) -> None:
        self.zk = zk
        self._view = view
        self._await = await_view
        self._on_worker = on_worker
        self._deadline = deadline

    @staticmethod
    def _random_index(n: int) -> int:
        return uuid.uuid4().int % max(n, 1)

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        assignment: Sequence[Sequence[int]] | None,
        internal: bool,
        validate_only: bool,
    ) -> TopicMetadata:
        deadline = self._deadline()
        view = self._view()
        if name in view.topics or self.zk.exists(zd.topic_path(name)) is not None:
            raise TopicExists(f"Topic '{name}' already exists.")
        if self.zk.exists(zd.delete_topic_path(name)) is not None:
            raise TopicExists(f"Topic '{name}' is marked for deletion.")
        if assignment is not None:
            layout = validate_assignment(assignment, view.brokers)
        else:
            brokers = list(view.brokers.values())
            layout = assign_replicas(
                brokers,
                num_partitions,
                replication_factor,
                start_index=self._random_index(len(brokers)),
                replica_shift=self._random_index(len(brokers)),
            )
        topic_id = random_kafka_uuid()
        prospective = TopicMetadata(
            name=name,
            topic_id=topic_id,
            partitions=new_partition_states(layout),
            configs=MappingProxyType(dict(configs)),
            internal=internal or name in INTERNAL_TOPICS,
        )
        if validate_only:
            return prospective
        topic_data = zd.encode_topic_assignment(topic_id, dict(enumerate(layout)))
        config_path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        config_data = zd.encode_entity_config(configs)
        for _ in range(5):
            # The topic and its config in one multi-op, so a failed create changes nothing.
            stat = self.zk.exists(config_path)
            config_op = (
                Op.create(config_path, config_data)
                if stat is None
                else Op.set(config_path, config_data, stat.version)
            )
            results = self.zk.multi([Op.create(zd.topic_path(name), topic_data), config_op])
            failure = first_failure(results)
            if failure is None:
                break
            if failure[0] == 0 and isinstance(failure[1], NodeExistsError):
                raise TopicExists(f"Topic '{name}' already exists.")
            if not isinstance(failure[1], NodeExistsError | NoNodeError | BadVersionError):
                raise failure[1]
        else:
            raise timed_out(f"Topic '{name}': its config node keeps changing")
        log.info("wrote topic %s (%d partitions) to ZooKeeper", name, len(layout))

        def ready(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            if t is None or t.topic_id != topic_id:
                return None
            if len(t.partitions) != len(layout) or any(p.leader_epoch < 0 for p in t.partitions):
                return None
            return t

        if self._on_worker():
            return prospective
        return self._await(f"Topic '{name}'", ready, deadline)

    def delete_topic(self, name: str) -> TopicMetadata:
        deadline = self._deadline()
        topic = self._view().topics.get(name)
        if topic is None:
            if self.zk.exists(zd.topic_path(name)) is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            topic = self._await(f"Topic '{name}'", lambda v: v.topics.get(name), deadline)
        try:
            self.zk.create(zd.delete_topic_path(name))
            log.info("marked topic %s for deletion", name)
        except NodeExistsError:
            pass
        topic_id = topic.topic_id

        def gone(v: ClusterView) -> bool | None:
            t = v.topics.get(name)
            return True if t is None or t.topic_id != topic_id else None

        if not self._on_worker():
            self._await(f"Deletion of topic '{name}'", gone, deadline)
        return topic

    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None,
        validate_only: bool,
    ) -> TopicMetadata:
        deadline = self._deadline()
        for _ in range(5):
            got = self.zk.get(zd.topic_path(name))
            if got is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            if self.zk.exists(zd.delete_topic_path(name)) is not None:
                raise InvalidTopic("The topic is queued for deletion.")
            data, stat = got
            current = zd.decode_topic_assignment(name, data)
            count = len(current.partitions)
            if total_count <= count:
                raise InvalidPartitions(
                    f"Topic currently has {count} partitions, {total_count} would not be an "
                    "increase."
                )
            existing = current.partitions.get(0, ())
            rf = len(existing)
            new_count = total_count - count
            if assignment is not None:
                layout = validate_assignment(
                    assignment,
                    self._view().brokers,
                    replication_factor=rf,
                    partitions_added=new_count,
                )
            else:
                brokers = list(self._view().brokers.values())
                ids = sorted(b.broker_id for b in brokers)
                start = next((i for i, b in enumerate(ids) if existing and b >= existing[0]), 0)
                layout = assign_replicas(
                    brokers, new_count, rf, first_partition=count, start_index=start
                )
            partitions = dict(current.partitions)
            for i, replicas in enumerate(layout):
                partitions[count + i] = tuple(replicas)
            updated = TopicMetadata(
                name=name,
                topic_id=current.topic_id or ZERO_UUID,
                partitions=new_partition_states([r for _, r in sorted(partitions.items())]),
                configs=MappingProxyType(dict(self._view().topics[name].configs))
                if name in self._view().topics
                else MappingProxyType({}),
                internal=name in INTERNAL_TOPICS,
            )
            if validate_only:
                return updated
            new_data = zd.encode_topic_assignment(
                current.topic_id,
                partitions,
                adding_replicas=current.adding_replicas,
                removing_replicas=current.removing_replicas,
            )
            try:
                self.zk.set(zd.topic_path(name), new_data, stat.version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise UnknownTopic(f"Topic '{name}' does not exist.") from None
            log.info("topic %s: %d -> %d partitions", name, count, total_count)
            break
        else:
            raise timed_out(f"Topic '{name}' keeps changing")

        def ready(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            if t is None or len(t.partitions) < total_count:
                return None
            if any(p.leader_epoch < 0 for p in t.partitions):
                return None
            return t

        if self._on_worker():
            return updated
        return self._await(f"Partitions of topic '{name}'", ready, deadline)

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        deadline = self._deadline()
        if name not in self._view().topics and self.zk.exists(zd.topic_path(name)) is None:
            raise UnknownTopic(f"Topic '{name}' does not exist.")
        path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        data = zd.encode_entity_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)
        self.zk.create(
            f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
            zd.encode_config_change(f"{zd.CONFIG_TYPE_TOPICS}/{name}"),
            sequence=True,
        )
        wanted = dict(configs)

        def applied(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            return t if t is not None and dict(t.configs) == wanted else None

        if self._on_worker():
            topic = self._view().topics.get(name)
            if topic is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            return TopicMetadata(
                topic.name,
                topic.topic_id,
                topic.partitions,
                MappingProxyType(wanted),
                topic.internal,
            )
        return self._await(f"Configs of topic '{name}'", applied, deadline)

    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Writes ``/config/brokers/<entity>`` and a ``/config/changes`` notification naming it
        (Kafka's ``AdminZkClient.changeBrokerConfig``); returns once this broker's view shows
        the change."""
        deadline = self._deadline()
        path = zd.config_entity_path(zd.CONFIG_TYPE_BROKERS, entity)
        data = zd.encode_entity_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)
        self.zk.create(
            f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
            zd.encode_config_change(f"{zd.CONFIG_TYPE_BROKERS}/{entity}"),
            sequence=True,
        )
        wanted = dict(configs)

        def applied(v: ClusterView) -> bool | None:
            return True if dict(v.broker_configs.get(entity, {})) == wanted else None

        if not self._on_worker():
            self._await(f"Configs of broker entity '{entity}'", applied, deadline)

    def set_client_metrics_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Writes ``/config/client-metrics/<name>`` (a KIP-714 subscription; Kafka's
        ``ConfigType.CLIENT_METRICS``); see :meth:`_set_named_configs`."""
        self._set_named_configs(
            zd.CONFIG_TYPE_CLIENT_METRICS, name, configs,
            lambda v: v.client_metrics, f"Client metrics subscription '{name}'",
        )  # fmt: skip

    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Writes ``/config/groups/<group id>`` (KIP-848's group configs; Kafka 4's
        ``ConfigType.GROUP``); see :meth:`_set_named_configs`."""
        self._set_named_configs(
            zd.CONFIG_TYPE_GROUPS, group_id, configs,
            lambda v: v.group_configs, f"Configs of group '{group_id}'",
        )  # fmt: skip

    def update_features(self, levels: Mapping[str, int]) -> None:
        """Writes ``/odradek/features`` with ``levels`` over the levels there (a conditional
        set: a concurrent update is read again and merged); returns once this broker's view
        shows them."""
        deadline = self._deadline()
        while True:
            got = self.zk.get(zd.FEATURE_LEVELS_PATH)
            if got is None:
                try:
                    self.zk.create(
                        zd.FEATURE_LEVELS_PATH, zd.encode_feature_levels(levels), makepath=True
                    )
                    epoch = zd.feature_levels_epoch(0)
                    break
                except NodeExistsError:
                    continue
            current = zd.decode_feature_levels(got[0])
            try:
                stat = self.zk.set(
                    zd.FEATURE_LEVELS_PATH,
                    zd.encode_feature_levels({**current, **levels}),
                    got[1].version,
                )
                epoch = zd.feature_levels_epoch(stat.version)
                break
            except BadVersionError:
                continue

        def applied(v: ClusterView) -> bool | None:
            return True if v.features_epoch >= epoch else None

        if not self._on_worker():
            self._await("The finalized feature levels", applied, deadline)

    def _set_named_configs(
        self,
        entity_type: str,
        name: str,
        configs: Mapping[str, str],
        in_view: Callable[[ClusterView], Mapping[str, Mapping[str, str]]],
        what: str,
    ) -> None:
        """Writes ``/config/<entity_type>/<name>`` and a ``/config/changes`` notification naming
        it; returns once this broker's view (``in_view``) shows the change."""
        deadline = self._deadline()
        self.zk.ensure_path(f"{zd.CONFIG_PATH}/{entity_type}")
        path = zd.config_entity_path(entity_type, name)
        data = zd.encode_entity_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)
        self.zk.create(
            f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
            zd.encode_config_change(f"{entity_type}/{name}"),
            sequence=True,
        )
        wanted = dict(configs)

        def applied(v: ClusterView) -> bool | None:
            return True if dict(in_view(v).get(name, {})) == wanted else None

        if not self._on_worker():
            self._await(what, applied, deadline)
