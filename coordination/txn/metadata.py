"""A transactional id's state (Kafka's ``TransactionMetadata`` and ``TransactionState``), and the
transaction coordinator's configuration.

States and their legal predecessors (Kafka's ``TransactionState.validPreviousStates``)::

    Empty           <- Empty, CompleteCommit, CompleteAbort   (InitProducerId)
    Ongoing         <- Ongoing, Empty, CompleteCommit, CompleteAbort   (AddPartitions/Offsets)
    PrepareCommit   <- Ongoing                               (EndTxn commit)
    PrepareAbort    <- Ongoing, PrepareEpochFence            (EndTxn abort, a timeout, a fence)
    CompleteCommit  <- PrepareCommit                         (every marker written)
    CompleteAbort   <- PrepareAbort
    Dead            <- Empty, CompleteCommit, CompleteAbort  (transactional.id.expiration.ms)

Not thread-safe: its shard's lock is held around every use.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from coordination.txn.records import TxnLogValue

TopicPartition = tuple[str, int]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
#: the highest epoch a client gets (Short.MAX_VALUE - 1): from there InitProducerId moves the
#: transactional id to a new producer id, and only a fence may still bump (to Short.MAX_VALUE)
MAX_PRODUCER_EPOCH = SHORT_MAX - 1


#: the transaction version of KIP-890 part 2 (Kafka's ``TransactionVersion.TV_2``): partitions
#: added by their leaders, an epoch bump with every EndTxn
TV_2 = 2


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``."""
    return producer_epoch >= MAX_PRODUCER_EPOCH


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """Kafka's name (DescribeTransactions, ListTransactions)."""
        return _NAMES[self]

    @classmethod
    def by_name(cls, name: str) -> TxnState | None:
        for state, n in _NAMES.items():
            if n.lower() == name.lower():
                return state
        return None


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

PREPARE_STATES = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
COMPLETE_STATES = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
#: states a new transaction (or InitProducerId) may start from
IDLE_STATES = frozenset({TxnState.EMPTY, *COMPLETE_STATES})


@dataclass(frozen=True)
class TxnConfig:
    """The broker configs the coordinator follows (Kafka's keys in the comments)."""

    num_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    #: transactional.id.expiration.ms
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    #: transaction.abort.timed.out.transaction.cleanup.interval.ms
    abort_timed_out_interval_ms: int = 10_000
    #: transaction.remove.expired.transaction.cleanup.interval.ms
    remove_expired_interval_ms: int = 3_600_000


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id (Kafka's ``TransactionMetadata``). Changes are made on a copy
    (:meth:`transition`), written to the log, and applied once committed; meanwhile
    :attr:`pending` holds the state being written, and other requests get
    CONCURRENT_TRANSACTIONS."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    #: the epoch before the last bump (KIP-360: a producer retrying InitProducerId)
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    client_transaction_version: int = 0
    #: the state a write in flight moves to (None: no write in flight)
    pending: TxnState | None = None

    def log_value(self) -> TxnLogValue:
        return TxnLogValue(
            producer_id=self.producer_id,
            previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=int(self.state),
            partitions=self.partitions
            if self.state in (TxnState.ONGOING, *PREPARE_STATES)
            else frozenset(),
            last_update_ms=self.last_update_ms,
            start_ms=self.start_ms,
            client_transaction_version=self.client_transaction_version,
        )

    @classmethod
    def from_log(cls, transactional_id: str, v: TxnLogValue) -> TransactionMetadata:
        return cls(
            transactional_id,
            v.producer_id,
            previous_producer_id=v.previous_producer_id,
            next_producer_id=v.next_producer_id,
            producer_epoch=v.producer_epoch,
            timeout_ms=v.timeout_ms,
            state=TxnState(v.state),
            partitions=v.partitions,
            start_ms=v.start_ms,
            last_update_ms=v.last_update_ms,
            client_transaction_version=v.client_transaction_version,
        )

    def copy(self, **changes: object) -> TransactionMetadata:
        return replace(self, pending=None, **changes)  # type: ignore[arg-type]

    @property
    def is_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)
