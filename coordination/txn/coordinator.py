"""The transaction coordinator (Kafka's ``TransactionCoordinator`` with its
``TransactionStateManager``): routes each transactional id to the shard of the
``__transaction_state`` partition that stores it (``abs(Java String.hashCode(id)) %
transaction.state.log.num.partitions``), through the generic
:class:`~coordination.runtime.runtime.CoordinatorRuntime`, which answers NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE when the shard cannot serve.

Answers that need a write come through a callback, called exactly once (possibly before the
method returns). Timers abort transactions open past their timeout
(``transaction.abort.timed.out.transaction.cleanup.interval.ms``) and remove idle transactional
ids (``transaction.remove.expired.transaction.cleanup.interval.ms``).

Thread-safety: every public method may be called from any thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from coordination.group.config import partition_for
from coordination.regex import InvalidRegex, compile_re2
from coordination.runtime.runtime import (
    CoordinatorLog,
    CoordinatorRuntime,
    LoadedRecord,
    Scheduler,
    ShardContext,
    Timer,
)
from coordination.txn.metadata import TopicPartition, TransactionMetadata, TxnConfig, TxnState
from coordination.txn.shard import (
    ErrorCallback,
    MarkerSender,
    TransactionCoordinatorShard,
    TxnCallback,
    TxnResult,
)
from protocol.error_codes import ErrorCode


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        scheduler: Scheduler,
        coordinator_log: CoordinatorLog,
        *,
        producer_ids: Callable[[], int],
        markers: MarkerSender,
        coordinator_epoch: Callable[[int], int],
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        """``coordinator_epoch(partition)``: the leader epoch of this broker's leadership of
        the partition (written into markers, which fences older coordinators)."""
        self.config = config
        self._scheduler = scheduler
        self._producer_ids = producer_ids
        self._markers = markers
        self._coordinator_epoch = coordinator_epoch
        self._clock = clock
        self._timers: list[Timer] = []
        self.runtime: CoordinatorRuntime[TransactionCoordinatorShard] = CoordinatorRuntime(
            "txn", self._new_shard, coordinator_log, scheduler, clock=clock
        )

    def _new_shard(self, context: ShardContext) -> TransactionCoordinatorShard:
        return TransactionCoordinatorShard(
            context,
            self.config,
            coordinator_epoch=self._coordinator_epoch(context.partition),
            producer_ids=self._producer_ids,
            markers=self._markers,
        )

    # -- lifecycle and loading ---------------------------------------------------------------------

    def startup(self) -> None:
        self.runtime.startup()
        self._every(self.config.abort_timed_out_interval_ms, self.abort_timed_out_transactions)
        self._every(self.config.remove_expired_interval_ms, self.remove_expired_transactional_ids)

    def _every(self, interval_ms: int, fn: Callable[[], object]) -> None:
        def run() -> None:
            if not self.runtime.is_active:
                return
            try:
                fn()
            finally:
                self._timers.append(self._scheduler.schedule(interval_ms, run))

        self._timers.append(self._scheduler.schedule(interval_ms, run))

    def shutdown(self) -> None:
        self.runtime.shutdown()
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    @property
    def is_active(self) -> bool:
        return self.runtime.is_active

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def begin_loading(self, partition: int) -> int:
        return self.runtime.begin_loading(partition)

    def complete_loading(
        self, partition: int, load_id: int, records: Iterable[LoadedRecord]
    ) -> bool:
        return self.runtime.complete_loading(partition, load_id, records)

    def unload(self, partition: int) -> None:
        self.runtime.unload(partition)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return self.runtime.loading_partitions

    def coordinates(self, partition: int) -> bool:
        return self.runtime.coordinates(partition)

    # -- client requests ---------------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        callback: TxnCallback,
        *,
        expected_producer_id: int = -1,
        expected_producer_epoch: int = -1,
    ) -> None:
        if not transactional_id:
            callback(TxnResult(ErrorCode.INVALID_REQUEST))
            return
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            callback(TxnResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT))
            return
        self.runtime.with_shard(
            self.partition_for(transactional_id),
            lambda shard: shard.init_producer_id(
                transactional_id,
                timeout_ms,
                expected_producer_id,
                expected_producer_epoch,
                callback,
            ),
            lambda error: callback(TxnResult(error)),
        )

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        callback: ErrorCallback,
        *,
        client_transaction_version: int = 0,
    ) -> None:
        if not transactional_id:
            callback(ErrorCode.INVALID_REQUEST)
            return
        self.runtime.with_shard(
            self.partition_for(transactional_id),
            lambda shard: shard.add_partitions(
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                callback,
                client_transaction_version,
            ),
            callback,
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        return self.runtime.with_shard(
            self.partition_for(transactional_id),
            lambda shard: shard.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            ),
            lambda error: dict.fromkeys(partitions, error),
        )

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        callback: TxnCallback,
        *,
        client_transaction_version: int = 0,
    ) -> None:
        if not transactional_id:
            callback(TxnResult(ErrorCode.INVALID_REQUEST))
            return
        self.runtime.with_shard(
            self.partition_for(transactional_id),
            lambda shard: shard.end_txn(
                transactional_id,
                producer_id,
                producer_epoch,
                commit,
                callback,
                client_transaction_version,
            ),
            lambda error: callback(TxnResult(error)),
        )

    # -- timers ------------------------------------------------------------------------------------

    def abort_timed_out_transactions(self, now_ms: int | None = None) -> int:
        now = self._clock() if now_ms is None else now_ms
        n = 0
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                n += shard.abort_timed_out_transactions(now)
        return n

    def remove_expired_transactional_ids(self, now_ms: int | None = None) -> int:
        now = self._clock() if now_ms is None else now_ms
        n = 0
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                n += shard.remove_expired_transactional_ids(now)
        return n

    # -- admin (KIP-664) ---------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        """(error, a copy of the id's state); TRANSACTIONAL_ID_NOT_FOUND when unknown."""

        def found(
            shard: TransactionCoordinatorShard,
        ) -> tuple[ErrorCode, TransactionMetadata | None]:
            txn = shard.describe(transactional_id)
            if txn is None:
                return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
            return ErrorCode.NONE, txn.copy()

        return self.runtime.with_shard(
            self.partition_for(transactional_id), found, lambda error: (error, None)
        )

    def list_transactions(
        self,
        *,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        duration_filter_ms: int = -1,
        transactional_id_pattern: str | None = None,
        now_ms: int | None = None,
    ) -> tuple[ErrorCode, list[TransactionMetadata]]:
        """ListTransactions: the ids whose state (Kafka's names) and producer id match the
        filters (empty: any); with ``duration_filter_ms`` >= 0 only transactions open longer
        (KIP-994); with a ``transactional_id_pattern`` (RE2 syntax, as Kafka's RE2/J) only the
        ids it matches whole (KIP-1152), INVALID_REGULAR_EXPRESSION for a pattern RE2
        refuses. COORDINATOR_LOAD_IN_PROGRESS while a partition loads."""
        if not self.runtime.is_active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        pattern = None
        if transactional_id_pattern:
            try:
                pattern = compile_re2(transactional_id_pattern)
            except InvalidRegex:
                return ErrorCode.INVALID_REGULAR_EXPRESSION, []
        wanted_states = {TxnState.by_name(s) for s in states}
        wanted_pids = set(producer_ids)
        now = self._clock() if now_ms is None else now_ms
        out = []
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                for txn in shard.list():
                    if wanted_states and txn.state not in wanted_states:
                        continue
                    if wanted_pids and txn.producer_id not in wanted_pids:
                        continue
                    if pattern is not None and pattern.fullmatch(txn.transactional_id) is None:
                        continue
                    if duration_filter_ms >= 0 and (
                        txn.state != TxnState.ONGOING or now - txn.start_ms < duration_filter_ms
                    ):
                        continue
                    out.append(txn.copy())
        error = (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            if self.runtime.loading_partitions
            else ErrorCode.NONE
        )
        return error, out
