"""FileRecords: one segment's ``.log`` file, and the batch-header scans over it.

A descriptor lives in a :class:`FileHandle`, closed when the last holder lets go of it (or
explicitly at shutdown): a :class:`FetchRegion` and every read in progress hold the handle, so a
region handed to ``sendfile()`` keeps its descriptor valid even after retention has renamed and
unlinked the file (POSIX keeps the inode alive while it is open), or after the file was closed
for lack of descriptors. A descriptor number is therefore never reused under a read or a region
still in flight.

Descriptors at scale: the active segment's file is open while it takes appends (*pinned*).
Segments that no longer take appends open their file when first read, and at most
:data:`OPEN_FILES`' ``max_open`` of them stay open (``log.segment.open.files.max``); opening one
more closes the least recently opened. Kafka keeps every segment's file open (it needs a
descriptor per segment, and tells operators to raise the limit); this keeps a broker with tens of
thousands of segments within the usual limits.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

from protocol.records import batch as rb

#: Bytes read per pread while walking batch headers.
SCAN_CHUNK: Final = 16 * 1024
#: a region of a segment that takes no appends is read into memory at once when no larger
#: (see :class:`FetchRegion`)
SMALL_REGION_BYTES: Final = 64 * 1024


class Chunk(NamedTuple):
    """Bytes a header scan read: ``data`` from file position ``start``."""

    start: int
    data: bytes


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


class FileHandle:
    """An open descriptor, closed when no one holds the handle any more (or by :meth:`close`)."""

    __slots__ = ("__weakref__", "_finalizer", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._finalizer = weakref.finalize(self, _close_fd, fd)

    def close(self) -> None:
        self._finalizer()


#: guards opening and releasing handles, and the budget's bookkeeping
_OPEN_LOCK = threading.RLock()


class OpenFileBudget:
    """How many files of segments that take no appends stay open; the least recently opened is
    closed first (its handle released: reads and regions holding it keep it)."""

    def __init__(self, max_open: int) -> None:
        self.max_open = max(max_open, 1)
        self._open: OrderedDict[int, weakref.ref[FileRecords]] = OrderedDict()
        #: files closed to stay within the budget (a metric)
        self.evictions = 0

    @property
    def open_count(self) -> int:
        return len(self._open)

    def _opened(self, records: FileRecords) -> None:
        """Under _OPEN_LOCK: ``records`` opened its file; the oldest beyond the budget close."""
        key = id(records)

        def gone(_ref: weakref.ref[FileRecords]) -> None:
            self._gone(key)

        self._open[key] = weakref.ref(records, gone)
        self._open.move_to_end(key)
        while len(self._open) > self.max_open:
            _, ref = self._open.popitem(last=False)
            victim = ref()
            if victim is not None and victim._handle is not None and not victim._pinned:
                victim._handle = None
                self.evictions += 1

    def _forget(self, records: FileRecords) -> None:
        self._open.pop(id(records), None)

    def _gone(self, key: int) -> None:
        with _OPEN_LOCK:
            ref = self._open.get(key)
            if ref is not None and ref() is None:
                del self._open[key]


#: the broker's budget (the log manager sets ``max_open`` from ``log.segment.open.files.max``)
OPEN_FILES = OpenFileBudget(1000)


class FileRecords:
    """A segment's ``.log`` file.

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
    (the log's lock); reads use ``pread`` on a handle they hold and need no lock. The file opens
    when first used (``lazy``) unless :meth:`pin`-ned (see the module docstring).
    """

    __slots__ = ("__weakref__", "_closed", "_handle", "_path", "_pinned", "size")

    def __init__(
        self,
        path: Path,
        *,
        size: int | None = None,
        create: bool = False,
        lazy: bool = False,
    ) -> None:
        self._path = path
        self._closed = False
        self._pinned = not lazy
        self._handle: FileHandle | None = None
        if lazy:
            #: bytes of valid data (the file may be longer when preallocated)
            self.size: int = os.stat(path).st_size if size is None else size
            return
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        handle = FileHandle(os.open(path, flags, 0o644))
        self._handle = handle
        self.size = os.fstat(handle.fd).st_size if size is None else size

    def handle(self) -> FileHandle:
        """The open file (opened now if it is not): hold it for as long as its descriptor is
        used."""
        h = self._handle
        if h is not None:
            return h
        with _OPEN_LOCK:
            h = self._handle
            if h is not None:
                return h
            if self._closed:
                raise ValueError(f"{self._path} is closed")
            h = FileHandle(os.open(self._path, os.O_RDWR))
            self._handle = h
            if not self._pinned:
                OPEN_FILES._opened(self)
            return h

    @property
    def fd(self) -> int:
        """The descriptor of a pinned file (the active segment's); others use :meth:`handle`."""
        return self.handle().fd

    @property
    def pinned(self) -> bool:
        """Whether the file is kept open (it takes appends): its small regions are not read into
        memory (see :class:`FetchRegion`)."""
        return self._pinned

    @property
    def is_open(self) -> bool:
        return self._handle is not None

    def pin(self) -> None:
        """Keeps the file open (the segment takes appends, or its file is about to go: readers
        must keep reading it)."""
        with _OPEN_LOCK:
            self._pinned = True
            OPEN_FILES._forget(self)
        self.handle()

    def unpin(self) -> None:
        """The segment takes no more appends: its file may be closed to save descriptors."""
        with _OPEN_LOCK:
            if not self._pinned:
                return
            self._pinned = False
            if self._handle is not None:
                OPEN_FILES._opened(self)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def closed(self) -> bool:
        return self._closed

    def file_length(self) -> int:
        return os.fstat(self.handle().fd).st_size

    def preallocate(self, length: int) -> None:
        """Extends the file to ``length`` bytes (zeros), keeping :attr:`size`."""
        if length > self.file_length():
            h = self.handle()
            try:
                os.posix_fallocate(h.fd, 0, length)
            except OSError:
                os.ftruncate(h.fd, length)

    def append(self, data: rb.Buffer) -> int:
        """Writes ``data`` at :attr:`size` and publishes the new size. Returns the position the
        data starts at. On an I/O error the file is cut back to the old size and the error is
        re-raised."""
        position = self.size
        total = len(data)
        h = self.handle()
        fd = h.fd
        try:
            done = os.pwrite(fd, data, position)
            if done < total:
                view = memoryview(data)
                while done < total:
                    done += os.pwrite(fd, view[done:], position + done)
        except OSError:
            try:
                os.ftruncate(fd, position)
            except OSError:
                pass
            raise
        self.size = position + total
        return position

    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (fewer at the end of the file)."""
        return _pread(self.handle(), length, position)

    def truncate_to(self, size: int) -> int:
        """Cuts the data to ``size`` bytes; returns the bytes removed."""
        if size < 0 or size > self.size:
            raise ValueError(f"cannot truncate {self._path} of {self.size} bytes to {size}")
        removed = self.size - size
        h = self.handle()
        os.ftruncate(h.fd, size)
        self.size = size
        return removed

    def trim(self) -> None:
        """Drops preallocated space after :attr:`size`."""
        h = self.handle()
        if os.fstat(h.fd).st_size != self.size:
            os.ftruncate(h.fd, self.size)

    def flush(self) -> None:
        """fsyncs the file (a file not open has nothing unsynced of ours: it was synced or
        closed since its last write)."""
        h = self._handle
        if h is not None:
            os.fsync(h.fd)

    def rename_to(self, path: Path) -> None:
        os.replace(self._path, path)
        self._path = path

    def update_path(self, path: Path) -> None:
        """The file moved with its directory."""
        self._path = path

    def close(self) -> None:
        """Closes the descriptor now (shutdown). Never call this on a file a region may still
        be sending from; retention only drops its reference and lets the finalizer close it."""
        with _OPEN_LOCK:
            self._closed = True
            h, self._handle = self._handle, None
            OPEN_FILES._forget(self)
        if h is not None:
            h.close()

    # --- header scans -------------------------------------------------------------------------

    def batches_from(
        self,
        position: int,
        end: int | None = None,
        chunks: list[Chunk] | None = None,
    ) -> Iterator[BatchInfo]:
        """Headers of the batches from ``position`` (a batch start) up to ``end`` (default:
        :attr:`size`), read in chunks. Stops at the first header that is cut short or claims
        fewer bytes than a header; CRCs are not checked (the recovery scan does that). Each
        chunk read is appended to ``chunks`` when given (a fetch sends small regions from
        them, see :class:`FetchRegion`)."""
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
                if chunks is not None:
                    chunks.append(Chunk(pos, buf))
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

    def search_for_offset(
        self, target: int, position: int, end: int, chunks: list[Chunk] | None = None
    ) -> BatchInfo | None:
        """The first batch at or after ``position`` (below ``end``) whose last offset is
        ``>= target``: the batch that contains ``target`` or the first one after it (the bytes
        read on the way are appended to ``chunks`` when given)."""
        for info in self.batches_from(position, end, chunks):
            if info.last_offset >= target:
                return info
        return None

    def __repr__(self) -> str:
        return f"FileRecords({str(self._path)!r}, size={self.size})"


def _pread(handle: FileHandle, length: int, position: int) -> bytes:
    """Up to ``length`` bytes at ``position`` of the file (fewer at its end)."""
    fd = handle.fd
    out = os.pread(fd, length, position)
    if len(out) < length and out:
        parts = [out]
        got = len(out)
        while got < length:
            more = os.pread(fd, length - got, position + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        out = b"".join(parts)
    return out


class FetchRegion:
    """Whole batches of one segment file for the broker to ``sendfile()``.

    ``fd``/``position``/``length`` describe the bytes; the region keeps its :class:`FileRecords`
    alive, so the descriptor stays open for as long as the region exists, whatever retention or
    compaction does meanwhile. ``first_offset`` is the base offset of the first batch (it may be
    below the offset asked for: a fetch starts at the batch containing it).

    A small region of a segment taking no appends is read into memory at once (see below): from
    the bytes the header scan already read when it lies whole inside one of its reads
    (``chunks``), else with a ``pread`` of its own. Any other region is sent from the file with
    ``sendfile``, the active segment's always (its regions hold no copy of the records, however
    many partitions a fetch reads).

    On-disk format: none of its own (a window on a ``.log`` file). Crash: nothing to leave.
    Thread-safety: immutable; :meth:`read` uses ``pread``, so any number of threads may read or
    ``sendfile()`` the same region at once. Only a truncation of the log (replication) can make
    the bytes shorter than ``length`` meanwhile; ``sendfile`` then sends fewer bytes.
    """

    __slots__ = ("data", "first_offset", "handle", "length", "position", "records")

    def __init__(
        self,
        records: FileRecords,
        position: int,
        length: int,
        first_offset: int,
        chunks: list[Chunk] | None = None,
    ) -> None:
        self.records = records
        self.position = position
        self.length = length
        self.first_offset = first_offset
        #: the open file while the region exists (None when its bytes are in ``data``)
        self.handle: FileHandle | None = None
        #: the bytes, when in memory (else None: sent from the file)
        self.data: bytes | None = None
        if not records._pinned and length <= SMALL_REGION_BYTES:
            # a small read of a segment taking no appends is read now, so the region holds no
            # descriptor: a fetch over thousands of partitions would otherwise hold one per
            # partition until its response is sent, whatever the open-file budget says
            if chunks and length <= SCAN_CHUNK:
                for start, buf in chunks:
                    rel = position - start
                    if rel >= 0 and rel + length <= len(buf):
                        self.data = (
                            buf if rel == 0 and length == len(buf) else buf[rel : rel + length]
                        )
                        return
            self.data = _pread(records.handle(), length, position)
            self.length = len(self.data)
        else:
            self.handle = records.handle()

    @property
    def fd(self) -> int:
        """The descriptor to ``sendfile`` from (only for a region not read at once)."""
        handle = self.handle
        if handle is None:
            raise ValueError("the region was read into memory: use .data")
        return handle.fd

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        """The region's bytes (tests, dump, and the non-sendfile fallback)."""
        data = self.data
        if data is not None:
            return data
        assert self.handle is not None
        return _pread(self.handle, self.length, self.position)

    def __repr__(self) -> str:
        return (
            f"FetchRegion({self.records.path.name}, position={self.position}, "
            f"length={self.length}, first_offset={self.first_offset})"
        )
