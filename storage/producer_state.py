"""ProducerStateManager: idempotent producers' sequence state per partition (Kafka's
ProducerStateManager, ProducerStateEntry and ProducerAppendInfo), plugged into
:class:`storage.log.PartitionLog` as its ``producer_state`` hook.

For every producer id that wrote to the partition it keeps the epoch and the metadata of its last
5 batches (first/last sequence, last offset, timestamp). On append (under the log's lock):

* a batch whose epoch and sequence range equal one of those 5 is a retry: nothing is appended and
  the producer gets the original offsets back;
* an epoch below the producer's is INVALID_PRODUCER_EPOCH;
* with the same epoch the first sequence must follow the last one (``last + 1``, or 0 after
  ``Integer.MAX_VALUE``), else OUT_OF_ORDER_SEQUENCE_NUMBER; a new (higher) epoch must start at
  sequence 0 (an idempotent producer bumps its epoch itself after an error, KIP-360);
* a producer the partition does not know (new, expired, or its batches removed by retention) may
  start at any sequence: Kafka 2.5+ no longer answers UNKNOWN_PRODUCER_ID there, which both
  librdkafka and the Java/kafka-python clients handle.

Transactions (KIP-98): a producer's first transactional batch in the partition starts its
ongoing transaction (its first offset is kept, also in snapshots); the commit or abort marker (a
control batch the coordinator has the leader write) ends it. A marker whose producer epoch is
older than the producer's is INVALID_PRODUCER_EPOCH, one whose coordinator epoch is older than the
last marker's is TRANSACTION_COORDINATOR_FENCED. The **first unstable offset** (the first offset
of the oldest ongoing transaction) is published on the log
(:attr:`storage.log.PartitionLog.first_unstable_offset`), which makes it the last stable offset
bound; an abort appends an entry to the segment's ``.txnindex``
(:class:`~storage.txn_index.TransactionIndex`) with the last stable offset once the abort is in.

On-disk format: ``<20-digit offset>.snapshot`` files in the partition directory, Kafka's own:
int16 version (1), uint32 CRC-32C of everything after the CRC, int32 count, then per producer:
int64 producer id, int16 epoch, int32 last sequence, int64 last offset, int32 offset delta (last
offset - first offset of its last batch), int64 timestamp, int32 coordinator epoch, int64 first
offset of its ongoing transaction (-1). A snapshot named N holds the state after every batch
below offset N.

Which snapshots exist, as Kafka's ``ProducerStateManager`` and ``UnifiedLog`` keep them: one is
written when a segment rolls, named after the new segment's base offset (so a segment can be
recovered from the snapshot at its start), one at clean shutdown at the log end, and one at the
log end after loading replayed batches. A snapshot goes with its segment when retention deletes
the segment. Loading removes the snapshots beyond the log end or at/below the log start offset,
and the *stray* ones (no segment starts there) but the newest stray one when it is above every
segment's base offset (the clean-shutdown snapshot).

Recovery: the latest snapshot not beyond the log end is read (a corrupt one is deleted and the
previous tried), then the batches from its offset to the log end are replayed (headers only,
without validation), so the state is the same whether or not the broker shut down cleanly.

Crash: a snapshot is written to ``.tmp`` and renamed; a torn one fails its CRC and is ignored.

Thread-safety: :meth:`before_append`/:meth:`after_append` run under the log's lock (so appends
are seen in offset order) and take this manager's own (re-entrant) lock, as do snapshots, loading
and expiry.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from crc32c import crc32c

from protocol.errors import ProtocolError
from protocol.records import batch as rb
from protocol.records.control import ControlRecordType, parse_end_txn_marker
from protocol.records.record import decode_batch
from storage import files
from storage.errors import StorageError
from storage.log import AppendInfo, PartitionLog
from storage.txn_index import AbortedTxn
from storage.util import INT32_MAX, now_ms

log = logging.getLogger(__name__)

#: how many batches per producer are remembered for de-duplication (Kafka's constant)
NUM_BATCHES_TO_RETAIN: Final = 5
SNAPSHOT_VERSION: Final = 1
#: Kafka's producer.id.expiration.ms default
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
#: how much of the log is read at a time when replaying batches
REPLAY_CHUNK_BYTES: Final = 4 * 1024 * 1024
#: how many offsets before a producer's last batch a retry older than its remembered batches
#: is looked for in the log, and how many bytes of it are read at most
RETRY_SEARCH_OFFSETS: Final = 20_000
RETRY_SEARCH_BYTES: Final = 16 * 1024 * 1024

_HEAD = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")


class OutOfOrderSequence(StorageError):
    """A sequence that does not follow the producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    error_code = 45


class InvalidProducerEpoch(StorageError):
    """An epoch older than the producer's current one (INVALID_PRODUCER_EPOCH)."""

    error_code = 47


class TransactionCoordinatorFenced(StorageError):
    """A marker from an older transaction coordinator (TRANSACTION_COORDINATOR_FENCED)."""

    error_code = 52


class InvalidTxnMarker(StorageError):
    """A control batch that is not a transaction marker (CORRUPT_MESSAGE)."""

    error_code = 2


class InvalidTxnState(StorageError):
    """A transactional batch that would start a transaction its coordinator did not verify,
    KIP-890 (INVALID_TXN_STATE)."""

    error_code = 48


class VerificationGuard:
    """Kafka's ``VerificationGuard``: a token with identity only. A partition leader creates
    one when it starts verifying a producer's first transactional batch with the coordinator,
    and the append must present the same token (:meth:`ProducerStateManager.
    maybe_start_verification`): a marker or another transactional batch of the producer
    written meanwhile drops the token, so a verification answered for an older transaction
    never starts a new one. The one marker that keeps it is the bumped-epoch marker ending an
    older transaction that was open when the verification started (transaction version 2:
    the verification is for the next transaction)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"VerificationGuard({id(self):#x})"


#: what an append carries when it verified nothing (Kafka's ``VerificationGuard.SENTINEL``):
#: it matches no state, so a batch that would start a transaction is refused
UNVERIFIED: Final = VerificationGuard()


@dataclass(slots=True)
class VerificationStateEntry:
    """A verification in progress for one producer (Kafka's ``VerificationStateEntry``)."""

    timestamp: int
    guard: VerificationGuard
    lowest_sequence: int
    epoch: int
    #: the epoch of an older transaction of the producer open here when the verification
    #: started (-1: none): transaction version 2 starts the next transaction with a bumped
    #: epoch before the ended one's marker arrives, and that marker must not void it
    behind: int = -1

    def update(self, sequence: int, epoch: int) -> None:
        """Kafka's ``maybeUpdateLowestSequenceAndEpoch``."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """What an end-transaction marker batch says."""

    committed: bool
    coordinator_epoch: int


def read_marker(buf: bytes | bytearray | memoryview, pos: int) -> TxnMarker:
    """The commit/abort marker of the control batch at ``pos``. Raises InvalidTxnMarker."""
    try:
        batch = decode_batch(buf, pos, verify_crc=False)
        if len(batch.records) != 1:
            raise InvalidTxnMarker(f"a control batch with {len(batch.records)} records")
        marker = parse_end_txn_marker(batch.records[0])
    except ProtocolError as e:
        raise InvalidTxnMarker(f"not a transaction marker: {e}") from e
    return TxnMarker(marker.control_type == ControlRecordType.COMMIT, marker.coordinator_epoch)


class CorruptSnapshot(StorageError):
    """A producer snapshot file that fails its version, size or CRC check."""


def _decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One remembered batch of a producer."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return _decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """A producer's state in one partition."""

    producer_id: int
    producer_epoch: int = rb.NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    last_timestamp: int = rb.NO_TIMESTAMP
    current_txn_first_offset: int = -1

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else rb.NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate_batch(self, header: rb.BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for batch in self.batches:
            if batch.first_seq == first and batch.last_seq == last:
                return batch
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )


def _older_than_remembered(current: ProducerStateEntry, header: rb.BatchHeader) -> bool:
    """Whether the batch, of the producer's current epoch, ends before the producer's last
    remembered sequence without being one of its remembered batches (a retry of an older one)."""
    if header.producer_epoch != current.producer_epoch or not current.batches:
        return False
    oldest = current.batches[0].first_seq
    return header.last_sequence < oldest and header.base_sequence <= header.last_sequence


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / (
        files.filename_prefix_from_offset(offset) + files.PRODUCER_SNAPSHOT_FILE_SUFFIX
    )


def encode_snapshot(entries: Sequence[ProducerStateEntry]) -> bytes:
    body = bytearray(struct.pack(">i", len(entries)))
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
    crc = crc32c(bytes(body))
    return struct.pack(">hI", SNAPSHOT_VERSION, crc) + bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Raises CorruptSnapshot."""
    if len(data) < _HEAD.size:
        raise CorruptSnapshot(f"{len(data)} bytes are too few for a producer snapshot")
    version, crc, count = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshot(f"unknown producer snapshot version {version}")
    if crc32c(data[6:]) != crc:
        raise CorruptSnapshot("producer snapshot CRC mismatch")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshot(f"producer snapshot of {len(data)} bytes claims {count} entries")
    entries = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coordinator_epoch, txn_first = _ENTRY.unpack_from(
            data, _HEAD.size + i * _ENTRY.size
        )
        entry = ProducerStateEntry(
            pid,
            epoch,
            coordinator_epoch=coordinator_epoch,
            last_timestamp=ts,
            current_txn_first_offset=txn_first,
        )
        if offset >= 0:
            entry.batches.append(BatchMetadata(seq, offset, delta, ts))
        entries.append(entry)
    return entries


def list_snapshots(directory: Path) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending."""
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        if name.endswith(files.PRODUCER_SNAPSHOT_FILE_SUFFIX):
            try:
                out.append(files.offset_from_file_name(name))
            except ValueError:
                continue
    return sorted(out)


class ProducerStateManager:
    """See the module docstring. Attach with :meth:`attach` (loads, then hooks into the log)."""

    def __init__(
        self,
        directory: Path,
        name: str,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.directory = directory
        self.name = name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.clock = clock
        self.producers: dict[int, ProducerStateEntry] = {}
        #: the offset up to which the state is complete (exclusive)
        self.map_end_offset = 0
        #: producer id -> first offset of its ongoing transaction, oldest first
        self.ongoing: dict[int, int] = {}
        #: markers seen by before_append, consumed in order by after_append
        self._pending_markers: list[TxnMarker] = []
        #: KIP-890 verifications in progress, by producer id
        self.verifications: dict[int, VerificationStateEntry] = {}
        self._lock = threading.RLock()
        self._log: PartitionLog | None = None

    # -- loading -----------------------------------------------------------------------------------

    @classmethod
    def attach(
        cls,
        partition_log: PartitionLog,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        clock: Callable[[], int] = now_ms,
    ) -> ProducerStateManager:
        """Rebuilds the state of ``partition_log`` (snapshot + replay) and becomes its hook."""
        manager = cls(
            partition_log.directory,
            partition_log.name,
            producer_id_expiration_ms=producer_id_expiration_ms,
            clock=clock,
        )
        manager.load(partition_log)
        partition_log.producer_state = manager
        return manager

    def load(self, partition_log: PartitionLog) -> None:
        started = time.monotonic()
        end = partition_log.log_end_offset
        start = partition_log.log_start_offset
        with self._lock:
            self._log = partition_log
            self.directory = partition_log.directory
            self.producers.clear()
            self.ongoing.clear()
            self.map_end_offset = start
            self._remove_stray_snapshots(partition_log)
            for offset in reversed(list_snapshots(self.directory)):
                path = snapshot_path(self.directory, offset)
                if offset > end or offset <= start:
                    # Kafka's truncateAndReload: out of the log's range
                    log.info(
                        "%s: deleting %s, outside the log [%d, %d]", self.name, path.name,
                        start, end,
                    )  # fmt: skip
                    _unlink(path)
                    continue
                try:
                    entries = decode_snapshot(path.read_bytes())
                except (CorruptSnapshot, OSError) as e:
                    log.warning("%s: ignoring producer snapshot %s: %s", self.name, path.name, e)
                    _unlink(path)
                    continue
                for entry in entries:
                    self.producers[entry.producer_id] = entry
                for entry in sorted(entries, key=lambda e: e.current_txn_first_offset):
                    if entry.current_txn_first_offset >= 0:
                        self.ongoing[entry.producer_id] = entry.current_txn_first_offset
                self.map_end_offset = max(offset, start)
                break
            replayed = self._replay(partition_log, self.map_end_offset, end)
            self.map_end_offset = end
            self._remove_expired_locked(self.clock())
            self._publish()
            if replayed:
                # what was replayed need not be replayed again (Kafka snapshots the log end
                # after loading)
                try:
                    self.take_snapshot(fsync=False)
                except OSError as e:
                    log.warning("%s: writing a producer snapshot failed: %s", self.name, e)
        if replayed or self.producers:
            log.info(
                "%s: producer state loaded (%d producer(s), %d batch(es) replayed) in %.0f ms",
                self.name,
                len(self.producers),
                replayed,
                (time.monotonic() - started) * 1000,
            )

    def _replay(self, partition_log: PartitionLog, offset: int, end: int) -> int:
        replayed = 0
        for data, pos, header in self._log_batches(partition_log, offset, end, "replaying"):
            if not header.has_producer_id:
                continue
            if header.is_control:
                try:
                    marker = read_marker(data, pos)
                except InvalidTxnMarker as e:
                    log.warning(
                        "%s: skipping the marker at %d: %s", self.name, header.base_offset, e
                    )
                else:
                    self._apply_marker(partition_log, header, marker)
            else:
                self._apply(header)
            replayed += 1
        return replayed

    def _log_batches(
        self,
        partition_log: PartitionLog,
        offset: int,
        end: int,
        what: str,
        max_bytes: int = 1 << 62,
    ) -> Iterator[tuple[bytes, int, rb.BatchHeader]]:
        """The batches of the log in [``offset``, ``end``) (the one holding ``offset`` first),
        read in chunks of :data:`REPLAY_CHUNK_BYTES` up to about ``max_bytes``, each with the
        chunk holding it and its position there. A read or parse failure ends them, logged as
        a failure of ``what``."""
        read = 0
        while offset < end and read < max_bytes:
            try:
                region = partition_log.read(offset, REPLAY_CHUNK_BYTES, max_offset=end)
            except StorageError as e:
                log.warning("%s: %s stopped at %d: %s", self.name, what, offset, e)
                return
            if region is None:
                return
            data = region.read()
            read += len(data)
            advanced = False
            try:
                for pos, header in rb.iter_batches(data, verify_crc=False):
                    if header.next_offset <= offset:
                        continue
                    yield data, pos, header
                    offset = header.next_offset
                    advanced = True
            except ProtocolError as e:
                log.warning("%s: %s stopped at %d: %s", self.name, what, offset, e)
                return
            if not advanced:
                return

    def _apply(self, header: rb.BatchHeader) -> None:
        if header.is_transactional and self.verifications:
            # the transaction has its first offset now (or ended): no guard needed any more
            self.verifications.pop(header.producer_id, None)
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = ProducerStateEntry(header.producer_id)
            self.producers[header.producer_id] = entry
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[header.producer_id] = header.base_offset
        entry.add_batch(
            header.producer_epoch,
            header.last_sequence,
            header.last_offset,
            header.last_offset_delta,
            header.max_timestamp,
        )

    def _apply_marker(
        self, partition_log: PartitionLog, header: rb.BatchHeader, marker: TxnMarker
    ) -> None:
        """Ends the producer's ongoing transaction (Kafka's ``appendEndTxnMarker`` and
        ``completeTxn``): an abort goes to the ``.txnindex`` of the segment holding the marker."""
        pid = header.producer_id
        verifying = self.verifications.get(pid) if self.verifications else None
        if verifying is not None:
            if (
                0 <= verifying.behind < header.producer_epoch == verifying.epoch
                and pid in self.ongoing
            ):
                # the bumped-epoch marker that ends the older transaction (transaction version
                # 2): the verification is for the next one, and still holds
                verifying.behind = -1
            else:
                # a transaction ended meanwhile: a verification answered for it must not start
                # a new one (the ABA case the guard exists for)
                del self.verifications[pid]
        entry = self.producers.get(pid)
        if entry is None:
            entry = ProducerStateEntry(pid)
            self.producers[pid] = entry
        if header.producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = header.producer_epoch
        first = self.ongoing.pop(pid, -1)
        if first < 0:
            first = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = header.max_timestamp
        marker_offset = header.base_offset
        if first >= 0 and not marker.committed:
            lso = next(iter(self.ongoing.values()), marker_offset + 1)
            segment = partition_log.segments.floor(marker_offset)
            if segment is not None:
                segment.txn_index.append(AbortedTxn(pid, first, marker_offset, lso))

    def _publish(self) -> None:
        """Publishes the first unstable offset on the log (one assignment: lock-free reads)."""
        if self._log is not None:
            self._log.first_unstable_offset = next(iter(self.ongoing.values()), None)

    def first_unstable_offset(self) -> int | None:
        return next(iter(self.ongoing.values()), None)

    def ongoing_transactions(self) -> list[tuple[int, int]]:
        """(producer id, first offset) of the ongoing transactions, oldest first."""
        with self._lock:
            return list(self.ongoing.items())

    # -- the append hook ---------------------------------------------------------------------------

    # -- KIP-890 verification ----------------------------------------------------------------------

    def maybe_start_verification(
        self, producer_id: int, sequence: int, epoch: int
    ) -> VerificationGuard | None:
        """Kafka's ``maybeStartTransactionVerification``: None when the producer has a
        transaction open here with this epoch (its batches need no verification), else the
        guard of its verification (a new one, or the one in progress). A batch with a later
        epoch than the open transaction's starts the next transaction of transaction version 2
        (KIP-890 part 2: each EndTxn bumps the epoch, and the ended one's marker may not be
        written yet), so it is verified, as Kafka's ``hasOngoingTransaction`` compares
        epochs."""
        with self._lock:
            if self._in_transaction(producer_id, epoch):
                return None
            entry = self.verifications.get(producer_id)
            if entry is None:
                entry = VerificationStateEntry(self.clock(), VerificationGuard(), sequence, epoch)
                self.verifications[producer_id] = entry
            else:
                entry.update(sequence, epoch)
            producer = self.producers.get(producer_id)
            if producer_id in self.ongoing and producer is not None:
                entry.behind = producer.producer_epoch
            return entry.guard

    def _in_transaction(self, producer_id: int, epoch: int) -> bool:
        """Whether the producer has a transaction open here with ``epoch``."""
        if producer_id not in self.ongoing:
            return False
        entry = self.producers.get(producer_id)
        return entry is None or entry.producer_epoch == epoch

    def verification_guard(self, producer_id: int) -> VerificationGuard | None:
        entry = self.verifications.get(producer_id)
        return None if entry is None else entry.guard

    # -- the append hook (continued) ---------------------------------------------------------------

    def before_append(
        self,
        partition_log: PartitionLog,
        batches: Sequence[tuple[int, rb.BatchHeader]],
        buf: bytes | bytearray | memoryview = b"",
        validate: bool = True,
        verification: VerificationGuard | None = None,
    ) -> AppendInfo | None:
        with self._lock:
            self._pending_markers = []
            if not validate:
                # a follower's append: the leader checked it; the markers are still applied
                self._pending_markers = [
                    read_marker(buf, pos) for pos, header in batches if header.is_control
                ]
                return None
            return self._validate(partition_log, batches, buf, verification)

    def _validate(
        self,
        partition_log: PartitionLog,
        batches: Sequence[tuple[int, rb.BatchHeader]],
        buf: bytes | bytearray | memoryview,
        verification: VerificationGuard | None = None,
    ) -> AppendInfo | None:
        updated: dict[int, ProducerStateEntry] = {}
        for pos, header in batches:
            if not header.has_producer_id:
                continue
            if header.is_control:
                self._check_marker(header, read_marker(buf, pos))
                continue
            pid = header.producer_id
            current = self.producers.get(pid)
            entry = updated.get(pid)
            if entry is None:
                # a retried batch gets its original offsets back (a coordinator's batch has no
                # sequence and is never a retry)
                if current is not None and header.base_sequence != rb.NO_SEQUENCE:
                    duplicate = current.find_duplicate_batch(header)
                    if (
                        duplicate is None
                        and header.last_sequence < current.last_seq  # rare: a retry or a bug
                        and _older_than_remembered(current, header)
                    ):
                        duplicate = self._find_retried_batch(partition_log, current, header)
                    if duplicate is not None:
                        return self._duplicate_answer(partition_log, duplicate)
                if (
                    verification is not None
                    and header.is_transactional
                    and not self._in_transaction(pid, header.producer_epoch)
                    and self.verification_guard(pid) is not verification
                ):
                    # KIP-890: a batch that would start a transaction must carry the guard of
                    # its (successful) verification with the coordinator
                    raise InvalidTxnState(
                        f"Record of producer {pid} in {self.name} was not part of an ongoing "
                        "transaction"
                    )
                entry = (
                    ProducerStateEntry(pid, current.producer_epoch)
                    if current is not None
                    else ProducerStateEntry(pid)
                )
                updated[pid] = entry
            self._check(pid, current, entry, header)
            entry.add_batch(
                header.producer_epoch,
                header.last_sequence,
                -1,
                header.last_offset_delta,
                header.max_timestamp,
            )
        return None

    def _find_retried_batch(
        self, partition_log: PartitionLog, current: ProducerStateEntry, header: rb.BatchHeader
    ) -> BatchMetadata | None:
        """A retry of a batch older than the ones remembered, looked for in the log before the
        producer's last batch (at most :data:`RETRY_SEARCH_OFFSETS` offsets and
        :data:`RETRY_SEARCH_BYTES` back): a batch of the producer with the same epoch and
        sequence range is the retried one, and the retry is answered as a duplicate with its
        offsets.

        Kafka remembers a producer's last 5 batches in memory but its snapshots keep only the
        last one, so after a restart a retry of any earlier batch is OUT_OF_ORDER_SEQUENCE_NUMBER,
        which librdkafka's idempotent producer takes as fatal ("sequence desynchronization").
        That happens in a rolling restart: a batch appended by a leader that then moves
        away is retried with the new leader, which answers NOT_LEADER_OR_FOLLOWER before the
        high watermark passes it, and reaches the restarted broker when leadership comes back.
        Looking the batch up costs a read of the log's tail only on that path."""
        end = current.last_data_offset + 1
        offset = max(partition_log.log_start_offset, end - RETRY_SEARCH_OFFSETS)
        pid, epoch = header.producer_id, header.producer_epoch
        first, last = header.base_sequence, header.last_sequence
        batches = self._log_batches(
            partition_log, offset, end, "looking for a retried batch", RETRY_SEARCH_BYTES
        )
        for _, _, found in batches:
            if (
                found.producer_id == pid
                and found.producer_epoch == epoch
                and found.base_sequence == first
                and found.last_sequence == last
                and not found.is_control
            ):
                log.info(
                    "%s: a retry of producer %d's sequences %d-%d found at offset %d, older "
                    "than its remembered batches: answered as a duplicate",
                    self.name,
                    pid,
                    first,
                    last,
                    found.base_offset,
                )
                return BatchMetadata(
                    found.last_sequence, found.last_offset, found.last_offset_delta,
                    found.max_timestamp,
                )  # fmt: skip
        return None

    def _check(
        self,
        pid: int,
        current: ProducerStateEntry | None,
        updated: ProducerStateEntry,
        header: rb.BatchHeader,
    ) -> None:
        epoch = header.producer_epoch
        first_seq = header.base_sequence
        if epoch < updated.producer_epoch:
            raise InvalidProducerEpoch(
                f"Epoch of producer {pid} in {self.name} is {epoch}, which is smaller than the "
                f"last seen epoch {updated.producer_epoch}"
            )
        if epoch != updated.producer_epoch:
            if (
                first_seq not in (0, rb.NO_SEQUENCE)
                and updated.producer_epoch != rb.NO_PRODUCER_EPOCH
            ):
                raise OutOfOrderSequence(
                    f"Invalid sequence number for new epoch of producer {pid} in {self.name}: "
                    f"{epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)"
                )
            return
        if first_seq == rb.NO_SEQUENCE:
            # written by a coordinator (TxnOffsetCommit): only the epoch is checked (Kafka checks
            # sequences of client batches only)
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif current is not None and epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = rb.NO_SEQUENCE
        known = current is not None and current.producer_epoch != rb.NO_PRODUCER_EPOCH
        if known and not _in_sequence(last_seq, first_seq):
            raise OutOfOrderSequence(
                f"Out of order sequence number for producer {pid} in {self.name}: {first_seq} "
                f"(incoming seq. number), {last_seq} (current end sequence number)"
            )

    def _check_marker(self, header: rb.BatchHeader, marker: TxnMarker) -> None:
        entry = self.producers.get(header.producer_id)
        if entry is not None:
            if header.producer_epoch < entry.producer_epoch:
                raise InvalidProducerEpoch(
                    f"Epoch of producer {header.producer_id} in {self.name} is "
                    f"{entry.producer_epoch}, the marker's {header.producer_epoch} is older"
                )
            if marker.coordinator_epoch < entry.coordinator_epoch:
                raise TransactionCoordinatorFenced(
                    f"The marker's coordinator epoch {marker.coordinator_epoch} for producer "
                    f"{header.producer_id} in {self.name} is older than "
                    f"{entry.coordinator_epoch}"
                )
        self._pending_markers.append(marker)

    @staticmethod
    def _duplicate_answer(partition_log: PartitionLog, batch: BatchMetadata) -> AppendInfo:
        # Kafka answers a duplicate with the cached batch's offsets and, as its log append time,
        # the cached batch's timestamp whatever the topic's timestamp type (UnifiedLog's
        # analyzeAndValidateProducerState): clients see the same answer as the first time
        return AppendInfo(
            first_offset=batch.first_offset,
            last_offset=batch.last_offset,
            max_timestamp=batch.timestamp,
            offset_of_max_timestamp=batch.last_offset,
            log_append_time=batch.timestamp,
            log_start_offset=partition_log.log_start_offset,
            record_count=0,
            valid_bytes=0,
        )

    def after_append(
        self, partition_log: PartitionLog, info: AppendInfo, batches: Sequence[rb.BatchHeader]
    ) -> None:
        if batches:
            with self._lock:
                markers = self._pending_markers
                self._pending_markers = []
                changed = False
                for header in batches:
                    if not header.has_producer_id:
                        continue
                    if header.is_control:
                        if markers:
                            self._apply_marker(partition_log, header, markers.pop(0))
                            changed = True
                    else:
                        if header.is_transactional:
                            changed = True
                        self._apply(header)
                self.map_end_offset = info.last_offset + 1
                if changed:
                    self._publish()
        else:
            # no producer changed: the end offset alone is published without the lock (a
            # snapshot taken meanwhile pairs the same producers with either end offset)
            self.map_end_offset = info.last_offset + 1

    def rolled(self, partition_log: PartitionLog, base_offset: int) -> None:
        """A new segment starts at ``base_offset`` (under the log's lock): the state there is
        snapshotted, named after it (Kafka's ``roll``: not fsynced here; the segment flush that
        follows a roll syncs the file system's data anyway)."""
        with self._lock:
            self.map_end_offset = max(self.map_end_offset, base_offset)
            try:
                self.take_snapshot(fsync=False)
            except OSError as e:
                log.warning("%s: writing a producer snapshot failed: %s", self.name, e)

    def segments_deleted(self, partition_log: PartitionLog, base_offsets: Sequence[int]) -> None:
        """Retention deleted these segments: their snapshots go too (Kafka's
        ``deleteProducerSnapshots``)."""
        directory = partition_log.directory
        for offset in base_offsets:
            _unlink(snapshot_path(directory, offset))

    def _remove_stray_snapshots(self, partition_log: PartitionLog) -> None:
        """Kafka's ``removeStraySnapshots``: snapshots where no segment starts are deleted, but
        the newest of them when it is above every segment's base offset (the snapshot a clean
        shutdown wrote at the log end)."""
        bases = {s.base_offset for s in partition_log.segments}
        max_base = max(bases) if bases else None
        stray: int | None = None
        for offset in list_snapshots(self.directory):
            if offset in bases:
                continue
            if stray is not None:
                _unlink(snapshot_path(self.directory, stray))
            stray = offset
        if stray is not None and max_base is not None and stray < max_base:
            _unlink(snapshot_path(self.directory, stray))

    def truncated(self, partition_log: PartitionLog) -> None:
        """The log lost its tail: the state is rebuilt from the newest snapshot at or below the
        new log end (later snapshots are deleted) and the batches after it (Kafka's
        ``loadProducerState`` after a truncation)."""
        self.load(partition_log)

    # -- snapshots and expiry ----------------------------------------------------------------------

    def take_snapshot(self, *, fsync: bool = True) -> Path | None:
        """Writes ``<map end offset>.snapshot`` if not there yet (Kafka's ``takeSnapshot``;
        older snapshots stay until their segment goes). None, and no file, when the map ends at
        the log start (an empty log): nothing there to save, and :meth:`load` deletes such a
        snapshot (Kafka writes none either), so a clean shutdown costs an empty partition no
        file write and no fsync."""
        with self._lock:
            offset = self.map_end_offset
            if self._log is not None:
                self.directory = self._log.directory
                if offset <= self._log.log_start_offset:
                    return None
            path = snapshot_path(self.directory, offset)
            if path.exists():
                return path
            data = encode_snapshot(list(self.producers.values()))
            files.write_atomically(path, data, fsync=fsync)
            return path

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Forgets producers idle for ``producer.id.expiration.ms`` (by their last batch's
        timestamp)."""
        now = self.clock() if now_ms is None else now_ms
        with self._lock:
            return self._remove_expired_locked(now)

    def _remove_expired_locked(self, now_ms: int) -> int:
        expired = [
            pid
            for pid, e in self.producers.items()
            if e.current_txn_first_offset < 0
            and now_ms - e.last_timestamp >= self.producer_id_expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        stale = [
            pid
            for pid, v in self.verifications.items()
            if now_ms - v.timestamp >= self.producer_id_expiration_ms
        ]
        for pid in stale:
            del self.verifications[pid]
        return len(expired)

    def active_producers(self) -> list[ProducerStateEntry]:
        """Copies of every producer's entry (DescribeProducers)."""
        with self._lock:
            return [e.copy() for e in self.producers.values()]

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
