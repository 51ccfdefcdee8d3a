"""One ``__transaction_state`` partition's transactional ids (Kafka's ``TransactionCoordinator``
logic with ``TransactionStateManager``'s per-partition map), on the coordinator runtime.

Every change is a copy of a :class:`~coordination.txn.metadata.TransactionMetadata` written to
the partition and applied once the write is committed; while it is in flight the transactional
id answers CONCURRENT_TRANSACTIONS (the clients retry). The algorithms are Kafka's (KIP-98,
KIP-360, KIP-447):

* **InitProducerId** gives a transactional id a producer id (kept across sessions) and bumps its
  epoch, which fences older instances (their requests then answer PRODUCER_FENCED). An open
  transaction of the previous instance is aborted first (the epoch is bumped, PrepareAbort
  written, markers sent) and the new instance is told CONCURRENT_TRANSACTIONS until the abort is
  complete. KIP-360: a producer passing its current producer id and epoch may bump its own epoch;
  a stale pair is fenced. An epoch about to overflow moves the id to a new producer id.
* **AddPartitionsToTxn / AddOffsetsToTxn** add partitions to the transaction (Ongoing).
* **EndTxn** writes PrepareCommit or PrepareAbort and answers; then the markers go to every
  partition's leader (:class:`MarkerSender`) and, once all are written, CompleteCommit or
  CompleteAbort is written. A retried EndTxn of a completed transaction is answered NONE.
* **Transaction version 2** (KIP-890 part 2: EndTxn v5, partitions added by the partition
  leaders, AddPartitionsToTxn v4+): every EndTxn bumps the producer's epoch with the Prepare
  state, and the markers carry the bumped epoch, so a late batch of the ended transaction is
  fenced. The answer gives the producer its new epoch; a retry with the epoch before answers
  the same. An exhausted epoch moves the id to the next producer id (epoch 0) once the
  transaction is complete. Which version wrote a transaction's state is kept with it
  (``client_transaction_version``): it decides which epochs a retry may name.
* A transaction open longer than its timeout is aborted with a bumped epoch (so its producer is
  fenced); transactional ids idle for ``transactional.id.expiration.ms`` are removed (a
  tombstone).
* Loading replays the records; transactions found in a Prepare state get their markers sent
  again (the previous coordinator may have died before completing them).

Every method runs with the shard's lock held (the runtime takes it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, Protocol

from coordination.runtime.runtime import (
    LoadedRecord,
    ShardContext,
    TransactionalRecord,
    TransactionMarker,
)
from coordination.txn.metadata import (
    COMPLETE_STATES,
    IDLE_STATES,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    PREPARE_STATES,
    SHORT_MAX,
    TV_2,
    TopicPartition,
    TransactionMetadata,
    TxnConfig,
    TxnState,
    is_epoch_exhausted,
)
from coordination.txn.records import (
    CorruptTxnRecord,
    parse_txn_key,
    parse_txn_value,
    txn_key,
    txn_value,
)
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: delay before retrying the Complete write after a failed one
RETRY_COMPLETE_MS = 500


class TxnResult(NamedTuple):
    """InitProducerId and EndTxn answers."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


TxnCallback = Callable[[TxnResult], None]
ErrorCallback = Callable[[ErrorCode], None]


class MarkerSender(Protocol):
    """Writes transaction markers to the partitions' leaders (the broker's
    ``TransactionMarkerChannelManager``)."""

    def send_markers(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        """Writes one marker per partition (retrying until each is written, or its partition
        is gone) and then calls ``done`` once, from any thread. A marker refused because a
        newer coordinator wrote one (TRANSACTION_COORDINATOR_FENCED) never completes."""


def write_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of a failed state-log append to what transactional clients expect."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code


class TransactionCoordinatorShard:
    def __init__(
        self,
        context: ShardContext,
        config: TxnConfig,
        *,
        coordinator_epoch: int,
        producer_ids: Callable[[], int],
        markers: MarkerSender,
    ) -> None:
        self.context = context
        self.config = config
        self.coordinator_epoch = coordinator_epoch
        self._producer_ids = producer_ids
        self._markers = markers
        self.txns: dict[str, TransactionMetadata] = {}

    # -- loading (CoordinatorShard) ----------------------------------------------------------------

    def replay(self, records: Iterable[LoadedRecord]) -> None:
        skipped = 0
        for item in records:
            if isinstance(item, TransactionalRecord | TransactionMarker):
                continue  # never written to __transaction_state
            key, value = item[0], item[1]
            try:
                txn_id = parse_txn_key(key)
                if value is None:
                    self.txns.pop(txn_id, None)
                else:
                    self.txns[txn_id] = TransactionMetadata.from_log(txn_id, parse_txn_value(value))
            except (CorruptTxnRecord, ValueError) as e:
                skipped += 1
                log.warning(
                    "__transaction_state-%d: skipping an unreadable record: %s",
                    self.context.partition,
                    e,
                )
        log.log(
            logging.INFO if self.txns or skipped else logging.DEBUG,
            "loaded %d transactional id(s) from __transaction_state-%d%s",
            len(self.txns),
            self.context.partition,
            f" ({skipped} unreadable records skipped)" if skipped else "",
        )

    def loaded(self) -> None:
        for txn in list(self.txns.values()):
            if txn.state in PREPARE_STATES:
                self._send_markers(txn)

    def unloaded(self, error: ErrorCode) -> None:
        """Nothing waits on a shard: writes in flight answer NOT_COORDINATOR through the
        runtime, and late marker completions find the shard inactive."""

    # -- writes ------------------------------------------------------------------------------------

    def _write(
        self,
        current: TransactionMetadata | None,
        new: TransactionMetadata,
        on_done: Callable[[ErrorCode | None], None],
    ) -> None:
        """Writes ``new`` (a tombstone for Dead); applies it once committed."""
        txn_id = new.transactional_id
        placeholder = current if current is not None else new
        placeholder.pending = new.state
        self.txns.setdefault(txn_id, placeholder)

        def done(error: ErrorCode | None) -> None:
            placeholder.pending = None
            if error is None:
                if new.state == TxnState.DEAD:
                    self.txns.pop(txn_id, None)
                else:
                    new.pending = None
                    self.txns[txn_id] = new
            elif current is None and self.txns.get(txn_id) is placeholder:
                del self.txns[txn_id]  # a new id whose first write failed
            on_done(error)

        value = None if new.state == TxnState.DEAD else txn_value(new.log_value())
        self.context.write([(txn_key(txn_id), value)], done)

    # -- InitProducerId ----------------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int,
        expected_producer_epoch: int,
        callback: TxnCallback,
    ) -> None:
        """Kafka's ``handleInitProducerId``: a new id gets a producer id and epoch 0; an idle one
        its epoch bumped (a new producer, no expected pair: the last epoch is forgotten, so an
        older instance retrying with its pair is fenced; KIP-360, the producer's own pair: the
        last epoch is kept, and a retry naming it is answered the current pair), or a new
        producer id once the epoch is exhausted; an ongoing transaction is aborted with a
        fencing epoch first (the caller retries on CONCURRENT_TRANSACTIONS)."""
        now = self.context.now_ms()
        txn = self.txns.get(transactional_id)
        if txn is None:
            producer_id = self._new_producer_id(callback)
            if producer_id is None:
                return
            new = TransactionMetadata(
                transactional_id,
                producer_id,
                producer_epoch=0,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                last_update_ms=now,
            )
            self._write(None, new, lambda e: callback(self._init_answer(e, new)))
            return
        expected = expected_producer_id >= 0
        if txn.pending is not None:
            callback(TxnResult(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        if expected and not (
            txn.producer_epoch == NO_PRODUCER_EPOCH
            or expected_producer_id == txn.producer_id
            or (
                expected_producer_id == txn.previous_producer_id
                and is_epoch_exhausted(expected_producer_epoch)
            )
        ):
            callback(TxnResult(ErrorCode.PRODUCER_FENCED))
            return
        if txn.state in PREPARE_STATES:
            callback(TxnResult(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        if txn.state == TxnState.ONGOING:
            # fence the previous instance and abort its transaction; the new one retries
            self._fence_and_abort(txn, now)
            callback(TxnResult(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        if txn.state not in IDLE_STATES:
            callback(TxnResult(ErrorCode.INVALID_TXN_STATE))
            return
        reset = {
            "timeout_ms": timeout_ms,
            "state": TxnState.EMPTY,
            "partitions": frozenset(),
            "start_ms": -1,
            "last_update_ms": now,
            "previous_producer_id": txn.producer_id,
            "client_transaction_version": 0,
        }
        if txn.is_epoch_exhausted and (
            not expected or expected_producer_epoch == txn.producer_epoch
        ):
            # a new producer id (Kafka's prepareProducerIdRotation)
            producer_id = self._new_producer_id(callback)
            if producer_id is None:
                return
            new = txn.copy(
                producer_id=producer_id,
                producer_epoch=0,
                last_producer_epoch=txn.producer_epoch if expected else NO_PRODUCER_EPOCH,
                **reset,
            )
        elif not expected:
            new = txn.copy(
                producer_epoch=txn.producer_epoch + 1,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                **reset,
            )
        elif (
            txn.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == txn.producer_epoch
        ):
            new = txn.copy(
                producer_epoch=txn.producer_epoch + 1,
                last_producer_epoch=txn.producer_epoch,
                **reset,
            )
        elif expected_producer_epoch == txn.last_producer_epoch:
            # a retry of a bump that succeeded: the current pair again
            new = txn.copy(**reset)
        else:
            callback(TxnResult(ErrorCode.PRODUCER_FENCED))
            return
        self._write(txn, new, lambda e: callback(self._init_answer(e, new)))

    def _new_producer_id(self, callback: TxnCallback) -> int | None:
        """A producer id from the broker's blocks, or None (the caller was answered
        COORDINATOR_NOT_AVAILABLE)."""
        try:
            return self._producer_ids()
        except Exception:
            log.exception("allocating a producer id failed")
            callback(TxnResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return None

    @staticmethod
    def _init_answer(error: ErrorCode | None, new: TransactionMetadata) -> TxnResult:
        if error is not None:
            return TxnResult(write_error(error))
        return TxnResult(ErrorCode.NONE, new.producer_id, new.producer_epoch)

    def _fence_and_abort(self, txn: TransactionMetadata, now: int) -> None:
        """Kafka's PrepareEpochFence: bump the epoch (fencing the producer: clients never get
        Short.MAX_VALUE, so the coordinator can always bump once more) and abort, forgetting
        the last epoch. The bumped epoch applies only once written (a failed write leaves the
        id as it was, so the next fence does not bump twice)."""
        epoch = min(txn.producer_epoch + 1, SHORT_MAX)
        new = txn.copy(
            producer_epoch=epoch,
            last_producer_epoch=NO_PRODUCER_EPOCH,
            state=TxnState.PREPARE_ABORT,
            last_update_ms=now,
        )

        def done(error: ErrorCode | None) -> None:
            if error is None:
                self._send_markers(new)
            else:
                log.warning(
                    "fencing transactional id %s failed: %s", txn.transactional_id, error.name
                )

        self._write(txn, new, done)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------

    def _check_producer(
        self, txn: TransactionMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode:
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending is not None or txn.state in PREPARE_STATES:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.NONE

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        callback: ErrorCallback,
        client_transaction_version: int = 0,
    ) -> None:
        """Adds ``partitions`` to the producer's transaction, opening one when none is; 2 for
        ``client_transaction_version`` when a partition leader adds them (transaction version
        2: the producer sent no AddPartitionsToTxn)."""
        txn = self.txns.get(transactional_id)
        error = self._check_producer(txn, producer_id, producer_epoch)
        if error != ErrorCode.NONE or txn is None:
            callback(error)
            return
        if txn.state == TxnState.DEAD:
            callback(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
            return
        wanted = frozenset(partitions)
        if txn.state == TxnState.ONGOING and wanted <= txn.partitions:
            callback(ErrorCode.NONE)
            return
        now = self.context.now_ms()
        ongoing = txn.state == TxnState.ONGOING
        new = txn.copy(
            state=TxnState.ONGOING,
            partitions=(txn.partitions | wanted) if ongoing else wanted,
            start_ms=txn.start_ms if ongoing else now,
            last_update_ms=now,
            client_transaction_version=client_transaction_version,
        )
        self._write(txn, new, lambda e: callback(ErrorCode.NONE if e is None else write_error(e)))

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """KIP-890's verification (AddPartitionsToTxn ``verify_only``, Kafka's
        ``handleVerifyPartitionsInTransaction``): NONE for each partition already in the
        producer's transaction, else TRANSACTION_ABORTABLE (the partition leader tells older
        clients INVALID_TXN_STATE); CONCURRENT_TRANSACTIONS while the transaction ends."""
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return dict.fromkeys(partitions, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if txn.producer_epoch != producer_epoch:
            return dict.fromkeys(partitions, ErrorCode.PRODUCER_FENCED)
        if txn.state in PREPARE_STATES:
            return dict.fromkeys(partitions, ErrorCode.CONCURRENT_TRANSACTIONS)
        return {
            tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    # -- EndTxn ------------------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        callback: TxnCallback,
        client_transaction_version: int = 0,
    ) -> None:
        """Kafka's ``TransactionCoordinator.endTransaction`` for a client's EndTxn;
        ``client_transaction_version`` 2 for EndTxn v5 (the epoch is bumped)."""
        txn = self.txns.get(transactional_id)
        if txn is None:
            callback(TxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
            return
        bump = client_transaction_version >= TV_2
        state = txn.state
        # a transaction version 2 retry: the epoch before the bump, or the producer id before
        # an exhausted epoch moved the id to the next one
        v2 = txn.client_transaction_version >= TV_2
        retry_on_bump = v2 and txn.producer_epoch == producer_epoch + 1
        retry_on_overflow = (
            v2
            and txn.previous_producer_id == producer_id
            and producer_epoch == SHORT_MAX - 1
            and txn.producer_epoch == 0
        )
        if txn.producer_id != producer_id and not retry_on_overflow:
            callback(TxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
            return
        if not v2:
            valid = producer_epoch == txn.producer_epoch
        elif state in PREPARE_STATES:
            valid = retry_on_bump
        elif state in COMPLETE_STATES:
            valid = retry_on_bump or retry_on_overflow or producer_epoch == txn.producer_epoch
        else:
            valid = producer_epoch == txn.producer_epoch
        if not valid:
            callback(TxnResult(ErrorCode.PRODUCER_FENCED))
            return
        if txn.pending is not None:
            callback(TxnResult(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        # a transaction version 2 retry is known by its epoch; an earlier one's by its state
        retry = (retry_on_bump or retry_on_overflow) if v2 or bump else True
        if state == TxnState.ONGOING:
            self._prepare_end(txn, commit, bump, callback)
        elif bump and not commit and state in IDLE_STATES and not retry:
            # transaction version 2: a producer whose records may not have reached a partition
            # (none was added) still ends its transaction, and an abort bumps the epoch of a
            # transaction with no partition (Kafka's noPartitionAdded)
            self._prepare_end(txn, commit, bump, callback)
        elif state == TxnState.COMPLETE_COMMIT:
            callback(
                self._current(txn) if commit and retry else TxnResult(ErrorCode.INVALID_TXN_STATE)
            )
        elif state == TxnState.COMPLETE_ABORT:
            callback(
                self._current(txn)
                if not commit and retry
                else TxnResult(ErrorCode.INVALID_TXN_STATE)
            )
        elif state == TxnState.PREPARE_COMMIT:
            callback(
                TxnResult(
                    ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
                )
            )
        elif state == TxnState.PREPARE_ABORT:
            callback(
                TxnResult(
                    ErrorCode.CONCURRENT_TRANSACTIONS if not commit else ErrorCode.INVALID_TXN_STATE
                )
            )
        else:
            callback(TxnResult(ErrorCode.INVALID_TXN_STATE))

    @staticmethod
    def _current(txn: TransactionMetadata) -> TxnResult:
        return TxnResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    def _prepare_end(
        self, txn: TransactionMetadata, commit: bool, bump: bool, callback: TxnCallback
    ) -> None:
        """Writes PrepareCommit or PrepareAbort (with a bumped epoch for transaction version 2,
        and the next producer id when the epoch is exhausted), answers, and sends the markers."""
        changes: dict[str, object] = {}
        if bump:
            changes = {
                "producer_epoch": txn.producer_epoch + 1,
                "last_producer_epoch": txn.producer_epoch,
                "client_transaction_version": TV_2,
            }
            if txn.is_epoch_exhausted:
                next_id = self._new_producer_id(callback)
                if next_id is None:
                    return
                changes["next_producer_id"] = next_id
        else:
            changes["client_transaction_version"] = 0
        now = self.context.now_ms()
        if txn.state != TxnState.ONGOING:
            changes["start_ms"] = now  # a transaction with no partition starts as it ends
        new = txn.copy(
            state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            last_update_ms=now,
            **changes,
        )

        def done(error: ErrorCode | None) -> None:
            if error is not None:
                callback(TxnResult(write_error(error)))
                return
            if new.next_producer_id != NO_PRODUCER_ID:
                # what the producer uses once the transaction is complete (Kafka answers with
                # the metadata prepared for completion)
                callback(TxnResult(ErrorCode.NONE, new.next_producer_id, 0))
            else:
                callback(self._current(new))
            # as Kafka's coordinator, the markers follow the answer: the request's thread
            # sends them once the answer is on its way (the Prepare state is written, so a
            # restart sends them too)
            self.context.soon(lambda: self._send_markers(new))

        self._write(txn, new, done)

    # -- markers and completion --------------------------------------------------------------------

    def _send_markers(self, txn: TransactionMetadata) -> None:
        expected = (txn.producer_id, txn.producer_epoch, txn.state)
        txn_id = txn.transactional_id
        sending = [True]

        def done() -> None:
            if sending[0]:
                # every marker was written before send_markers returned: complete now (the lock
                # is held)
                self._complete(txn_id, expected)
                return
            # later, from any thread: complete on the scheduler's, with the lock held
            self.context.schedule(0, lambda: self._complete(txn_id, expected))

        self._markers.send_markers(
            transactional_id=txn_id,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            committed=txn.state == TxnState.PREPARE_COMMIT,
            coordinator_epoch=self.coordinator_epoch,
            partitions=txn.partitions,
            done=done,
        )
        sending[0] = False

    def _complete(self, txn_id: str, expected: tuple[int, int, TxnState]) -> None:
        txn = self.txns.get(txn_id)
        if txn is None or (txn.producer_id, txn.producer_epoch, txn.state) != expected:
            return
        if txn.pending is not None:
            self.context.schedule(RETRY_COMPLETE_MS, lambda: self._complete(txn_id, expected))
            return
        moved: dict[str, object] = {}
        if txn.client_transaction_version >= TV_2 and txn.next_producer_id != NO_PRODUCER_ID:
            # the epoch was exhausted: the id moves to the next producer id now that every
            # marker carries the last epoch of the old one (Kafka's prepareComplete)
            moved = {
                "producer_id": txn.next_producer_id,
                "previous_producer_id": txn.producer_id,
                "next_producer_id": NO_PRODUCER_ID,
                "producer_epoch": 0,
                "last_producer_epoch": txn.producer_epoch,
            }
        new = txn.copy(
            state=TxnState.COMPLETE_COMMIT
            if txn.state == TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_ms=self.context.now_ms(),
            **moved,
        )

        def done(error: ErrorCode | None) -> None:
            if error is None or error == ErrorCode.NOT_COORDINATOR:
                return  # a new coordinator completes it after loading
            log.warning("completing transaction %s failed: %s; retrying", txn_id, error.name)
            self.context.schedule(RETRY_COMPLETE_MS, lambda: self._complete(txn_id, expected))

        self._write(txn, new, done)

    # -- timers ------------------------------------------------------------------------------------

    def abort_timed_out_transactions(self, now_ms: int) -> int:
        """Aborts (with a fencing epoch bump) transactions open past their timeout."""
        n = 0
        for txn in list(self.txns.values()):
            if (
                txn.state == TxnState.ONGOING
                and txn.pending is None
                and txn.start_ms + txn.timeout_ms < now_ms
            ):
                log.info(
                    "aborting transaction %s (producer id %d): open longer than %d ms",
                    txn.transactional_id,
                    txn.producer_id,
                    txn.timeout_ms,
                )
                self._fence_and_abort(txn, now_ms)
                n += 1
        return n

    def remove_expired_transactional_ids(self, now_ms: int) -> int:
        n = 0
        for txn in list(self.txns.values()):
            if (
                txn.state in IDLE_STATES
                and txn.pending is None
                and txn.last_update_ms + self.config.transactional_id_expiration_ms <= now_ms
            ):
                self._write(txn, txn.copy(state=TxnState.DEAD), lambda e: None)
                n += 1
        return n

    # -- admin -------------------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        txn = self.txns.get(transactional_id)
        if txn is None or txn.state == TxnState.DEAD:
            return None
        return txn

    def list(self) -> list[TransactionMetadata]:
        return [t for t in self.txns.values() if t.state != TxnState.DEAD]
