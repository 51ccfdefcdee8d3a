"""Topic administration shared by the admin APIs and Metadata auto-creation.

Validates what Kafka validates (names, partition counts, replication factors, topic configs) and
then asks the metadata store; the store's listeners create or delete the logs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from broker.config import BrokerConfig, ConfigError, validate_topic_configs
from coordination.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicationFactor,
    TopicDeletionDisabled,
)
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import INTERNAL_TOPICS, TopicMetadata, validate_topic_name

log = logging.getLogger(__name__)


class TopicAdmin:
    """Kafka's admin checks in front of the metadata store. Thread-safe (the store is)."""

    def __init__(self, config: BrokerConfig, metadata: MetadataStore) -> None:
        self.config = config
        self.metadata = metadata

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
                num_partitions = int(self.config["num.partitions"])
            if replication_factor == -1:
                replication_factor = int(self.config["default.replication.factor"])
            if num_partitions <= 0:
                raise InvalidPartitions("Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise InvalidReplicationFactor("Replication factor must be larger than 0.")
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
        if not self.config["delete.topic.enable"]:
            raise TopicDeletionDisabled("Topic deletion is disabled.")
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
        return self.metadata.create_partitions(
            name, count, assignment=assignment, validate_only=validate_only
        )

    def set_topic_configs(self, name: str, configs: Mapping[str, str | None]) -> TopicMetadata:
        return self.metadata.set_topic_configs(name, self.check_configs(configs))
