"""LogCleaner: compaction of ``cleanup.policy=compact`` logs (Kafka's LogCleaner/Cleaner)."""

from __future__ import annotations

import heapq
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import NamedTuple, Protocol

from protocol.errors import ProtocolError
from protocol.records import batch as rb
from protocol.records.control import ControlRecordType, parse_control_key
from storage import files
from storage import records as stored_records
from storage.checkpoint import CorruptCheckpoint, read_offsets_checkpoint, write_offsets_checkpoint
from storage.log import PartitionLog
from storage.producer_state import ProducerStateManager
from storage.segment import LogSegment
from storage.txn_index import AbortedTxn, TransactionIndex
from storage.util import INT32_MAX, LONG_MAX

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class CleanableLogs(Protocol):
    """What the cleaner needs from whoever owns the logs (the LogManager satisfies it)."""

    @property
    def log_dirs(self) -> Sequence[Path]: ...

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        """The log dir holding a partition's log (for its cleaner checkpoint)."""
        ...

    def all_logs(self) -> list[PartitionLog]: ...


#: What one key-map entry is counted as against ``log.cleaner.dedupe.buffer.size``: a Python
#: dict slot plus a bytes object's header (the key's own length is added).
MAP_ENTRY_OVERHEAD = 96


@dataclass
class CleanerStats:
    """What one cleaning pass did (a plain value; nothing on disk)."""

    topic_partition: TopicPartition
    first_dirty_offset: int = 0
    end_offset: int = 0
    segments_cleaned: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    empty_batches_kept: int = 0
    groups_swapped: int = 0
    groups_aborted: int = 0
    keys: int = 0
    #: the latest delete horizon of the tombstones left behind (None if none)
    latest_delete_horizon: int | None = None


@dataclass
class _Candidate:
    log: PartitionLog
    tp: TopicPartition
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    forced: bool

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


class LogCleaner:
    """Keeps the latest record of every key in compacted logs.

    One pass (:meth:`clean_one`, called by the broker's background thread through
    :meth:`storage.manager.LogManager.clean_logs`) picks the compacted log with the highest
    dirty ratio (dirty bytes / all cleanable bytes, at least ``min.cleanable.dirty.ratio``, or
    any dirty bytes once ``max.compaction.lag.ms`` passed), builds a key -> latest offset map
    over its dirty section (segments after the last cleaned offset, before the active segment
    and before ``min.compaction.lag.ms``), then rewrites every segment before the map's end:

    - a record is kept if it is the latest for its key, or after the map's end;
    - a tombstone (null value) is kept while its batch has no delete horizon or the horizon is
      in the future; the first pass that sees it stamps the batch's delete horizon (KIP-534:
      ``now + delete.retention.ms``), a later pass after the horizon removes it;
    - records without a key are removed (Kafka rejects them on compacted topics);
    - rewritten batches keep their base offset, last offset delta, producer id/epoch, base
      sequence, leader epoch, codec and flags (as Kafka's cleaner does); a batch left empty is kept,
      as a header without records, when it holds its producer's last data offset (or is the
      marker carrying the epoch of a producer without data left) or ends the cleaning round, so
      the producer's last sequence and epoch and the round's last offset survive; batches
      untouched are copied byte for byte;
    - transactions (Kafka's "transaction metadata" handling, :class:`CleanedTransactionMetadata`):
      the batches of aborted transactions (found through the segments' ``.txnindex`` entries)
      are removed, and left out of the key map so they never hide an older committed value; a
      commit or abort marker is removed once no batch of its transaction is left below it and
      its delete horizon (stamped on the first pass that finds it so, ``delete.retention.ms``
      later) has passed; the abort markers kept keep their entries in the cleaned segment's
      ``.txnindex`` (rebuilt), so read_committed consumers still drop what remains of them.
      Nothing at or after the last stable offset's segment is cleaned.

    Consecutive segments are merged while they fit ``segment.bytes`` and 32-bit relative offsets.

    On-disk format: per log dir ``cleaner-offset-checkpoint`` (``topic partition offset``: the
    first dirty offset). A pass writes each group to ``<base>.log.cleaned`` (and its indexes),
    renames them ``.swap`` (the commit point), renames the replaced segments ``.deleted`` and
    then drops the ``.swap`` suffix.

    Crash: ``.cleaned`` files are deleted on load (the pass never happened); ``.swap`` files
    complete the swap (they replace the segments their offsets cover); the checkpoint may lag,
    which only means some work is redone.

    Thread-safety: one pass at a time (a cleaner lock). A pass reads inactive segments without
    the log's lock while appends and reads go on; it takes the log's lock only to swap segments,
    and gives up a group if retention or truncation removed one of its segments meanwhile.
    """

    def __init__(self, logs: CleanableLogs, *, dedupe_buffer_size: int) -> None:
        self.logs = logs
        self.dedupe_buffer_size = dedupe_buffer_size
        self._lock = threading.Lock()
        self._checkpoints: dict[TopicPartition, int] = {}
        #: the latest delete horizon left in each log's cleaned batches (Kafka's
        #: latestDeleteHorizon): once passed, the log is cleaned again even if nothing is dirty
        self._delete_horizons: dict[TopicPartition, int] = {}
        self.last_stats: CleanerStats | None = None

    # --- checkpoints ----------------------------------------------------------------------------

    def load_checkpoint(self, log_dir: Path) -> None:
        path = log_dir / files.CLEANER_OFFSET_CHECKPOINT
        try:
            self._checkpoints.update(read_offsets_checkpoint(path))
        except CorruptCheckpoint as e:
            log.warning("ignoring %s: %s", path, e)

    def write_checkpoints(self) -> None:
        by_dir: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.logs.log_dirs}
        for tp, offset in self._checkpoints.items():
            log_dir = self.logs.log_dir_of(*tp)
            if log_dir is not None:
                by_dir.setdefault(log_dir, {})[tp] = offset
        for log_dir, offsets in by_dir.items():
            write_offsets_checkpoint(log_dir / files.CLEANER_OFFSET_CHECKPOINT, offsets)

    def forget(self, tp: TopicPartition) -> None:
        self._checkpoints.pop(tp, None)
        self._delete_horizons.pop(tp, None)

    def first_dirty_offset(self, tp: TopicPartition) -> int | None:
        return self._checkpoints.get(tp)

    # --- choosing ---------------------------------------------------------------------------------

    def _candidate(
        self, partition_log: PartitionLog, now_ms: int, *, ignore_ratio: bool = False
    ) -> _Candidate | None:
        config = partition_log.config
        if not config.compact or partition_log.closed:
            return None
        tp = (partition_log.topic, partition_log.partition)
        snapshot = partition_log.segments
        log_start = partition_log.log_start_offset
        log_end = partition_log.log_end_offset
        first_dirty = self._checkpoints.get(tp, log_start)
        if first_dirty < log_start or first_dirty > log_end:
            first_dirty = log_start
        # never the active segment, nor the segment holding the last stable offset (which is
        # at or below the high watermark: no undecided transaction is cleaned)
        uncleanable = snapshot.active.base_offset
        lso_segment = snapshot.floor(partition_log.last_stable_offset)
        if lso_segment is not None:
            uncleanable = min(uncleanable, lso_segment.base_offset)
        forced = False
        clean_bytes = 0
        dirty_bytes = 0
        lag = config.min_compaction_lag_ms
        max_lag = config.max_compaction_lag_ms
        for i, segment in enumerate(snapshot):
            if segment.base_offset >= uncleanable:
                break
            end = snapshot[i + 1].base_offset if i + 1 < len(snapshot) else log_end
            if end <= first_dirty:
                clean_bytes += segment.size
                continue
            if lag > 0 and segment.largest_timestamp() > now_ms - lag:
                uncleanable = segment.base_offset
                break
            first_ts = segment.first_batch_timestamp()
            if max_lag < LONG_MAX and first_ts is not None and 0 <= first_ts < now_ms - max_lag:
                forced = True
            dirty_bytes += segment.size
        if dirty_bytes == 0 or first_dirty >= uncleanable:
            # nothing new, but tombstones may have passed their delete horizon
            horizon = self._delete_horizons.get(tp)
            if horizon is None or horizon > now_ms or clean_bytes == 0:
                return None
            first_dirty = min(first_dirty, uncleanable)
            return _Candidate(
                partition_log, tp, first_dirty, first_dirty, clean_bytes, 0, forced=True
            )
        candidate = _Candidate(
            partition_log, tp, first_dirty, uncleanable, clean_bytes, dirty_bytes, forced
        )
        if not (forced or ignore_ratio) and candidate.ratio < config.min_cleanable_dirty_ratio:
            return None
        return candidate

    def clean_one(self, now_ms: int) -> int:
        """Cleans the dirtiest cleanable log; returns 1 if one was cleaned, else 0."""
        if not self._lock.acquire(blocking=False):
            return 0
        try:
            candidates = [
                c for pl in self.logs.all_logs() if (c := self._candidate(pl, now_ms)) is not None
            ]
            if not candidates:
                return 0
            best = max(candidates, key=lambda c: (c.forced, c.ratio))
            self.last_stats = self._clean(best, now_ms)
            self.write_checkpoints()
            return 1
        finally:
            self._lock.release()

    def clean(
        self, partition_log: PartitionLog, now_ms: int, *, ignore_ratio: bool = True
    ) -> CleanerStats | None:
        """Cleans one log now (tests, admin tools), by default whatever its dirty ratio."""
        with self._lock:
            candidate = self._candidate(partition_log, now_ms, ignore_ratio=ignore_ratio)
            if candidate is None:
                return None
            stats = self._clean(candidate, now_ms)
            self.last_stats = stats
            self.write_checkpoints()
            return stats

    # --- cleaning -------------------------------------------------------------------------------

    def _build_offset_map(
        self, candidate: _Candidate, stats: CleanerStats
    ) -> tuple[dict[bytes, int], int]:
        """key -> latest offset over whole dirty segments; returns the map and its end offset
        (the offset after the last segment it covers). Records of aborted transactions are left
        out (Kafka's ``buildOffsetMap``: they must not hide an older committed value of their
        key), and so are control records."""
        partition_log = candidate.log
        budget = self.dedupe_buffer_size
        used = 0
        offsets: dict[bytes, int] = {}
        end_offset = candidate.first_dirty
        snapshot = partition_log.segments
        txns = CleanedTransactionMetadata()
        txns.add_aborted(
            partition_log.collect_aborted_transactions(
                candidate.first_dirty, candidate.first_uncleanable
            )
        )
        # between() stops below first_uncleanable
        for segment in snapshot.between(candidate.first_dirty, candidate.first_uncleanable):
            segment_map: dict[bytes, int] = {}
            segment_used = 0
            for info in segment.log.batches_from(0):
                if info.last_offset < candidate.first_dirty:
                    continue
                data = segment.log.pread(info.size, info.position)
                header = rb.read_header(data)
                if header.is_control:
                    txns.on_control_batch(header, data)
                    continue
                if txns.on_batch(header):
                    continue  # aborted
                decoded = stored_records.decode(data)
                for record in decoded.records:
                    if record.key is None or record.offset < candidate.first_dirty:
                        continue
                    if record.key not in offsets and record.key not in segment_map:
                        segment_used += len(record.key) + MAP_ENTRY_OVERHEAD
                    segment_map[record.key] = record.offset
            if used + segment_used > budget and end_offset > candidate.first_dirty:
                break  # the map is full: clean up to here, the rest next time
            offsets.update(segment_map)
            used += segment_used
            nxt = snapshot.next_after(segment)
            end_offset = nxt.base_offset if nxt is not None else partition_log.log_end_offset
        stats.keys = len(offsets)
        return offsets, min(end_offset, candidate.first_uncleanable)

    @staticmethod
    def _last_records_of_active_producers(partition_log: PartitionLog) -> dict[int, LastRecord]:
        """Kafka's ``lastRecordsOfActiveProducers``: for each producer the producer state knows,
        the last offset of its last data batch (None once a marker with a newer epoch followed)
        and its epoch. A log without a producer state (tools, tests) gets the same from a scan
        of its batch headers."""
        state = partition_log.producer_state
        if isinstance(state, ProducerStateManager):
            return {
                e.producer_id: LastRecord(
                    e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch
                )
                for e in state.active_producers()
            }
        last: dict[int, LastRecord] = {}
        for segment in partition_log.segments:
            for info in segment.log.batches_from(0):
                if info.magic != rb.MAGIC_V2 or info.producer_id < 0:
                    continue
                epoch = rb.read_header(segment.log.pread(rb.HEADER_SIZE, info.position))
                previous = last.get(info.producer_id)
                if not info.is_control:
                    last[info.producer_id] = LastRecord(info.last_offset, epoch.producer_epoch)
                elif previous is None or previous.producer_epoch != epoch.producer_epoch:
                    last[info.producer_id] = LastRecord(None, epoch.producer_epoch)
        return last

    def _groups(self, segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
        groups: list[list[LogSegment]] = []
        for segment in segments:
            if groups:
                group = groups[-1]
                size = sum(s.size for s in group) + segment.size
                last = segment.read_next_offset() - 1
                if size <= max_bytes and last - group[0].base_offset <= INT32_MAX:
                    group.append(segment)
                    continue
            groups.append([segment])
        return groups

    def _clean(self, candidate: _Candidate, now_ms: int) -> CleanerStats:
        partition_log = candidate.log
        stats = CleanerStats(candidate.tp, first_dirty_offset=candidate.first_dirty)
        offsets, end_offset = self._build_offset_map(candidate, stats)
        stats.end_offset = end_offset
        producers_last = self._last_records_of_active_producers(partition_log)
        snapshot = partition_log.segments
        to_clean = [s for s in snapshot if s.base_offset < end_offset and s is not snapshot.active]
        stats.latest_delete_horizon = None
        # the transactions' state carries over from group to group, as in Kafka's doClean
        txns = CleanedTransactionMetadata()
        round_ = _Round(
            offsets=offsets,
            map_end=end_offset,
            upper_bound=candidate.first_uncleanable,
            now_ms=now_ms,
            delete_retention_ms=partition_log.config.delete_retention_ms,
            producers_last=producers_last,
        )
        for group in self._groups(to_clean, partition_log.config.segment_bytes):
            cleaned = self._clean_group(partition_log, group, round_, txns, stats)
            if cleaned is None:
                stats.groups_aborted += 1
                break  # the transactions' state no longer follows the log: start over
            if partition_log.replace_segments(group, [cleaned], now_ms=now_ms):
                stats.groups_swapped += 1
                stats.segments_cleaned += len(group)
            else:
                stats.groups_aborted += 1
                cleaned.log.close()
                cleaned.delete_files()
                break
        if stats.groups_aborted == 0:
            self._checkpoints[candidate.tp] = end_offset
        # else: retention or a truncation removed segments meanwhile; the next pass starts over
        if stats.latest_delete_horizon is None:
            self._delete_horizons.pop(candidate.tp, None)
        else:
            self._delete_horizons[candidate.tp] = stats.latest_delete_horizon
        log.info(
            "cleaned %s-%d up to offset %d: %d segment(s), %d -> %d bytes, %d of %d records "
            "removed",
            *candidate.tp,
            end_offset,
            stats.segments_cleaned,
            stats.bytes_read,
            stats.bytes_written,
            stats.records_removed,
            stats.records_read,
        )
        return stats

    def _clean_group(
        self,
        partition_log: PartitionLog,
        group: list[LogSegment],
        round_: _Round,
        txns: CleanedTransactionMetadata,
        stats: CleanerStats,
    ) -> LogSegment | None:
        base = group[0].base_offset
        cleaned = LogSegment.create(
            partition_log.directory,
            base,
            partition_log.config,
            created_ms=round_.now_ms,
            suffix=files.CLEANED_FILE_SUFFIX,
            active=False,
        )
        # the retained abort markers' entries go to the cleaned segment's index
        txns.cleaned_index = cleaned.txn_index
        try:
            for i, segment in enumerate(group):
                if segment.deleted:
                    raise _Aborted
                # the aborted transactions of the whole segment's range (Kafka collects them
                # per segment: the cleaned index is rebuilt from them)
                upper = (
                    group[i + 1].base_offset if i + 1 < len(group) else segment.read_next_offset()
                )
                txns.add_aborted(
                    partition_log.collect_aborted_transactions(segment.base_offset, upper)
                )
                for info in segment.log.batches_from(0):
                    data = segment.log.pread(info.size, info.position)
                    if len(data) != info.size:
                        raise _Aborted
                    stats.bytes_read += info.size
                    out = self._clean_batch(data, round_, txns, stats)
                    if out is None:
                        continue
                    header = rb.read_header(out)
                    cleaned.append(
                        out,
                        largest_offset=header.last_offset,
                        largest_timestamp=header.max_timestamp,
                        offset_of_max_timestamp=header.last_offset,
                    )
                    stats.bytes_written += len(out)
            cleaned.on_become_inactive()
            cleaned.fsync()
            mtime = group[-1].last_modified_ms()
            os.utime(cleaned.log.path, ns=(mtime * 1_000_000, mtime * 1_000_000))
            return cleaned
        except _Aborted:
            cleaned.log.close()
            cleaned.delete_files()
            return None
        finally:
            txns.cleaned_index = None

    def _clean_batch(
        self,
        data: bytes,
        round_: _Round,
        txns: CleanedTransactionMetadata,
        stats: CleanerStats,
    ) -> bytes | None:
        """The batch to write for ``data`` (itself, rebuilt, empty) or None to drop it: Kafka's
        ``cleanInto`` filter (``checkBatchRetention``, ``shouldRetainRecord``) and
        ``MemoryRecords.filterTo``.

        - A data batch of an aborted transaction loses its records; a commit or abort marker
          whose transaction has no data left below it (seen by this pass) can go, but only
          once its delete horizon passed: the first pass that finds it so stamps the horizon
          (``now + delete.retention.ms``), a later one removes it.
        - A batch stays, emptied if need be, when it holds its producer's last data offset (or
          is the marker of a producer with no data left that carries its epoch), so the
          producer's sequence and epoch survive; and when it ends the cleaning round, so the
          round's last offset survives.
        """
        header = rb.read_header(data)
        existing_horizon = stored_records.delete_horizon_ms(header)
        if header.is_control:
            can_discard = txns.on_control_batch(header, data)
            discard_records = (
                can_discard and existing_horizon is not None and existing_horizon <= round_.now_ms
            )
        else:
            can_discard = txns.on_batch(header)
            discard_records = can_discard
        if (
            header.has_producer_id and round_.is_last_record_of_producer(header)
        ) or header.next_offset == round_.upper_bound:
            # the producer's last sequence or epoch, or the round's last offset, stays
            retention = _Retention.RETAIN_EMPTY
        elif discard_records:
            retention = _Retention.DELETE
        else:
            retention = _Retention.DELETE_EMPTY
        marker_for_empty_txn = can_discard and header.is_control
        if retention is _Retention.DELETE:
            stats.records_removed += header.record_count
            stats.records_read += header.record_count
            return None
        decoded = stored_records.decode(data)
        keep_tombstones = existing_horizon is None or round_.now_ms < existing_horizon
        kept = []
        has_tombstone = False
        for record in decoded.records:
            stats.records_read += 1
            if discard_records:
                keep = False
            elif header.is_control or record.offset >= round_.map_end:
                keep = True
            elif record.key is None:
                keep = False
            else:
                latest = round_.offsets.get(record.key, -1)
                keep = record.offset >= latest and (record.value is not None or keep_tombstones)
            if keep:
                kept.append(record)
                if record.value is None:
                    has_tombstone = True
            else:
                stats.records_removed += 1
        if not kept:
            if retention is _Retention.RETAIN_EMPTY:
                stats.empty_batches_kept += 1
                return stored_records.empty(header)
            return None
        set_horizon = (has_tombstone or marker_for_empty_txn) and existing_horizon is None
        kept_horizon = (
            round_.now_ms + round_.delete_retention_ms if set_horizon else existing_horizon
        )
        if (has_tombstone or marker_for_empty_txn) and kept_horizon is not None:
            previous = stats.latest_delete_horizon
            stats.latest_delete_horizon = (
                kept_horizon if previous is None else max(previous, kept_horizon)
            )
        if len(kept) == len(decoded.records) and not set_horizon:
            return data
        return stored_records.rebuild(header, kept, delete_horizon_ms=kept_horizon)


class _Retention(Enum):
    """Kafka's ``RecordFilter.BatchRetention``."""

    #: the batch goes, records and all
    DELETE = 1
    #: the batch goes if none of its records is kept
    DELETE_EMPTY = 2
    #: the batch stays, as an empty header if none of its records is kept
    RETAIN_EMPTY = 3


class LastRecord(NamedTuple):
    """What the cleaner keeps of an active producer (Kafka's ``LastRecord``): the last offset of
    its last data batch (None: none since its epoch last changed) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(frozen=True)
class _Round:
    """What one cleaning round decides with."""

    offsets: dict[bytes, int]
    #: the offset map's end: records at or after it are kept
    map_end: int
    #: the round's first uncleanable offset (its last batch before it stays)
    upper_bound: int
    now_ms: int
    delete_retention_ms: int
    producers_last: dict[int, LastRecord]

    def is_last_record_of_producer(self, header: rb.BatchHeader) -> bool:
        last = self.producers_last.get(header.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return header.last_offset == last.last_data_offset
        return header.is_control and header.producer_epoch == last.producer_epoch


class _AbortedTxnState:
    __slots__ = ("aborted", "last_observed_offset")

    def __init__(self, aborted: AbortedTxn) -> None:
        self.aborted = aborted
        self.last_observed_offset: int | None = None


class CleanedTransactionMetadata:
    """The transactions the cleaner walks through (Kafka's ``CleanedTransactionMetadata``):
    which producers are inside an aborted transaction (from the ``.txnindex`` entries) or a
    committed one, so that an aborted transaction's batches are dropped and a marker is
    dropped only once no batch of its transaction is left below it; the abort markers kept
    get their ``AbortedTxn`` entry in the cleaned segment's index.

    Not thread-safe: one cleaning pass uses it.
    """

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTxnState] = {}
        #: aborted transactions not reached yet, by first offset
        self._aborted: list[tuple[int, int, AbortedTxn]] = []
        self._seq = 0
        #: where the kept abort markers' entries go (the cleaned segment's index)
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted(self, aborted: Iterable[AbortedTxn]) -> None:
        for entry in aborted:
            self._seq += 1
            heapq.heappush(self._aborted, (entry.first_offset, self._seq, entry))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            _, _, entry = heapq.heappop(self._aborted)
            self._ongoing_aborted.setdefault(entry.producer_id, _AbortedTxnState(entry))

    def on_control_batch(self, header: rb.BatchHeader, data: bytes) -> bool:
        """A control batch reached: True when it may be discarded (a marker whose
        transaction left no batch, or an empty control batch)."""
        self._consume_aborted_up_to(header.last_offset)
        if header.record_count == 0:
            return True  # a marker already emptied by an earlier pass
        try:
            records = stored_records.decode(data).records
            control_type = parse_control_key(records[0].key).control_type if records else None
        except (stored_records.CorruptLogData, ProtocolError):
            return False
        if control_type is None:
            return True
        pid = header.producer_id
        if control_type == ControlRecordType.ABORT:
            state = self._ongoing_aborted.pop(pid, None)
            if state is not None and state.last_observed_offset is not None:
                # kept until every batch of the transaction is gone
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.aborted)
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, header: rb.BatchHeader) -> bool:
        """A data batch reached: True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        state = self._ongoing_aborted.get(header.producer_id)
        if state is not None:
            state.last_observed_offset = header.last_offset
            return True
        self._ongoing_committed.add(header.producer_id)
        return False


class _Aborted(Exception):
    """A segment of the group went away while it was being cleaned."""
