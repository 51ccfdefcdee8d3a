"""FileRecords: one segment's ``.log`` file, and the batch-header scans over it.

The file descriptor belongs to the :class:`FileRecords` object and is closed only when that object
is garbage collected or explicitly closed at shutdown: a :class:`FetchRegion` holds a reference to
it, so a region handed to ``sendfile()`` keeps its descriptor valid even after retention has
renamed and unlinked the file (POSIX keeps the inode alive while it is open). A descriptor number
is therefore never reused under a region still in flight.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

from protocol.records import batch as rb

#: Bytes read per pread while walking batch headers.
SCAN_CHUNK: Final = 16 * 1024


class BatchInfo(NamedTuple):
    """Where a batch sits in a segment file and what its header says (no CRC check). An
    immutable value: nothing on disk of its own, safe to share between threads."""

    position: int
    base_offset: int
    size: int
    last_offset: int
    max_timestamp: int
    magic: int
    attributes: int
    producer_id: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & rb.CONTROL_MASK)


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class FileRecords:
    """An open ``.log`` file.

    On-disk format: record batches (magic 2), back to back, exactly as on the wire; with
    ``preallocate`` the file is extended to ``segment.bytes`` up front (zeros after the data) and
    trimmed when the segment rolls or closes.

    Crash: whatever prefix of the appended bytes reached the disk, possibly followed by zeros or
    garbage if the inode size was updated before the data blocks (Kafka's log recovery handles
    both); the loader's
    recovery truncates at the first invalid batch.

    Thread-safety: :attr:`size` is the byte count of complete appended batches and is published
    only after a write finished, so readers that take ``size`` once and read below it never see a
    partial batch. Writes (:meth:`append`, :meth:`truncate_to`) must be serialized by the owner
    (the log's lock); reads use ``pread`` and need no lock.
    """

    __slots__ = ("__weakref__", "_finalizer", "_path", "fd", "size")

    def __init__(self, path: Path, *, size: int | None = None, create: bool = False) -> None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self.fd: int = os.open(path, flags, 0o644)
        self._finalizer = weakref.finalize(self, _close_fd, self.fd)
        self._path = path
        #: bytes of valid data (the file may be longer when preallocated)
        self.size: int = os.fstat(self.fd).st_size if size is None else size

    @property
    def path(self) -> Path:
        return self._path

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def file_length(self) -> int:
        return os.fstat(self.fd).st_size

    def preallocate(self, length: int) -> None:
        """Extends the file to ``length`` bytes (zeros), keeping :attr:`size`."""
        if length > self.file_length():
            try:
                os.posix_fallocate(self.fd, 0, length)
            except OSError:
                os.ftruncate(self.fd, length)

    def append(self, data: rb.Buffer) -> int:
        """Writes ``data`` at :attr:`size` and publishes the new size. Returns the position the
        data starts at. On an I/O error the file is cut back to the old size and the error is
        re-raised."""
        position = self.size
        total = len(data)
        try:
            done = os.pwrite(self.fd, data, position)
            if done < total:
                view = memoryview(data)
                while done < total:
                    done += os.pwrite(self.fd, view[done:], position + done)
        except OSError:
            try:
                os.ftruncate(self.fd, position)
            except OSError:
                pass
            raise
        self.size = position + total
        return position

    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (fewer at the end of the file)."""
        out = os.pread(self.fd, length, position)
        if len(out) < length and out:
            parts = [out]
            got = len(out)
            while got < length:
                more = os.pread(self.fd, length - got, position + got)
                if not more:
                    break
                parts.append(more)
                got += len(more)
            out = b"".join(parts)
        return out

    def truncate_to(self, size: int) -> int:
        """Cuts the data to ``size`` bytes; returns the bytes removed."""
        if size < 0 or size > self.size:
            raise ValueError(f"cannot truncate {self._path} of {self.size} bytes to {size}")
        removed = self.size - size
        os.ftruncate(self.fd, size)
        self.size = size
        return removed

    def trim(self) -> None:
        """Drops preallocated space after :attr:`size`."""
        if self.file_length() != self.size:
            os.ftruncate(self.fd, self.size)

    def flush(self) -> None:
        os.fsync(self.fd)

    def rename_to(self, path: Path) -> None:
        os.replace(self._path, path)
        self._path = path

    def update_path(self, path: Path) -> None:
        """The file moved with its directory."""
        self._path = path

    def close(self) -> None:
        """Closes the descriptor now (shutdown). Never call this on a file a region may still
        be sending from; retention only drops its reference and lets the finalizer close it."""
        self._finalizer()

    # --- header scans -------------------------------------------------------------------------

    def batches_from(self, position: int, end: int | None = None) -> Iterator[BatchInfo]:
        """Headers of the batches from ``position`` (a batch start) up to ``end`` (default:
        :attr:`size`), read in chunks. Stops at the first header that is cut short or claims
        fewer bytes than a header; CRCs are not checked (the recovery scan does that)."""
        limit = self.size if end is None else end
        pos = position
        buf = b""
        buf_start = pos
        unpack = rb.HEADER.unpack_from
        header_size = rb.HEADER_SIZE
        while pos + rb.LOG_OVERHEAD <= limit:
            rel = pos - buf_start
            if rel < 0 or rel + header_size > len(buf):
                buf = self.pread(min(SCAN_CHUNK, limit - pos), pos)
                buf_start = pos
                rel = 0
                if len(buf) < header_size:
                    return  # the tail is shorter than a v2 header: cut short, or garbage
            (base_offset, length, _epoch, magic, _crc, attributes, delta, _base_ts, max_ts,
             producer_id, _producer_epoch, _base_sequence, _count) = unpack(buf, rel)  # fmt: skip
            size = length + rb.LOG_OVERHEAD
            if length < header_size - rb.LOG_OVERHEAD or pos + size > limit:
                return
            yield BatchInfo(
                pos, base_offset, size, base_offset + delta, max_ts, magic, attributes, producer_id
            )
            pos += size

    def search_for_offset(self, target: int, position: int, end: int) -> BatchInfo | None:
        """The first batch at or after ``position`` (below ``end``) whose last offset is
        ``>= target``: the batch that contains ``target`` or the first one after it."""
        for info in self.batches_from(position, end):
            if info.last_offset >= target:
                return info
        return None

    def __repr__(self) -> str:
        return f"FileRecords({str(self._path)!r}, size={self.size})"


class FetchRegion:
    """Whole batches of one segment file for the broker to ``sendfile()``.

    ``fd``/``position``/``length`` describe the bytes; the region keeps its :class:`FileRecords`
    alive, so the descriptor stays open for as long as the region exists, whatever retention or
    compaction does meanwhile. ``first_offset`` is the base offset of the first batch (it may be
    below the offset asked for: a fetch starts at the batch containing it).

    On-disk format: none of its own (a window on a ``.log`` file). Crash: nothing to leave.
    Thread-safety: immutable; :meth:`read` uses ``pread``, so any number of threads may read or
    ``sendfile()`` the same region at once. Only a truncation of the log (replication) can make
    the bytes shorter than ``length`` meanwhile; ``sendfile`` then sends fewer bytes.
    """

    __slots__ = ("first_offset", "length", "position", "records")

    def __init__(self, records: FileRecords, position: int, length: int, first_offset: int) -> None:
        self.records = records
        self.position = position
        self.length = length
        self.first_offset = first_offset

    @property
    def fd(self) -> int:
        return self.records.fd

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        """The region's bytes (tests, dump, and the non-sendfile fallback)."""
        return self.records.pread(self.length, self.position)

    def __repr__(self) -> str:
        return (
            f"FetchRegion({self.records.path.name}, position={self.position}, "
            f"length={self.length}, first_offset={self.first_offset})"
        )
