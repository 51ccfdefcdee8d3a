"""The transaction service: the transaction coordinator, the ``__transaction_state`` topic it
lives in, and the marker channel, as the handlers use them.

Built by the composition root from the broker's configuration (Kafka's ``transaction.*`` and
``transaction.state.log.*`` keys). KIP-890 verification of
other brokers' transactional produces goes to the coordinators through the
:class:`~broker.coordinators.verification.TransactionVerifier`. The topic is followed like
``__consumer_offsets`` (an
:class:`~broker.coordinators.internal_topic.InternalTopicCoordinator`) and written through the
same :class:`~broker.coordinators.partition_log.PartitionCoordinatorLog`, so it is replicated
like it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from broker.config import BrokerConfig
from broker.coordinators.internal_topic import (
    CoordinatorNode,
    InternalTopicCoordinator,
    InternalTopicSpec,
)
from broker.coordinators.markers import TransactionMarkerChannel
from broker.coordinators.verification import TopicPartition, TransactionVerifier, VerifyCallback
from broker.metrics import MetricSamples
from coordination.metadata.view import TRANSACTION_STATE_TOPIC, ClusterView
from coordination.txn.coordinator import TransactionCoordinator
from coordination.txn.metadata import TV_2, TxnConfig
from protocol.error_codes import ErrorCode


def txn_config(config: BrokerConfig, view: ClusterView) -> TxnConfig:
    existing = view.topics.get(TRANSACTION_STATE_TOPIC)
    return TxnConfig(
        num_partitions=len(existing.partitions)
        if existing is not None
        else int(config["transaction.state.log.num.partitions"]),
        max_timeout_ms=int(config["transaction.max.timeout.ms"]),
        transactional_id_expiration_ms=int(config["transactional.id.expiration.ms"]),
        abort_timed_out_interval_ms=int(
            config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        ),
        remove_expired_interval_ms=int(
            config["transaction.remove.expired.transaction.cleanup.interval.ms"]
        ),
    )


def txn_topic_spec(config: BrokerConfig, num_partitions: int) -> InternalTopicSpec:
    return InternalTopicSpec(
        TRANSACTION_STATE_TOPIC,
        num_partitions=num_partitions,
        replication_factor=int(config["transaction.state.log.replication.factor"]),
        configs={
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
            "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
        },
    )


class TransactionService:
    def __init__(
        self,
        coordinator: TransactionCoordinator,
        topic: InternalTopicCoordinator,
        markers: TransactionMarkerChannel,
        verifier: TransactionVerifier,
    ) -> None:
        self.coordinator = coordinator
        self.topic = topic
        self.markers = markers
        #: KIP-890 verification with the coordinators of other brokers
        self.verifier = verifier

    def startup(self) -> None:
        self.coordinator.startup()
        self.topic.startup()

    def shutdown(self) -> None:
        """Stops the coordinator, the loader and the marker channel. Idempotent."""
        self.coordinator.shutdown()
        self.topic.shutdown()
        self.markers.shutdown()
        self.verifier.shutdown()

    def add_or_verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        callback: VerifyCallback,
        *,
        add: bool,
    ) -> None:
        """KIP-890 for a partition leader: verifies that ``partitions`` are in the producer's
        transaction (part 1), or adds them to it (``add``: part 2, transaction version 2), with
        the id's coordinator, this broker's own or another's. ``callback`` gets the partitions
        that failed, with their errors (empty: done), once, from any thread (at once when this
        broker only verifies)."""
        coordinator = self.coordinator
        if not coordinator.coordinates(coordinator.partition_for(transactional_id)):
            self.verifier.verify(
                transactional_id, producer_id, producer_epoch, partitions, callback, add=add
            )
        elif add:
            coordinator.add_partitions(
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                lambda code: callback(
                    {} if code == ErrorCode.NONE else dict.fromkeys(partitions, code)
                ),
                client_transaction_version=TV_2,
            )
        else:
            answers = coordinator.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            )
            callback({tp: c for tp, c in answers.items() if c != ErrorCode.NONE})

    def find(self, transactional_id: str, listener: str) -> CoordinatorNode:
        return self.topic.coordinator_node(
            self.coordinator.partition_for(transactional_id), listener
        )

    def metrics(self) -> list[MetricSamples]:
        _, txns = self.coordinator.list_transactions()
        states = Counter(t.state.display_name for t in txns)
        return [
            (
                "odradek_transactional_ids",
                "gauge",
                "Transactional ids this broker coordinates, by state.",
                [(f'{{state="{s}"}}', float(n)) for s, n in sorted(states.items())],
            ),
        ]
