"""LogSegment: a ``.log`` file with its OffsetIndex and TimeIndex."""

from __future__ import annotations

import logging
import os
import random
import threading
from collections.abc import Callable
from pathlib import Path

from protocol.errors import CorruptRecord
from protocol.records import batch as rb
from protocol.records.batch import NO_TIMESTAMP
from storage import files
from storage.config import LogConfig
from storage.errors import CorruptIndex, LogSegmentOffsetOverflow
from storage.file_records import BatchInfo, Chunk, FetchRegion, FileRecords
from storage.index import OffsetIndex, TimeIndex, TimestampOffset
from storage.txn_index import TransactionIndex
from storage.util import INT32_MAX, LONG_MAX

log = logging.getLogger(__name__)

#: Bytes read per pread during a recovery scan.
RECOVERY_CHUNK = 4 * 1024 * 1024


class LogSegment:
    """One segment of a partition's log: ``<base>.log``, ``<base>.index``, ``<base>.timeindex``.

    On-disk format: see :class:`~storage.file_records.FileRecords`,
    :class:`~storage.index.OffsetIndex`, :class:`~storage.index.TimeIndex` and, once the segment
    holds an abort marker, :class:`~storage.txn_index.TransactionIndex` (``<base>.txnindex``). The
    name is the base offset: every batch in the segment has offsets in [base, base + 2**31 - 1].

    Crash: the ``.log`` may end with a cut batch or garbage and the indexes may be short, long or
    stale; :meth:`recover` re-validates every batch (size, magic, CRC-32C, offsets), truncates at
    the first bad byte and rebuilds both indexes. It returns the bytes it dropped and logs the
    file and position.

    Thread-safety: :meth:`read`, :meth:`translate_offset` and :meth:`find_batch_by_timestamp` are
    lock-free and may run while one thread appends. :meth:`append`, :meth:`truncate_to`,
    :meth:`recover`, :meth:`on_become_inactive` and the file operations must be serialized by the
    owning log's lock. Indexes of an inactive segment load on first use under a per-segment lock.
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        created_ms: int,
        create: bool = False,
        suffix: str = "",
    ) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        jitter = config.segment_jitter_ms
        self.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0
        # an existing segment's file opens when first used (most are never read again)
        self.log = FileRecords(
            files.log_file(directory, base_offset, suffix), create=create, lazy=not create
        )
        max_index = config.segment_index_bytes
        self._offset_index = OffsetIndex(
            files.index_file(directory, base_offset, suffix), base_offset, max_index
        )
        self._time_index = TimeIndex(
            files.time_index_file(directory, base_offset, suffix), base_offset, max_index
        )
        #: aborted transactions whose markers this segment holds
        self.txn_index = TransactionIndex(
            files.txn_index_file(directory, base_offset, suffix), base_offset
        )
        self._load_lock = threading.Lock()
        self.created_ms = created_ms
        #: max timestamp of the first batch (for segment.ms), None until known
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_so_far: TimestampOffset | None = None
        self.bytes_since_last_index_entry = 0
        #: a lower bound on the entries both indexes can still take (each append adds at most
        #: one to each), so should_roll counts their entries only when it reaches 0
        self._index_room = 0
        #: the max timestamp (object) last offered to the time index by append
        self._time_indexed_max: TimestampOffset | None = None
        #: set once the files were renamed to .deleted (no index file is rewritten then)
        self.deleted = False
        if create:
            self._offset_index.mark_loaded_empty()
            self._time_index.mark_loaded_empty()
            self.txn_index.mark_loaded_empty()

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        created_ms: int,
        suffix: str = "",
        active: bool = True,
    ) -> LogSegment:
        """A new, empty segment (files truncated if they existed). An active segment gets
        preallocated index files (and log file with ``preallocate``)."""
        for path in (
            files.log_file(directory, base_offset, suffix),
            files.index_file(directory, base_offset, suffix),
            files.time_index_file(directory, base_offset, suffix),
            files.txn_index_file(directory, base_offset, suffix),
        ):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        segment = cls(
            directory, base_offset, config, created_ms=created_ms, create=True, suffix=suffix
        )
        if active:
            segment.make_active(config)
        return segment

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        created_ms: int,
        suffix: str = "",
    ) -> LogSegment:
        """An existing segment; its indexes load on first use."""
        return cls(directory, base_offset, config, created_ms=created_ms, suffix=suffix)

    # --- properties -------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def offset_index(self) -> OffsetIndex:
        index = self._offset_index
        if not index.loaded:
            self._load_indexes()
        return index

    @property
    def time_index(self) -> TimeIndex:
        index = self._time_index
        if not index.loaded:
            self._load_indexes()
        return index

    def _load_indexes(self) -> None:
        with self._load_lock:
            if self._offset_index.loaded and self._time_index.loaded:
                return
            size = self.log.size
            try:
                if size > 0 and not self._offset_index.path.exists():
                    raise CorruptIndex(f"{self._offset_index.path} is missing")
                self._offset_index.load(size)
                self._time_index.load(size)
                self._check_last_index_entry()
            except CorruptIndex as e:
                log.warning("rebuilding the indexes of %s: %s", self.log.path, e)
                self._rebuild_indexes()

    def _check_last_index_entry(self) -> None:
        """The last offset index entry must point at a batch whose last offset it names."""
        index = self._offset_index
        if index.entries:
            entry = index.entry(index.entries - 1)
            info = next(iter(self.log.batches_from(entry.position)), None)
            if info is None or info.magic != rb.MAGIC_V2:
                raise CorruptIndex(f"{index.path}: last entry {entry} points at no batch")
            if info.base_offset > entry.offset:
                raise CorruptIndex(f"{index.path}: last entry {entry} but the batch is {info}")
            data = self.log.pread(info.size, info.position)
            try:
                valid = rb.crc_of(data, 0, info.size) == rb.read_header(data).crc
            except CorruptRecord:
                valid = False
            if not valid:
                raise CorruptIndex(f"{index.path}: last entry {entry} points inside a batch")
        # the time index ends with the segment's max timestamp (written on roll and close)
        last_time = self._time_index.last_entry()
        last_batch = self.last_batch()
        if last_batch is not None:
            if last_time.timestamp < last_batch.max_timestamp:
                raise CorruptIndex(
                    f"{self._time_index.path}: last entry {last_time} is below the last batch's "
                    f"max timestamp {last_batch.max_timestamp}"
                )
            if last_time.offset > last_batch.last_offset:
                raise CorruptIndex(
                    f"{self._time_index.path}: last entry {last_time} is past the log"
                )

    def _rebuild_indexes(self) -> None:
        """Rebuilds both indexes from batch headers (no CRC checks: an inactive segment already
        passed recovery) and rewrites the files."""
        offset_index = self._offset_index
        time_index = self._time_index
        offset_index.mark_loaded_empty()
        time_index.mark_loaded_empty()
        max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        last_entry_position = 0
        for info in self.log.batches_from(0):
            if info.max_timestamp > max_ts.timestamp:
                max_ts = TimestampOffset(info.max_timestamp, info.last_offset)
            if info.position - last_entry_position > self.index_interval_bytes:
                offset_index.append(info.last_offset, info.position)
                time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
                last_entry_position = info.position
        time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        self._max_timestamp_so_far = max_ts
        self._time_indexed_max = None
        self._index_room = 0
        if not self.deleted:
            offset_index.rewrite(preallocate=False)
            time_index.rewrite(preallocate=False)

    def make_active(self, config: LogConfig) -> None:
        """Prepares the segment to take appends: loads the indexes and preallocates their files
        (and the log file with ``preallocate``)."""
        self.log.pin()
        self.offset_index.preallocate()
        self.time_index.preallocate()
        if config.preallocate:
            self.log.preallocate(config.segment_bytes)
        self.index_interval_bytes = config.index_interval_bytes

    # --- timestamps -------------------------------------------------------------------------------

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """(largest batch max timestamp, last offset of that batch); (-1, base) if none."""
        value = self._max_timestamp_so_far
        if value is None:
            value = self.time_index.last_entry()
            if self._max_timestamp_so_far is None:
                self._max_timestamp_so_far = value
        return value

    def largest_timestamp(self) -> int:
        """The segment's largest timestamp, or its file's mtime when it has none (retention)."""
        ts = self.max_timestamp_so_far.timestamp
        if ts >= 0:
            return ts
        return self.last_modified_ms()

    def last_modified_ms(self) -> int:
        try:
            return os.stat(self.log.path).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return 0

    def first_batch_timestamp(self) -> int | None:
        """The max timestamp of the first batch (used for segment.ms), None if empty."""
        if self._rolling_based_timestamp is None:
            info = next(iter(self.log.batches_from(0)), None)
            if info is not None:
                self._rolling_based_timestamp = info.max_timestamp
        return self._rolling_based_timestamp

    def should_roll(
        self,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now_ms: int,
        config: LogConfig,
    ) -> bool:
        """Kafka's shouldRoll: the append would pass ``segment.bytes``, the segment is older than
        ``segment.ms`` (minus jitter), an index is full, or the offsets no longer fit. Called
        for every append of the active segment (whose indexes are loaded)."""
        size = self.log.size
        if size > config.segment_bytes - messages_size:
            return True
        if size > 0:
            ts = self._rolling_based_timestamp
            if ts is None:
                ts = self.first_batch_timestamp()
            if ts is not None and ts >= 0:
                waited = max_timestamp_in_messages - ts
            else:
                waited = now_ms - self.created_ms
            if waited > config.segment_ms - self.roll_jitter_ms:
                return True
        if self._index_room <= 0 and self._indexes_full():
            return True
        return not 0 <= max_offset_in_messages - self.base_offset <= INT32_MAX

    def _indexes_full(self) -> bool:
        """Whether either index is full (exact); also recounts :attr:`_index_room`."""
        offset_index = self.offset_index
        time_index = self.time_index
        self._index_room = min(
            offset_index.max_entries - offset_index.entries,
            time_index.max_entries - 1 - time_index.entries,
        )
        return self._index_room <= 0

    # --- append -----------------------------------------------------------------------------------

    def append(
        self,
        records: rb.Buffer,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max_timestamp: int,
        first_batch_last_offset: int | None = None,
    ) -> int:
        """Appends whole batches; returns the position they start at. Under the log's lock.

        An offset index entry, when one is due, maps the first batch's last offset
        (``first_batch_last_offset``, default ``largest_offset``: one batch) to the position, so
        every entry names the batch it points at (Kafka uses the largest offset of the append,
        which is the same for the usual one-batch append)."""
        size = len(records)
        if size == 0:
            return self.log.size
        if not 0 <= largest_offset - self.base_offset <= INT32_MAX:
            raise LogSegmentOffsetOverflow(
                f"offset {largest_offset} does not fit segment {self.base_offset}"
            )
        position = self.log.append(records)
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        current = self._max_timestamp_so_far
        if current is None:
            current = self.max_timestamp_so_far
        if largest_timestamp > current[0]:
            current = TimestampOffset(largest_timestamp, offset_of_max_timestamp)
            self._max_timestamp_so_far = current
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            # the log checked order, room (should_roll) and range above: no re-checks here
            self._offset_index.append_unchecked(
                largest_offset if first_batch_last_offset is None else first_batch_last_offset,
                position,
            )
            self._index_room -= 1
            if current is not self._time_indexed_max:
                # the max timestamp changed since the time index last saw it
                self._time_index.maybe_append(current[0], current[1], skip_full_check=True)
                self._time_indexed_max = current
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry += size
        return position

    # --- reads ------------------------------------------------------------------------------------

    def translate_offset(self, offset: int, max_position: int | None = None) -> BatchInfo | None:
        """The first batch whose last offset is >= ``offset`` (lock-free)."""
        end = self.log.size if max_position is None else max_position
        position = self.offset_index.lookup(offset).position
        return self.log.search_for_offset(offset, position, end)

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        max_position: int | None = None,
        min_one_batch: bool = True,
    ) -> FetchRegion | None:
        """Whole batches starting with the one that contains ``offset`` (or the first one after
        it), at most ``max_bytes`` unless the first batch alone is bigger and ``min_one_batch``,
        none at or after ``max_offset``. None if there is nothing to read here."""
        size = self.log.size if max_position is None else min(max_position, self.log.size)
        offset_index = self.offset_index
        # a segment taking appends sends its regions from the file: its scan reads are not kept
        chunks: list[Chunk] | None = None if self.log.pinned else []
        first = self.log.search_for_offset(
            offset, offset_index.lookup(offset).position, size, chunks
        )
        if first is None:
            return None
        if max_offset is not None and first.base_offset >= max_offset:
            return None
        if first.size > max_bytes and not min_one_batch:
            return None
        start = first.position
        limit = min(size, start + max(max_bytes, first.size))
        end = start + first.size
        if end < limit:
            jump = offset_index.last_position_within(
                limit, max_offset if max_offset is not None else LONG_MAX
            )
            if jump > end:
                end = jump
            for info in self.log.batches_from(end, limit, chunks):
                if max_offset is not None and info.base_offset >= max_offset:
                    break
                end = info.position + info.size
        return FetchRegion(self.log, start, end - start, first.base_offset, chunks)

    def find_batch_by_timestamp(self, timestamp: int, starting_offset: int) -> BatchInfo | None:
        """The first batch with max timestamp >= ``timestamp`` and last offset >=
        ``starting_offset`` (the caller looks inside it for the exact record)."""
        ts_entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(ts_entry.offset, starting_offset)).position
        for info in self.log.batches_from(position):
            if info.max_timestamp >= timestamp and info.last_offset >= starting_offset:
                return info
        return None

    def read_next_offset(self) -> int:
        """The offset after the last batch (base offset if empty)."""
        last = self.last_batch()
        return self.base_offset if last is None else last.next_offset

    def last_batch(self) -> BatchInfo | None:
        """The last batch's header (None if empty); scans from the last index entry."""
        position = self.offset_index.lookup(LONG_MAX).position
        last = None
        for info in self.log.batches_from(position):
            last = info
        return last

    # --- recovery and truncation (under the log's lock) ------------------------------------------

    def recover(
        self,
        *,
        on_batch: Callable[[rb.BatchHeader], None] | None = None,
        active: bool = False,
    ) -> int:
        """Re-validates every batch, truncates at the first invalid byte, rebuilds the indexes
        and rewrites their files. Returns the number of bytes truncated."""
        offset_index = self._offset_index
        time_index = self._time_index
        offset_index.mark_loaded_empty()
        time_index.mark_loaded_empty()
        file_length = self.log.file_length()
        self.log.size = file_length
        valid = 0
        last_index_entry = 0
        max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        next_expected = self.base_offset
        buf = b""
        buf_start = 0
        reason = ""
        while valid < file_length:
            rel = valid - buf_start
            if rel + rb.HEADER_SIZE > len(buf):
                buf = self.log.pread(min(RECOVERY_CHUNK, file_length - valid), valid)
                buf_start = valid
                rel = 0
            try:
                header = rb.read_header(buf, rel)
            except CorruptRecord as e:
                reason = str(e)
                break
            batch_size = header.size
            if valid + batch_size > file_length:
                reason = f"batch of {batch_size} bytes is cut short"
                break
            if rel + batch_size > len(buf):
                buf = self.log.pread(max(RECOVERY_CHUNK, batch_size), valid)
                buf_start = valid
                rel = 0
            if rb.crc_of(buf, rel, batch_size) != header.crc:
                reason = "CRC mismatch"
                break
            if header.base_offset < next_expected or header.last_offset_delta < 0:
                reason = (
                    f"offsets [{header.base_offset}, {header.last_offset}] out of order "
                    f"(expected >= {next_expected})"
                )
                break
            if header.last_offset - self.base_offset > INT32_MAX or header.record_count < 0:
                reason = f"offset {header.last_offset} does not fit the segment"
                break
            if header.max_timestamp > max_ts.timestamp:
                max_ts = TimestampOffset(header.max_timestamp, header.last_offset)
            if valid - last_index_entry > self.index_interval_bytes:
                offset_index.append(header.last_offset, valid)
                time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
                last_index_entry = valid
            if on_batch is not None:
                on_batch(header)
            next_expected = header.next_offset
            valid += batch_size
        truncated = file_length - valid
        if truncated > 0:
            log.warning(
                "recovery: truncating %s at position %d, dropping %d bytes (%s)",
                self.log.path,
                valid,
                truncated,
                reason or "invalid data",
            )
            self.log.truncate_to(valid)
        # markers cut off with the data lose their entries (the producer state's replay
        # re-appends those of the markers kept)
        self.txn_index.truncate_to(next_expected)
        self._rolling_based_timestamp = None
        time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        self._max_timestamp_so_far = max_ts
        self._time_indexed_max = None
        self._index_room = 0
        self.bytes_since_last_index_entry = valid - last_index_entry
        offset_index.rewrite(preallocate=active)
        time_index.rewrite(preallocate=active)
        return truncated

    def truncate_to(self, offset: int, *, now_ms: int) -> int:
        """Removes every batch whose last offset is >= ``offset`` (so a batch containing
        ``offset`` goes entirely). Returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.log.truncate_to(mapping.position) if mapping is not None else 0
        if self.log.size == 0:
            self.created_ms = now_ms
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        # the largest timestamp: last time index entry, then whatever follows it
        last = self.time_index.last_entry()
        position = self.offset_index.lookup(last.offset).position
        best = last
        for info in self.log.batches_from(position):
            if info.max_timestamp > best.timestamp:
                best = TimestampOffset(info.max_timestamp, info.last_offset)
        self._max_timestamp_so_far = best
        self._time_indexed_max = None
        return removed

    def on_become_inactive(self, *, fsync: bool = False) -> None:
        """The segment rolled (or closes): write its max timestamp to the time index and trim the
        files (fsyncing the indexes with ``fsync``)."""
        current = self.max_timestamp_so_far
        self.time_index.maybe_append(current.timestamp, current.offset, skip_full_check=True)
        self.offset_index.trim(fsync=fsync)
        self.time_index.trim(fsync=fsync)
        self.log.trim()
        self.log.unpin()

    def write_indexes(self) -> None:
        """Writes index entries appended since the last write (no fsync). Under the log's lock."""
        if not self.log.closed:
            self._offset_index.flush(fsync=False)
            self._time_index.flush(fsync=False)

    def fsync(self) -> None:
        """fsyncs the log and index files (no lock needed)."""
        self.log.flush()
        self._offset_index.fsync()
        self._time_index.fsync()
        self.txn_index.fsync()

    def flush(self) -> None:
        self.write_indexes()
        self.fsync()

    def close(self) -> None:
        """Trims and closes the files (shutdown)."""
        if self.log.closed:
            return
        if self._offset_index.loaded and self._time_index.loaded:
            self.on_become_inactive(fsync=True)
        else:  # indexes never used: their files stay as they are
            self.log.trim()
        self._offset_index.close()
        self._time_index.close()
        self.log.close()

    # --- files ------------------------------------------------------------------------------------

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Renames the files from ``old_suffix`` to ``new_suffix`` (e.g. to ``.deleted``)."""

        def renamed(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        self._offset_index.close()
        self._time_index.close()
        self.log.rename_to(renamed(self.log.path))
        self._offset_index.rename_to(renamed(self._offset_index.path))
        self._time_index.rename_to(renamed(self._time_index.path))
        self.txn_index.rename_to(renamed(self.txn_index.path))

    def update_directory(self, directory: Path) -> None:
        self.log.update_path(directory / self.log.path.name)
        self._offset_index.path = directory / self._offset_index.path.name
        self._time_index.path = directory / self._time_index.path.name
        self.txn_index.path = directory / self.txn_index.path.name

    def delete_files(self) -> None:
        """Unlinks the files. The log's descriptor stays open until no region uses it."""
        self._offset_index.close()
        self._time_index.close()
        if not self.log.closed:
            # whoever still holds this segment keeps reading it after its file is gone
            self.log.pin()
        for path in (
            self.log.path,
            self._offset_index.path,
            self._time_index.path,
            self.txn_index.path,
        ):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        return self.log.path, self._offset_index.path, self._time_index.path

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.log.size})"
