"""A hosted topic-partition and its rules (Kafka's ``kafka.cluster.Partition``).

A :class:`Partition` owns everything a request may ask of one partition, so request handlers
only translate the protocol: whether this broker leads it (and at which leader epoch), the
leader-epoch fence of KIP-320 (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), appends as leader
(validated like Kafka's ``LogValidator``), reads with an isolation level (the log end for
followers, the high watermark for consumers, the last stable offset for ``read_committed``),
offsets by timestamp, DeleteRecords, and the end offset of a leader epoch.

**Replication** (Kafka's replication design; KIP-101, KIP-279). A partition with more than one
replica is *replicated*:

* As **leader** it tracks each follower's log end offset and when it last caught up
  (:class:`FollowerState`, from the followers' fetches). The high watermark is the lowest log end
  offset of the ISR (of the *maximal* ISR while an expansion is being written, so a replica is
  counted before it is known to be in), and only moves forward. A follower that has caught up
  with the high watermark and the start of the current leader epoch joins the ISR; one that has
  not caught up with the log end for ``replica.lag.time.max.ms`` leaves it. ISR changes are
  proposals written by the :class:`~broker.replication.isr.IsrManager` (a conditional write of the
  partition state) — one in flight at a time; the ISR changes here once it is written.
* As **follower** it appends its leader's batches as they are (offsets, epochs, producer ids
  kept), takes the leader's high watermark (capped at its own log end) and log start offset, and
  truncates where its log diverges from the leader's (the replica fetcher decides where).

A single-replica partition keeps the standalone fast path: its high watermark follows its log end
inside the log, and no replication state is touched on appends.

What waits on a partition (fetches below ``min_bytes``, ``acks=all`` produces, coordinator
writes) is woken by the event that makes it possible: appends and high-watermark moves wake the
fetch and produce purgatories under the partition's key, and :meth:`Partition.when_committed`
callbacks run once the high watermark passes their offset (or fail when leadership is lost).
:attr:`bytes_visible` counts bytes consumers can read (below the high watermark),
:attr:`bytes_appended` bytes followers can read (below the log end).

Thread-safety: leadership and replication state change under the partition's lock (Kafka's
``leaderIsrUpdateLock``), taken by the metadata thread (leadership), the fetch path (a follower's
progress), the ISR manager (a written ISR) and the replica fetcher (a follower append). Fields
read lock-free by request handlers are each published by one assignment. The partition's lock is
never taken while the log's lock is held.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Protocol

from broker.purgatory import DelayedOperationPurgatory
from broker.replication.errors import (
    FencedLeaderEpoch,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    PolicyViolation,
    UnknownLeaderEpoch,
)
from broker.replication.log_validator import TopicRules, validate
from coordination.errors import KafkaApiError
from coordination.metadata.view import LeaderAndIsr, PartitionState
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.records import batch as rb
from protocol.records.control import ControlRecordType, build_control_batch
from storage import errors as storage_errors
from storage.file_records import FetchRegion
from storage.log import AppendInfo, OffsetAndTimestamp, PartitionLog
from storage.producer_state import ProducerStateEntry, ProducerStateManager, VerificationGuard
from storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
#: A callback run once a write is committed (None) or cannot be (the error).
CommitCallback = Callable[[ErrorCode | None], None]

_now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000  # noqa: E731


class IsrProposals(Protocol):
    """Where a leader sends its ISR proposals (the :class:`~broker.replication.isr.IsrManager`):
    it answers later through :meth:`Partition.isr_change_written` or
    :meth:`Partition.isr_change_failed`."""

    def submit(
        self, partition: Partition, change: LeaderAndIsr, *, partition_epoch: int
    ) -> None: ...


class FetchIsolation(IntEnum):
    """How far a read may go (Kafka's ``FetchIsolation``)."""

    #: followers read up to the log end
    LOG_END = 0
    #: consumers with read_uncommitted read up to the high watermark
    HIGH_WATERMARK = 1
    #: consumers with read_committed read up to the last stable offset
    TXN_COMMITTED = 2


# The members a fetch compares against once per partition, as plain module globals: in CPython
# 3.11 an enum member looked up on its class (``FetchIsolation.LOG_END``) costs about 140 ns, a
# global about 20 ns, and a fetch of 10,000 partitions made some ten such lookups per partition.
_LOG_END = FetchIsolation.LOG_END
_TXN_COMMITTED = FetchIsolation.TXN_COMMITTED
_NONE = ErrorCode.NONE


class DivergingEpoch(NamedTuple):
    """Where a follower's log diverges from the leader's (Fetch v12+ ``DivergingEpoch``): the
    leader's largest epoch at or below the follower's last fetched epoch, and its end offset."""

    epoch: int
    end_offset: int


class LogReadResult(NamedTuple):
    """One partition's part of a fetch (Kafka's ``LogReadResult``): an error, or the region to
    send (None when nothing is readable) with the offsets the response reports, and for
    read_committed the aborted transactions overlapping the region (None otherwise)."""

    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    region: FetchRegion | None = None
    diverging_epoch: DivergingEpoch | None = None
    aborted_transactions: list[AbortedTxn] | None = None


@dataclass(slots=True)
class FollowerState:
    """A leader's view of one follower (Kafka's ``Replica``): its log end offset and log start
    offset as its fetches tell them, and when it last caught up with the leader's log end."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_log_end: int = -1

    def update(
        self, fetch_offset: int, log_start_offset: int, now_ms: int, leader_end: int
    ) -> None:
        """A fetch at ``fetch_offset`` while the leader's log ended at ``leader_end`` (Kafka's
        ``Replica.updateFetchState``): a follower fetching from the log end is caught up now;
        one fetching from where the log ended at its previous fetch was caught up then."""
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.last_fetch_leader_log_end = leader_end
        self.last_fetch_ms = now_ms
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset

    def is_caught_up(self, leader_end: int, now_ms: int, max_lag_ms: int) -> bool:
        """Kafka's ``isCaughtUp``: at the log end, or caught up within the last ``max_lag_ms``."""
        return self.log_end_offset == leader_end or now_ms - self.last_caught_up_ms <= max_lag_ms


def _api_error(e: storage_errors.StorageError) -> KafkaApiError:
    return KafkaApiError(str(e), ErrorCode.of(e.error_code))


def epoch_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode:
    """KIP-320's fence: NONE when the request names no epoch (-1) or ours."""
    if current_leader_epoch < 0 or current_leader_epoch == leader_epoch:
        return ErrorCode.NONE
    if current_leader_epoch < leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


_waiter_sequence = itertools.count()


class Partition:
    """A topic-partition hosted by this broker: its log, its leadership and its rules."""

    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: uuid.UUID,
        log: PartitionLog,
        rules: TopicRules,
        *,
        broker_id: int,
        state: PartitionState,
        fetch_purgatory: DelayedOperationPurgatory[TopicPartition],
        produce_purgatory: DelayedOperationPurgatory[TopicPartition] | None = None,
        isr_manager: IsrProposals | None = None,
        replica_lag_time_max_ms: int = 30000,
        min_insync_replicas: int = 1,
        clock: Callable[[], int] = _now_ms,
        on_storage_error: Callable[[Partition, Exception], None] | None = None,
    ) -> None:
        self.topic = topic
        self.index = index
        self.key: TopicPartition = (topic, index)
        #: ``topic-index``, as Kafka's record errors name a partition
        self.name = f"{topic}-{index}"
        self.topic_id = topic_id
        self.log = log
        self.rules = rules
        self.broker_id = broker_id
        self._fetch_purgatory = fetch_purgatory
        self._produce_purgatory = produce_purgatory
        self.isr_manager = isr_manager
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        #: the topic's ``min.insync.replicas`` (kept current by the replica manager)
        self.min_insync_replicas = min_insync_replicas
        self.clock = clock
        self._lock = threading.RLock()
        self._bytes_lock = threading.Lock()
        self._bytes_visible = 0
        self._bytes_appended = 0
        #: the log's dir went offline (an I/O error, a full disk): every request for this
        #: partition answers KAFKA_STORAGE_ERROR until the broker restarts (:meth:`mark_offline`)
        self.offline = False
        #: called (outside the partition's lock) when an append to the leader's log fails with
        #: an I/O error: the replica manager takes the log dir offline
        self.on_storage_error = on_storage_error
        #: (end offset, bytes appended up to it) of a replicated leader's appends above the
        #: high watermark: how many bytes a high-watermark move makes visible
        self._marks: deque[tuple[int, int]] = deque()
        #: (offset, sequence, callback): writes waiting for the high watermark to pass offset
        self._commit_waiters: list[tuple[int, int, CommitCallback]] = []
        self.followers: dict[int, FollowerState] = {}
        #: the ISR being written (None when no change is in flight)
        self.pending_isr: tuple[int, ...] | None = None
        self._epoch_start_offset = 0
        # the fields below are set by _apply_state
        self.state = state
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.leader_id = -1
        self.is_leader = False
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.replicated = False
        #: the leader epoch at which this broker last took the leadership (kept across epoch
        #: bumps while it stays leader): an acks=all produce appended under it may be answered
        self.leadership_epoch = -1
        with self._lock:
            self._apply_state(state, force=True)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    # -- leadership --------------------------------------------------------------------------

    def update_state(self, state: PartitionState) -> None:
        """Applies the partition's state from the metadata store (Kafka's ``makeLeader`` /
        ``makeFollower``). A state older than the one applied (a smaller leader epoch, or the
        same epoch at a smaller partition epoch) is ignored. Waiting operations are re-checked:
        those that were waiting on a leader this broker no longer is complete (and answer
        NOT_LEADER_OR_FOLLOWER)."""
        with self._lock:
            changed, due = self._apply_state(state)
            failed = self._take_waiters_if_not_leader()
        self._run_waiters(failed, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._run_waiters(due, None)
        if changed:
            self._wake()

    def _apply_state(
        self, state: PartitionState, *, force: bool = False
    ) -> tuple[bool, list[CommitCallback]]:
        """Under the lock; returns whether leadership, epoch, ISR or replicas changed, and the
        commit callbacks a high-watermark move made due."""
        due: list[CommitCallback] = []
        if not force:
            if state.leader_epoch < self.leader_epoch:
                return False, due
            if (
                state.leader_epoch == self.leader_epoch
                and state.partition_epoch < self.partition_epoch
            ):
                return False, due
        was_leader, old_epoch = self.is_leader, self.leader_epoch
        old_isr, old_replicas = self.isr, self.replicas
        self.state = state
        self.replicas = tuple(state.replicas)
        self.isr = tuple(state.isr)
        self.partition_epoch = state.partition_epoch
        self.leader_id = state.leader
        self.replicated = len(self.replicas) > 1
        self.leader_epoch = state.leader_epoch
        self.is_leader = state.leader == self.broker_id
        if self.pending_isr is not None and (
            self.isr == self.pending_isr or state.leader_epoch != old_epoch
        ):
            self.pending_isr = None
        plog = self.log
        if self.is_leader:
            if force or not was_leader:
                # leadership taken (not kept across an epoch bump): what was appended before
                # may have been truncated away meanwhile
                self.leadership_epoch = state.leader_epoch
            if force or not was_leader or old_epoch != state.leader_epoch:
                self._make_leader(new_leader=force or not was_leader)
            elif old_replicas != self.replicas:
                self._reset_followers(keep=True)
            if not self.replicated:
                plog.follow_log_end()
            else:
                plog.high_watermark_follows_log_end = False
                due = self._maybe_increment_high_watermark()
        else:
            plog.high_watermark_follows_log_end = False
            self.followers = {}
            self.pending_isr = None
            self._marks.clear()
        return (
            force
            or was_leader != self.is_leader
            or old_epoch != self.leader_epoch
            or old_isr != self.isr
            or old_replicas != self.replicas
        ), due

    def _make_leader(self, *, new_leader: bool) -> None:
        """Under the lock: this broker leads the partition at a new leader epoch (Kafka's
        ``makeLeader``): the epoch begins at the log end; the followers' caught-up times start
        over (the ISR's members count as caught up now, so none is removed before it could
        fetch), and a new leader forgets their log ends, which it never saw."""
        plog = self.log
        # replicated or not, as Kafka's makeLeader: the checkpoint knows the epoch before its
        # first record (ListOffsets and OffsetForLeaderEpoch on an empty log answer it)
        if self.leader_epoch >= 0:
            plog.assign_epoch_start_offset(self.leader_epoch)
        start = plog.epoch_start_offset(self.leader_epoch)
        self._epoch_start_offset = plog.log_end_offset if start is None else start
        self._reset_followers(keep=not new_leader, reset_times=True)
        if new_leader:
            self._marks.clear()
        self.pending_isr = None

    def _reset_followers(self, *, keep: bool, reset_times: bool = False) -> None:
        """One FollowerState per other replica (Kafka's ``resetReplicaState``): with ``keep``,
        the known ones keep their log ends."""
        now = self.clock()
        followers = {}
        for r in self.replicas:
            if r == self.broker_id:
                continue
            old = self.followers.get(r) if keep else None
            if old is None:
                old = FollowerState(r, last_caught_up_ms=now if r in self.isr else 0)
            elif reset_times:
                old.last_caught_up_ms = now if r in self.isr else 0
                old.last_fetch_ms = 0
                old.last_fetch_leader_log_end = -1
            followers[r] = old
        self.followers = followers

    def close(self) -> None:
        """The partition leaves this broker (its topic was deleted, or it was reassigned away):
        everything waiting on it completes."""
        with self._lock:
            self.is_leader = False
            self.followers = {}
            failed = self._take_waiters_if_not_leader()
        self._run_waiters(failed, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._fetch_purgatory.complete_all(self.key)
        if self._produce_purgatory is not None:
            self._produce_purgatory.complete_all(self.key)

    def mark_offline(self) -> None:
        """The log's dir went offline (Kafka's ``markPartitionOffline``): nothing is written to
        the log any more; coordinator writes waiting for the high watermark fail and waiting
        produces and fetches complete, with KAFKA_STORAGE_ERROR."""
        with self._lock:
            self.offline = True
            failed = [w[2] for w in self._commit_waiters]
            self._commit_waiters = []
            self.pending_isr = None
        self._run_waiters(failed, ErrorCode.KAFKA_STORAGE_ERROR)
        self._wake()

    def leader_error(self, current_leader_epoch: int = -1) -> ErrorCode:
        """NONE if this broker leads the partition at ``current_leader_epoch`` (-1: any)."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return epoch_error(current_leader_epoch, self.leader_epoch)

    def _check_leader(self, current_leader_epoch: int = -1) -> None:
        code = self.leader_error(current_leader_epoch)
        if code == ErrorCode.NONE:
            return
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            raise NotLeaderOrFollower(f"Broker {self.broker_id} is not the leader of {self}")
        if code == ErrorCode.FENCED_LEADER_EPOCH:
            raise FencedLeaderEpoch(
                f"The leader epoch of {self} is {self.leader_epoch}, newer than "
                f"{current_leader_epoch}"
            )
        raise UnknownLeaderEpoch(
            f"The leader epoch of {self} is {self.leader_epoch}, older than {current_leader_epoch}"
        )

    # -- offsets -----------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided: the first offset of the oldest
        open transaction, or the high watermark."""
        return self.log.last_stable_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def bytes_visible(self) -> int:
        """Bytes that became readable by consumers (below the high watermark) since this broker
        hosted the partition (a monotonic counter: waiting fetches compare it with its value
        when they began)."""
        return self._bytes_visible

    @property
    def bytes_appended(self) -> int:
        """Bytes appended since this broker hosted the partition (what followers can read)."""
        return self._bytes_appended

    @property
    def in_sync_replicas(self) -> int:
        return len(self.isr)

    @property
    def under_replicated(self) -> bool:
        """Kafka's UnderReplicatedPartitions: a leader whose ISR is smaller than its replicas."""
        return self.is_leader and len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr) < self.min_insync_replicas

    def in_transaction(self, producer_id: int) -> bool:
        """Whether the producer has an open transaction in this partition (KIP-890: its later
        transactional batches need no verification)."""
        state = self.log.producer_state
        return isinstance(state, ProducerStateManager) and producer_id in state.ongoing

    def maybe_start_transaction_verification(
        self, producer_id: int, sequence: int, epoch: int
    ) -> VerificationGuard | None:
        """Kafka's ``maybeStartTransactionVerification`` (KIP-890): None when the producer has
        a transaction open here, else the guard its first batch must carry once the
        coordinator verified the partition is in its transaction. Raises
        NotLeaderOrFollower."""
        self._check_leader()
        state = self.log.producer_state
        if not isinstance(state, ProducerStateManager):
            return None
        return state.maybe_start_verification(producer_id, sequence, epoch)

    def active_producers(self) -> list[ProducerStateEntry]:
        """The producers this partition's producer state knows (DescribeProducers)."""
        state = self.log.producer_state
        if isinstance(state, ProducerStateManager):
            return state.active_producers()
        return []

    # -- appends -----------------------------------------------------------------------------

    def append_records_to_leader(
        self,
        records: memoryview | bytes | None,
        *,
        api_version: int,
        now_ms: int,
        required_acks: int = 1,
        verification: VerificationGuard | None = None,
    ) -> AppendInfo:
        """Validates a producer's batches and appends them (Kafka's ``appendRecordsToLeader``).
        With ``required_acks=-1`` the ISR must hold ``min.insync.replicas`` members first
        (else NOT_ENOUGH_REPLICAS, nothing appended). ``verification``: the KIP-890 guard of
        a transactional produce (see :meth:`maybe_start_transaction_verification`). Raises
        NotLeaderOrFollower, RecordError (invalid batches), a KafkaApiError or a storage
        error."""
        self._check_leader()
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaApiError(
                f"The size of the current ISR {list(self.isr)} of {self} is insufficient to "
                f"satisfy the min.isr requirement of {self.min_insync_replicas}",
                ErrorCode.NOT_ENOUGH_REPLICAS,
            )
        batches = validate(
            records,
            api_version=api_version,
            rules=self.rules,
            now_ms=now_ms,
            partition=self.name,
        )
        return self._append(batches, now_ms, verification)

    def append_batches_to_leader(self, batches: bytearray, *, now_ms: int) -> AppendInfo:
        """Appends batches this broker built itself (a coordinator's records): no validation.
        Raises NotLeaderOrFollower or a storage error."""
        self._check_leader()
        return self._append(batches, now_ms)

    def append_txn_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendInfo:
        """WriteTxnMarkers on the leader: appends a commit or abort control batch for the
        producer (Kafka's ``appendRecords`` with origin Coordinator). Raises NotLeaderOrFollower
        or a storage error (an older producer or coordinator epoch: INVALID_PRODUCER_EPOCH,
        TRANSACTION_COORDINATOR_FENCED)."""
        self._check_leader()
        batch = build_control_batch(
            ControlRecordType.COMMIT if committed else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
        )
        return self._append(bytearray(batch), now_ms)

    def _append(
        self,
        batches: bytearray | memoryview,
        now_ms: int,
        verification: VerificationGuard | None = None,
    ) -> AppendInfo:
        epoch = self.leader_epoch
        plog = self.log
        if self.offline:
            raise storage_errors.KafkaStorageError(f"{self} is in an offline log dir")
        try:
            info = plog.append(
                batches, leader_epoch=epoch, now_ms=now_ms, verification=verification
            )
        except storage_errors.KafkaStorageError as e:
            if self.log is plog:
                if self.on_storage_error is not None:
                    self.on_storage_error(self, e)
                raise
            # the log moved to another log dir while this append waited: append to the new one
            info = self.log.append(
                batches, leader_epoch=epoch, now_ms=now_ms, verification=verification
            )
        if not self.replicated:
            # the high watermark follows the log end: the appended bytes are readable at once
            with self._bytes_lock:
                self._bytes_visible += info.valid_bytes
                self._bytes_appended += info.valid_bytes
            self._fetch_purgatory.check_and_complete(self.key)
            return info
        with self._bytes_lock:
            self._bytes_appended += info.valid_bytes
            appended = self._bytes_appended
        with self._lock:
            if self.is_leader and self.leader_epoch == epoch:
                self._marks.append((info.last_offset + 1, appended))
                committed = self._maybe_increment_high_watermark()
            else:
                committed = []
        self._run_waiters(committed, None)
        # followers waiting for data, and consumers if the high watermark moved
        self._fetch_purgatory.check_and_complete(self.key)
        if committed or self._produce_purgatory is not None:
            self._wake_produces()
        return info

    # -- the high watermark (under the lock) ---------------------------------------------------

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR counted for the high watermark: with an expansion in flight, the new member
        too (a shrink in flight keeps counting the leaving one: the larger set)."""
        pending = self.pending_isr
        if pending is None:
            return self.isr
        return self.isr + tuple(r for r in pending if r not in self.isr)

    def _maybe_increment_high_watermark(self) -> list[CommitCallback]:
        """Under the lock: moves a replicated leader's high watermark to the lowest log end
        offset of the maximal ISR, if that is higher; returns the commit callbacks now due."""
        plog = self.log
        hw = plog.log_end_offset
        for r in self.maximal_isr:
            if r == self.broker_id:
                continue
            follower = self.followers.get(r)
            end = follower.log_end_offset if follower is not None else -1
            if end < hw:
                hw = end
        old = plog.high_watermark
        if hw <= old:
            return []
        new = plog.update_high_watermark(hw)
        return self._high_watermark_moved(old, new)

    def _high_watermark_moved(self, old: int, new: int) -> list[CommitCallback]:
        """Under the lock: counts the bytes made visible and takes the commit callbacks due."""
        visible = 0
        marks = self._marks
        while marks and marks[0][0] <= new:
            visible = marks.popleft()[1]
        with self._bytes_lock:
            if visible > self._bytes_visible:
                self._bytes_visible = visible
            else:
                # bytes appended before this broker led (or unknown): at least wake fetches
                self._bytes_visible += new - old
        due = []
        waiters = self._commit_waiters
        while waiters and waiters[0][0] <= new:
            due.append(heapq.heappop(waiters)[2])
        return due

    def _take_waiters_if_not_leader(self) -> list[CommitCallback]:
        if self.is_leader or not self._commit_waiters:
            return []
        failed = [w[2] for w in self._commit_waiters]
        self._commit_waiters = []
        return failed

    @staticmethod
    def _run_waiters(callbacks: list[CommitCallback], error: ErrorCode | None) -> None:
        for callback in callbacks:
            try:
                callback(error)
            except Exception:
                log.exception("a commit callback failed")

    def _wake(self) -> None:
        self._fetch_purgatory.check_and_complete(self.key)
        self._wake_produces()

    def _wake_produces(self) -> None:
        if self._produce_purgatory is not None:
            self._produce_purgatory.check_and_complete(self.key)

    def when_committed(self, offset: int, callback: CommitCallback) -> None:
        """Runs ``callback(None)`` once the high watermark reaches ``offset`` (at once if it
        has), or ``callback(error)`` if this broker stops leading first. Used by coordinators,
        whose writes apply only once committed."""
        with self._lock:
            if not self.is_leader:
                error: ErrorCode | None = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif self.log.high_watermark >= offset:
                error = None
            else:
                heapq.heappush(self._commit_waiters, (offset, next(_waiter_sequence), callback))
                return
        callback(error)

    def check_enough_replicas_reach_offset(
        self, required_offset: int, leadership_epoch: int
    ) -> ErrorCode | None:
        """For an ``acks=all`` produce appended while this broker led since
        ``leadership_epoch`` (Kafka's ``checkEnoughReplicasReachOffset``): None while the high
        watermark is below ``required_offset``; then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND
        when the ISR shrank below ``min.insync.replicas`` meanwhile. NOT_LEADER_OR_FOLLOWER once
        leadership moved away (even if it came back: the records may have been truncated),
        KAFKA_STORAGE_ERROR once the log dir went offline. A leader epoch bump while this
        broker stays leader (the controller removing a dead follower) does not fail it."""
        if self.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if not self.is_leader or self.leadership_epoch != leadership_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark < required_offset:
            return None
        if len(self.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # -- a leader serving its followers --------------------------------------------------------

    def read_for_follower(
        self,
        replica_id: int,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int,
        last_fetched_epoch: int,
        follower_log_start_offset: int,
        min_one_batch: bool,
    ) -> LogReadResult:
        """A follower's fetch (Kafka's ``fetchRecords`` for a follower): the leader-epoch fence,
        the divergence check of Fetch v12+ (``last_fetched_epoch``), the follower's progress
        (which may move it into the ISR and the high watermark forward), then the batches from
        ``fetch_offset`` up to the log end."""
        code = self.leader_error(current_leader_epoch)
        if code != ErrorCode.NONE:
            return LogReadResult(code)
        plog = self.log
        if replica_id not in self.replicas:
            return LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if last_fetched_epoch >= 0:
            diverged = self._diverged(last_fetched_epoch, fetch_offset)
            if diverged is not None:
                return diverged
        leader_end = plog.log_end_offset
        if fetch_offset > leader_end or fetch_offset < plog.log_start_offset:
            return LogReadResult(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                plog.high_watermark,
                self.last_stable_offset,
                plog.log_start_offset,
            )
        committed = self.update_follower_fetch_state(
            replica_id, fetch_offset, follower_log_start_offset, leader_end
        )
        if committed:
            self._run_waiters(committed[0], None)
            self._wake()
        hw = plog.high_watermark
        log_start = plog.log_start_offset
        region = None
        try:
            if max_bytes > 0 or min_one_batch:
                region = plog.read(fetch_offset, max(max_bytes, 0), min_one_batch=min_one_batch)
        except storage_errors.OffsetOutOfRange:
            return LogReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, hw, log_start)
        except storage_errors.StorageError as e:
            return LogReadResult(ErrorCode.of(e.error_code), hw, hw, log_start)
        return LogReadResult(ErrorCode.NONE, hw, self.last_stable_offset, log_start, region)

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, log_start_offset: int, leader_end: int
    ) -> tuple[list[CommitCallback]] | None:
        """Records a follower's fetch (Kafka's ``updateFollowerFetchState``), proposes its return
        to the ISR when it caught up, moves the high watermark. Returns the commit callbacks due
        (in a tuple) when the high watermark moved, else None."""
        now = self.clock()
        with self._lock:
            if not self.is_leader:
                return None
            follower = self.followers.get(replica_id)
            if follower is None:
                return None
            follower.update(fetch_offset, log_start_offset, now, leader_end)
            self._maybe_expand_isr(follower)
            old = self.log.high_watermark
            due = self._maybe_increment_high_watermark()
            if self.log.high_watermark == old:
                return None
            return (due,)

    # -- the ISR -------------------------------------------------------------------------------

    def _maybe_expand_isr(self, follower: FollowerState) -> None:
        """Under the lock (Kafka's ``maybeExpandIsr``): a follower out of the ISR that has
        reached the high watermark and the start of this leader epoch is proposed back in."""
        if self.pending_isr is not None or follower.broker_id in self.isr:
            return
        plog = self.log
        if follower.log_end_offset < plog.high_watermark:
            return
        if follower.log_end_offset < self._epoch_start_offset:
            return
        self._propose((*self.isr, follower.broker_id), f"replica {follower.broker_id} caught up")

    def maybe_shrink_isr(self) -> None:
        """Removes from the ISR the followers that have not caught up with the log end for
        ``replica.lag.time.max.ms`` (Kafka's ``maybeShrinkIsr``); run periodically."""
        with self._lock:
            if not self.is_leader or not self.replicated or self.pending_isr is not None:
                return
            now = self.clock()
            end = self.log.log_end_offset
            lag = self.replica_lag_time_max_ms
            out = [
                r
                for r in self.isr
                if r != self.broker_id
                and (f := self.followers.get(r)) is not None
                and not f.is_caught_up(end, now, lag)
            ]
            if not out:
                return
            new = tuple(r for r in self.isr if r not in out)
            self._propose(new, f"replicas {out} not caught up for {lag} ms")

    def _propose(self, new_isr: tuple[int, ...], why: str) -> None:
        """Under the lock: one ISR change in flight at a time, written by the ISR manager."""
        if self.isr_manager is None:
            return
        self.pending_isr = new_isr
        log.info(
            "%s-%d: proposing ISR %s -> %s (%s)", self.topic, self.index, list(self.isr),
            list(new_isr), why,
        )  # fmt: skip
        self.isr_manager.submit(
            self,
            LeaderAndIsr(self.broker_id, self.leader_epoch, new_isr),
            partition_epoch=self.partition_epoch,
        )

    def isr_change_written(self, state: PartitionState) -> None:
        """The ISR manager wrote a proposal: the ISR (and partition epoch) change now."""
        with self._lock:
            if not self.is_leader or state.leader_epoch != self.leader_epoch:
                self.pending_isr = None
                return
            if state.partition_epoch < self.partition_epoch:
                return
            old_isr = self.isr
            self.isr = tuple(state.isr)
            self.partition_epoch = state.partition_epoch
            self.pending_isr = None
            if set(self.isr) - set(old_isr):
                # a new member counts as caught up from now on
                now = self.clock()
                for r in set(self.isr) - set(old_isr):
                    f = self.followers.get(r)
                    if f is not None:
                        f.last_caught_up_ms = max(f.last_caught_up_ms, now)
            due = self._maybe_increment_high_watermark()
        log.info("%s-%d: ISR is now %s", self.topic, self.index, list(state.isr))
        self._run_waiters(due, None)
        self._wake()

    def isr_change_failed(self, proposal: LeaderAndIsr, reason: str) -> None:
        """A proposal was refused (a stale partition epoch: the controller changed the state
        first) or given up: the next fetch or check may propose again."""
        with self._lock:
            if self.pending_isr == proposal.isr:
                self.pending_isr = None
        log.info("%s-%d: ISR change to %s not written: %s", self.topic, self.index,
                 list(proposal.isr), reason)  # fmt: skip

    # -- a follower ----------------------------------------------------------------------------

    def append_as_follower(
        self,
        records: memoryview,
        *,
        leader_epoch: int,
        leader_high_watermark: int,
        leader_log_start_offset: int,
    ) -> AppendInfo | None:
        """Appends a fetch response's batches from the leader at ``leader_epoch`` (Kafka's
        ``appendRecordsToFollowerOrFutureReplica``), then takes the leader's high watermark
        (capped at this log's end) and log start offset. Returns None (and appends nothing)
        when this broker no longer follows at that epoch. Raises KafkaApiError
        (CORRUPT_MESSAGE) for batches that fail their CRC, or a storage error."""
        with self._lock:
            if self.is_leader or self.leader_epoch != leader_epoch:
                return None
            if self.offline:
                raise storage_errors.KafkaStorageError(f"{self} is in an offline log dir")
            plog = self.log
            info = None
            if len(records):
                try:
                    rb.validate_replicated_batches(records)
                except RemoteProtocolError as e:
                    raise KafkaApiError(str(e), ErrorCode.CORRUPT_MESSAGE) from None
                try:
                    info = plog.append_as_follower(records)
                except storage_errors.KafkaStorageError:
                    if self.log is plog:
                        raise
                    plog = self.log  # moved to another log dir meanwhile
                    info = plog.append_as_follower(records)
                with self._bytes_lock:
                    self._bytes_appended += info.valid_bytes
            hw = min(leader_high_watermark, plog.log_end_offset)
            if hw >= 0 and hw != plog.high_watermark:
                plog.update_high_watermark(hw)
            if leader_log_start_offset > plog.log_start_offset:
                plog.maybe_increment_log_start_offset(leader_log_start_offset)
            return info

    def truncate_to(self, offset: int, *, leader_epoch: int) -> bool:
        """A follower removes what its leader does not have (KIP-101/279); returns whether
        anything was removed. Nothing happens if this broker no longer follows at
        ``leader_epoch``."""
        with self._lock:
            if self.is_leader or self.leader_epoch != leader_epoch:
                return False
            return self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int, *, leader_epoch: int) -> None:
        """A follower whose log is entirely below its leader's log start offset starts over."""
        with self._lock:
            if self.is_leader or self.leader_epoch != leader_epoch:
                return
            self.log.truncate_fully_and_start_at(offset)

    def latest_epoch(self) -> int:
        """The epoch of this log's last batch (-1 when unknown), a follower's
        ``last_fetched_epoch``."""
        latest = self.log.latest_epoch
        return -1 if latest is None else latest

    # -- reads -------------------------------------------------------------------------------

    def _diverged(self, last_fetched_epoch: int, fetch_offset: int) -> LogReadResult | None:
        """The check of a fetch naming the epoch of the last batch its sender has (Fetch v12+,
        Kafka's ``Partition.readRecords``): an epoch this log cannot place, or an offset below
        the log start, is OFFSET_OUT_OF_RANGE; when this log's ``last_fetched_epoch`` ends
        before ``fetch_offset``, or a lower epoch is the nearest, the sender's log diverged
        and the answer names where (``diverging_epoch``) with no records. None: read on."""
        plog = self.log
        epoch, end = plog.end_offset_for_epoch(last_fetched_epoch)
        if epoch < 0 or end < 0:
            return LogReadResult(ErrorCode.OFFSET_OUT_OF_RANGE)
        if fetch_offset < plog.log_start_offset:
            # with the offsets, which a follower starts over from (Kafka's follower asks the
            # leader's log start with ListOffsets instead)
            return LogReadResult(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                plog.high_watermark,
                self.last_stable_offset,
                plog.log_start_offset,
            )
        if epoch < last_fetched_epoch or end < fetch_offset:
            return LogReadResult(
                ErrorCode.NONE,
                plog.high_watermark,
                self.last_stable_offset,
                plog.log_start_offset,
                None,
                DivergingEpoch(epoch, end),
            )
        return None

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int,
        isolation: FetchIsolation,
        min_one_batch: bool,
        last_fetched_epoch: int = -1,
    ) -> LogReadResult:
        """A consumer's read of this partition (Kafka's ``Partition.fetchRecords`` on the
        leader): whole batches from the one holding ``fetch_offset``, up to ``max_bytes`` (at
        least one whole batch with ``min_one_batch``), never past what ``isolation`` allows;
        first, when the fetch names its ``last_fetched_epoch``, the divergence check a
        follower's fetch has (Kafka applies it to any fetch that names one).
        Errors are returned, not raised: a fetch answers them per partition."""
        if not self.is_leader:
            return LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if current_leader_epoch >= 0 and current_leader_epoch != self.leader_epoch:
            return LogReadResult(epoch_error(current_leader_epoch, self.leader_epoch))
        if last_fetched_epoch >= 0:
            diverged = self._diverged(last_fetched_epoch, fetch_offset)
            if diverged is not None:
                return diverged
        plog = self.log
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        log_start = plog.log_start_offset
        committed = isolation == _TXN_COMMITTED
        if committed:
            upper: int | None = lso
        elif isolation == _LOG_END:
            upper = None
        else:
            upper = hw
        region = None
        if fetch_offset == upper and fetch_offset >= log_start:
            # caught up: nothing to read (the common case of a consumer's long poll)
            if committed:
                return LogReadResult(_NONE, hw, lso, log_start, None, None, [])
            return LogReadResult(_NONE, hw, lso, log_start)
        try:
            if max_bytes > 0 or min_one_batch:
                region = plog.read(
                    fetch_offset, max(max_bytes, 0), max_offset=upper, min_one_batch=min_one_batch
                )
            elif not log_start <= fetch_offset <= plog.log_end_offset:
                # the fetch's byte budget is spent: nothing is read, but an offset outside the
                # log is answered now, as Kafka's read checks it before the size
                return LogReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, log_start)
        except storage_errors.OffsetOutOfRange:
            return LogReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, log_start)
        except storage_errors.StorageError as e:
            return LogReadResult(ErrorCode.of(e.error_code), hw, lso, log_start)
        if committed:
            aborted = None
            if region is not None:
                # the transactions overlapping what is sent (Kafka bounds it by the read's end)
                aborted = plog.collect_aborted_transactions(
                    fetch_offset, plog.fetch_upper_bound_offset(region)
                )
            return LogReadResult(_NONE, hw, lso, log_start, region, None, aborted or [])
        return LogReadResult(_NONE, hw, lso, log_start, region)

    def fetch_offset_for_timestamp(
        self, timestamp: int, *, isolation: FetchIsolation, current_leader_epoch: int
    ) -> OffsetAndTimestamp | None:
        """ListOffsets (Kafka's ``fetchOffsetForTimestamp``): the special timestamps and the
        first offset whose timestamp is >= ``timestamp``, never past what consumers may read
        (a follower's ListOffsets, ``isolation=LOG_END``, may read to the log end).
        Raises NotLeaderOrFollower, FencedLeaderEpoch, UnknownLeaderEpoch or a KafkaApiError
        with the storage error's code."""
        self._check_leader(current_leader_epoch)
        if isolation == FetchIsolation.LOG_END:
            upper = None
        elif isolation == FetchIsolation.TXN_COMMITTED:
            upper = self.last_stable_offset
        else:
            upper = self.high_watermark
        try:
            return self.log.fetch_offset_by_timestamp(timestamp, max_offset=upper)
        except storage_errors.StorageError as e:
            raise _api_error(e) from e

    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords: moves the log start offset to ``offset`` (-1: the high watermark);
        returns the new low watermark. Raises NotLeaderOrFollower, PolicyViolation (a topic whose
        ``cleanup.policy`` lacks ``delete``: compacted logs keep their history, as Kafka's
        Partition.deleteRecordsOnLeader rules), OffsetOutOfRange (below 0 or above the high
        watermark) or a KafkaApiError with the storage error's code."""
        self._check_leader()
        if not self.log.config.delete:
            raise PolicyViolation(
                f"Records of partition {self} cannot be deleted: its cleanup.policy is not delete"
            )
        hw = self.high_watermark
        if offset == -1:
            offset = hw
        if offset < 0 or offset > hw:
            raise OffsetOutOfRange(
                f"Cannot delete records of {self} before {offset}: the high watermark is {hw}"
            )
        try:
            return self.log.delete_records_before(offset)
        except storage_errors.StorageError as e:
            raise _api_error(e) from e

    def last_offset_for_leader_epoch(
        self, leader_epoch: int, *, current_leader_epoch: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch (KIP-101, KIP-279): (the largest epoch <= ``leader_epoch``, its
        end offset), or (-1, -1). Raises NotLeaderOrFollower, FencedLeaderEpoch or
        UnknownLeaderEpoch."""
        self._check_leader(current_leader_epoch)
        return self.log.end_offset_for_epoch(leader_epoch)
