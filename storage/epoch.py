"""LeaderEpochFileCache: the offset each leader epoch started at (``leader-epoch-checkpoint``)."""

from __future__ import annotations

import bisect
import threading
from pathlib import Path
from typing import NamedTuple

from storage.checkpoint import read_epoch_checkpoint, write_epoch_checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """The leader epochs of a partition and the first offset each one wrote.

    On-disk format (Kafka's ``leader-epoch-checkpoint``): a version line (0), a count line, then
    ``epoch startOffset`` lines in increasing order of both. The file is rewritten atomically on
    every change.

    Crash: the file holds the old or the new list; entries beyond the recovered log end are
    removed when the log loads (and re-added from batch headers during recovery).

    Thread-safety: every method takes the cache's own lock; readers get consistent answers.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = []
        #: the entries the file holds (None: unknown or no file), so an unchanged cache is
        #: not written again
        self._persisted: list[EpochEntry] | None = None
        if path is not None:
            self._entries = [EpochEntry(e, o) for e, o in read_epoch_checkpoint(path)]
            if path.exists():
                self._persisted = list(self._entries)

    @property
    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    def latest_epoch(self) -> int | None:
        with self._lock:
            return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Records that ``epoch`` starts at ``start_offset`` (a no-op unless ``epoch`` is above the
        latest one, or it moves the latest epoch's start earlier). Returns whether it changed."""
        if epoch < 0:
            return False
        with self._lock:
            entries = self._entries
            if entries:
                last = entries[-1]
                if epoch < last.epoch or (
                    epoch == last.epoch and start_offset >= last.start_offset
                ):
                    return False
            # drop entries this one conflicts with (same or later epoch, or a later start)
            kept = [e for e in entries if e.epoch < epoch and e.start_offset < start_offset]
            kept.append(EpochEntry(epoch, start_offset))
            self._entries = kept
            if flush:
                self._write_locked()
            return True

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset`` (the latest entry starting at or before it)."""
        with self._lock:
            starts = [e.start_offset for e in self._entries]
            i = bisect.bisect_right(starts, offset) - 1
            return self._entries[i].epoch if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch, as Kafka's ``LeaderEpochFileCache.endOffsetFor``: the latest
        epoch answers the log end offset; an older one answers the largest epoch <= it (or the
        requested epoch itself when it is older than every entry) with the start offset of the
        next epoch; an epoch above every entry (or none at all) answers (-1, -1)."""
        with self._lock:
            entries = self._entries
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if entries and requested_epoch == entries[-1].epoch:
                return requested_epoch, log_end_offset
            epochs = [e.epoch for e in entries]
            higher = bisect.bisect_right(epochs, requested_epoch)
            if higher == len(entries):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, entries[0].start_offset
            return entries[higher - 1].epoch, entries[higher].start_offset

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> None:
        """Removes the entries starting at or after ``end_offset`` (the log was truncated)."""
        with self._lock:
            kept = [e for e in self._entries if e.start_offset < end_offset]
            if len(kept) != len(self._entries):
                self._entries = kept
                if flush:
                    self._write_locked()

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> None:
        """The log now starts at ``start_offset``: entries before it collapse into one entry for
        the epoch in force there, starting at ``start_offset``."""
        with self._lock:
            entries = self._entries
            before = [e for e in entries if e.start_offset <= start_offset]
            after = [e for e in entries if e.start_offset > start_offset]
            if not before:
                return
            last = before[-1]
            kept = [EpochEntry(last.epoch, start_offset), *after]
            if kept != entries:
                self._entries = kept
                if flush:
                    self._write_locked()

    def clear(self, *, flush: bool = True) -> None:
        with self._lock:
            self._entries = []
            if flush:
                self._write_locked()

    def flush(self, *, fsync: bool = True) -> None:
        """Writes the checkpoint file unless it already holds these entries."""
        with self._lock:
            if self._persisted != self._entries:
                self._write_locked(fsync=fsync)

    def _write_locked(self, *, fsync: bool = True) -> None:
        if self.path is not None:
            write_epoch_checkpoint(self.path, self._entries, fsync=fsync)
            self._persisted = list(self._entries)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self._entries})"
