"""A hosted topic-partition and its rules (Kafka's ``kafka.cluster.Partition``).

A :class:`Partition` owns everything a request may ask of one partition, so request handlers
only translate the protocol: whether this broker leads it (and at which leader epoch), the
leader-epoch fence of KIP-320 (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), appends as leader
(validated like Kafka's ``LogValidator``), reads with an isolation level (the log end for
followers, the high watermark for consumers, the last stable offset for ``read_committed``),
offsets by timestamp, DeleteRecords, and the end offset of a leader epoch.

What waits on a partition (fetches below ``min_bytes``; soon ``acks=all`` produces and
DeleteRecords) is woken through the purgatory under the partition's key, by the append or
high-watermark move that makes it possible. :attr:`bytes_visible` counts the bytes that became
readable by consumers, so a waiting fetch knows how much arrived since it started waiting.

Replication will add the follower side here (``make_follower``, the followers' log end offsets,
ISR expansion and shrinking, the high watermark as the ISR's lowest log end offset), as Kafka's
``Partition`` has it. Today a partition's high watermark follows its log end (a single replica
is its whole ISR).

Thread-safety: leadership state is replaced by the replica manager (one thread at a time, under
its lock) and read lock-free by request handlers on every processor thread: each field is
published by one assignment. Appends and reads rely on the log's own thread-safety.
"""

from __future__ import annotations

import threading
import uuid
from enum import IntEnum
from typing import NamedTuple

from broker.purgatory import DelayedOperationPurgatory
from broker.replication.errors import (
    FencedLeaderEpoch,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from broker.replication.log_validator import TopicRules, validate
from coordination.errors import KafkaApiError
from coordination.metadata.view import PartitionState
from protocol.error_codes import ErrorCode
from protocol.records.control import ControlRecordType, build_control_batch
from storage import errors as storage_errors
from storage.file_records import FetchRegion
from storage.log import AppendInfo, OffsetAndTimestamp, PartitionLog
from storage.producer_state import ProducerStateEntry, ProducerStateManager
from storage.txn_index import AbortedTxn

TopicPartition = tuple[str, int]


class FetchIsolation(IntEnum):
    """How far a read may go (Kafka's ``FetchIsolation``)."""

    #: followers read up to the log end
    LOG_END = 0
    #: consumers with read_uncommitted read up to the high watermark
    HIGH_WATERMARK = 1
    #: consumers with read_committed read up to the last stable offset
    TXN_COMMITTED = 2


class LogReadResult(NamedTuple):
    """One partition's part of a fetch (Kafka's ``LogReadResult``): an error, or the region to
    send (None when nothing is readable) with the offsets the response reports, and for
    read_committed the aborted transactions overlapping the region (None otherwise)."""

    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    region: FetchRegion | None = None
    aborted_transactions: list[AbortedTxn] | None = None


def _api_error(e: storage_errors.StorageError) -> KafkaApiError:
    return KafkaApiError(str(e), ErrorCode.of(e.error_code))


def epoch_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode:
    """KIP-320's fence: NONE when the request names no epoch (-1) or ours."""
    if current_leader_epoch < 0 or current_leader_epoch == leader_epoch:
        return ErrorCode.NONE
    if current_leader_epoch < leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


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
    ) -> None:
        self.topic = topic
        self.index = index
        self.key: TopicPartition = (topic, index)
        self.topic_id = topic_id
        self.log = log
        self.rules = rules
        self.broker_id = broker_id
        self._fetch_purgatory = fetch_purgatory
        self.state = state
        self.leader_epoch = state.leader_epoch
        self.is_leader = state.leader == broker_id
        self._bytes_lock = threading.Lock()
        self._bytes_visible = 0
        #: the log's dir went offline (an I/O error, a full disk): every request for this
        #: partition answers KAFKA_STORAGE_ERROR until the broker restarts
        self.offline = False

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    # -- leadership --------------------------------------------------------------------------

    def update_state(self, state: PartitionState) -> None:
        """Applies the partition's state from the metadata store (Kafka's ``makeLeader`` /
        ``makeFollower``). Waiting operations are re-checked: those that were waiting on a
        leader this broker no longer is complete (and answer NOT_LEADER_OR_FOLLOWER)."""
        was_leader, old_epoch = self.is_leader, self.leader_epoch
        self.state = state
        self.leader_epoch = state.leader_epoch
        self.is_leader = state.leader == self.broker_id
        if was_leader != self.is_leader or old_epoch != self.leader_epoch:
            self._fetch_purgatory.check_and_complete(self.key)

    def close(self) -> None:
        """The partition leaves this broker (its topic was deleted): everything waiting on it
        completes."""
        self.is_leader = False
        self._fetch_purgatory.complete_all(self.key)

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
        """Bytes that became readable by consumers since this broker hosted the partition (a
        monotonic counter: waiting fetches compare it with its value when they began)."""
        return self._bytes_visible

    def in_transaction(self, producer_id: int) -> bool:
        """Whether the producer has an open transaction in this partition (KIP-890: its later
        transactional batches need no verification)."""
        state = self.log.producer_state
        return isinstance(state, ProducerStateManager) and producer_id in state.ongoing

    def active_producers(self) -> list[ProducerStateEntry]:
        """The producers this partition's producer state knows (DescribeProducers)."""
        state = self.log.producer_state
        if isinstance(state, ProducerStateManager):
            return state.active_producers()
        return []

    # -- appends -----------------------------------------------------------------------------

    def append_records_to_leader(
        self, records: memoryview | bytes | None, *, api_version: int, now_ms: int
    ) -> AppendInfo:
        """Validates a producer's batches and appends them (Kafka's ``appendRecordsToLeader``).
        Raises NotLeaderOrFollower, RecordError (invalid batches) or a storage error."""
        self._check_leader()
        batches = validate(records, api_version=api_version, rules=self.rules, now_ms=now_ms)
        return self._append(batches, now_ms)

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

    def _append(self, batches: bytearray | memoryview, now_ms: int) -> AppendInfo:
        info = self.log.append(batches, leader_epoch=self.leader_epoch, now_ms=now_ms)
        # the high watermark follows the log end: the appended bytes are readable at once
        with self._bytes_lock:
            self._bytes_visible += info.valid_bytes
        self._fetch_purgatory.check_and_complete(self.key)
        return info

    # -- reads -------------------------------------------------------------------------------

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        current_leader_epoch: int,
        isolation: FetchIsolation,
        min_one_batch: bool,
    ) -> LogReadResult:
        """A fetch's read of this partition (Kafka's ``Partition.fetchRecords`` on the leader):
        whole batches from the one holding ``fetch_offset``, up to ``max_bytes`` (at least one
        whole batch with ``min_one_batch``), never past what ``isolation`` allows. Errors are
        returned, not raised: a fetch answers them per partition."""
        code = self.leader_error(current_leader_epoch)
        if code != ErrorCode.NONE:
            return LogReadResult(code)
        plog = self.log
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        log_start = plog.log_start_offset
        if isolation == FetchIsolation.LOG_END:
            upper = None
        elif isolation == FetchIsolation.TXN_COMMITTED:
            upper = lso
        else:
            upper = hw
        region = None
        try:
            if max_bytes > 0 or min_one_batch:
                region = plog.read(
                    fetch_offset, max(max_bytes, 0), max_offset=upper, min_one_batch=min_one_batch
                )
        except storage_errors.OffsetOutOfRange:
            return LogReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, log_start)
        except storage_errors.StorageError as e:
            return LogReadResult(ErrorCode.of(e.error_code), hw, lso, log_start)
        if isolation == FetchIsolation.TXN_COMMITTED:
            aborted = None
            if region is not None:
                # the transactions overlapping what is sent (Kafka bounds it by the read's end)
                aborted = plog.collect_aborted_transactions(
                    fetch_offset, plog.fetch_upper_bound_offset(region)
                )
            return LogReadResult(ErrorCode.NONE, hw, lso, log_start, region, aborted or [])
        return LogReadResult(ErrorCode.NONE, hw, lso, log_start, region)

    def fetch_offset_for_timestamp(
        self, timestamp: int, *, isolation: FetchIsolation, current_leader_epoch: int
    ) -> OffsetAndTimestamp | None:
        """ListOffsets (Kafka's ``fetchOffsetForTimestamp``): the special timestamps and the
        first offset whose timestamp is >= ``timestamp``, never past what consumers may read.
        Raises NotLeaderOrFollower, FencedLeaderEpoch, UnknownLeaderEpoch or a KafkaApiError
        with the storage error's code."""
        self._check_leader(current_leader_epoch)
        upper = (
            self.last_stable_offset
            if isolation == FetchIsolation.TXN_COMMITTED
            else self.high_watermark
        )
        try:
            return self.log.fetch_offset_by_timestamp(timestamp, max_offset=upper)
        except storage_errors.StorageError as e:
            raise _api_error(e) from e

    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords: moves the log start offset to ``offset`` (-1: the high watermark);
        returns the new low watermark. Raises NotLeaderOrFollower, OffsetOutOfRange (below 0 or
        above the high watermark) or a KafkaApiError with the storage error's code."""
        self._check_leader()
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
