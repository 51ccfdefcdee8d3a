"""PartitionLog (Kafka's ``UnifiedLog``): what a partition's offsets mean, over its
:class:`~storage.local_log.LocalLog` of segments."""

from __future__ import annotations

import logging
import struct
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol

from protocol.records import batch as rb
from protocol.records.batch import NO_TIMESTAMP
from storage import files
from storage import records as stored_records
from storage.checkpoint import (
    read_partition_metadata,
    write_partition_metadata,
)
from storage.config import LogConfig
from storage.epoch import LeaderEpochFileCache
from storage.errors import (
    InconsistentTopicId,
    KafkaStorageError,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    RecordTooLarge,
)
from storage.file_records import BatchInfo, FetchRegion
from storage.local_log import LocalLog
from storage.segment import LogSegment
from storage.segments import LogSegments
from storage.txn_index import AbortedTxn
from storage.util import INT32_MAX, LONG_MAX, now_ms

log = logging.getLogger(__name__)

#: ListOffsets special timestamps.
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
LATEST_TIERED_TIMESTAMP: Final = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP: Final = -6


_HEADER_UNPACK: Final = rb.HEADER.unpack_from
#: batchLength, magic, lastOffsetDelta, maxTimestamp, producerId and recordCount, read from byte 8
#: of a batch (an append rewrites none of them)
_FAST_FIELDS: Final = struct.Struct(">i4xb6xi8xqq6xi").unpack_from
#: producerId's index in a batch header's fields
_PRODUCER_ID: Final = rb.BatchHeader._fields.index("producer_id")
#: baseOffset (int64), then batchLength (int32, rewritten unchanged), then partitionLeaderEpoch
_OFFSET_AND_EPOCH: Final = struct.Struct(">qii")
_pack_offset_and_epoch: Final = _OFFSET_AND_EPOCH.pack_into
#: the smallest batchLength of a magic-2 batch (a header and no records)
_MIN_BATCH_LENGTH: Final = rb.HEADER_SIZE - rb.LOG_OVERHEAD


class AppendInfo(NamedTuple):
    """What an append did (Kafka's LogAppendInfo). An immutable value."""

    first_offset: int
    last_offset: int
    #: largest batch maxTimestamp appended (-1 if none carried one)
    max_timestamp: int
    #: last offset of the batch that carries ``max_timestamp``
    offset_of_max_timestamp: int
    #: the broker time stamped into LogAppendTime batches, else -1
    log_append_time: int
    log_start_offset: int
    record_count: int
    valid_bytes: int


class OffsetAndTimestamp(NamedTuple):
    """A ListOffsets answer: the offset, the timestamp of the record found (-1 for the special
    queries) and the leader epoch that wrote it (-1 if unknown)."""

    offset: int
    timestamp: int
    leader_epoch: int = -1


class ProducerStateHook(Protocol):
    """Where a ProducerStateManager (idempotent producers) plugs into appends.

    Both methods run under the log's lock, so they see appends in offset order and can reject a
    batch before it takes offsets. They are given only the batches that carry a producer id
    (Kafka's producer state ignores the others)."""

    def before_append(
        self,
        log: PartitionLog,
        batches: Sequence[tuple[int, rb.BatchHeader]],
        buf: bytes | bytearray | memoryview,
        validate: bool = True,
        verification: Any = None,
    ) -> AppendInfo | None:
        """Called, when the append has batches with a producer id, with (position in the
        appended buffer, header before offset assignment) for each of them, and the buffer (a
        control batch's marker is read from it). Raise a StorageError to reject the append;
        return an AppendInfo to answer a duplicate without appending anything. A follower's
        append (``validate=False``) is the leader's, already checked: its markers are read,
        nothing is refused. ``verification``: the KIP-890 verification guard the append
        carries (None: not checked)."""

    def after_append(
        self, log: PartitionLog, info: AppendInfo, batches: Sequence[rb.BatchHeader]
    ) -> None:
        """Called after every append, once the batches are written, with the final headers
        (assigned offsets and leader epoch) of those with a producer id."""

    def truncated(self, log: PartitionLog) -> None:
        """Called (under the log's lock) after the log lost its tail (a follower truncating to
        its leader): the state must forget what the removed batches taught it."""

    def rolled(self, log: PartitionLog, base_offset: int) -> None:
        """Called (under the log's lock) when a new segment starts at ``base_offset``."""

    def segments_deleted(self, log: PartitionLog, base_offsets: Sequence[int]) -> None:
        """Called (under the log's lock) when retention deleted the segments at these base
        offsets."""


def _new_header(fields: tuple[int, ...]) -> rb.BatchHeader:
    return tuple.__new__(rb.BatchHeader, fields)


#: builds a NamedTuple from a tuple without its __new__'s argument parsing (hot path)
_tuple_new: Final = tuple.__new__


class PartitionLog:
    """A partition's log (Kafka's ``UnifiedLog``): offset assignment and leader epochs on
    appends, the log start offset, the high watermark, the producer-state hook, offsets by
    timestamp, and the retention policy, over a :class:`~storage.local_log.LocalLog` that holds
    the segments, the log end offset and the recovery point.

    Leaders append with :meth:`append` (offsets assigned, their leader epoch stamped);
    followers with :meth:`append_as_follower` (the leader's batches as they are: offsets, leader
    epochs, producer ids and sequences kept). The high watermark follows the log end while
    :attr:`high_watermark_follows_log_end` (a single replica is its whole ISR); replication sets
    it explicitly with :meth:`update_high_watermark` instead.

    On-disk format: the directory ``<log.dir>/<topic>-<partition>/`` with the segments'
    ``.log``/``.index``/``.timeindex`` files (see :class:`~storage.segment.LogSegment`),
    ``leader-epoch-checkpoint`` and, when the topic id is known, ``partition.metadata``. The
    recovery point, log start offset and high watermark live in the log dir's checkpoint files
    (written by the :class:`~storage.manager.LogManager`).

    Crash: appends after the last flush may be lost or cut; on the next start the loader
    (:func:`storage.loader.load_log`) re-validates everything after the recovery point and
    truncates at the first bad byte. Segments being deleted are ``.deleted`` files, removed on
    the next start.

    Thread-safety: :meth:`append`, :meth:`roll`, :meth:`truncate_to`, :meth:`delete_records_before`
    and retention take the log's lock, which is held for the offset assignment, the write and the
    bookkeeping. Segment files are never fsynced under it (:meth:`flush` and :meth:`close` fsync
    outside it), but some rarer changes do fsync while holding it: the ``leader-epoch-checkpoint``
    rewrite (file and directory) when an append starts a new leader epoch and when retention,
    DeleteRecords or a truncation moves the log's bounds, and the directory fsyncs of
    :meth:`replace_segments` (compaction's swap). :meth:`read`, :meth:`fetch_offset_by_timestamp`
    and the offset properties are lock-free: they read the copy-on-write segment snapshot and the
    published log end, so they never wait for an append, a roll or retention (but an append waits
    for those fsyncs).
    """

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        segments: LogSegments,
        next_offset: int,
        log_start_offset: int,
        recovery_point: int,
        leader_epoch_cache: LeaderEpochFileCache,
        topic_id: uuid.UUID | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.config = config
        self.topic_id = topic_id
        self.clock = clock
        self.leader_epoch_cache = leader_epoch_cache
        latest_epoch = leader_epoch_cache.latest_epoch()
        #: the cache's latest epoch, kept here so appends need not take the cache's lock
        self._latest_epoch = -1 if latest_epoch is None else latest_epoch
        #: whether appends advance the high watermark to the log end (standalone broker); set
        #: False when replication manages it through :meth:`update_high_watermark`
        self.high_watermark_follows_log_end = True
        self.producer_state: ProducerStateHook | None = None
        #: the first offset of the oldest ongoing transaction (None: none), published by the
        #: producer state
        self.first_unstable_offset: int | None = None
        self._lock = threading.Lock()
        self._local = LocalLog(
            directory,
            topic,
            partition,
            config,
            segments=segments,
            log_end_offset=next_offset,
            recovery_point=recovery_point,
            now_ms=clock(),
        )
        self._log_start_offset = log_start_offset
        self._high_watermark = next_offset

    # --- offsets (lock-free reads) --------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._local.directory

    @property
    def local_log(self) -> LocalLog:
        """The segments underneath (for the loader, the cleaner and tools)."""
        return self._local

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Below it every transaction is decided (Kafka's LSO): the first unstable offset, or the
        high watermark when that is lower or no transaction is open."""
        hw = self._high_watermark
        first_unstable = self.first_unstable_offset
        if first_unstable is None or first_unstable > hw:
            return hw
        return first_unstable

    def fetch_upper_bound_offset(self, region: FetchRegion) -> int:
        """An offset at or after the end of ``region`` (Kafka's upper bound for the aborted
        transactions of a read): the first indexed offset past it, else the next segment's base
        offset, else the log end."""
        snapshot = self._local.segments
        i = snapshot.floor_index(region.first_offset)
        if i >= 0:
            found = snapshot[i].offset_index.offset_at_or_after_position(
                region.position + region.length
            )
            if found is not None:
                return found + 1
            if i + 1 < len(snapshot):
                return snapshot[i + 1].base_offset
        return self.log_end_offset

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """Kafka's ``collectAbortedTransactions``: the aborted transactions (``AbortedTxn``
        entries of the segments' transaction indexes) overlapping [``start_offset``,
        ``upper_bound_offset``), from the segment holding ``start_offset`` on. Lock-free."""
        snapshot = self._local.segments
        out: list[AbortedTxn] = []
        i = max(snapshot.floor_index(start_offset), 0)
        segments = snapshot.segments
        while i < len(segments):
            found, complete = segments[i].txn_index.collect(start_offset, upper_bound_offset)
            out.extend(found)
            if complete:
                break
            i += 1
        return out

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._local.last_flush_ms

    @property
    def segments(self) -> LogSegments:
        """The current segment snapshot (immutable)."""
        return self._local.segments

    @property
    def active_segment(self) -> LogSegment:
        return self._local.segments.active

    @property
    def num_segments(self) -> int:
        return len(self._local.segments)

    @property
    def size_in_bytes(self) -> int:
        return self._local.segments.size_in_bytes()

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch()

    @property
    def name(self) -> str:
        return files.log_dir_name(self.topic, self.partition)

    @property
    def closed(self) -> bool:
        return self._local.closed

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.name}, start={self._log_start_offset}, "
            f"end={self.log_end_offset}, hw={self._high_watermark}, "
            f"segments={len(self._local.segments)})"
        )

    # --- append ---------------------------------------------------------------------------------

    def append(
        self,
        records: bytearray | memoryview | bytes,
        *,
        leader_epoch: int = rb.NO_PARTITION_LEADER_EPOCH,
        now_ms: int | None = None,
        assign_offsets: bool = True,
        verification: Any = None,
    ) -> AppendInfo:
        """Appends already-validated magic-2 batches (the broker ran
        :func:`protocol.records.batch.validate_batches` on them). ``verification``: the
        KIP-890 verification guard of a producer's request, handed to the producer state (a
        transactional batch that would start a transaction needs the guard of its verification;
        None: not checked).

        With ``assign_offsets`` (a leader's append) each batch's baseOffset is rewritten in place
        to the next offsets and its partitionLeaderEpoch set to ``leader_epoch`` (both outside the
        CRC); with ``message.timestamp.type=LogAppendTime`` maxTimestamp is set to ``now_ms`` (and
        the CRC recomputed). ``records`` must then be writable (a ``bytes`` object is copied).
        Without ``assign_offsets`` (replication, tools) the batches keep their offsets, which must
        start at or after the log end.

        Raises RecordTooLarge (a batch above ``max.message.bytes``), RecordBatchTooLarge (more
        than ``segment.bytes``), KafkaStorageError (I/O error; the log is unchanged), ValueError
        (offsets out of order without ``assign_offsets``).
        """
        local = self._local
        if local.closed:
            raise KafkaStorageError(f"log {self.name} is closed")
        buf: bytearray | memoryview = bytearray(records) if isinstance(records, bytes) else records
        total = len(buf)
        config = self.config
        now = self.clock() if now_ms is None else now_ms
        if assign_offsets and total >= rb.HEADER_SIZE:
            # the usual append (one batch, offsets assigned, CreateTime) reads six header
            # fields and builds no header unless a producer-state hook wants them
            length, magic, delta, max_ts, producer_id, record_count = _FAST_FIELDS(buf, 8)
            if (
                length + rb.LOG_OVERHEAD == total
                and magic == rb.MAGIC_V2
                and length >= _MIN_BATCH_LENGTH
                and delta >= 0
                and total <= config.max_message_bytes
                and total <= config.segment_bytes
                and not config.log_append_time
            ):
                flush_needed = False
                lock = self._lock
                lock.acquire()  # not "with": acquire/release in try/finally is ~70 ns cheaper
                try:
                    if local.closed:  # closed (deleted, moved) while this append waited
                        raise KafkaStorageError(f"log {self.name} is closed")
                    hook = self.producer_state
                    if hook is not None and producer_id >= 0:
                        header = _tuple_new(rb.BatchHeader, _HEADER_UNPACK(buf, 0))
                        answer = hook.before_append(self, [(0, header)], buf, True, verification)
                        if answer is not None:
                            return answer
                    first = local.log_end_offset
                    last = first + delta
                    _pack_offset_and_epoch(buf, 0, first, length, leader_epoch)
                    segment = local.segments.segments[-1]
                    if segment.should_roll(total, max_ts, last, now, config):
                        segment = self._roll_locked(now, first)
                    local.append(segment, buf, last, max_ts, last, last)
                    if leader_epoch > self._latest_epoch:
                        self.leader_epoch_cache.assign(leader_epoch, first, flush=False)
                        self._latest_epoch = leader_epoch
                    end = last + 1
                    if self.high_watermark_follows_log_end:
                        self._high_watermark = end
                    info = _tuple_new(
                        AppendInfo,
                        (first, last, max_ts, last, NO_TIMESTAMP, self._log_start_offset,
                         record_count, total)
                        if max_ts > NO_TIMESTAMP else
                        (first, last, NO_TIMESTAMP, first, NO_TIMESTAMP, self._log_start_offset,
                         record_count, total),
                    )  # fmt: skip
                    if hook is not None:
                        hook.after_append(
                            self,
                            info,
                            (_tuple_new(rb.BatchHeader, _HEADER_UNPACK(buf, 0)),)
                            if producer_id >= 0
                            else (),
                        )
                    if end - local.recovery_point >= config.flush_messages:
                        flush_needed = True
                finally:
                    lock.release()
                if flush_needed:
                    self.flush()
                return info
        return self._append_batches(
            buf, total, leader_epoch, now, assign_offsets, config, verification
        )

    def _append_batches(
        self,
        buf: bytearray | memoryview,
        total: int,
        leader_epoch: int,
        now: int,
        assign_offsets: bool,
        config: LogConfig,
        verification: Any = None,
    ) -> AppendInfo:
        """:meth:`append` for anything but the one-batch leader append: several batches, kept
        offsets, LogAppendTime, or input to refuse."""
        if total == 0:
            raise ValueError("nothing to append")
        if total > config.segment_bytes:
            raise RecordBatchTooLarge(
                f"{total} bytes of batches exceed segment.bytes={config.segment_bytes}"
            )
        # one header unpack per batch: (position, header fields)
        scan: list[tuple[int, tuple[int, ...]]] = []
        unpack = _HEADER_UNPACK
        max_bytes = config.max_message_bytes
        pos = 0
        while pos < total:
            if total - pos < rb.HEADER_SIZE:
                raise ValueError(f"{total - pos} trailing bytes are not a record batch")
            fields = unpack(buf, pos)
            length = fields[1]
            size = length + rb.LOG_OVERHEAD
            if fields[3] != rb.MAGIC_V2 or length < _MIN_BATCH_LENGTH:
                raise ValueError(f"not a magic-2 batch at position {pos}")
            if size > max_bytes:
                raise RecordTooLarge(
                    f"a batch of {size} bytes exceeds max.message.bytes={max_bytes}"
                )
            if pos + size > total or fields[6] < 0:
                raise ValueError(f"batch at position {pos} is cut short or malformed")
            scan.append((pos, fields))
            pos += size
        # a follower keeps the leader's timestamps (the leader applied LogAppendTime)
        log_append_time = now if config.log_append_time and assign_offsets else NO_TIMESTAMP
        new_header = _tuple_new
        header_type = rb.BatchHeader

        flush_needed = False
        with self._lock:
            if self._local.closed:  # closed (deleted, moved) while this append waited
                raise KafkaStorageError(f"log {self.name} is closed")
            hook = self.producer_state
            if hook is not None:
                # a leader's append is checked (sequences, epochs, duplicates); a follower
                # takes the leader's batches as they are, as Kafka's appendAsFollower does
                with_pid = [(p, _new_header(f)) for p, f in scan if f[_PRODUCER_ID] >= 0]
                answer = (
                    hook.before_append(self, with_pid, buf, assign_offsets, verification)
                    if with_pid
                    else None
                )
                if answer is not None:
                    return answer
            local = self._local
            next_offset = local.log_end_offset
            first_offset = next_offset if assign_offsets else scan[0][1][0]
            offset = next_offset
            max_timestamp = NO_TIMESTAMP
            offset_of_max = first_offset
            record_count = 0
            headers = []
            for pos, fields in scan:
                base = fields[0]
                delta = fields[6]
                if assign_offsets:
                    _pack_offset_and_epoch(buf, pos, offset, fields[1], leader_epoch)
                    base = offset
                    epoch = leader_epoch
                else:
                    if base < offset:
                        raise ValueError(
                            f"batch offset {base} is below the log end offset {next_offset} "
                            f"(or the previous batch)"
                        )
                    epoch = fields[2]
                if log_append_time != NO_TIMESTAMP:
                    header = rb.read_header(buf, pos)
                    rb.set_max_timestamp_and_type(buf, pos, header, log_append_time, True)
                    header = rb.read_header(buf, pos)
                else:
                    header = new_header(header_type, (base, fields[1], epoch, *fields[3:]))
                headers.append(header)
                max_ts = header.max_timestamp
                if max_ts > max_timestamp:
                    max_timestamp = max_ts
                    offset_of_max = base + delta
                record_count += header.record_count
                offset = base + delta + 1
            last_offset = offset - 1
            segment = local.segments.segments[-1]
            if segment.should_roll(total, max_timestamp, last_offset, now, config):
                segment = self._roll_locked(now, first_offset)
            local.append(
                segment, buf, last_offset, max_timestamp, offset_of_max, headers[0].last_offset
            )
            if assign_offsets:
                if leader_epoch > self._latest_epoch:
                    self.leader_epoch_cache.assign(leader_epoch, first_offset, flush=False)
                    self._latest_epoch = leader_epoch
            else:
                for header in headers:
                    if header.partition_leader_epoch > self._latest_epoch:
                        self.leader_epoch_cache.assign(
                            header.partition_leader_epoch, header.base_offset, flush=False
                        )
                        self._latest_epoch = header.partition_leader_epoch
            if self.high_watermark_follows_log_end:
                self._high_watermark = offset
            info = _tuple_new(
                AppendInfo,
                (
                    first_offset,
                    last_offset,
                    max_timestamp,
                    offset_of_max,
                    log_append_time,
                    self._log_start_offset,
                    record_count,
                    total,
                ),
            )
            if hook is not None:
                hook.after_append(self, info, [h for h in headers if h.has_producer_id])
            if offset - local.recovery_point >= config.flush_messages:
                flush_needed = True
        if flush_needed:
            self.flush()
        return info

    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Starts a new active segment at the log end offset (no-op if the active one is empty)."""
        with self._lock:
            return self._roll_locked(self.clock() if now_ms is None else now_ms, None)

    def _roll_locked(self, now_ms: int, expected_next_offset: int | None) -> LogSegment:
        local = self._local
        new_base = local.log_end_offset
        if expected_next_offset is not None:
            new_base = max(new_base, expected_next_offset)
        current = local.segments
        active = current.active
        if (
            active.size == 0
            and active.base_offset != new_base
            and len(current) == 1
            and new_base > self._log_start_offset
        ):
            # the only segment is empty and is replaced: nothing lies below the new one
            # (published before the new segment list)
            self._log_start_offset = new_base
        segment = local.roll(now_ms, expected_next_offset)
        if segment is not active and self.producer_state is not None:
            self.producer_state.rolled(self, segment.base_offset)
        return segment

    def _refresh_latest_epoch(self) -> None:
        latest = self.leader_epoch_cache.latest_epoch()
        self._latest_epoch = -1 if latest is None else latest

    # --- read (lock-free) -----------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> FetchRegion | None:
        """A file region of whole batches starting with the batch that contains ``offset``.

        At most ``max_bytes`` unless the first batch alone is bigger (then exactly that batch,
        with ``min_one_batch``; None without). No batch at or after ``max_offset`` (exclusive; the
        high watermark for consumers). None when there is nothing to read (``offset`` at the log
        end or at/above ``max_offset``). Raises OffsetOutOfRange below the log start offset or
        above the log end offset. Never takes the log's lock.
        """
        local = self._local
        log_start = self._log_start_offset
        log_end = local.log_end_offset
        if offset < log_start or offset > log_end:
            raise OffsetOutOfRange(offset, log_start, log_end)
        upper = log_end if max_offset is None else min(max_offset, log_end)
        if offset >= upper:
            return None
        snapshot = local.segments
        log_start = self._log_start_offset  # again: it moves before segments go away
        if offset < log_start:
            raise OffsetOutOfRange(offset, log_start, log_end)
        return LocalLog.read_from(
            snapshot, offset, max_bytes, upper=upper, min_one_batch=min_one_batch
        )

    def read_batches(self, offset: int, max_bytes: int = LONG_MAX) -> bytes:
        """Whole batches from the one holding ``offset`` to the log end (or ``max_bytes``),
        across segments, as bytes (tests and tools; the broker sends regions instead)."""
        parts: list[bytes] = []
        total = 0
        while offset < self.log_end_offset and total < max_bytes:
            region = self.read(offset, min(max_bytes - total, INT32_MAX), min_one_batch=not parts)
            if region is None:
                break
            data = region.read()
            parts.append(data)
            total += len(data)
            last = None
            for _, header in rb.iter_batches(data, verify_crc=False):
                last = header
            if last is None:
                break
            offset = last.next_offset
        return b"".join(parts)

    # --- offsets by timestamp (ListOffsets) -----------------------------------------------------

    def fetch_offset_by_timestamp(
        self, timestamp: int, *, max_offset: int | None = None
    ) -> OffsetAndTimestamp | None:
        """ListOffsets: ``-2`` earliest (log start offset), ``-4`` earliest local (the same here),
        ``-5`` latest tiered and ``-6`` earliest pending upload (None: no tiered storage),
        ``-1`` latest (log end offset, capped at ``max_offset``), ``-3`` the record with the
        largest timestamp, ``T >= 0`` the first record with timestamp >= T. None when no record
        qualifies (or the one found is at/after ``max_offset``, e.g. the high watermark)."""
        epochs = self.leader_epoch_cache
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = self._log_start_offset
            return OffsetAndTimestamp(start, NO_TIMESTAMP, _epoch_or_unknown(epochs, start))
        if timestamp == LATEST_TIMESTAMP:
            end = self.log_end_offset
            if max_offset is not None:
                end = min(end, max_offset)
            latest = epochs.latest_epoch()
            return OffsetAndTimestamp(end, NO_TIMESTAMP, -1 if latest is None else latest)
        if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
            return None  # no tiered storage: nothing tiered, nothing waiting for upload
        upper = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        snapshot = self._local.segments
        log_start = self._log_start_offset
        if timestamp == MAX_TIMESTAMP:
            best_segment = None
            best = NO_TIMESTAMP
            for segment in snapshot:
                ts = segment.max_timestamp_so_far.timestamp
                if ts > best:
                    best, best_segment = ts, segment
            if best_segment is None:
                return None
            shallow = best_segment.max_timestamp_so_far.offset
            info = best_segment.translate_offset(shallow)
            if info is None:
                return None
            data = best_segment.log.pread(info.size, info.position)
            for record_offset, record_ts in stored_records.offsets_and_timestamps(data):
                if record_ts == best and record_offset >= log_start:
                    if record_offset >= upper:
                        return None
                    return OffsetAndTimestamp(
                        record_offset, record_ts, _epoch_or_unknown(epochs, record_offset)
                    )
            return None
        if timestamp < 0:
            raise ValueError(f"unknown ListOffsets timestamp {timestamp}")
        for segment in snapshot:
            if segment.max_timestamp_so_far.timestamp < timestamp:
                continue
            found = self._search_segment_for_timestamp(segment, timestamp, log_start)
            if found is not None:
                if found.offset >= upper:
                    return None
                return OffsetAndTimestamp(
                    found.offset, found.timestamp, _epoch_or_unknown(epochs, found.offset)
                )
        return None

    @staticmethod
    def _search_segment_for_timestamp(
        segment: LogSegment, timestamp: int, starting_offset: int
    ) -> OffsetAndTimestamp | None:
        info: BatchInfo | None = segment.find_batch_by_timestamp(timestamp, starting_offset)
        while info is not None:
            data = segment.log.pread(info.size, info.position)
            for record_offset, record_ts in stored_records.offsets_and_timestamps(data):
                if record_ts >= timestamp and record_offset >= starting_offset:
                    return OffsetAndTimestamp(record_offset, record_ts)
            # the batch's max timestamp came from records below the starting offset
            nxt = None
            for candidate in segment.log.batches_from(info.position + info.size):
                if (
                    candidate.max_timestamp >= timestamp
                    and candidate.last_offset >= starting_offset
                ):
                    nxt = candidate
                    break
            info = nxt
        return None

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), or (-1, -1)."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # --- high watermark, log start, truncation --------------------------------------------------

    def assign_epoch_start_offset(self, leader_epoch: int) -> None:
        """A leader at ``leader_epoch`` begins it at the log end (Kafka's
        ``maybeAssignEpochStartOffset``), before it appends anything, so that a follower asking
        OffsetForLeaderEpoch for the previous epoch learns where that epoch ended. Written at
        once (no batch carries this epoch yet, so recovery could not rebuild it)."""
        with self._lock:
            if leader_epoch > self._latest_epoch:
                self.leader_epoch_cache.assign(leader_epoch, self._local.log_end_offset)
                self._latest_epoch = leader_epoch

    def epoch_start_offset(self, leader_epoch: int) -> int | None:
        """Where ``leader_epoch`` begins in this log (None if it does not appear)."""
        for entry in self.leader_epoch_cache.entries:
            if entry.epoch == leader_epoch:
                return entry.start_offset
        return None

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """A follower follows its leader's log start offset (moved by retention or
        DeleteRecords), never past its own high watermark. Returns whether it moved."""
        with self._lock:
            offset = min(offset, self._high_watermark)
            if offset <= self._log_start_offset:
                return False
            self._log_start_offset = offset
            self.leader_epoch_cache.truncate_from_start(offset)
            self._refresh_latest_epoch()
        self._delete_log_start_offset_breached()
        return True

    def follow_log_end(self) -> int:
        """From now on appends move the high watermark to the log end (a single replica is its
        whole ISR), and it moves there now; returns it. Both under the log's lock: an append
        between setting the flag and reading the log end would otherwise be passed over (the
        flag still unset) or undone (a log end read before the append, written after it), and
        its acknowledged records stay invisible to consumers until the next append."""
        with self._lock:
            self.high_watermark_follows_log_end = True
            hw = self._high_watermark = self._local.log_end_offset
            return hw

    def update_high_watermark(self, offset: int) -> int:
        """Sets the high watermark, clamped to [log start offset, log end offset]."""
        with self._lock:
            hw = min(max(offset, self._log_start_offset), self._local.log_end_offset)
            self._high_watermark = hw
            return hw

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: moves the log start offset up to ``offset`` and deletes the segments
        wholly below it. Raises OffsetOutOfRange above the high watermark. Returns the new log
        start offset (the partition's low watermark)."""
        with self._lock:
            if offset > self._high_watermark:
                raise OffsetOutOfRange(offset, self._log_start_offset, self._high_watermark)
            if offset > self._log_start_offset:
                self._log_start_offset = offset
                self.leader_epoch_cache.truncate_from_start(offset)
                log.info("%s: log start offset moved to %d", self.name, offset)
        self._delete_log_start_offset_breached()
        return self._log_start_offset

    def truncate_to(self, target_offset: int) -> bool:
        """Removes everything at and after ``target_offset`` (replication). A batch holding
        ``target_offset`` goes whole, and the log end offset becomes its base offset (the log
        never claims offsets it does not hold; follower truncation points are batch boundaries
        anyway); leader-epoch entries starting at or after the new end go, even when no batch
        does. Returns whether anything was removed."""
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset ({target_offset})")
        with self._lock:
            local = self._local
            if target_offset >= local.log_end_offset:
                # nothing to remove, but the epoch cache may end with an entry at the log end:
                # this broker led an epoch and appended nothing before another was elected. A
                # follower keeping it sends that epoch as its last fetched one, and the leader,
                # which never had it, answers a diverging epoch on every fetch (Kafka's
                # UnifiedLog.truncateTo truncates the cache here too)
                self.leader_epoch_cache.truncate_from_end(local.log_end_offset)
                self._refresh_latest_epoch()
                return False
            now = self.clock()
            if local.segments.first.base_offset > target_offset:
                self._truncate_fully_locked(target_offset, now)
                return True
            # the visible bounds shrink before the segments: lock-free readers never look past
            new_end = target_offset
            self._high_watermark = min(self._high_watermark, new_end)
            new_end = local.truncate_to(target_offset, now)
            self._high_watermark = min(self._high_watermark, new_end)
            if self._log_start_offset > new_end:
                self._log_start_offset = new_end
            self.leader_epoch_cache.truncate_from_end(new_end)
            self._refresh_latest_epoch()
            if self.producer_state is not None:
                self.producer_state.truncated(self)
            log.info("%s: truncated to offset %d", self.name, new_end)
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Deletes every segment and starts an empty log at ``new_offset``."""
        with self._lock:
            self._truncate_fully_locked(new_offset, self.clock())

    def _truncate_fully_locked(self, new_offset: int, now_ms: int) -> None:
        self._local.truncate_fully_and_start_at(new_offset, now_ms)
        self._log_start_offset = new_offset
        self._high_watermark = new_offset
        self.leader_epoch_cache.clear()
        self._refresh_latest_epoch()
        if self.producer_state is not None:
            self.producer_state.truncated(self)
        log.info("%s: truncated fully, starting at offset %d", self.name, new_offset)

    def append_as_follower(
        self, records: bytearray | memoryview | bytes, *, now_ms: int | None = None
    ) -> AppendInfo:
        """Appends a leader's batches as they are (Kafka's ``appendAsFollower``): offsets,
        partition leader epochs, producer ids and sequences kept, no recompression; the
        leader-epoch cache learns each new epoch from the batches. Raises ValueError when the
        batches do not start at or after the log end, or go backwards."""
        return self.append(records, now_ms=now_ms, assign_offsets=False)

    # --- flush ----------------------------------------------------------------------------------

    def flush(self, up_to_offset: int | None = None, *, now_ms: int | None = None) -> None:
        """fsyncs the segments holding offsets in [recovery point, ``up_to_offset``) (default: the
        log end) and advances the recovery point. The log's lock is not held during fsync."""
        local = self._local
        target = self.log_end_offset if up_to_offset is None else up_to_offset
        target = min(target, self.log_end_offset)
        if target <= local.recovery_point:
            return
        with self._lock:
            segments = local.segments_to_flush(target)
        # epochs assigned by appends are written here, before the recovery point passes them
        # (recovery rebuilds epochs only after it): Kafka's leader-epoch checkpoint is also
        # flushed off the append path (KAFKA-15046)
        self.leader_epoch_cache.flush()
        LocalLog.fsync(segments)
        with self._lock:
            local.mark_flushed(target, self.clock() if now_ms is None else now_ms)

    def maintenance_due(self, now_ms: int) -> bool:
        """Whether the log manager's periodic pass has work here: a segment rolled since the
        last flush, ``.deleted`` files waiting, or ``flush.ms`` elapsed. Read without the lock
        (the pass runs every second over every log, and most have nothing to do: what changes
        meanwhile is seen on the next pass)."""
        local = self._local
        return not local.closed and (
            local.rolled_up_to > local.recovery_point
            or bool(local.pending_deletes)
            or now_ms - local.last_flush_ms >= self.config.flush_ms
        )

    def flush_rolled_segments(self) -> None:
        """Flushes the segments that rolled since the last flush (Kafka flushes them
        asynchronously after a roll; the log manager calls this from its periodic work)."""
        local = self._local
        if local.rolled_up_to > local.recovery_point:
            self.flush(local.rolled_up_to)

    # --- retention ------------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Retention: deletes whole segments past ``retention.ms`` (by their largest timestamp),
        beyond ``retention.bytes``, or below the log start offset. With ``cleanup.policy``
        without ``delete`` only the last rule applies. Returns the number of segments deleted."""
        now = self.clock() if now_ms is None else now_ms
        deleted = self._delete_log_start_offset_breached()
        config = self.config
        if config.delete:
            deleted += self._delete_retention_ms_breached(now)
            deleted += self._delete_retention_size_breached(now)
        return deleted

    def _delete_retention_ms_breached(self, now_ms: int) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0

        def predicate(segment: LogSegment, _next: LogSegment | None) -> bool:
            return now_ms - segment.largest_timestamp() > retention_ms

        return self._delete_segments_matching(predicate, "retention.ms", now_ms)

    def _delete_retention_size_breached(self, now_ms: int) -> int:
        retention_bytes = self.config.retention_bytes
        if retention_bytes < 0:
            return 0
        excess = self._local.segments.size_in_bytes() - retention_bytes
        if excess <= 0:
            return 0

        def predicate(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return self._delete_segments_matching(predicate, "retention.bytes", now_ms)

    def _delete_log_start_offset_breached(self) -> int:
        log_start = self._log_start_offset

        def predicate(_segment: LogSegment, nxt: LogSegment | None) -> bool:
            return nxt is not None and nxt.base_offset <= log_start

        return self._delete_segments_matching(predicate, "log start offset", self.clock())

    def _delete_segments_matching(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool],
        reason: str,
        now_ms: int,
    ) -> int:
        # choose on a snapshot, without the lock (largest_timestamp may read a time index)
        local = self._local
        snapshot = local.segments
        high_watermark = self._high_watermark
        chosen: list[LogSegment] = []
        for i, segment in enumerate(snapshot):
            nxt = snapshot[i + 1] if i + 1 < len(snapshot) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and segment.size == 0:
                break
            if upper > high_watermark or not predicate(segment, nxt):
                break
            chosen.append(segment)
        if not chosen:
            return 0
        with self._lock:
            current = local.segments
            if current.segments[: len(chosen)] != tuple(chosen):
                return 0  # the log changed meanwhile; the next pass decides again
            if len(chosen) == len(current):
                # never delete the active segment: roll first (Kafka does the same)
                self._roll_locked(now_ms, None)
                current = local.segments
            first_base = current.without(chosen).first.base_offset
            # publish the new log start before the shorter segment list: a lock-free reader
            # then sees the old list or OffsetOutOfRange, never a hole
            if first_base > self._log_start_offset:
                self._log_start_offset = first_base
                self.leader_epoch_cache.truncate_from_start(first_base)
            local.remove_segments(chosen, now_ms)
            if self.producer_state is not None:
                self.producer_state.segments_deleted(self, [s.base_offset for s in chosen])
        log.info(
            "%s: deleted %d segment(s) by %s: base offsets %s",
            self.name,
            len(chosen),
            reason,
            [s.base_offset for s in chosen],
        )
        return len(chosen)

    def delete_pending_files(self, now_ms: int | None = None, *, force: bool = False) -> int:
        """Removes the ``.deleted`` files whose delay has passed (all of them with ``force``).
        The descriptors close once no region uses them."""
        if not self._local.pending_deletes:
            # the common case, checked without the lock (the maintenance thread asks every log
            # each second): a deletion scheduled meanwhile is seen on the next pass
            return 0
        now = self.clock() if now_ms is None else now_ms
        with self._lock:
            due = self._local.take_due_deletes(now, force=force)
        for segment in due:
            segment.delete_files()
        return len(due)

    @property
    def pending_deletes(self) -> int:
        return len(self._local.pending_deletes)

    # --- compaction support ---------------------------------------------------------------------

    def replace_segments(
        self, old: Sequence[LogSegment], new: Sequence[LogSegment], *, now_ms: int | None = None
    ) -> bool:
        """Swaps cleaned segments in for ``old`` (compaction). ``new`` segments carry the
        ``.cleaned`` suffix; they are renamed ``.swap`` (the commit point a crash recovers from),
        the old ones go to ``.deleted``, then the swap files lose their suffix. Returns False (and
        changes nothing) if ``old`` is no longer part of the log."""
        now = self.clock() if now_ms is None else now_ms
        with self._lock:
            return self._local.replace_segments(old, new, now)

    # --- lifecycle ------------------------------------------------------------------------------

    def write_partition_metadata(self, topic_id: uuid.UUID, *, fsync: bool = True) -> None:
        """Writes ``partition.metadata``; raises InconsistentTopicId if it names another id.
        Without ``fsync`` (a new log: Kafka flushes it later, asynchronously) a crash may lose
        it; the broker writes it again when it hosts the partition."""
        path = self.directory / files.PARTITION_METADATA_FILE
        existing = read_partition_metadata(path)
        if existing is not None and existing != topic_id:
            raise InconsistentTopicId(
                f"{self.name}: partition.metadata has topic id {existing}, not {topic_id}"
            )
        if existing is None:
            write_partition_metadata(path, topic_id, fsync=fsync)
        self.topic_id = topic_id

    def close(self) -> None:
        """Flushes and closes every segment (shutdown). Pending ``.deleted`` files stay for the
        next start to remove."""
        local = self._local
        with self._lock:
            if local.closed:
                return
            local.closed = True
            segments = list(local.segments)
        self.leader_epoch_cache.flush()
        for segment in segments:
            segment.write_indexes()
        LocalLog.fsync(segments)
        with self._lock:
            local.recovery_point = local.log_end_offset
            for segment in segments:
                segment.close()

    def mark_deleted(self) -> None:
        """The log is being deleted: no more appends. Descriptors are not closed here, so
        regions already handed out stay readable; they close when the last one is dropped."""
        with self._lock:
            self._local.closed = True

    @contextmanager
    def appends_paused(self) -> Iterator[None]:
        """Holds the log's lock: no append, roll, retention or truncation runs meanwhile (the
        last copy and the swap of a log directory move)."""
        with self._lock:
            yield

    def retire_paused(self, new_directory: Path) -> None:
        """With :meth:`appends_paused` held: the log moved to another directory; this copy's
        directory is renamed (``...-delete``) and it refuses appends (KafkaStorageError), while
        regions already handed out stay readable."""
        self._local.rename_directory(new_directory)
        if self.leader_epoch_cache.path is not None:
            self.leader_epoch_cache.path = new_directory / files.LEADER_EPOCH_CHECKPOINT
        self._local.closed = True

    def rename_directory(self, new_directory: Path) -> None:
        with self._lock:
            self._local.rename_directory(new_directory)
            if self.leader_epoch_cache.path is not None:
                self.leader_epoch_cache.path = new_directory / files.LEADER_EPOCH_CHECKPOINT


def _epoch_or_unknown(cache: LeaderEpochFileCache, offset: int) -> int:
    epoch = cache.epoch_for_offset(offset)
    return -1 if epoch is None else epoch
