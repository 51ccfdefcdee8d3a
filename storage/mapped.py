"""A file memory-mapped shared and writable, without keeping a file descriptor.

Python's ``mmap.mmap`` (before 3.13's ``trackfd=False``) keeps a duplicate descriptor for the
life of the mapping; a broker that maps the two index files of each of 10,000 active segments
would hold 20,000 descriptors for nothing. POSIX keeps a mapping valid after its descriptor is
closed, so :class:`MappedFile` maps with libc's ``mmap`` through ctypes and closes the descriptor
at once; writes go to the page cache (other processes reading the file see them at once, as
Kafka's memory-mapped indexes), :meth:`MappedFile.flush` is ``msync``. Where libc cannot be
loaded, it falls back to ``mmap.mmap`` (a descriptor per mapping).

Thread-safety: none; the owner serializes writes, flushes and :meth:`MappedFile.close` (after
which the memory must not be touched: the view is dropped first).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import struct
from pathlib import Path
from typing import Any


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.msync.restype = ctypes.c_int
        libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_MAP_FAILED = ctypes.c_void_p(-1).value
_MS_SYNC = getattr(mmap, "MS_SYNC", 4)


class MappedFile:
    """``path`` (extended to ``size`` bytes if shorter) mapped read-write, shared."""

    __slots__ = ("_addr", "_fallback", "size", "view")

    def __init__(self, path: Path, size: int, *, fd: int | None = None) -> None:
        """Maps ``path`` (or the open ``fd``, which stays the caller's to close)."""
        self.size = size
        self._addr: int | None = None
        self._fallback: mmap.mmap | None = None
        own = fd is None
        if fd is None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
            if _LIBC is not None:
                addr = _LIBC.mmap(
                    None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0
                )
                if addr is None or addr == _MAP_FAILED:
                    err = ctypes.get_errno()
                    raise OSError(err, f"mmap of {path} failed: {os.strerror(err)}")
                self._addr = addr
                buf = (ctypes.c_char * size).from_address(addr)
                #: the mapped bytes (None once closed)
                self.view: memoryview | None = memoryview(buf).cast("B")
            else:
                self._fallback = mmap.mmap(fd, size)
                self.view = memoryview(self._fallback)
        finally:
            if own:
                os.close(fd)

    def write(self, position: int, data: bytes) -> None:
        view = self.view
        if view is None:
            raise ValueError("the mapping is closed")
        view[position : position + len(data)] = data

    def pack_into(self, fmt: struct.Struct, position: int, *values: int) -> None:
        view = self.view
        if view is None:
            raise ValueError("the mapping is closed")
        fmt.pack_into(view, position, *values)

    def flush(self) -> None:
        """``msync``: the mapped pages reach the disk (ValueError once closed)."""
        addr = self._addr
        if addr is not None:
            if _LIBC.msync(addr, self.size, _MS_SYNC) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"msync failed: {os.strerror(err)}")
        elif self._fallback is not None:
            self._fallback.flush()
        else:
            raise ValueError("the mapping is closed")

    @property
    def closed(self) -> bool:
        return self.view is None

    def close(self) -> None:
        """Unmaps (what was written stays in the file)."""
        view, self.view = self.view, None
        if view is not None:
            view.release()
        addr, self._addr = self._addr, None
        if addr is not None:
            _LIBC.munmap(addr, self.size)
        fallback, self._fallback = self._fallback, None
        if fallback is not None:
            fallback.close()
