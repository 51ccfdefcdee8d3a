"""OffsetIndex and TimeIndex: a segment's sparse indexes, in Kafka's file formats.

Lookups run on in-memory arrays (``bisect`` over ``array``, in C). The index files of the active
segment are memory-mapped, as Kafka's are, and every entry is written through the mapping as it
is appended, so the file on disk (in the page cache) is always current: other tools (Kafka's
DumpLogSegments, ``odradek dump-log``) read the live entries while the broker runs, and a killed
broker leaves them behind. The mapping holds no file descriptor; it is closed when the segment
rolls or closes, and the file trimmed to its entries. An index of an inactive segment is read
from its file on first use (Kafka's LazyIndex) and needs no open descriptor afterwards.
"""

from __future__ import annotations

import bisect
import os
import struct
import sys
from array import array
from pathlib import Path
from typing import ClassVar, Final, NamedTuple

from protocol.records.batch import NO_TIMESTAMP
from storage.errors import CorruptIndex
from storage.mapped import MappedFile
from storage.util import INT32_MAX

_LITTLE_ENDIAN: Final = sys.byteorder == "little"


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def _write_file(path: Path, data: bytes, at: int, *, fsync: bool, length: int | None) -> None:
    """Writes ``data`` at ``at`` in ``path`` (created if missing), then sets the file length to
    ``length`` if given."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        pos = at
        while view:
            n = os.pwrite(fd, view, pos)
            view = view[n:]
            pos += n
        if length is not None and os.fstat(fd).st_size != length:
            os.ftruncate(fd, length)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _strictly_increasing(values: array[int]) -> bool:
    items = values.tolist()
    return items == sorted(set(items))


def _increasing(values: array[int]) -> bool:
    items = values.tolist()
    return items == sorted(items)


class _Index:
    """What both indexes share: entries of (key, value) kept in two arrays, the file, loading,
    writing and trimming.

    A subclass names its entry layout (``_ENTRY``: big-endian key then value), the arrays' type
    codes, and which of the two arrays holds the offsets relative to the base offset. Keys are
    strictly increasing; values strictly increasing too with ``_STRICT_VALUES``. An entry is
    appended value first, then key: a lock-free reader bisects the keys and then reads the value
    at the same index, which is therefore always there.
    """

    _ENTRY: ClassVar[struct.Struct]
    _KEY_TYPE: ClassVar[str]
    _VALUE_TYPE: ClassVar[str]
    _STRICT_VALUES: ClassVar[bool]
    #: whether the keys (else the values) are the offsets relative to the base offset
    _OFFSETS_ARE_KEYS: ClassVar[bool]

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entry_size = self._ENTRY.size
        self.max_entries = max(max_index_size // self.entry_size, 1)
        self._keys: array[int] = array(self._KEY_TYPE)
        self._values: array[int] = array(self._VALUE_TYPE)
        #: entries already in the file
        self._written = 0
        #: whether the file is currently extended to its maximum size (an active segment)
        self._preallocated = False
        #: whether the entries were read from the file (a plain attribute: read on every append)
        self.loaded = False
        #: the file mapped (an active segment's index), written through on every append
        self._mmap: MappedFile | None = None

    @property
    def max_index_size(self) -> int:
        return self.max_entries * self.entry_size

    @property
    def entries(self) -> int:
        return len(self._keys)

    def _relative_offsets(self) -> array[int]:
        return self._keys if self._OFFSETS_ARE_KEYS else self._values

    # --- loading ------------------------------------------------------------------------------

    def load(self, log_size: int) -> None:
        """Reads the file and sanity-checks it against a log of ``log_size`` bytes: trailing
        all-zero entries (preallocated space a crash left behind) are dropped, the rest must be
        in order; raises CorruptIndex otherwise."""
        keys, values = self._decode(self._read_file())
        n = len(keys)
        # a crash can leave preallocated zeros after the written entries; no real entry is all
        # zeros (an offset index never indexes position 0; a time index entry of timestamp 0
        # at the base offset, if dropped, only costs a rebuild of the indexes from the log)
        while n > 0 and keys[n - 1] == 0 and values[n - 1] == 0:
            n -= 1
        del keys[n:]
        del values[n:]
        if n:
            offsets = keys if self._OFFSETS_ARE_KEYS else values
            if offsets[0] < 0:
                raise CorruptIndex(f"{self.path}: negative relative offset")
            if not _strictly_increasing(keys) or not (
                _strictly_increasing(values) if self._STRICT_VALUES else _increasing(values)
            ):
                raise CorruptIndex(f"{self.path}: entries are not in increasing order")
            self._check_loaded(keys, values, log_size)
        self._keys = keys
        self._values = values
        self._written = n
        self.loaded = True

    def _check_loaded(self, keys: array[int], values: array[int], log_size: int) -> None:
        """Subclass checks of non-empty, ordered entries against the log."""

    def _decode(self, data: bytes) -> tuple[array[int], array[int]]:
        if self._KEY_TYPE == self._VALUE_TYPE:
            both = array(self._KEY_TYPE)
            both.frombytes(data)
            if _LITTLE_ENDIAN:
                both.byteswap()
            return both[0::2], both[1::2]
        keys = array(self._KEY_TYPE)
        values = array(self._VALUE_TYPE)
        for key, value in self._ENTRY.iter_unpack(data):
            keys.append(key)
            values.append(value)
        return keys, values

    def mark_loaded_empty(self) -> None:
        """A fresh (or reset) index: no entries, nothing to read."""
        self._keys = array(self._KEY_TYPE)
        self._values = array(self._VALUE_TYPE)
        m = self._mmap
        if m is not None and self._written:
            m.write(0, bytes(self._written * self.entry_size))
        self._written = 0
        self.loaded = True

    def _read_file(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return b""
        usable = len(data) - len(data) % self.entry_size
        return data[:usable]

    def _write_through(self, key: int, value: int) -> None:
        """The entry just appended (the last one), into the mapping."""
        m = self._mmap
        assert m is not None
        i = len(self._keys) - 1
        if i == self._written:
            m.pack_into(self._ENTRY, i * self.entry_size, key, value)
            self._written = i + 1
        else:  # entries were appended while unmapped: write them all
            n = i + 1
            m.write(self._written * self.entry_size, self._entries_bytes(self._written, n))
            self._written = n

    # --- files --------------------------------------------------------------------------------

    def preallocate(self) -> None:
        """Extends the file to the maximum index size (sparse zeros) and maps it, as Kafka does
        for the index of an active segment; entries not yet in the file are written."""
        self._preallocated = True
        if self._mmap is None:
            self._map()

    def _map(self) -> None:
        """Maps the file, extended to the maximum index size (sparse zeros) if shorter (no
        descriptor is kept: :mod:`storage.mapped`)."""
        self._unmap()
        self._mmap = m = MappedFile(self.path, self.max_index_size)
        n = self.entries
        if n > self._written:
            m.write(self._written * self.entry_size, self._entries_bytes(self._written, n))
            self._written = n

    def _unmap(self) -> None:
        m = self._mmap
        if m is not None:
            self._mmap = None
            m.close()

    def close(self) -> None:
        """Unmaps the file (its entries are in it already); the index stays usable in memory."""
        self._unmap()

    @property
    def mapped(self) -> bool:
        return self._mmap is not None

    def _entries_bytes(self, start: int, stop: int) -> bytes:
        keys = self._keys[start:stop]
        values = self._values[start:stop]
        if self._KEY_TYPE == self._VALUE_TYPE:
            out = array(self._KEY_TYPE, bytes(self.entry_size * len(keys)))
            out[0::2] = keys
            out[1::2] = values
            if _LITTLE_ENDIAN:
                out.byteswap()
            return out.tobytes()
        pack = self._ENTRY.pack
        return b"".join(pack(k, v) for k, v in zip(keys, values, strict=True))

    def flush(self, *, fsync: bool = True) -> None:
        """Writes the entries appended since the last flush (a mapped index has none: with
        ``fsync``, the mapping is synced)."""
        if not self.loaded:
            return
        m = self._mmap
        if m is not None:
            if fsync:
                m.flush()
            return
        n = self.entries
        if n > self._written or not self.path.exists():
            data = self._entries_bytes(self._written, n)
            _write_file(self.path, data, self._written * self.entry_size, fsync=fsync, length=None)
            self._written = n
        elif fsync:
            self.fsync()

    def fsync(self) -> None:
        """fsyncs the file if it exists."""
        m = self._mmap
        if m is not None:
            try:
                m.flush()
            except (OSError, ValueError):
                if not m.closed:
                    raise
                # unmapped meanwhile (a roll, without the log's lock): the trim wrote it
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def trim(self, *, fsync: bool = True) -> None:
        """Writes pending entries and cuts the file to exactly its entries (Kafka's
        trimToValidSize, done when a segment rolls or closes)."""
        if not self.loaded:
            return
        self._unmap()
        n = self.entries
        data = self._entries_bytes(self._written, n)
        _write_file(
            self.path,
            data,
            self._written * self.entry_size,
            fsync=fsync,
            length=n * self.entry_size,
        )
        self._written = n
        self._preallocated = False

    def rewrite(self, *, preallocate: bool, fsync: bool = False) -> None:
        """Writes the whole index to its file (after a rebuild or a truncation)."""
        self._unmap()
        n = self.entries
        size = n * self.entry_size
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            data = self._entries_bytes(0, n)
            view = memoryview(data)
            pos = 0
            while view:
                written = os.pwrite(fd, view, pos)
                view = view[written:]
                pos += written
            # cut what was after the entries (stale entries, preallocated space), then extend
            # with zeros (sparse) for an active segment's mapping
            os.ftruncate(fd, size)
            if preallocate:
                os.ftruncate(fd, self.max_index_size)
                self._mmap = MappedFile(self.path, self.max_index_size, fd=fd)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._written = n
        self._preallocated = preallocate

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    # --- truncation (under the log's lock) ------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Removes the entries with offsets >= ``offset``."""
        rel = offset - self.base_offset
        offsets = self._relative_offsets()
        keep = bisect.bisect_left(offsets, rel) if rel <= INT32_MAX else len(offsets)
        self._truncate_entries(max(keep, 0))

    def reset(self) -> None:
        self._truncate_entries(0)

    def _truncate_entries(self, n: int) -> None:
        if n < len(self._keys):
            # new arrays: a concurrent lookup keeps the old ones
            self._keys = self._keys[:n]
            self._values = self._values[:n]
        if self._written > n:
            m = self._mmap
            if m is not None:
                m.write(n * self.entry_size, bytes((self._written - n) * self.entry_size))
                self._written = n
                return
            self._written = n
            if self.path.exists():
                length = self.max_index_size if self._preallocated else n * self.entry_size
                fd = os.open(self.path, os.O_RDWR)
                try:
                    os.ftruncate(fd, n * self.entry_size)
                    os.ftruncate(fd, length)
                finally:
                    os.close(fd)


class OffsetIndex(_Index):
    """Maps offsets to file positions in a segment, sparsely.

    On-disk format (Kafka's ``.index``): 8-byte big-endian entries (int32 offset relative to the
    segment's base offset, int32 position in the ``.log`` file), offsets strictly increasing. An
    entry (o, p) says the batch at position p has last offset o; an entry is added when more than
    ``index.interval.bytes`` were appended since the previous one (so position 0, the first
    batch, is never indexed). The file of an active segment is preallocated to
    ``segment.index.bytes`` and trimmed to its entries on roll and close.

    Crash: the file may be short (entries not yet written) or long (preallocated zeros, or stale
    entries). Loading drops trailing zero entries and checks the rest (sizes, monotonic offsets
    and positions, last position inside the log); a failed check raises CorruptIndex and the
    segment rebuilds the index from its log. Segments after the recovery point are always
    rebuilt after an unclean shutdown.

    Thread-safety: :meth:`lookup` and friends read arrays that are only ever appended to (or cut
    by truncation, under the log's lock); each lookup works on the entry count it read first, so a
    concurrent append is invisible to it. Mutations must be serialized by the owner.
    """

    # keys: relative offsets; values: positions
    _ENTRY = struct.Struct(">ii")
    _KEY_TYPE = "i"
    _VALUE_TYPE = "i"
    _STRICT_VALUES = True
    _OFFSETS_ARE_KEYS = True

    def _check_loaded(self, keys: array[int], values: array[int], log_size: int) -> None:
        if values[0] < 0:
            raise CorruptIndex(f"{self.path}: negative first position")
        if values[-1] >= log_size:
            raise CorruptIndex(
                f"{self.path}: last entry points at {values[-1]}, log has {log_size} bytes"
            )

    # --- queries ------------------------------------------------------------------------------

    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def last_offset(self) -> int:
        offsets = self._keys
        return self.base_offset + offsets[-1] if offsets else self.base_offset

    def entry(self, i: int) -> OffsetPosition:
        return OffsetPosition(self.base_offset + self._keys[i], self._values[i])

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``target_offset``, or (base offset, 0)."""
        offsets = self._keys
        rel = target_offset - self.base_offset
        if rel < 0 or not offsets:
            return OffsetPosition(self.base_offset, 0)
        i = bisect.bisect_right(offsets, rel if rel <= INT32_MAX else INT32_MAX) - 1
        if i < 0:
            return OffsetPosition(self.base_offset, 0)
        try:
            return OffsetPosition(self.base_offset + offsets[i], self._values[i])
        except IndexError:  # truncated under us: start from the top of the segment
            return OffsetPosition(self.base_offset, 0)

    def last_position_within(self, max_position: int, max_offset: int) -> int:
        """The largest indexed position p <= ``max_position`` whose entry offset is below
        ``max_offset`` (so every batch before p is below ``max_offset``), or 0."""
        positions = self._values
        offsets = self._keys
        i = bisect.bisect_right(positions, max_position) - 1
        rel = max_offset - self.base_offset
        if rel <= INT32_MAX:
            j = bisect.bisect_left(offsets, rel) - 1
            i = min(i, j)
        if i < 0:
            return 0
        try:
            return positions[i]
        except IndexError:
            return 0

    def offset_at_or_after_position(self, position: int) -> int | None:
        """The offset of the first entry whose position is >= ``position`` (every batch
        before ``position`` is below it), or None (Kafka's ``fetchUpperBoundOffset``)."""
        positions = self._values
        i = bisect.bisect_left(positions, position)
        try:
            return self.base_offset + self._keys[i]
        except IndexError:
            return None

    # --- mutations (under the log's lock) ------------------------------------------------------

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        offsets = self._keys
        if offsets and rel <= offsets[-1]:
            raise ValueError(
                f"index {self.path}: offset {offset} is not above the last indexed offset "
                f"{self.base_offset + offsets[-1]}"
            )
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"index {self.path}: offset {offset} does not fit the segment")
        if len(offsets) >= self.max_entries:
            raise ValueError(f"index {self.path} is full")
        self._values.append(position)
        offsets.append(rel)
        if self._mmap is not None:
            self._write_through(rel, position)

    def append_unchecked(self, offset: int, position: int) -> None:
        """:meth:`append` for a caller that already knows the entry is in order and fits."""
        rel = offset - self.base_offset
        self._values.append(position)
        self._keys.append(rel)
        if self._mmap is not None:
            self._write_through(rel, position)


class TimeIndex(_Index):
    """Maps timestamps to offsets in a segment, sparsely.

    On-disk format (Kafka's ``.timeindex``): 12-byte big-endian entries (int64 timestamp, int32
    offset relative to the segment's base offset), timestamps strictly increasing, offsets not
    decreasing; an entry (t, o) says the largest timestamp seen up to the batch whose last
    offset is o is t. An entry is added with each offset index entry when the segment's max
    timestamp grew, and once more when the segment rolls or closes (its max timestamp, which
    retention reads). Preallocated and trimmed like the offset index; one slot is kept free for
    the entry written on roll (Kafka's isFull).

    Crash and thread-safety: as :class:`OffsetIndex`.
    """

    # keys: timestamps; values: relative offsets
    _ENTRY = struct.Struct(">qi")
    _KEY_TYPE = "q"
    _VALUE_TYPE = "i"
    _STRICT_VALUES = False
    _OFFSETS_ARE_KEYS = False

    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries - 1

    def entry(self, i: int) -> TimestampOffset:
        return TimestampOffset(self._keys[i], self.base_offset + self._values[i])

    def last_timestamp(self) -> int:
        timestamps = self._keys
        return timestamps[-1] if timestamps else NO_TIMESTAMP

    def last_entry(self) -> TimestampOffset:
        timestamps = self._keys
        offsets = self._values
        try:
            return TimestampOffset(timestamps[-1], self.base_offset + offsets[-1])
        except IndexError:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``target_timestamp``, or (-1, base offset)."""
        timestamps = self._keys
        i = bisect.bisect_right(timestamps, target_timestamp) - 1
        if i < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        try:
            return TimestampOffset(timestamps[i], self.base_offset + self._values[i])
        except IndexError:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Adds (timestamp, offset) if ``timestamp`` is above the last entry's."""
        timestamps = self._keys
        rel = offset - self.base_offset
        if timestamp <= (timestamps[-1] if timestamps else NO_TIMESTAMP):
            return
        if timestamps and rel < self._values[-1]:
            raise ValueError(
                f"time index {self.path}: offset {offset} is below the last indexed offset"
            )
        if not skip_full_check and len(timestamps) >= self.max_entries - 1:
            raise ValueError(f"time index {self.path} is full")
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"time index {self.path}: offset {offset} does not fit the segment")
        self._values.append(rel)
        timestamps.append(timestamp)
        if self._mmap is not None:
            self._write_through(timestamp, rel)
