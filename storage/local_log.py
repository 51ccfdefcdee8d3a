"""LocalLog (Kafka's ``LocalLog``): a partition's segments on local disk, and what can be done to
them without knowing what the offsets mean.

It owns the segment list (a copy-on-write :class:`~storage.segments.LogSegments` snapshot), the
log end offset, the recovery point (everything below it was fsynced), rolling a new segment,
reading regions of whole batches for ``sendfile``, truncating (to an offset, or fully), flushing,
scheduling segment files for deletion (renamed ``.deleted``, removed after
``file.delete.delay.ms``), swapping in cleaned segments, renaming the directory and closing.

What the offsets *mean* — the log start offset, the high watermark, leader epochs, producers,
offset assignment, retention policy — is the partition log's (:class:`storage.log.PartitionLog`,
Kafka's ``UnifiedLog``) above it.

On-disk format: ``<log.dir>/<topic>-<partition>/`` with each segment's ``.log``, ``.index`` and
``.timeindex`` files named by 20-digit base offsets (:class:`~storage.segment.LogSegment`).

Crash: appends after the last flush may be lost or cut; the loader re-validates everything after
the recovery point on the next start and truncates at the first bad byte. Files renamed
``.deleted`` are removed on the next start; ``.swap`` files (a compaction's commit point) are
completed, ``.cleaned`` ones discarded (:mod:`storage.loader`).

Thread-safety: not thread-safe for writers: the partition log's lock serializes every method
that changes it (Kafka's ``LocalLog`` is guarded by ``UnifiedLog``'s lock the same way). Readers
are lock-free: :attr:`segments` and :attr:`log_end_offset` are each published by one assignment,
the end offset only after the bytes below it are written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from storage import files
from storage.config import LogConfig
from storage.errors import KafkaStorageError
from storage.file_records import FetchRegion
from storage.segment import LogSegment
from storage.segments import LogSegments

log = logging.getLogger(__name__)


class LocalLog:
    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        segments: LogSegments,
        log_end_offset: int,
        recovery_point: int,
        now_ms: int,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        #: the segment snapshot, replaced (never changed) by one assignment
        self.segments = segments
        #: the next offset; published after the data below it is written
        self.log_end_offset = log_end_offset
        self.recovery_point = min(recovery_point, log_end_offset)
        self.last_flush_ms = now_ms
        #: the base offset of the newest segment rolled (flushed by the periodic work)
        self.rolled_up_to = self.recovery_point
        #: segments renamed to .deleted, with the time their files may be removed
        self.pending_deletes: list[tuple[int, LogSegment]] = []
        self.closed = False

    @property
    def name(self) -> str:
        return files.log_dir_name(self.topic, self.partition)

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active

    # --- writes (under the partition log's lock) ------------------------------------------------

    def roll(self, now_ms: int, expected_next_offset: int | None) -> LogSegment:
        """Starts a new active segment at the log end offset (or ``expected_next_offset`` if
        higher); an empty active segment at that offset is kept. Returns the active segment."""
        new_base = self.log_end_offset
        if expected_next_offset is not None:
            new_base = max(new_base, expected_next_offset)
        current = self.segments
        active = current.active
        if active.size == 0 and active.base_offset == new_base:
            return active
        # an empty active segment at another base offset (after a truncation) is replaced
        replaced = [active] if active.size == 0 else []
        if not replaced:
            active.on_become_inactive()
        if current.get(new_base) is not None:
            raise KafkaStorageError(f"{self.name}: a segment with base offset {new_base} exists")
        segment = LogSegment.create(self.directory, new_base, self.config, created_ms=now_ms)
        self.segments = current.replaced(replaced, [segment])
        for empty in replaced:
            empty.delete_files()  # its descriptor closes with the last reference
        self.rolled_up_to = max(self.rolled_up_to, new_base)
        log.info("%s: rolled a new segment at offset %d", self.name, new_base)
        return segment

    def append(
        self,
        segment: LogSegment,
        buf: bytearray | memoryview,
        last_offset: int,
        max_timestamp: int,
        offset_of_max: int,
        first_batch_last_offset: int,
    ) -> None:
        """Writes validated batches to ``segment`` (the active one) and publishes the new log
        end offset. KafkaStorageError on an I/O error (the segment was cut back)."""
        try:
            segment.append(buf, last_offset, max_timestamp, offset_of_max, first_batch_last_offset)
        except OSError as e:
            raise KafkaStorageError(f"append to {segment.log.path} failed: {e}") from e
        self.log_end_offset = last_offset + 1

    def truncate_to(self, target_offset: int, now_ms: int) -> int:
        """Removes everything at and after ``target_offset`` (the log end becomes the base offset
        of the batch holding it, if any; the log never claims offsets it does not hold). The
        first segment must start at or below ``target_offset``. Returns the new log end."""
        snapshot = self.segments
        doomed = [s for s in snapshot if s.base_offset > target_offset]
        kept = snapshot.without(doomed)
        active = kept.active
        mapping = active.translate_offset(target_offset)
        new_end = target_offset
        if mapping is not None and mapping.base_offset < target_offset:
            new_end = mapping.base_offset
        # shrink the visible end first: lock-free readers never look past it
        self.log_end_offset = new_end
        self.segments = kept
        for segment in doomed:
            self.schedule_delete(segment, now_ms)
        active.truncate_to(new_end, now_ms=now_ms)
        active.make_active(self.config)
        if active.read_next_offset() < new_end:
            # the data ends below the log end (a gap): start a segment at the end offset, so
            # that a restart finds it again
            self.roll(now_ms, new_end)
        self.recovery_point = min(self.recovery_point, new_end)
        self.rolled_up_to = min(self.rolled_up_to, new_end)
        return new_end

    def truncate_fully_and_start_at(self, new_offset: int, now_ms: int) -> None:
        """Deletes every segment and starts an empty log at ``new_offset``."""
        old = list(self.segments)
        for segment in old:
            self.schedule_delete(segment, now_ms)
        segment = LogSegment.create(self.directory, new_offset, self.config, created_ms=now_ms)
        self.segments = LogSegments([segment])
        self.log_end_offset = new_offset
        self.recovery_point = new_offset
        self.rolled_up_to = new_offset

    def remove_segments(self, chosen: Sequence[LogSegment], now_ms: int) -> LogSegments:
        """Takes ``chosen`` (a prefix of the segments, not the active one) out of the list and
        schedules their files for deletion; returns the remaining segments."""
        remaining = self.segments.without(chosen)
        if self.recovery_point < remaining.first.base_offset:
            self.recovery_point = remaining.first.base_offset
        self.segments = remaining
        for segment in chosen:
            self.schedule_delete(segment, now_ms)
        return remaining

    def schedule_delete(self, segment: LogSegment, now_ms: int) -> None:
        """Renames the segment's files to ``.deleted``; they are removed after
        ``file.delete.delay.ms`` by :meth:`delete_pending_files`. Open regions keep reading."""
        try:
            segment.change_file_suffixes("", files.DELETED_FILE_SUFFIX)
        except OSError as e:
            log.warning("%s: could not rename %s for deletion: %s", self.name, segment, e)
        segment.deleted = True
        self.pending_deletes.append((now_ms + self.config.file_delete_delay_ms, segment))

    def take_due_deletes(self, now_ms: int, *, force: bool) -> list[LogSegment]:
        """The pending deletions whose delay passed (all with ``force``), taken off the list."""
        due = [s for t, s in self.pending_deletes if force or t <= now_ms]
        self.pending_deletes = [
            (t, s) for t, s in self.pending_deletes if not (force or t <= now_ms)
        ]
        return due

    def replace_segments(
        self, old: Sequence[LogSegment], new: Sequence[LogSegment], now_ms: int
    ) -> bool:
        """Swaps cleaned segments in for ``old`` (compaction). ``new`` segments carry the
        ``.cleaned`` suffix; they are renamed ``.swap`` (the commit point a crash recovers from),
        the old ones go to ``.deleted``, then the swap files lose their suffix. Returns False (and
        changes nothing) if ``old`` is no longer part of the log."""
        current = self.segments
        ids = {id(s) for s in current}
        if not all(id(s) in ids for s in old) or current.active in old:
            return False
        for segment in new:
            segment.change_file_suffixes(files.CLEANED_FILE_SUFFIX, files.SWAP_FILE_SUFFIX)
        files.fsync_dir(self.directory)
        self.segments = current.replaced(old, new)
        for segment in old:
            self.schedule_delete(segment, now_ms)
        for segment in new:
            segment.change_file_suffixes(files.SWAP_FILE_SUFFIX, "")
        files.fsync_dir(self.directory)
        return True

    def rename_directory(self, new_directory: Path) -> None:
        self.directory.rename(new_directory)
        self.directory = new_directory
        for segment in self.segments:
            segment.update_directory(new_directory)
        for _, segment in self.pending_deletes:
            segment.update_directory(new_directory)

    # --- reads (lock-free) ----------------------------------------------------------------------

    @staticmethod
    def read_from(
        snapshot: LogSegments,
        offset: int,
        max_bytes: int,
        *,
        upper: int,
        min_one_batch: bool,
    ) -> FetchRegion | None:
        """A region of whole batches from the one holding ``offset``, none at or after
        ``upper``, in ``snapshot`` (a segment list taken once by the caller)."""
        i = max(snapshot.floor_index(offset), 0)
        count = len(snapshot)
        while i < count:
            segment = snapshot[i]
            if segment.base_offset >= upper:
                return None
            region = segment.read(offset, max_bytes, max_offset=upper, min_one_batch=min_one_batch)
            if region is not None:
                return region
            i += 1
        return None

    # --- flush and close ------------------------------------------------------------------------

    def segments_to_flush(self, target: int) -> list[LogSegment]:
        """The segments holding offsets in [recovery point, ``target``), with their indexes
        written (call under the lock; fsync them outside it)."""
        segments = list(self.segments.between(self.recovery_point, target))
        for segment in segments:
            segment.write_indexes()
        return segments

    @staticmethod
    def fsync(segments: Sequence[LogSegment]) -> None:
        for segment in segments:
            if not segment.log.closed:
                segment.fsync()

    def mark_flushed(self, target: int, now_ms: int) -> None:
        if target > self.recovery_point:
            self.recovery_point = target
        self.last_flush_ms = now_ms
