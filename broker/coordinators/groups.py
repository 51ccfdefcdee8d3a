"""The group service: the group coordinator, the ``__consumer_offsets`` topic it lives in, and
the producer ids InitProducerId hands out, as the handlers use them.

Built by the composition root from the broker's configuration (Kafka's ``group.*`` and
``offsets.*`` keys).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from broker.config import BrokerConfig
from broker.coordinators.internal_topic import (
    CoordinatorNode,
    InternalTopicCoordinator,
    InternalTopicSpec,
)
from broker.metrics import MetricSamples, label_value
from coordination.group.config import GroupConfig
from coordination.group.coordinator import GroupCoordinator
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import OFFSETS_TOPIC, ClusterView


def group_config(config: BrokerConfig, view: ClusterView) -> GroupConfig:
    existing = view.topics.get(OFFSETS_TOPIC)
    return GroupConfig(
        num_partitions=len(existing.partitions)
        if existing is not None
        else int(config["offsets.topic.num.partitions"]),
        min_session_timeout_ms=int(config["group.min.session.timeout.ms"]),
        max_session_timeout_ms=int(config["group.max.session.timeout.ms"]),
        initial_rebalance_delay_ms=int(config["group.initial.rebalance.delay.ms"]),
        max_size=int(config["group.max.size"]),
        offsets_retention_ms=int(config["offsets.retention.minutes"]) * 60_000,
        offsets_retention_check_interval_ms=int(config["offsets.retention.check.interval.ms"]),
        offset_metadata_max_bytes=int(config["offset.metadata.max.bytes"]),
        consumer_session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
        consumer_heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
        consumer_max_size=int(config["group.consumer.max.size"]),
        consumer_assignors=tuple(
            a.strip() for a in config["group.consumer.assignors"] if a.strip()
        ),
        consumer_migration_policy=str(config["group.consumer.migration.policy"]).lower(),
        rebalance_protocols=tuple(
            p.strip().lower() for p in config["group.coordinator.rebalance.protocols"]
        ),
    )


def offsets_topic_spec(config: BrokerConfig, num_partitions: int) -> InternalTopicSpec:
    return InternalTopicSpec(
        OFFSETS_TOPIC,
        num_partitions=num_partitions,
        replication_factor=int(config["offsets.topic.replication.factor"]),
        configs={
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(config["offsets.topic.segment.bytes"]),
        },
    )


class GroupService:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        topic: InternalTopicCoordinator,
        metadata: MetadataStore | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.topic = topic
        self.metadata = metadata

    def startup(self) -> None:
        self.coordinator.startup()
        if self.metadata is not None:
            # consumer groups follow topic creations, deletions and partition increases
            self.metadata.add_listener(self.coordinator.on_metadata_change)
        self.topic.startup()

    def shutdown(self) -> None:
        """Stops the coordinator (members waiting in a rebalance are answered
        COORDINATOR_NOT_AVAILABLE) and the loader. Idempotent."""
        self.coordinator.shutdown()
        self.topic.shutdown()

    def find(self, group_id: str, listener: str) -> CoordinatorNode:
        return self.topic.coordinator_node(self.coordinator.partition_for(group_id), listener)

    def metrics(self) -> list[MetricSamples]:
        _, groups = self.coordinator.list_groups()
        states = Counter((g.group_type, g.state) for g in groups)
        return [
            (
                "odradek_consumer_groups",
                "gauge",
                "Groups this broker coordinates, by type and state.",
                [(f'{{type="{t}",state="{s}"}}', float(n)) for (t, s), n in sorted(states.items())],
            ),
            (
                "odradek_coordinator_partitions_loading",
                "gauge",
                "__consumer_offsets partitions being loaded.",
                [("", float(len(self.coordinator.loading_partitions)))],
            ),
        ]

    def lag_metrics(self, end_offset: Callable[[str, int], int | None]) -> list[MetricSamples]:
        """The consumer lag of the groups this broker coordinates, per partition, as Kafka lag
        exporters publish it (``kafka_consumergroup_lag{group,topic,partition}``): the
        partition's high watermark (``end_offset``: None when no replica of the partition is
        on this broker, which then reports no lag for it) minus the group's committed offset."""
        lags: list[tuple[str, float]] = []
        offsets: list[tuple[str, float]] = []
        for group_id, committed in sorted(self.coordinator.all_committed_offsets().items()):
            group = label_value(group_id)
            for (topic, partition), offset in sorted(committed.items()):
                labels = f'{{group="{group}",topic="{label_value(topic)}",partition="{partition}"}}'
                offsets.append((labels, float(offset)))
                end = end_offset(topic, partition)
                if end is not None and offset >= 0:
                    lags.append((labels, float(max(end - offset, 0))))
        return [
            (
                "kafka_consumergroup_current_offset",
                "gauge",
                "Committed offset of a group, per partition (groups this broker coordinates).",
                offsets,
            ),
            (
                "kafka_consumergroup_lag",
                "gauge",
                "High watermark minus the group's committed offset, per partition (groups this "
                "broker coordinates, partitions with a replica here).",
                lags,
            ),
        ]
