"""File and directory naming, in one place (Kafka's LogFileUtils).

A partition lives in ``<log.dir>/<topic>-<partition>/``; each segment is a set of files named by
its base offset, zero-padded to 20 digits so ``ls`` sorts them numerically::

    00000000000000000000.log        record batches exactly as on the wire
    00000000000000000000.index      offset index: (int32 relative offset, int32 position) entries
    00000000000000000000.timeindex  time index: (int64 timestamp, int32 relative offset) entries

Suffixes mark files in transit: ``.deleted`` (waiting for ``file.delete.delay.ms``), ``.cleaned``
(a compaction result being written), ``.swap`` (a compaction result about to replace segments).
A deleted partition directory becomes ``<topic>-<partition>.<uuid hex>-delete``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

_A = TypeVar("_A")
_R = TypeVar("_R")

LOG_FILE_SUFFIX: Final = ".log"
INDEX_FILE_SUFFIX: Final = ".index"
TIME_INDEX_FILE_SUFFIX: Final = ".timeindex"
TXN_INDEX_FILE_SUFFIX: Final = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX: Final = ".snapshot"
DELETED_FILE_SUFFIX: Final = ".deleted"
CLEANED_FILE_SUFFIX: Final = ".cleaned"
SWAP_FILE_SUFFIX: Final = ".swap"
TMP_FILE_SUFFIX: Final = ".tmp"

DELETE_DIR_SUFFIX: Final = "-delete"
FUTURE_DIR_SUFFIX: Final = "-future"
STRAY_DIR_SUFFIX: Final = "-stray"

#: Per-log-dir files.
RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
META_PROPERTIES: Final = "meta.properties"
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
LOCK_FILE: Final = ".lock"

#: Per-partition files.
PARTITION_METADATA_FILE: Final = "partition.metadata"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"

OFFSET_DIGITS: Final = 20


def filename_prefix_from_offset(offset: int) -> str:
    """``42`` -> ``"00000000000000000042"``."""
    return f"{offset:0{OFFSET_DIGITS}d}"


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file name starts with (``"...042.log.deleted"`` -> 42)."""
    prefix = name.split(".", 1)[0]
    if len(prefix) != OFFSET_DIGITS or not prefix.isdigit():
        raise ValueError(f"{name!r} is not a segment file name")
    return int(prefix)


def log_file(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / (filename_prefix_from_offset(base_offset) + LOG_FILE_SUFFIX + suffix)


def index_file(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / (filename_prefix_from_offset(base_offset) + INDEX_FILE_SUFFIX + suffix)


def time_index_file(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / (filename_prefix_from_offset(base_offset) + TIME_INDEX_FILE_SUFFIX + suffix)


def txn_index_file(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / (filename_prefix_from_offset(base_offset) + TXN_INDEX_FILE_SUFFIX + suffix)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_log_dir_name(name: str) -> tuple[str, int]:
    """``"my-topic-3"`` -> ``("my-topic", 3)``; also accepts ``-delete``/``-future``/``-stray``
    names (``"t-0.<uuid>-delete"``). Raises ValueError for anything else."""
    base = name
    for suffix in (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            dot = base.rfind(".")
            if dot < 0:
                raise ValueError(f"{name!r} is not a partition directory name")
            base = base[:dot]
            break
    topic, sep, partition = base.rpartition("-")
    if not sep or not topic or not partition.isdigit() or not partition.isascii():
        raise ValueError(f"{name!r} is not a partition directory name")
    return topic, int(partition)


def deleted_log_dir_name(topic: str, partition: int) -> str:
    """The name a partition directory is renamed to when its log is deleted."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


#: per thread: the directories whose fsyncs a :func:`deferred_sync` block owes (None outside one)
_DEFERRED = threading.local()


@contextlib.contextmanager
def deferred_sync() -> Iterator[None]:
    """Within the block, on this thread, :func:`write_atomically` and :func:`fsync_dir` skip
    their fsyncs and note the directory; at the end, one :func:`sync_filesystem` per file system
    noted makes all of it durable at once. Creating a topic of thousands of partitions writes
    a few small files in each: one flush instead of an fsync per file halves it. Nothing the
    block wrote is to be relied on as durable before it ends (a SIGKILL loses nothing: the
    page cache survives it). A nested block leaves the sync to the outermost one."""
    if getattr(_DEFERRED, "dirs", None) is not None:
        yield
        return
    dirs: set[Path] = set()
    _DEFERRED.dirs = dirs
    try:
        yield
    finally:
        _DEFERRED.dirs = None
        synced: set[int] = set()
        for directory in sorted(dirs):
            try:
                device = os.stat(directory).st_dev
            except FileNotFoundError:  # deleted since: nothing of it to keep
                continue
            if device not in synced:
                sync_filesystem(directory)
                synced.add(device)


def sharing_deferred_sync(fn: Callable[[_A], _R]) -> Callable[[_A], _R]:
    """``fn``, made to run on another thread (a pool's) inside this thread's
    :func:`deferred_sync` block: the fsyncs it skips are owed by that block, whose end makes
    them durable. ``fn`` itself when no block is open here. Call the result only while the
    block is open."""
    dirs: set[Path] | None = getattr(_DEFERRED, "dirs", None)
    if dirs is None:
        return fn

    def run(arg: _A) -> _R:
        outer = getattr(_DEFERRED, "dirs", None)
        _DEFERRED.dirs = dirs
        try:
            return fn(arg)
        finally:
            _DEFERRED.dirs = outer

    return run


def _deferring(directory: Path) -> bool:
    """Whether a :func:`deferred_sync` block on this thread takes this fsync (noting where)."""
    dirs: set[Path] | None = getattr(_DEFERRED, "dirs", None)
    if dirs is None:
        return False
    dirs.add(directory)
    return True


def fsync_dir(directory: Path) -> None:
    """Makes renames and file creations in ``directory`` durable."""
    if _deferring(directory):
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_filesystem(directory: Path) -> None:
    """Makes everything written to the file system holding ``directory`` durable, in one call
    (Linux ``syncfs``; elsewhere ``sync``): cheaper than fsyncing thousands of files one by
    one, as recovery after a crash would."""
    libc = _libc()
    if libc is not None:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    os.sync()


def _libc() -> Any:
    global _LIBC
    if _LIBC is False:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            lib.syncfs.argtypes = [ctypes.c_int]
            lib.syncfs.restype = ctypes.c_int
            _LIBC = lib
        except (OSError, AttributeError):
            _LIBC = None
    return _LIBC


_LIBC: Any = False


def write_atomically(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Writes ``path.tmp``, fsyncs it, renames it over ``path`` and fsyncs the directory: a crash
    leaves either the old or the new content (Kafka's checkpoint files work this way)."""
    tmp = path.with_name(path.name + TMP_FILE_SUFFIX)
    if fsync and _deferring(path.parent):
        fsync = False
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)
