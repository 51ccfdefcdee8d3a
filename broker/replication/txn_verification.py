"""The partition side of KIP-890 part 1 for one Produce request (Kafka's
``ReplicaManager.maybeStartTransactionVerificationForPartitions`` and the error mapping of
``handleProduceAppend``'s post-verification callback).

:meth:`~broker.replication.replica_manager.ReplicaManager.start_transaction_verification`
creates, in each partition where the transactional producer has no transaction open, the
verification guard its first batch must carry; the produce handler has the coordinator verify
those partitions and records the answers here (:meth:`ProduceVerification.failed`); each
partition is then appended with its guard (:meth:`ProduceVerification.guard`) or answered with
its error.

Not thread-safe: one request's state, used by the request's loop.
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode
from storage.producer_state import UNVERIFIED, VerificationGuard

TopicPartition = tuple[str, int]

#: coordinator errors a producer should retry the produce on: Kafka answers them as
#: NOT_ENOUGH_REPLICAS, which older clients retry without refreshing metadata
RETRY_VERIFICATION = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class ProduceVerification:
    """See the module docstring."""

    __slots__ = ("errors", "guards", "producer_epoch", "producer_id")

    def __init__(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        #: the partitions to verify with the coordinator, and their guards
        self.guards: dict[TopicPartition, VerificationGuard] = {}
        #: partitions answered without an append: (error, message)
        self.errors: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}

    @property
    def to_verify(self) -> list[TopicPartition]:
        return list(self.guards)

    def guard(self, tp: TopicPartition) -> VerificationGuard:
        """What the partition's append carries: its verification's guard, or the sentinel that
        only passes while the producer's transaction is open there."""
        return self.guards.get(tp, UNVERIFIED)

    def failed(self, errors: dict[TopicPartition, ErrorCode], produce_version: int) -> None:
        """The coordinator's answers for the partitions it did not verify, as the producer
        gets them: INVALID_TXN_STATE ("Partition was not added to the transaction"; the
        coordinator's TRANSACTION_ABORTABLE too, below produce v11, which cannot handle it),
        INVALID_PRODUCER_EPOCH for a fenced producer, NOT_ENOUGH_REPLICAS for what is worth a
        retry, the rest as it is."""
        for tp, answer in errors.items():
            code = answer
            if code == ErrorCode.PRODUCER_FENCED:
                code = ErrorCode.INVALID_PRODUCER_EPOCH
            elif code == ErrorCode.TRANSACTION_ABORTABLE and produce_version <= 10:
                code = ErrorCode.INVALID_TXN_STATE
            if code == ErrorCode.INVALID_TXN_STATE:
                self.errors[tp] = (code, "Partition was not added to the transaction")
            elif code in RETRY_VERIFICATION:
                self.errors[tp] = (
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    "Unable to verify the partition has been added to the transaction. "
                    f"Underlying error: {code.name}",
                )
            else:
                self.errors[tp] = (code, None)
