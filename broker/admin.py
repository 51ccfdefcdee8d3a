"""Topic administration shared by the admin APIs and Metadata auto-creation.

Validates what Kafka validates (names, partition counts, replication factors, topic configs) and
then asks the metadata store; the store's listeners create or delete the logs.

Bounded by design: a request's partition count is checked against ``max.partitions.per.request``
and the cluster's replica count against ``max.broker.partitions`` per live broker *before* any
assignment is computed, so no request can make the broker materialise millions of partitions
(even with ``validate_only``). The internal topics (``__consumer_offsets``,
``__transaction_state``) cannot be deleted or grown by clients: Kafka's broker leaves that to
ACLs and its tools refuse it; without ACLs any client could erase every group's offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from broker.config import ConfigError, TopicAdminConfig, validate_topic_configs
from coordination.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidTopic,
    PolicyViolation,
    TopicDeletionDisabled,
)
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import INTERNAL_TOPICS, TopicMetadata, validate_topic_name

log = logging.getLogger(__name__)


class TopicAdmin:
    """Kafka's admin checks in front of the metadata store. Thread-safe (the store is)."""

    def __init__(self, config: TopicAdminConfig, metadata: MetadataStore) -> None:
        self.config = config
        self.metadata = metadata

    def check_request_size(self, partitions: int) -> None:
        """Refuses a request creating more than ``max.partitions.per.request`` partitions over
        all its topics, with the error Kafka's KRaft controller gives a batch that is too big."""
        if partitions > self.config.max_partitions_per_request:
            raise PolicyViolation(
                "Unable to perform excessively large batch operation "
                f"({partitions} partitions in one request; max.partitions.per.request is "
                f"{self.config.max_partitions_per_request})."
            )

    def _check_capacity(self, new_replicas: int) -> None:
        """Refuses ``new_replicas`` more partition replicas if the cluster would then hold more
        than ``max.broker.partitions`` per live broker."""
        view = self.metadata.view
        hosted = sum(len(p.replicas) for t in view.topics.values() for p in t.partitions)
        per_broker = self.config.max_broker_partitions
        limit = per_broker * max(len(view.brokers), 1)
        if hosted + new_replicas > limit:
            raise PolicyViolation(
                f"Cannot add {new_replicas} partition replicas: the cluster holds {hosted} and "
                f"may hold {limit} ({per_broker} per broker, max.broker.partitions)."
            )

    def check_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        try:
            validate_topic_configs(configs)
        except ConfigError as e:
            raise InvalidConfig(str(e)) from None
        return {k: str(v) for k, v in configs.items()}

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicMetadata:
        validate_topic_name(name)
        if assignment:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidReplicationFactor(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
        else:
            assignment = None
            if num_partitions == -1:
                num_partitions = self.config.num_partitions
            if replication_factor == -1:
                replication_factor = self.config.default_replication_factor
            if num_partitions <= 0:
                raise InvalidPartitions("Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise InvalidReplicationFactor("Replication factor must be larger than 0.")
        if assignment:
            self.check_request_size(len(assignment))
            self._check_capacity(sum(len(replicas) for replicas in assignment))
        else:
            self.check_request_size(num_partitions)
            self._check_capacity(num_partitions * replication_factor)
        checked = self.check_configs(configs or {})
        topic = self.metadata.create_topic(
            name,
            num_partitions,
            replication_factor,
            checked,
            assignment=assignment,
            internal=internal or name in INTERNAL_TOPICS,
            validate_only=validate_only,
        )
        if not validate_only:
            log.info("created topic %s (%d partitions)", name, len(topic.partitions))
        return topic

    def delete_topic(self, name: str) -> TopicMetadata:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabled("Topic deletion is disabled.")
        if name in INTERNAL_TOPICS:
            raise InvalidTopic(
                f"Topic {name} is a kafka internal topic and is not allowed to be marked for "
                "deletion."
            )
        topic = self.metadata.delete_topic(name)
        log.info("deleted topic %s", name)
        return topic

    def create_partitions(
        self,
        name: str,
        count: int,
        assignment: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicMetadata:
        if name in INTERNAL_TOPICS:
            raise InvalidPartitions(
                f"The number of partitions for the internal topic {name} cannot be changed."
            )
        topic = self.metadata.view.topics.get(name)
        if topic is not None and count > len(topic.partitions):
            added = count - len(topic.partitions)
            self.check_request_size(added)
            replicas = len(topic.partitions[0].replicas) if topic.partitions else 1
            self._check_capacity(added * replicas)
        return self.metadata.create_partitions(
            name, count, assignment=assignment, validate_only=validate_only
        )

    def set_topic_configs(self, name: str, configs: Mapping[str, str | None]) -> TopicMetadata:
        return self.metadata.set_topic_configs(name, self.check_configs(configs))
