"""TransactionIndex: the aborted transactions whose abort markers a segment holds (Kafka's
``TransactionIndex`` and ``AbortedTxn``).

A read_committed fetch returns, beside its records, the aborted transactions that overlap them
(``aborted_transactions``: producer id and first offset), so the consumer can drop their
records; this index answers that without reading the log.

On-disk format: ``<20-digit base offset>.txnindex`` beside the segment's ``.log``, a sequence of
34-byte entries, Kafka's own::

    version           int16   0
    producerId        int64
    firstOffset       int64   the transaction's first offset in the partition
    lastOffset        int64   the offset of its abort marker
    lastStableOffset  int64   the partition's last stable offset once the abort was written

Entries are appended in log order (``lastOffset`` increases). The file is created with the first
entry (a segment without aborted transactions has none, as in Kafka).

Crash: entries are written without fsync (the segment's fsync syncs them); a cut last entry is
dropped when the file is read, and the producer state's replay after the last snapshot appends
the entries of markers the file lacks (:meth:`TransactionIndex.append` ignores an entry whose
``lastOffset`` is not above the last one's).

Thread-safety: appends, truncation and file operations run under the owning log's lock; reads
(:meth:`collect`) are lock-free over an entries tuple replaced by each change.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import threading
from pathlib import Path
from typing import Final, NamedTuple

log = logging.getLogger(__name__)

ABORTED_TXN_VERSION: Final = 0
_ENTRY: Final = struct.Struct(">hqqqq")
#: bytes per entry (Kafka's ``AbortedTxn.TOTAL_SIZE``)
ENTRY_SIZE: Final = _ENTRY.size


class AbortedTxn(NamedTuple):
    """One aborted transaction of a partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Entries of an index file's bytes; a cut last entry is ignored."""
    out = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        _version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        out.append(AbortedTxn(pid, first, last, lso))
    return out


class TransactionIndex:
    """See the module docstring."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: tuple[AbortedTxn, ...] | None = None
        #: last offsets of the entries (for bisection), parallel to ``_entries``
        self._last_offsets: list[int] = []
        self._load_lock = threading.Lock()
        self._dirty = False

    # -- reading -----------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        entries = self._entries
        if entries is None:
            entries = self._load()
        return entries

    def mark_loaded_empty(self) -> None:
        """A new segment's index: it has no file yet, so there is nothing to read (a read
        would otherwise try to open the missing file once per segment)."""
        self._last_offsets = []
        self._entries = ()

    def _load(self) -> tuple[AbortedTxn, ...]:
        with self._load_lock:
            if self._entries is not None:
                return self._entries
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            entries = decode_entries(data)
            if len(data) % ENTRY_SIZE:
                log.warning(
                    "%s: ignoring %d trailing bytes (a cut entry)",
                    self.path,
                    len(data) % ENTRY_SIZE,
                )
                self._truncate_file(len(entries) * ENTRY_SIZE)
            self._last_offsets = [e.last_offset for e in entries]
            self._entries = tuple(entries)
            return self._entries

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Kafka's ``collectAbortedTxns``: the entries overlapping [``fetch_offset``,
        ``upper_bound_offset``), and whether the search is complete (an entry's last stable
        offset reached the upper bound: no later segment can hold an overlapping one)."""
        entries = self.entries
        if not entries:
            return [], False
        out = []
        start = bisect.bisect_left(self._last_offsets, fetch_offset)
        for entry in entries[start:]:
            if entry.first_offset < upper_bound_offset:
                out.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    # -- writing (under the log's lock) --------------------------------------------------------

    def append(self, entry: AbortedTxn) -> bool:
        """Appends ``entry``; False (nothing written) when its last offset is not above the last
        entry's (an entry replayed again after a restart)."""
        entries = self.entries
        if entries and entry.last_offset <= entries[-1].last_offset:
            return False
        with open(self.path, "ab") as f:
            f.write(entry.encode())
        self._last_offsets.append(entry.last_offset)
        self._entries = (*entries, entry)
        self._dirty = True
        return True

    def truncate_to(self, offset: int) -> None:
        """Removes the entries whose abort marker is at or after ``offset``."""
        entries = self.entries
        keep = bisect.bisect_left(self._last_offsets, offset)
        if keep == len(entries):
            return
        self._truncate_file(keep * ENTRY_SIZE)
        self._last_offsets = self._last_offsets[:keep]
        self._entries = entries[:keep]

    def reset(self) -> None:
        self.truncate_to(-1)

    def _truncate_file(self, size: int) -> None:
        try:
            os.truncate(self.path, size)
        except FileNotFoundError:
            pass

    def fsync(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename_to(self, path: Path) -> None:
        try:
            os.replace(self.path, path)
        except FileNotFoundError:
            pass
        self.path = path

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path.name}, {len(self.entries)} entries)"
