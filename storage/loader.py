"""LogLoader: opens a partition directory, finishes interrupted operations, recovers after a
crash, and returns a ready PartitionLog."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from protocol.records import batch as rb
from storage import files
from storage.checkpoint import read_partition_metadata
from storage.config import LogConfig
from storage.epoch import LeaderEpochFileCache
from storage.errors import InconsistentTopicId
from storage.log import PartitionLog
from storage.segment import LogSegment
from storage.segments import LogSegments

log = logging.getLogger(__name__)


@dataclass
class RecoveryReport:
    """What loading a log found and did (a plain value for the caller; nothing on disk)."""

    segments_loaded: int = 0
    segments_recovered: int = 0
    #: (file, position, bytes dropped) for every truncation
    truncations: list[tuple[Path, int, int]] = field(default_factory=list)
    segments_deleted_after_corruption: list[int] = field(default_factory=list)
    files_removed: list[Path] = field(default_factory=list)
    swaps_completed: list[Path] = field(default_factory=list)
    #: recovered data the caller must make durable (``load_log(defer_sync=True)``)
    needs_sync: bool = False

    @property
    def bytes_truncated(self) -> int:
        return sum(n for _, _, n in self.truncations)


def _remove(path: Path, report: RecoveryReport) -> None:
    try:
        os.unlink(path)
        report.files_removed.append(path)
    except FileNotFoundError:
        pass


def _strip_suffix(name: str, suffix: str) -> str:
    return name[: -len(suffix)] if name.endswith(suffix) else name


def _clean_directory(
    directory: Path, config: LogConfig, now_ms: int, report: RecoveryReport
) -> list[str]:
    """Removes ``.deleted``/``.cleaned``/``.tmp`` files and orphan indexes; completes ``.swap``
    files (a compaction that passed its commit point). Returns the names left."""
    names = sorted(os.listdir(directory))
    swaps: list[str] = []
    removed = 0
    for name in names:
        if name.endswith(
            (files.DELETED_FILE_SUFFIX, files.CLEANED_FILE_SUFFIX, files.TMP_FILE_SUFFIX)
        ):
            _remove(directory / name, report)
            removed += 1
        elif name.endswith(files.SWAP_FILE_SUFFIX):
            swaps.append(name)
    if removed or swaps:
        names = sorted(os.listdir(directory))
    # a .swap log replaces the segments its offsets cover
    for name in swaps:
        if not name.endswith(files.LOG_FILE_SUFFIX + files.SWAP_FILE_SUFFIX):
            continue
        try:
            base = files.offset_from_file_name(name)
        except ValueError:
            continue
        swap = LogSegment.open(
            directory, base, config, created_ms=now_ms, suffix=files.SWAP_FILE_SUFFIX
        )
        swap.recover()
        next_offset = swap.read_next_offset()
        swap.close()
        for other in sorted(os.listdir(directory)):
            if not other.endswith(files.LOG_FILE_SUFFIX):
                continue
            try:
                other_base = files.offset_from_file_name(other)
            except ValueError:
                continue
            if base <= other_base < next_offset:
                for suffix in (
                    files.LOG_FILE_SUFFIX,
                    files.INDEX_FILE_SUFFIX,
                    files.TIME_INDEX_FILE_SUFFIX,
                    files.TXN_INDEX_FILE_SUFFIX,
                ):
                    _remove(
                        directory / (files.filename_prefix_from_offset(other_base) + suffix), report
                    )
        for suffix in (
            files.LOG_FILE_SUFFIX,
            files.INDEX_FILE_SUFFIX,
            files.TIME_INDEX_FILE_SUFFIX,
            files.TXN_INDEX_FILE_SUFFIX,
        ):
            src = directory / (
                files.filename_prefix_from_offset(base) + suffix + files.SWAP_FILE_SUFFIX
            )
            if src.exists():
                os.replace(src, directory / _strip_suffix(src.name, files.SWAP_FILE_SUFFIX))
        report.swaps_completed.append(directory / name)
        log.info("%s: completed the interrupted compaction swap %s", directory, name)
    if swaps:
        names = sorted(os.listdir(directory))
        # leftover swap index files without a log
        for name in names:
            if name.endswith(files.SWAP_FILE_SUFFIX):
                _remove(directory / name, report)
        names = [n for n in names if not n.endswith(files.SWAP_FILE_SUFFIX)]
    # index files whose log is gone
    logs = {n for n in names if n.endswith(files.LOG_FILE_SUFFIX)}
    orphans = []
    for name in names:
        for suffix in (
            files.INDEX_FILE_SUFFIX,
            files.TIME_INDEX_FILE_SUFFIX,
            files.TXN_INDEX_FILE_SUFFIX,
        ):
            if name.endswith(suffix) and name[: -len(suffix)] + files.LOG_FILE_SUFFIX not in logs:
                _remove(directory / name, report)
                orphans.append(name)
    return [n for n in names if n not in orphans] if orphans else names


def load_log(
    directory: Path,
    config: LogConfig,
    *,
    recovery_point: int = 0,
    log_start_offset: int | None = None,
    had_clean_shutdown: bool = False,
    topic_id: uuid.UUID | None = None,
    clock: Callable[[], int],
    report: RecoveryReport | None = None,
    defer_sync: bool = False,
) -> PartitionLog:
    """Opens (or initializes) the log in ``directory``.

    After an unclean shutdown every segment from the one holding ``recovery_point`` on is
    re-validated batch by batch (size, magic, CRC-32C, offsets); the first bad byte and
    everything after it goes, including later segments. After a clean shutdown only the tail of
    the last segment is checked. Indexes that fail their sanity check are rebuilt when first
    used. Recovered segments are made durable before this returns, or, with ``defer_sync``, by
    the caller (one file-system sync after loading every log: ``report.needs_sync``).
    """
    report = report if report is not None else RecoveryReport()
    topic, partition = files.parse_log_dir_name(directory.name)
    #: a directory made here: no file to read, clean or recover in it
    fresh = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    now = clock()

    stored_id = read_partition_metadata(directory / files.PARTITION_METADATA_FILE)
    if topic_id is not None and stored_id is not None and stored_id != topic_id:
        raise InconsistentTopicId(
            f"{directory}: partition.metadata has topic id {stored_id}, expected {topic_id}"
        )

    names = _clean_directory(directory, config, now, report)

    bases = []
    for name in names:
        if name.endswith(files.LOG_FILE_SUFFIX):
            try:
                bases.append(files.offset_from_file_name(name))
            except ValueError:
                log.warning("%s: ignoring %s", directory, name)
    bases.sort()
    #: a brand-new log: its checkpoint files need not be durable at once (they are written
    #: again if lost), which keeps creating many partitions from fsyncing every one of them
    new_log = not bases
    segments = [LogSegment.open(directory, b, config, created_ms=now) for b in bases]
    report.segments_loaded = len(segments)

    epoch_cache = LeaderEpochFileCache(directory / files.LEADER_EPOCH_CHECKPOINT)

    def on_batch(header: rb.BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        if epoch >= 0:
            latest = epoch_cache.latest_epoch()
            if latest is None or epoch > latest:
                epoch_cache.assign(epoch, header.base_offset, flush=False)

    if segments and not had_clean_shutdown:
        # recover from the segment holding the recovery point
        start = 0
        for i, segment in enumerate(segments):
            if segment.base_offset <= recovery_point:
                start = i
        # the cache may name epochs from data we are about to re-validate
        epoch_cache.truncate_from_end(segments[start].base_offset, flush=False)
        keep = len(segments)
        for i in range(start, len(segments)):
            segment = segments[i]
            truncated = segment.recover(on_batch=on_batch, active=i == len(segments) - 1)
            report.segments_recovered += 1
            if truncated > 0:
                report.truncations.append((segment.log.path, segment.size, truncated))
                keep = i + 1
                break
        for segment in segments[keep:]:
            log.warning(
                "%s: deleting segment %d, which follows corrupt data",
                directory,
                segment.base_offset,
            )
            report.segments_deleted_after_corruption.append(segment.base_offset)
            segment.close()
            segment.delete_files()
        segments = segments[:keep]
        # recovered data is valid but maybe not durable yet: make it so
        if defer_sync:
            for segment in segments[start:]:
                segment.write_indexes()
            report.needs_sync = True
        else:
            for segment in segments[start:]:
                segment.flush()
    elif segments:
        last = segments[-1]
        tail_end = last.size
        info = last.last_batch()
        valid_end = info.position + info.size if info is not None else 0
        if valid_end != tail_end:
            log.warning(
                "%s: the last segment has %d bytes after its last whole batch; recovering it",
                directory,
                tail_end - valid_end,
            )
            truncated = last.recover(on_batch=on_batch, active=True)
            if truncated:
                report.truncations.append((last.log.path, last.size, truncated))
            report.segments_recovered += 1

    if not segments:
        start_offset = log_start_offset or 0
        segments = [
            LogSegment.create(directory, start_offset, config, created_ms=now, active=False)
        ]

    next_offset = segments[-1].read_next_offset()
    first_base = segments[0].base_offset
    start_offset = first_base if log_start_offset is None else max(log_start_offset, first_base)
    if start_offset > next_offset:
        # everything below the checkpointed log start offset is gone
        for segment in segments:
            segment.close()
            segment.delete_files()
        segments = [
            LogSegment.create(directory, start_offset, config, created_ms=now, active=False)
        ]
        next_offset = start_offset
        epoch_cache.clear(flush=False)
    segments[-1].make_active(config)
    epoch_cache.truncate_from_end(next_offset, flush=False)
    epoch_cache.truncate_from_start(start_offset, flush=False)
    # not fsynced: until the page cache writes it, the file may keep entries past the log end,
    # which every load truncates again (Kafka flushes this truncation in the background:
    # LeaderEpochFileCache.truncateFromEndAsyncFlush). An empty log loses its one entry here at
    # each start, so an fsync per empty partition made a restart of thousands of them slow.
    # A fresh log's empty checkpoint is left to its first epoch (a leader's, at once): writing
    # it empty first made one more file for each partition of a new topic
    if not fresh:
        epoch_cache.flush(fsync=False)

    partition_log = PartitionLog(
        directory,
        topic,
        partition,
        config,
        segments=LogSegments(segments),
        next_offset=next_offset,
        log_start_offset=start_offset,
        recovery_point=next_offset,  # flushed at close, or just recovered and flushed
        leader_epoch_cache=epoch_cache,
        topic_id=stored_id if topic_id is None else topic_id,
        clock=clock,
    )
    if topic_id is not None and stored_id is None:
        partition_log.write_partition_metadata(topic_id, fsync=not new_log)
    return partition_log
