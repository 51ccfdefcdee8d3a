"""LogManager: every partition log of the broker, across its log directories."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from storage import file_records, files
from storage.checkpoint import (
    CorruptCheckpoint,
    MetaProperties,
    read_meta_properties,
    read_offsets_checkpoint,
    write_clean_shutdown_file,
    write_meta_properties,
    write_offsets_checkpoint,
)
from storage.cleaner import LogCleaner
from storage.config import LogConfig, LogManagerConfig
from storage.errors import (
    InconsistentBrokerMetadata,
    KafkaStorageError,
    LogDirInUse,
    StorageError,
)
from storage.loader import RecoveryReport, load_log
from storage.log import PartitionLog
from storage.util import now_ms

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogManager:
    """All partition logs of a broker.

    On-disk format, per log dir: ``<topic>-<partition>/`` directories, ``meta.properties``,
    ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
    ``cleaner-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks), the
    ``.lock`` file (flock'ed while the broker runs) and, after a clean shutdown,
    ``.kafka_cleanshutdown``. Deleted partitions are renamed ``<topic>-<partition>.<id>-delete``
    and removed after ``file.delete.delay.ms``.

    Crash: the marker is missing, so :meth:`startup` recovers every log from its checkpointed
    recovery point; checkpoints are replaced atomically, so they are old or new, never torn.

    Thread-safety: no threads of its own. :meth:`get_log` is lock-free; creating, deleting and
    reconfiguring logs take the manager's lock, but a log's files are made outside it, so that
    threads create different logs at once (one log asked for twice is made once; a log is
    published only once made). The caller orders the creation and deletion of one partition.
    The periodic methods (:meth:`run_periodic` or
    the individual ones) are meant for one broker thread at a time; they may run while network
    threads append and read.
    """

    def __init__(
        self,
        log_dirs: Sequence[str | Path],
        config: LogConfig | None = None,
        clock: Callable[[], int] = now_ms,
        *,
        manager_config: LogManagerConfig | None = None,
        broker_id: int | None = None,
        cluster_id: str | None = None,
        topic_overrides: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        self.default_config = config if config is not None else LogConfig()
        self.clock = clock
        self.manager_config = manager_config if manager_config is not None else LogManagerConfig()
        file_records.OPEN_FILES.max_open = max(self.manager_config.segment_open_files_max, 1)
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._overrides: dict[str, dict[str, Any]] = {
            t: dict(o) for t, o in (topic_overrides or {}).items()
        }
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._log_dir_of: dict[TopicPartition, Path] = {}
        #: logs being created outside the lock (get_or_create_log): their dir, and an event
        #: set once they are made or failed
        self._creating: dict[TopicPartition, tuple[Path, threading.Event]] = {}
        self._lock_fds: list[int] = []
        #: log dirs taken offline after an I/O error (Kafka's LogDirFailureChannel): their logs
        #: stay out of every periodic task and checkpoint until a restart recovers them
        self._offline_dirs: dict[Path, str] = {}
        self._dirs_to_delete: list[tuple[int, Path, PartitionLog | None]] = []
        #: the high watermarks last written to each dir's checkpoint
        self._hw_written: dict[Path, dict[TopicPartition, int]] = {}
        self._started = False
        self._next_retention_ms = 0
        self._next_recovery_checkpoint_ms = 0
        self._next_start_checkpoint_ms = 0
        self._next_hw_checkpoint_ms = 0
        self._next_clean_ms = 0
        self.cleaner: LogCleaner | None = None  # created in startup()
        #: recovery reports by partition from the last startup()
        self.recovery_reports: dict[TopicPartition, RecoveryReport] = {}

    # --- startup / shutdown ---------------------------------------------------------------------

    def startup(self) -> dict[TopicPartition, RecoveryReport]:
        """Locks the log dirs, checks ``meta.properties`` and loads every partition directory
        (recovering those of a dir that was not shut down cleanly). Returns what recovery did."""
        with self._lock:
            if self._started:
                raise RuntimeError("LogManager.startup() called twice")
            now = self.clock()
            for log_dir in self.log_dirs:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._lock_dir(log_dir)
                self._check_meta(log_dir)
            self.cleaner = LogCleaner(
                self, dedupe_buffer_size=self.manager_config.cleaner_dedupe_buffer_size
            )
            for log_dir in self.log_dirs:
                self._load_dir(log_dir, now)
            self._started = True
            mc = self.manager_config
            self._next_retention_ms = now + mc.retention_check_interval_ms
            self._next_recovery_checkpoint_ms = now + mc.recovery_point_checkpoint_interval_ms
            self._next_start_checkpoint_ms = now + mc.log_start_offset_checkpoint_interval_ms
            self._next_hw_checkpoint_ms = now + mc.high_watermark_checkpoint_interval_ms
            self._next_clean_ms = now
            return dict(self.recovery_reports)

    def _lock_dir(self, log_dir: Path) -> None:
        fd = os.open(log_dir / files.LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            raise LogDirInUse(f"{log_dir} is locked by another process") from e
        self._lock_fds.append(fd)

    def _check_meta(self, log_dir: Path) -> None:
        path = log_dir / files.META_PROPERTIES
        meta = read_meta_properties(path)
        if meta is not None:
            if self.broker_id is not None and meta.broker_id not in (None, self.broker_id):
                raise InconsistentBrokerMetadata(
                    f"{path} says broker.id={meta.broker_id}, configured {self.broker_id}"
                )
            if self.cluster_id is not None and meta.cluster_id not in (None, self.cluster_id):
                raise InconsistentBrokerMetadata(
                    f"{path} says cluster.id={meta.cluster_id}, configured {self.cluster_id}"
                )
            if self.broker_id is None:
                self.broker_id = meta.broker_id
            if self.cluster_id is None:
                self.cluster_id = meta.cluster_id
            if meta.broker_id == self.broker_id and meta.cluster_id == self.cluster_id:
                return
        if self.broker_id is not None or self.cluster_id is not None:
            write_meta_properties(path, MetaProperties(self.broker_id, self.cluster_id))

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return read_offsets_checkpoint(path)
        except CorruptCheckpoint as e:
            log.warning("ignoring %s: %s", path, e)
            return {}

    def _load_dir(self, log_dir: Path, now: int) -> None:
        marker = log_dir / files.CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery_points = self._read_checkpoint(log_dir / files.RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(log_dir / files.LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = self._read_checkpoint(log_dir / files.REPLICATION_OFFSET_CHECKPOINT)
        names = sorted(os.listdir(log_dir))
        if clean:
            state = "clean shutdown"
        elif any((log_dir / n).is_dir() for n in names):
            state = "unclean shutdown: recovering"
        else:
            state = "no logs yet"
        log.info("loading logs from %s (%s)", log_dir, state)
        started = time.monotonic()
        todo: list[tuple[TopicPartition, Path]] = []
        for name in names:
            path = log_dir / name
            if not path.is_dir():
                continue
            if name.endswith(files.DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            if name.endswith((files.FUTURE_DIR_SUFFIX, files.STRAY_DIR_SUFFIX)):
                continue
            try:
                tp = files.parse_log_dir_name(name)
            except ValueError:
                continue
            if tp in self._logs:
                raise InconsistentBrokerMetadata(
                    f"{name} exists in {log_dir} and {self._log_dir_of[tp]}"
                )
            todo.append((tp, path))

        def load(item: tuple[TopicPartition, Path]) -> tuple[PartitionLog, RecoveryReport]:
            tp, path = item
            report = RecoveryReport()
            partition_log = load_log(
                path,
                self._config_for(tp[0]),
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp),
                had_clean_shutdown=clean,
                clock=self.clock,
                report=report,
                defer_sync=True,
            )
            return partition_log, report

        # num.recovery.threads.per.data.dir threads, as Kafka's LogManager.loadLogs: most of
        # the work is file-system calls, which run in parallel
        threads = max(self.manager_config.recovery_threads_per_data_dir, 1)
        if threads > 1 and len(todo) > 1:
            with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
                loaded = list(pool.map(load, todo))
        else:
            loaded = [load(item) for item in todo]
        needs_sync = False
        for (tp, _), (partition_log, report) in zip(todo, loaded, strict=True):
            # the checkpointed high watermark (clamped to the log): a replicated partition
            # must not expose records its ISR may not have; a single-replica partition's
            # high watermark follows its log end again once the broker hosts it
            hw = high_watermarks.get(tp)
            if hw is not None:
                partition_log.update_high_watermark(hw)
            self._logs[tp] = partition_log
            self._log_dir_of[tp] = log_dir
            self.recovery_reports[tp] = report
            needs_sync = needs_sync or report.needs_sync
        if needs_sync:
            # what recovery rewrote (truncations, indexes) becomes durable in one call
            files.sync_filesystem(log_dir)
        if todo:
            log.info(
                "loaded %d log(s) from %s in %.1f s", len(todo), log_dir,
                time.monotonic() - started,
            )  # fmt: skip
        if self.cleaner is not None:
            self.cleaner.load_checkpoint(log_dir)
        # from now on a crash is an unclean shutdown
        if clean:
            marker.unlink()
            files.fsync_dir(log_dir)

    def shutdown(self) -> None:
        """Flushes and closes every log, writes the checkpoints and the clean-shutdown marker,
        and releases the dir locks. Closes descriptors: stop fetches first."""
        with self._lock:
            if not self._started:
                return
            for tp, partition_log in list(self._logs.items()):
                try:
                    partition_log.close()
                except (OSError, KafkaStorageError) as e:
                    log_dir = self._log_dir_of.get(tp)
                    if log_dir is None or log_dir not in self._offline_dirs:
                        raise
                    log.warning("closing %s in offline dir %s: %s", partition_log.name, log_dir, e)
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()
            self.checkpoint_high_watermarks()
            if self.cleaner is not None:
                self.cleaner.write_checkpoints()
            for log_dir in self.log_dirs:
                if log_dir not in self._offline_dirs:
                    write_clean_shutdown_file(log_dir / files.CLEAN_SHUTDOWN_FILE)
            for fd in self._lock_fds:
                os.close(fd)
            self._lock_fds.clear()
            self._logs.clear()
            self._log_dir_of.clear()
            self._started = False

    # --- logs -----------------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[PartitionLog]:
        """The logs of the online log dirs."""
        if not self._offline_dirs:
            return list(self._logs.values())
        return [
            pl
            for tp, pl in list(self._logs.items())
            if self._log_dir_of.get(tp) not in self._offline_dirs
        ]

    # --- log dir failures (JBOD) ----------------------------------------------------------------

    @property
    def offline_dirs(self) -> dict[Path, str]:
        """Offline log dirs and why they went offline."""
        return dict(self._offline_dirs)

    @property
    def all_offline(self) -> bool:
        """Whether every log dir is offline."""
        return len(self._offline_dirs) == len(self.log_dirs)

    def mark_dir_offline(self, log_dir: Path, reason: str) -> list[TopicPartition]:
        """Takes ``log_dir`` offline after an I/O error (a full or failing disk), as Kafka's
        ``LogManager.handleLogDirFailure`` does: its partitions answer KAFKA_STORAGE_ERROR, new
        partitions go to the other dirs, nothing more is written there (no checkpoint, no
        clean-shutdown marker, so the next start recovers it). Returns its partitions; [] if it
        was offline already. When no dir is left online the broker stops (the replica manager
        tells it: :attr:`all_offline`), as Kafka halts then."""
        with self._lock:
            log_dir = Path(log_dir).absolute()
            if log_dir in self._offline_dirs or log_dir not in self.log_dirs:
                return []
            self._offline_dirs[log_dir] = reason
            tps = [tp for tp, d in self._log_dir_of.items() if d == log_dir]
        log.error(
            "log dir %s is offline (%s): %d partition(s) answer KAFKA_STORAGE_ERROR until the "
            "broker restarts with the dir healthy: %s",
            log_dir,
            reason,
            len(tps),
            ", ".join(f"{t}-{p}" for t, p in sorted(tps)[:20]),
        )
        return tps

    def is_offline(self, topic: str, partition: int) -> bool:
        return (
            bool(self._offline_dirs)
            and self._log_dir_of.get((topic, partition)) in self._offline_dirs
        )

    def logs_in(self, log_dir: Path) -> list[tuple[TopicPartition, PartitionLog]]:
        """The partitions whose log is in ``log_dir``."""
        return [
            (tp, pl) for tp, pl in list(self._logs.items()) if self._log_dir_of.get(tp) == log_dir
        ]

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._log_dir_of.get((topic, partition))

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: uuid.UUID | None = None,
        config_overrides: Mapping[str, Any] | None = None,
    ) -> PartitionLog:
        """The log of (topic, partition), created if missing. ``config_overrides`` (Kafka topic
        keys) become the topic's overrides when given. ``topic_id`` is written to
        ``partition.metadata`` (InconsistentTopicId if it names another id)."""
        tp = (topic, partition)
        existing = self._logs.get(tp)
        if existing is not None and config_overrides is None:
            if topic_id is not None and existing.topic_id != topic_id:
                existing.write_partition_metadata(topic_id)
            return existing
        while True:
            with self._lock:
                self._require_started()
                if config_overrides is not None and self._overrides.get(topic, {}) != dict(
                    config_overrides
                ):
                    if config_overrides:
                        self._overrides[topic] = dict(config_overrides)
                    else:
                        self._overrides.pop(topic, None)
                    self._apply_topic_config(topic)
                existing = self._logs.get(tp)
                if existing is not None:
                    if topic_id is not None and existing.topic_id != topic_id:
                        existing.write_partition_metadata(topic_id)
                    return existing
                pending = self._creating.get(tp)
                if pending is None:
                    log_dir = self._choose_log_dir()
                    done = threading.Event()
                    self._creating[tp] = (log_dir, done)
                    config = self._config_for(topic)
                    break
            # another thread is creating this log: take it once made (or try again)
            pending[1].wait()
        # the files are made outside the lock, so that a pool of threads creates the logs of
        # a large topic at once (ReplicaManager): creating a file is time in the kernel
        directory = log_dir / files.log_dir_name(topic, partition)
        try:
            partition_log = load_log(
                directory, config, had_clean_shutdown=True, topic_id=topic_id, clock=self.clock
            )
        except BaseException:
            with self._lock:
                del self._creating[tp]
            done.set()
            raise
        with self._lock:
            del self._creating[tp]
            kept = self._started and log_dir not in self._offline_dirs
            if kept:
                self._logs[tp] = partition_log
                self._log_dir_of[tp] = log_dir
        done.set()
        if not kept:  # the dir failed meanwhile, or the broker is shutting down
            with contextlib.suppress(OSError, StorageError):
                partition_log.close()
            raise KafkaStorageError(
                f"{log_dir} went offline or closed while {directory.name} was made there"
            )
        log.info("created log %s in %s", directory.name, log_dir)
        return partition_log

    def create_log(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: uuid.UUID | None = None,
        config_overrides: Mapping[str, Any] | None = None,
    ) -> PartitionLog:
        return self.get_or_create_log(
            topic, partition, topic_id=topic_id, config_overrides=config_overrides
        )

    def delete_log(self, topic: str, partition: int) -> bool:
        """Removes the log from the broker: its directory is renamed ``...-delete`` at once and
        removed after ``file.delete.delay.ms``; regions already handed out stay readable."""
        with self._lock:
            tp = (topic, partition)
            partition_log = self._logs.pop(tp, None)
            log_dir = self._log_dir_of.pop(tp, None)
            if partition_log is None or log_dir is None:
                return False
            partition_log.mark_deleted()
            target = log_dir / files.deleted_log_dir_name(topic, partition)
            partition_log.rename_directory(target)
            files.fsync_dir(log_dir)
            due = self.clock() + partition_log.config.file_delete_delay_ms
            self._dirs_to_delete.append((due, target, partition_log))
            if self.cleaner is not None:
                self.cleaner.forget(tp)
            if not any(t == topic for t, _ in self._logs):
                self._overrides.pop(topic, None)
            log.info("deleted log %s (directory %s)", files.log_dir_name(topic, partition), target)
            return True

    def move_log(
        self,
        topic: str,
        partition: int,
        destination: Path,
        swap: Callable[[PartitionLog, PartitionLog], None],
        *,
        future: Path | None = None,
    ) -> PartitionLog:
        """Moves a partition's log to another log dir of this broker (Kafka's future replica,
        KIP-113), while it keeps serving: its files are copied to ``<dest>/<topic>-<partition>.
        <id>-future`` (``future``), then, with the log's appends paused, what changed since is
        copied again (appended tails of segments, whole indexes, checkpoints and the producer
        snapshot taken at the log end), the future directory takes the partition's name, the old
        one is renamed ``...-delete`` (removed after ``file.delete.delay.ms``; regions already
        handed out stay readable), the new log is loaded with the same offsets, log start, high
        watermark and leader epochs, and ``swap(old, new)`` lets the caller switch to it before
        appends resume. Offsets, epochs, producer state and checkpoints carry over unchanged."""
        tp = (topic, partition)
        old = self._logs.get(tp)
        source_dir = self._log_dir_of.get(tp)
        if old is None or source_dir is None:
            raise KafkaStorageError(f"{topic}-{partition} has no log here")
        if destination not in self.log_dirs or destination in self._offline_dirs:
            raise KafkaStorageError(f"{destination} is not an online log dir")
        if source_dir == destination:
            return old
        name = files.log_dir_name(topic, partition)
        future = future or destination / f"{name}.{uuid.uuid4().hex}{files.FUTURE_DIR_SUFFIX}"
        source = old.directory
        old.flush()
        _copy_changed(source, future, {})  # while the partition keeps serving
        seen = {p.name: p.stat() for p in future.iterdir()}
        with self._lock, old.appends_paused():
            state = old.producer_state
            if state is not None and hasattr(state, "take_snapshot"):
                state.take_snapshot(fsync=False)
            _copy_changed(source, future, seen)
            for path in future.iterdir():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            final = destination / name
            future.rename(final)
            files.fsync_dir(destination)
            new = load_log(
                final,
                self._config_for(topic),
                recovery_point=old.log_end_offset,
                log_start_offset=old.log_start_offset,
                had_clean_shutdown=True,
                topic_id=old.topic_id,
                clock=self.clock,
            )
            new.high_watermark_follows_log_end = old.high_watermark_follows_log_end
            new.update_high_watermark(old.high_watermark)
            # the new log takes over first: an append that reads the partition's log from now on
            # gets it; one that waited for the old log's lock finds it closed and retries
            swap(old, new)
            retired = source_dir / files.deleted_log_dir_name(topic, partition)
            old.retire_paused(retired)
            files.fsync_dir(source_dir)
            self._logs[tp] = new
            self._log_dir_of[tp] = destination
            due = self.clock() + old.config.file_delete_delay_ms
            self._dirs_to_delete.append((due, retired, old))
        log.info("moved log %s from %s to %s", name, source_dir, destination)
        return new

    def _choose_log_dir(self) -> Path:
        """The online dir with the fewest partitions (Kafka's ``nextLogDirs``)."""
        online = [d for d in self.log_dirs if d not in self._offline_dirs]
        if not online:
            raise KafkaStorageError("every log dir is offline")
        if len(online) == 1:
            return online[0]
        counts = dict.fromkeys(online, 0)
        for d in self._log_dir_of.values():
            if d in counts:
                counts[d] += 1
        for d, _ in self._creating.values():
            if d in counts:
                counts[d] += 1
        return min(online, key=lambda d: counts[d])

    def _require_started(self) -> None:
        if not self._started:
            raise RuntimeError("LogManager is not started")

    # --- configuration --------------------------------------------------------------------------

    def _config_for(self, topic: str) -> LogConfig:
        overrides = self._overrides.get(topic)
        return self.default_config.with_overrides(overrides) if overrides else self.default_config

    def topic_config(self, topic: str) -> LogConfig:
        return self._config_for(topic)

    def update_config(self, topic: str, overrides: Mapping[str, Any] | None) -> LogConfig:
        """Replaces the topic's overrides (Kafka topic keys; None or {} for the defaults) and
        applies the new config to its logs at once."""
        with self._lock:
            if overrides:
                self._overrides[topic] = dict(overrides)
            else:
                self._overrides.pop(topic, None)
            return self._apply_topic_config(topic)

    def update_default_config(self, config: LogConfig) -> None:
        """New broker-level defaults (dynamic broker config); every log picks them up."""
        with self._lock:
            self.default_config = config
            for topic in {t for t, _ in self._logs}:
                self._apply_topic_config(topic)

    def _apply_topic_config(self, topic: str) -> LogConfig:
        config = self._config_for(topic)
        for (t, _), partition_log in self._logs.items():
            if t == topic:
                partition_log.config = config
        return config

    # --- periodic work --------------------------------------------------------------------------

    def run_periodic(self, now_ms: int | None = None, *, include_cleaner: bool = True) -> None:
        """Everything due now: flushes of rolled segments and by ``flush.ms``, retention every
        ``log.retention.check.interval.ms``, checkpoints on their intervals, removal of
        ``.deleted`` files, and (``include_cleaner``) one compaction pass. The broker calls this
        from one background thread, e.g. every second."""
        now = self.clock() if now_ms is None else now_ms
        mc = self.manager_config
        # most logs have nothing to flush or delete: one cheap check each (a broker of 10,000
        # partitions made this pass its main idle cost)
        due: list[PartitionLog] | None = [pl for pl in self.all_logs() if pl.maintenance_due(now)]
        self.flush_dirty_logs(now, logs=due)
        if now >= self._next_retention_ms:
            self.cleanup_logs(now)
            self._next_retention_ms = now + mc.retention_check_interval_ms
            due = None  # retention may have scheduled deletions anywhere
        if now >= self._next_recovery_checkpoint_ms:
            self.checkpoint_recovery_points()
            self._next_recovery_checkpoint_ms = now + mc.recovery_point_checkpoint_interval_ms
        if now >= self._next_start_checkpoint_ms:
            self.checkpoint_log_start_offsets()
            self._next_start_checkpoint_ms = now + mc.log_start_offset_checkpoint_interval_ms
        if now >= self._next_hw_checkpoint_ms:
            self.checkpoint_high_watermarks()
            self._next_hw_checkpoint_ms = now + mc.high_watermark_checkpoint_interval_ms
        self.delete_pending_files(now, logs=due)
        if include_cleaner and mc.cleaner_enable and now >= self._next_clean_ms:
            cleaned = self.clean_logs(now)
            self._next_clean_ms = now if cleaned else now + mc.cleaner_backoff_ms

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention for every log (Kafka's cleanupLogs). Returns segments deleted."""
        now = self.clock() if now_ms is None else now_ms
        total = 0
        for partition_log in self.all_logs():
            if partition_log.closed:
                continue
            try:
                total += partition_log.delete_old_segments(now)
            except OSError as e:
                log.error("retention of %s failed: %s", partition_log.name, e)
        return total

    def flush_dirty_logs(
        self, now_ms: int | None = None, *, logs: Sequence[PartitionLog] | None = None
    ) -> int:
        """Flushes logs whose ``flush.ms`` elapsed, and segments that rolled since their log's
        last flush (of ``logs``, default all). Returns the number of logs flushed."""
        now = self.clock() if now_ms is None else now_ms
        flushed = 0
        for partition_log in self.all_logs() if logs is None else logs:
            if partition_log.closed:
                continue
            try:
                if now - partition_log.last_flush_ms >= partition_log.config.flush_ms:
                    partition_log.flush(now_ms=now)
                    flushed += 1
                else:
                    partition_log.flush_rolled_segments()
            except OSError as e:
                log.error("flush of %s failed: %s", partition_log.name, e)
        return flushed

    def _logs_by_dir(self) -> dict[Path, list[tuple[TopicPartition, PartitionLog]]]:
        offline = set(self._offline_dirs)
        out: dict[Path, list[tuple[TopicPartition, PartitionLog]]] = {
            d: [] for d in self.log_dirs if d not in offline
        }
        dir_of = self._log_dir_of
        for tp, partition_log in list(self._logs.items()):
            log_dir = dir_of.get(tp)
            if log_dir is None:
                continue
            logs = out.get(log_dir)
            if logs is None:
                if log_dir in offline:
                    continue
                logs = out[log_dir] = []
            logs.append((tp, partition_log))
        return out

    def checkpoint_recovery_points(self) -> None:
        """Writes ``recovery-point-offset-checkpoint`` in every log dir."""
        for log_dir, logs in self._logs_by_dir().items():
            write_offsets_checkpoint(
                log_dir / files.RECOVERY_POINT_CHECKPOINT,
                {tp: pl.recovery_point for tp, pl in logs},
            )

    def checkpoint_log_start_offsets(self) -> None:
        """Writes ``log-start-offset-checkpoint`` (logs whose start is inside their first
        segment, as Kafka does)."""
        for log_dir, logs in self._logs_by_dir().items():
            write_offsets_checkpoint(
                log_dir / files.LOG_START_OFFSET_CHECKPOINT,
                {
                    tp: pl.log_start_offset
                    for tp, pl in logs
                    if pl.log_start_offset > pl.segments.first.base_offset
                },
            )

    def checkpoint_high_watermarks(self) -> None:
        """Writes ``replication-offset-checkpoint`` (high watermarks), in each log dir whose
        high watermarks changed since this broker last wrote its file (Kafka writes it on every
        interval; an idle broker of many partitions would rewrite the same file)."""
        for log_dir, logs in self._logs_by_dir().items():
            marks = {tp: pl.high_watermark for tp, pl in logs}
            if self._hw_written.get(log_dir) == marks:
                continue
            write_offsets_checkpoint(log_dir / files.REPLICATION_OFFSET_CHECKPOINT, marks)
            self._hw_written[log_dir] = marks

    def delete_pending_files(
        self,
        now_ms: int | None = None,
        *,
        force: bool = False,
        logs: Sequence[PartitionLog] | None = None,
    ) -> int:
        """Removes ``.deleted`` segment files (of ``logs``, default all) and ``-delete``
        directories whose delay passed."""
        now = self.clock() if now_ms is None else now_ms
        removed = 0
        for partition_log in self.all_logs() if logs is None else logs:
            removed += partition_log.delete_pending_files(now, force=force)
        with self._lock:
            due = [(t, d, pl) for t, d, pl in self._dirs_to_delete if force or t <= now]
            self._dirs_to_delete = [
                (t, d, pl) for t, d, pl in self._dirs_to_delete if not (force or t <= now)
            ]
        for _, directory, _partition_log in due:
            shutil.rmtree(directory, ignore_errors=True)
            removed += 1
        return removed

    def clean_logs(self, now_ms: int | None = None) -> int:
        """One compaction pass over the dirtiest compacted log (Kafka's cleaner thread body).
        Returns the number of logs cleaned (0 when none was cleanable)."""
        if self.cleaner is None:
            return 0
        now = self.clock() if now_ms is None else now_ms
        return self.cleaner.clean_one(now)


def _copy_changed(source: Path, target: Path, seen: Mapping[str, os.stat_result]) -> None:
    """Makes ``target`` hold ``source``'s files: a segment (``.log``) that only grew since
    ``seen`` (same inode, its last copied bytes unchanged) gets its new tail appended; any other
    new or changed file is copied whole; files gone from ``source`` go."""
    target.mkdir(parents=True, exist_ok=True)
    names = set()
    for path in source.iterdir():
        if not path.is_file():
            continue
        names.add(path.name)
        stat = path.stat()
        copied = target / path.name
        before = seen.get(path.name)
        if (
            before is not None
            and copied.exists()
            and before.st_ino == stat.st_ino
            and before.st_size == stat.st_size
            and before.st_mtime_ns == stat.st_mtime_ns
        ):
            continue
        if path.name.endswith(files.LOG_FILE_SUFFIX) and copied.exists():
            done = copied.stat().st_size
            if done <= stat.st_size and _same_tail(path, copied, done):
                with open(path, "rb") as src, open(copied, "ab") as dst:
                    src.seek(done)
                    shutil.copyfileobj(src, dst)
                continue
        shutil.copyfile(path, copied)
    for path in target.iterdir():
        if path.name not in names:
            path.unlink()


def _same_tail(source: Path, copied: Path, length: int) -> bool:
    """Whether the copy's last bytes (up to 4 KiB) are the source's at the same place."""
    n = min(length, 4096)
    if n == 0:
        return True
    with open(source, "rb") as a, open(copied, "rb") as b:
        a.seek(length - n)
        b.seek(length - n)
        return a.read(n) == b.read(n)
