"""LogCleaner: compaction of ``cleanup.policy=compact`` logs (Kafka's LogCleaner/Cleaner)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from protocol.records import batch as rb
from storage import files
from storage import records as stored_records
from storage.checkpoint import CorruptCheckpoint, read_offsets_checkpoint, write_offsets_checkpoint
from storage.log import PartitionLog
from storage.segment import LogSegment
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
      as a header without records, when it is its producer's last batch in the log, so the
      producer's last sequence survives; batches untouched are copied byte for byte;
    - control batches are kept as they are (transactions come with a later issue).

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
        # never the active segment, nor the segment holding the high watermark
        uncleanable = snapshot.active.base_offset
        hw_segment = snapshot.floor(partition_log.high_watermark)
        if hw_segment is not None:
            uncleanable = min(uncleanable, hw_segment.base_offset)
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
        (the offset after the last segment it covers)."""
        partition_log = candidate.log
        budget = self.dedupe_buffer_size
        used = 0
        offsets: dict[bytes, int] = {}
        end_offset = candidate.first_dirty
        snapshot = partition_log.segments
        # between() stops below first_uncleanable
        for segment in snapshot.between(candidate.first_dirty, candidate.first_uncleanable):
            segment_map: dict[bytes, int] = {}
            segment_used = 0
            for info in segment.log.batches_from(0):
                if info.last_offset < candidate.first_dirty:
                    continue
                data = segment.log.pread(info.size, info.position)
                decoded = stored_records.decode(data)
                if decoded.header.is_control:
                    continue
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
    def _last_batch_of_producers(partition_log: PartitionLog) -> dict[int, int]:
        """producer id -> last offset of its last data batch in the log (header scan)."""
        last: dict[int, int] = {}
        for segment in partition_log.segments:
            for info in segment.log.batches_from(0):
                if info.magic == rb.MAGIC_V2 and info.producer_id >= 0 and not info.is_control:
                    last[info.producer_id] = info.last_offset
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
        horizon = now_ms + partition_log.config.delete_retention_ms
        producers_last = self._last_batch_of_producers(partition_log)
        snapshot = partition_log.segments
        to_clean = [s for s in snapshot if s.base_offset < end_offset and s is not snapshot.active]
        stats.latest_delete_horizon = None
        for group in self._groups(to_clean, partition_log.config.segment_bytes):
            cleaned = self._clean_group(
                partition_log, group, offsets, end_offset, horizon, now_ms, producers_last, stats
            )
            if cleaned is None:
                stats.groups_aborted += 1
                continue
            if partition_log.replace_segments(group, [cleaned], now_ms=now_ms):
                stats.groups_swapped += 1
                stats.segments_cleaned += len(group)
            else:
                stats.groups_aborted += 1
                cleaned.log.close()
                cleaned.delete_files()
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
        offsets: dict[bytes, int],
        map_end: int,
        horizon: int,
        now_ms: int,
        producers_last: dict[int, int],
        stats: CleanerStats,
    ) -> LogSegment | None:
        base = group[0].base_offset
        cleaned = LogSegment.create(
            partition_log.directory,
            base,
            partition_log.config,
            created_ms=now_ms,
            suffix=files.CLEANED_FILE_SUFFIX,
            active=False,
        )
        try:
            for segment in group:
                if segment.deleted:
                    raise _Aborted
                for info in segment.log.batches_from(0):
                    data = segment.log.pread(info.size, info.position)
                    if len(data) != info.size:
                        raise _Aborted
                    stats.bytes_read += info.size
                    out = self._clean_batch(
                        data, offsets, map_end, horizon, now_ms, producers_last, stats
                    )
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

    def _clean_batch(
        self,
        data: bytes,
        offsets: dict[bytes, int],
        map_end: int,
        horizon: int,
        now_ms: int,
        producers_last: dict[int, int],
        stats: CleanerStats,
    ) -> bytes | None:
        """The batch to write for ``data`` (itself, rebuilt, empty) or None to drop it."""
        header = rb.read_header(data)
        if header.is_control:
            return data
        decoded = stored_records.decode(data)
        existing_horizon = stored_records.delete_horizon_ms(header)
        keep_tombstones = existing_horizon is None or now_ms < existing_horizon
        kept = []
        has_tombstone = False
        for record in decoded.records:
            stats.records_read += 1
            if record.offset >= map_end:
                keep = True
            elif record.key is None:
                keep = False
            else:
                latest = offsets.get(record.key, -1)
                keep = record.offset >= latest and (record.value is not None or keep_tombstones)
            if keep:
                kept.append(record)
                if record.value is None:
                    has_tombstone = True
            else:
                stats.records_removed += 1
        set_horizon = has_tombstone and existing_horizon is None
        kept_horizon = horizon if set_horizon else existing_horizon
        if has_tombstone and kept_horizon is not None:
            previous = stats.latest_delete_horizon
            stats.latest_delete_horizon = (
                kept_horizon if previous is None else max(previous, kept_horizon)
            )
        if len(kept) == len(decoded.records) and not set_horizon:
            return data
        if not kept:
            if (
                header.producer_id >= 0
                and producers_last.get(header.producer_id) == header.last_offset
            ):
                stats.empty_batches_kept += 1
                return stored_records.rebuild(header, [], delete_horizon_ms=existing_horizon)
            return None
        return stored_records.rebuild(header, kept, delete_horizon_ms=kept_horizon)


class _Aborted(Exception):
    """A segment of the group went away while it was being cleaned."""
