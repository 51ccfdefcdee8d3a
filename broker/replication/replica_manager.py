"""The partitions this broker hosts (Kafka's ``ReplicaManager``): it finds them and fans requests
out to them; each :class:`~broker.replication.partition.Partition` applies its own rules.

* Partitions are created and deleted as the metadata store announces topics, re-configured when
  topic configs change, and told their leadership (:meth:`ReplicaManager.startup` listens to the
  store, then applies its current view).
* :meth:`ReplicaManager.append_records` appends a Produce request's batches partition by
  partition; with ``acks=all`` on a replicated partition the produce then waits in the produce
  purgatory (:class:`~broker.replication.delayed_produce.DelayedProduce`) for the ISR.
* :meth:`ReplicaManager.fetch_messages` reads a Fetch request's partitions (a consumer's up to
  the high watermark, a follower's up to the log end, recording the follower's progress) and,
  below ``min_bytes``, waits in the fetch purgatory (:class:`~broker.replication.delayed_fetch.
  DelayedFetch`) until appends or high-watermark moves bring enough bytes or ``max_wait_ms``
  passes.
* Replication: partitions this broker follows are fetched from their leaders by the
  :class:`~broker.replication.fetcher.ReplicaFetcherManager`; ISR changes the leaders propose
  are written by the :class:`~broker.replication.isr.IsrManager`, which also checks for lagging
  followers.
* A maintenance thread runs the log manager's periodic work (flushes, retention, checkpoints,
  deletions, compaction) and expires idle producers, off the network threads.

Thread-safety: every public method may be called from any thread. The partition map is replaced
under a lock and read without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from broker.config import TOPIC_CONFIGS, BrokerConfig, ReplicationConfig, parse_value
from broker.metrics import MetricSamples, MetricsRegistry, label_value
from broker.purgatory import DelayedOperationPurgatory
from broker.replication.delayed_create import DelayedCreateTopics
from broker.replication.delayed_fetch import DelayedFetch
from broker.replication.delayed_leadership import DelayedLeadership
from broker.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from broker.replication.errors import NotLeaderOrFollower, UnknownTopicOrPartition, error_of
from broker.replication.fetcher import FetcherConfig, ReplicaFetcherManager
from broker.replication.isr import IsrManager
from broker.replication.log_validator import RecordError, TopicRules
from broker.replication.partition import (
    FetchIsolation,
    LogReadResult,
    Partition,
    TopicPartition,
)
from broker.replication.txn_verification import ProduceVerification
from broker.security.inter_broker import InterBrokerSecurity
from coordination.errors import KafkaApiError
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import ClusterView, PartitionState, TopicMetadata
from protocol.error_codes import ErrorCode
from storage.config import log_config_from_broker
from storage.errors import StorageError
from storage.files import FUTURE_DIR_SUFFIX, deferred_sync, sharing_deferred_sync
from storage.log import AppendInfo, PartitionLog
from storage.manager import LogManager
from storage.producer_state import (
    InvalidProducerEpoch,
    InvalidTxnState,
    OutOfOrderSequence,
    ProducerStateManager,
    TransactionCoordinatorFenced,
    VerificationGuard,
)

log = logging.getLogger(__name__)

#: an append refused by the partition's producer state (sequence, epoch, transaction)
_PRODUCER_STATE_REFUSALS = (
    OutOfOrderSequence,
    InvalidProducerEpoch,
    TransactionCoordinatorFenced,
    InvalidTxnState,
)

_OFFLINE_MESSAGE = "the partition's log dir is offline (an I/O error or a full disk)"

#: How often the maintenance thread runs the log manager's periodic work.
MAINTENANCE_INTERVAL_S = 1.0
#: Kafka's producer.id.expiration.check.interval.ms
PRODUCER_EXPIRATION_CHECK_INTERVAL_MS = 600_000
#: a metadata change creating at least this many logs defers their files' fsyncs to one flush
#: of the file system (storage.files.deferred_sync), and creates them in CREATE_THREADS threads
BULK_CREATE = 32
#: threads that make the logs of a large metadata change at once: creating a file is time in
#: the kernel, without the GIL, so they overlap (measured in docs/benchmarks.md)
CREATE_THREADS = 8


def topic_rules(config: dict[str, Any]) -> TopicRules:
    return TopicRules(
        compression_type=str(config["compression.type"]),
        log_append_time=config["message.timestamp.type"] == "LogAppendTime",
        timestamp_before_max_ms=int(config["message.timestamp.before.max.ms"]),
        timestamp_after_max_ms=int(config["message.timestamp.after.max.ms"]),
        compacted="compact" in config["cleanup.policy"],
    )


class AppendResult(NamedTuple):
    """One partition's answer to a produce: ``info`` when appended, else the error, with the
    log start offset when the partition was reached (else -1)."""

    error: ErrorCode
    info: AppendInfo | None = None
    message: str | None = None
    #: (record index in its batch, message) per rejected record (KIP-467)
    record_errors: tuple[tuple[int, str], ...] = ()
    #: with acks=all, what the answer must wait for (None: nothing, it is committed)
    waiting: ProducePartitionStatus | None = None
    #: the partition's log start offset when the failure was met in the log (else -1)
    log_start_offset: int = -1


class LogDirDescription(NamedTuple):
    """One log dir as DescribeLogDirs reports it."""

    path: str
    error: ErrorCode
    total_bytes: int
    usable_bytes: int
    #: (topic, partition, size in bytes, offset lag)
    partitions: list[tuple[str, int, int, int]]
    #: future replicas being copied here by a move (AlterReplicaLogDirs): (topic, partition,
    #: bytes copied so far, offset lag: records of the current replica not yet copied)
    futures: tuple[tuple[str, int, int, int], ...] = ()


#: Append failures Kafka answers before reaching the log (the request's own checks, and
#: ReplicaManager.appendToLocalLog's first cases): no log start offset, no message.
_UNREACHED_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    }
)
#: Failures of record validation (Kafka's RecordValidationException): their message is kept.
_RECORD_VALIDATION_ERRORS = frozenset({ErrorCode.INVALID_RECORD, ErrorCode.INVALID_TIMESTAMP})


class FetchRead:
    """One partition of a fetch: what to read, and (after a read) what was found."""

    __slots__ = (
        "current_leader_epoch",
        "fetch_offset",
        "index",
        "last_fetched_epoch",
        "log_start_offset",
        "max_bytes",
        "name",
        "partition",
        "result",
        "topic_id",
    )

    def __init__(
        self,
        name: str | None,
        topic_id: Any,
        index: int,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        partition: Partition | None,
        last_fetched_epoch: int = -1,
        log_start_offset: int = -1,
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.index = index
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.current_leader_epoch = current_leader_epoch
        self.partition = partition
        #: a follower's (Fetch v12+): the epoch of its last batch, for the divergence check
        self.last_fetched_epoch = last_fetched_epoch
        #: a follower's (Fetch v5+): its log start offset
        self.log_start_offset = log_start_offset
        self.result = _NOT_READ


#: a read's result before the read: no error, no offsets (immutable, so shared)
_NOT_READ = LogReadResult(ErrorCode.NONE)
#: a global, not ``ErrorCode.NONE`` on each of a fetch's partitions (CPython 3.11's enum member
#: lookup on the class costs about 140 ns, a global about 20)
_NONE = ErrorCode.NONE


class FetchParams(NamedTuple):
    """The request-wide part of a fetch (Kafka's ``FetchParams``)."""

    max_bytes: int
    min_bytes: int
    max_wait_ms: int
    isolation: FetchIsolation
    #: the fetching follower's broker id (-1: a consumer)
    replica_id: int = -1


class ReplicaManager:
    """See the module docstring. Created by the composition root once the metadata store has
    started; :meth:`startup` loads the logs."""

    def __init__(
        self,
        *,
        broker_id: int,
        config: BrokerConfig,
        replication: ReplicationConfig,
        metadata: MetadataStore,
        log_manager: LogManager,
        metrics: MetricsRegistry,
        inter_broker: InterBrokerSecurity | None = None,
        on_all_log_dirs_offline: Callable[[str], None] | None = None,
    ) -> None:
        """``on_all_log_dirs_offline(reason)``: called once, from the thread whose write failed,
        when the last online log dir goes offline (the broker then stops, as Kafka halts)."""
        self.broker_id = broker_id
        self._on_all_log_dirs_offline = on_all_log_dirs_offline
        #: the live broker config, for the topic defaults only (dynamic: read on each use)
        self.config = config
        self.metadata = metadata
        self.log_manager = log_manager
        self.metrics = metrics
        self.partitions: dict[TopicPartition, Partition] = {}
        #: partitions being moved to another log dir: (destination, future replica directory)
        self.moves: dict[TopicPartition, tuple[Path, Path]] = {}
        #: CreateTopics / CreatePartitions answers waiting for their partitions, and produces
        #: waiting for a leadership about to arrive (:meth:`wait_for_leadership`), by topic name
        self.topic_purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("topic")
        self.fetch_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory(
            "Fetch"
        )
        self.produce_purgatory: DelayedOperationPurgatory[TopicPartition] = (
            DelayedOperationPurgatory("Produce")
        )
        self._replica_lag_time_max_ms = replication.replica_lag_time_max_ms
        self.isr_manager = IsrManager(
            metadata,
            replica_lag_time_max_ms=self._replica_lag_time_max_ms,
            partitions=lambda: [
                p for p in self.partitions.values() if p.is_leader and not p.offline
            ],
        )
        self.fetchers = ReplicaFetcherManager(
            FetcherConfig(
                broker_id=broker_id,
                num_fetchers=replication.num_replica_fetchers,
                fetch_max_bytes=replication.replica_fetch_max_bytes,
                fetch_response_max_bytes=replication.replica_fetch_response_max_bytes,
                fetch_wait_max_ms=replication.replica_fetch_wait_max_ms,
                fetch_min_bytes=replication.replica_fetch_min_bytes,
                fetch_backoff_ms=replication.replica_fetch_backoff_ms,
                socket_timeout_ms=replication.replica_socket_timeout_ms,
                inter_broker_listener=inter_broker.listener
                if inter_broker is not None
                else replication.inter_broker_listener_name,
                security=inter_broker,
                sessions=replication.replica_fetch_session_enable,
                stall_report_ms=replication.replica_lag_time_max_ms,
            ),
            lambda: self.metadata.view,
            on_storage_error=self.handle_log_dir_failure,
        )
        self._producer_id_expiration_ms = replication.producer_id_expiration_ms
        self._lock = threading.RLock()
        self._shut_down = False
        #: the last metadata view applied to the partitions (None before start-up)
        self._applied: ClusterView | None = None
        self._stop_maintenance = threading.Event()
        self._maintenance: threading.Thread | None = None
        #: the replicas in offline log dirs last reported to the metadata store
        self._reported_offline: frozenset[TopicPartition] = frozenset()

    # -- lifecycle ---------------------------------------------------------------------------

    def startup(self) -> None:
        self.log_manager.startup()
        self.isr_manager.startup()
        # Listen first, then apply the current view: a change published while the logs were
        # loading (a controller handing leadership back to a restarted broker) is not missed.
        self.metadata.add_listener(self._on_metadata)
        self._refresh()
        self.metrics.add(self._metrics)
        # published once started: /health reads a thread not started yet as a dead one
        maintenance = threading.Thread(target=self._maintain, name="log-maintenance", daemon=True)
        maintenance.start()
        self._maintenance = maintenance

    def _maintain(self) -> None:
        """Flushes, retention, checkpoints, deletions, compaction and producer expiration, off
        the network threads."""
        since_expiration_ms = 0
        while not self._stop_maintenance.wait(MAINTENANCE_INTERVAL_S):
            try:
                self.log_manager.run_periodic()
            except Exception:
                log.exception("log maintenance failed")
            since_expiration_ms += int(MAINTENANCE_INTERVAL_S * 1000)
            if since_expiration_ms >= PRODUCER_EXPIRATION_CHECK_INTERVAL_MS:
                since_expiration_ms = 0
                self.expire_producers()

    @property
    def maintenance_alive(self) -> bool:
        return self._maintenance is None or self._maintenance.is_alive()

    def expire_producers(self) -> int:
        """Forgets producers idle longer than ``producer.id.expiration.ms`` on every partition
        (Kafka's ``removeExpiredProducers``); returns how many were removed."""
        removed = 0
        for part in list(self.partitions.values()):
            state = part.log.producer_state
            if isinstance(state, ProducerStateManager):
                try:
                    removed += state.remove_expired_producers()
                except Exception:
                    log.exception("expiring producers of %s failed", part)
        if removed:
            log.info("expired %d idle producer(s)", removed)
        return removed

    def shutdown(self) -> None:
        self._shut_down = True
        self.fetchers.shutdown()
        self.isr_manager.shutdown()
        self._stop_maintenance.set()
        if self._maintenance is not None:
            self._maintenance.join(30)
            self._snapshot_producer_state()
            self.log_manager.shutdown()

    def _snapshot_producer_state(self) -> None:
        """A producer-state snapshot at each log end, so the next start need not replay."""
        for part in list(self.partitions.values()):
            state = part.log.producer_state
            if isinstance(state, ProducerStateManager):
                try:
                    state.take_snapshot()
                except OSError as e:
                    log.warning("producer snapshot of %s failed: %s", part, e)

    # -- metadata ----------------------------------------------------------------------------

    def _on_metadata(self, old: ClusterView, new: ClusterView) -> None:
        if self._shut_down:
            return  # a late notification (e.g. from ZooKeeper) after the logs were closed
        self._refresh()
        if self.topic_purgatory.watched:
            for name, topic in new.topics.items():
                if old.topics.get(name) is not topic:
                    self.topic_purgatory.check_and_complete(name)

    # -- waiting for new partitions ------------------------------------------------------------

    def topics_ready(self, topics: Mapping[str, int]) -> bool:
        """Whether every partition of ``topics`` (name -> at least this many partitions) has a
        leader in this broker's view, and the ones led here are hosted as leaders."""
        view = self.metadata.view
        for name, count in topics.items():
            topic = view.topics.get(name)
            if topic is None or len(topic.partitions) < count:
                return False
            for p in topic.partitions:
                if p.leader < 0:
                    return False
                if p.leader == self.broker_id:
                    part = self.partitions.get((name, p.partition))
                    if part is None or not part.is_leader:
                        return False
        return True

    async def wait_for_topics(self, topics: Mapping[str, int], timeout_ms: int) -> set[str]:
        """Waits (up to ``timeout_ms``) until :meth:`topics_ready`; returns the topics that are
        still not ready (empty when all are)."""
        op = DelayedCreateTopics(
            asyncio.get_running_loop(),
            timeout_ms=timeout_ms,
            topics=topics,
            ready=self.topics_ready,
        )
        self.topic_purgatory.try_complete_else_watch(op, topics)
        await op.future
        return {name for name, count in topics.items() if not self.topics_ready({name: count})}

    def _refresh(self) -> None:
        """Applies the store's current view, diffed against the last view applied. Reading the
        view under the lock makes concurrent notifications converge on the newest view."""
        with self._lock:
            view = self.metadata.view
            if view is not self._applied:
                complete = self._sync(self._applied, view)
                # an incomplete sync is diffed against the old view again next time
                self._applied = view if complete else None

    def topic_config(self, topic: TopicMetadata) -> dict[str, Any]:
        """Every topic config's effective value: the topic's overrides over the broker's."""
        overrides = {}
        for name, raw in topic.configs.items():
            key = TOPIC_CONFIGS.get(name)
            if key is not None:
                overrides[name] = parse_value(name, key.kind, raw)
        return self.config.topic_config(overrides)

    def _sync(self, old: ClusterView | None, new: ClusterView) -> bool:
        """Creates logs for partitions we host, deletes those of deleted topics, applies configs
        and leadership. Returns False when some log could not be created (try again later)."""
        wanted: dict[TopicPartition, tuple[TopicMetadata, PartitionState]] = {}
        for topic in new.topics.values():
            for p in topic.partitions:
                if self.broker_id in p.replicas:
                    wanted[(topic.name, p.partition)] = (topic, p)
        partitions = dict(self.partitions)
        for key in list(partitions):
            if key not in wanted or wanted[key][0].topic_id != partitions[key].topic_id:
                gone = partitions.pop(key)
                gone.close()
                try:
                    self.log_manager.delete_log(key[0], key[1])
                except (OSError, StorageError) as e:
                    if not gone.offline:
                        raise
                    # its dir is offline: the directory stays until a restart deletes it
                    log.warning("cannot delete the log of %s-%d: %s", key[0], key[1], e)
                    continue
                log.info("deleted log %s-%d", key[0], key[1])
        # many new logs (a topic of thousands of partitions): their small files' fsyncs become
        # one flush of the file system at the end, before the partitions are published. Not for
        # a few: that flush would also write every other log's dirty pages, under this lock
        creating = sum(1 for key in wanted if key not in partitions)
        with deferred_sync() if creating >= BULK_CREATE else contextlib.nullcontext():
            retry = self._apply_partitions(old, wanted, partitions)
        self.partitions = partitions
        self._update_fetchers(new)
        if self._reported_offline or self.log_manager.offline_dirs:
            self._report_offline()
        return not retry

    def _apply_partitions(
        self,
        old: ClusterView | None,
        wanted: Mapping[TopicPartition, tuple[TopicMetadata, PartitionState]],
        partitions: dict[TopicPartition, Partition],
    ) -> bool:
        """Creates the missing partitions in ``partitions`` and applies configs and states to
        the others; returns whether some log could not be created (retried later)."""
        reconfigured: set[str] = set()
        retry = False
        created = self._create_partitions(
            [(topic, pstate) for key, (topic, pstate) in wanted.items() if key not in partitions]
        )
        for key, (topic, pstate) in wanted.items():
            part = partitions.get(key)
            if part is None:
                made = created[key]
                if isinstance(made, Partition):
                    partitions[key] = made
                else:
                    # e.g. a full disk: this partition stays unhosted (requests for it fail
                    # with a partition error) and the others go on; retried on the next change
                    log.error("cannot create the log of %s-%d: %s", key[0], key[1], made)
                    retry = True
                continue
            old_topic = old.topics.get(topic.name) if old is not None else None
            if (old_topic is None or old_topic.configs != topic.configs) and (
                topic.name not in reconfigured
            ):
                reconfigured.add(topic.name)
                config = self.topic_config(topic)
                rules = topic_rules(config)
                min_isr = int(config["min.insync.replicas"])
                for (t, _), other in partitions.items():
                    if t == topic.name:
                        other.rules = rules
                        other.min_insync_replicas = min_isr
                self.log_manager.update_config(topic.name, dict(topic.configs))
            if part.state != pstate:
                try:
                    part.update_state(pstate)
                except (OSError, StorageError) as e:
                    if not part.offline:
                        raise
                    log.debug("%s-%d (offline): state not applied: %s", key[0], key[1], e)
        return retry

    def _update_fetchers(self, view: ClusterView) -> None:
        """Every partition this broker follows is fetched from its leader (a registered broker
        other than this one); the others are not."""
        followed: dict[TopicPartition, tuple[Partition, int, int]] = {}
        for key, part in self.partitions.items():
            leader = part.leader_id
            if part.is_leader or part.offline or leader < 0 or leader == self.broker_id:
                continue
            if leader not in view.brokers:
                continue
            followed[key] = (part, leader, part.leader_epoch)
        self.fetchers.update(followed)

    def handle_log_dir_failure(self, part: Partition, error: Exception) -> None:
        """An I/O error in a partition's log (a full or failing disk), met by an append to a
        leader or a follower: its whole log dir goes offline, as Kafka's
        ``ReplicaManager.handleLogDirFailure`` takes it (KIP-112). The partitions there answer
        KAFKA_STORAGE_ERROR from now on (what waits on them completes with it), lead no ISR
        change and follow no leader; the other dirs keep working. Whatever was appended before
        stays: a failed append was cut back off its segment. The metadata store is told which
        replicas are offline: in a cluster the controller moves their leadership to other
        in-sync replicas and takes them out of the ISRs (Kafka's log dir event notification).
        """
        if self._shut_down or part.log.closed:
            return  # the log was closed under the write (deleted, moved away): not a disk fault
        log_dir = self.log_manager.log_dir_of(part.topic, part.index)
        if log_dir is None:
            return
        with self._lock:
            gone = self.log_manager.mark_dir_offline(log_dir, str(error))
            if not gone:
                return  # offline already
            for tp in gone:
                hosted = self.partitions.get(tp)
                if hosted is not None:
                    hosted.mark_offline()
            self._update_fetchers(self.metadata.view)
            self._report_offline()
        log.warning("stopped serving the replicas in log dir %s", log_dir)
        if self.log_manager.all_offline:
            # Kafka's LogManager.handleLogDirFailure halts the broker: with no log dir left it
            # can serve no partition, and in a cluster its leaderships move on only once it goes
            dirs = ", ".join(str(d) for d in self.log_manager.log_dirs)
            log.critical("Shutdown broker because all log dirs in %s have failed", dirs)
            if self._on_all_log_dirs_offline is not None:
                self._on_all_log_dirs_offline(f"all log dirs in {dirs} have failed")

    def _report_offline(self) -> None:
        """Under the lock: tells the metadata store which hosted replicas are offline, when
        that changed."""
        offline = frozenset(key for key, p in self.partitions.items() if p.offline)
        if offline != self._reported_offline:
            self._reported_offline = offline
            self.metadata.report_offline_replicas(offline)

    def describe_log_dirs(self, wanted: set[TopicPartition] | None) -> list[LogDirDescription]:
        """Every log dir: online or not, its file system's total and usable bytes, and the
        sizes of its partitions (``wanted`` only, when given)."""
        out = []
        offline = self.log_manager.offline_dirs
        for log_dir in self.log_manager.log_dirs:
            if log_dir in offline:
                out.append(
                    LogDirDescription(str(log_dir), ErrorCode.KAFKA_STORAGE_ERROR, -1, -1, [])
                )
                continue
            try:
                stat = os.statvfs(log_dir)
                total, usable = stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize
            except OSError:
                total = usable = -1
            sizes = []
            for tp, plog in self.log_manager.logs_in(log_dir):
                if wanted is not None and tp not in wanted:
                    continue
                try:
                    # Kafka's getLogEndOffsetLag for a current (not future) replica: how far its
                    # log end is below its high watermark, never negative (so 0 for a leader
                    # and for a follower that has what its leader acknowledged)
                    lag = max(plog.high_watermark - plog.log_end_offset, 0)
                    sizes.append((tp[0], tp[1], plog.size_in_bytes, lag))
                except Exception:  # noqa: BLE001 - a log being deleted has no size to report
                    log.debug("no size for %s-%d", *tp)
            out.append(
                LogDirDescription(
                    str(log_dir),
                    ErrorCode.NONE,
                    total,
                    usable,
                    sorted(sizes),
                    self._future_replicas(log_dir),
                )
            )
        return out

    def alter_replica_log_dirs(
        self, moves: dict[TopicPartition, str]
    ) -> dict[TopicPartition, ErrorCode]:
        """AlterReplicaLogDirs (KIP-113): each partition's answer, as Kafka's
        ``alterReplicaLogDirs`` gives them: LOG_DIR_NOT_FOUND for a directory that is not one of
        ``log.dirs``, KAFKA_STORAGE_ERROR for an offline one, REPLICA_NOT_AVAILABLE for a
        partition not hosted here, UNKNOWN_TOPIC_OR_PARTITION for one that does not exist, NONE
        when the replica is already there or its move was accepted. A move runs on the
        ``log-dir-mover`` thread (:meth:`LogManager.move_log`: the future replica is copied
        while the partition serves, then swapped in with appends briefly paused);
        DescribeLogDirs shows the future replica meanwhile. A request naming another
        destination for a partition being moved is answered NONE and ignored until the move
        ends (Kafka replaces the future replica; here the first move completes)."""
        dirs = {str(d): d for d in self.log_manager.log_dirs}
        offline = self.log_manager.offline_dirs
        out: dict[TopicPartition, ErrorCode] = {}
        for tp, destination in moves.items():
            target = dirs.get(destination) or dirs.get(os.path.abspath(destination))
            if target is None:
                out[tp] = ErrorCode.LOG_DIR_NOT_FOUND
            elif target in offline:
                out[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            elif tp not in self.partitions:
                # Kafka: REPLICA_NOT_AVAILABLE for a partition another broker hosts,
                # UNKNOWN_TOPIC_OR_PARTITION for one that does not exist
                missing = self.missing_partition_error(*tp)
                out[tp] = (
                    ErrorCode.REPLICA_NOT_AVAILABLE
                    if missing == ErrorCode.NOT_LEADER_OR_FOLLOWER
                    else missing
                )
            elif self.log_manager.is_offline(*tp):
                out[tp] = ErrorCode.REPLICA_NOT_AVAILABLE
            else:
                out[tp] = ErrorCode.NONE
                if self.log_manager.log_dir_of(*tp) != target:
                    self._start_move(tp, target)
        return out

    def _start_move(self, tp: TopicPartition, destination: Path) -> None:
        name = f"{tp[0]}-{tp[1]}"
        with self._lock:
            if tp in self.moves:
                return
            future = destination / f"{name}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
            self.moves[tp] = (destination, future)
        log.info("moving %s to log dir %s (future replica %s)", name, destination, future.name)

        def swap(old: PartitionLog, new: PartitionLog) -> None:
            # runs with the old log's appends paused: the partition and its producer state
            # switch to the new log before any append goes on (appends that waited retry there)
            ProducerStateManager.attach(
                new, producer_id_expiration_ms=self._producer_id_expiration_ms
            )
            part = self.partitions.get(tp)
            if part is not None:
                part.log = new

        def run() -> None:
            try:
                self.log_manager.move_log(tp[0], tp[1], destination, swap, future=future)
            except Exception:
                log.exception("moving %s to %s failed; it stays where it was", name, destination)
                shutil.rmtree(future, ignore_errors=True)
            finally:
                with self._lock:
                    self.moves.pop(tp, None)

        threading.Thread(target=run, name=f"log-dir-mover-{name}", daemon=True).start()

    def _future_replicas(self, log_dir: Path) -> tuple[tuple[str, int, int, int], ...]:
        out = []
        for tp, (destination, future) in list(self.moves.items()):
            if destination != log_dir:
                continue
            size = 0
            copied_end = 0
            try:
                for path in future.iterdir():
                    size += path.stat().st_size
            except OSError:
                pass
            part = self.partitions.get(tp)
            end = part.log_end_offset if part is not None else 0
            if size and part is not None:
                # a lower bound of what is copied: the current log's bytes vs the copy's
                total = max(part.log.size_in_bytes, 1)
                copied_end = int(end * min(size / total, 1.0))
            out.append((tp[0], tp[1], size, max(end - copied_end, 0)))
        return tuple(sorted(out))

    def stop_fetchers(self) -> None:
        """Stops every replica fetcher for good (waiting for their last fetches to return), as
        Kafka's controller stops a shutting-down broker's replicas: it may then be taken out of
        the ISRs without a leader counting it back in."""
        self.fetchers.shutdown()

    def update_log_defaults(self) -> None:
        """The broker-level log defaults changed (dynamic broker configs): every log's config
        and every partition's produce rules are rebuilt from them (topic overrides still win)."""
        self.log_manager.update_default_config(log_config_from_broker(self.config.values))
        with self._lock:
            topics = self.metadata.view.topics
            rules: dict[str, TopicRules] = {}
            for part in list(self.partitions.values()):
                meta = topics.get(part.topic)
                if meta is None:
                    continue
                if part.topic not in rules:
                    rules[part.topic] = topic_rules(self.topic_config(meta))
                part.rules = rules[part.topic]

    def _create_partitions(
        self, todo: Sequence[tuple[TopicMetadata, PartitionState]]
    ) -> dict[TopicPartition, Partition | OSError | StorageError]:
        """The new partitions of a metadata change, or why each could not be created. Many
        (a topic of thousands of partitions) are made by a pool of CREATE_THREADS threads:
        making a log is mostly creating its files, time in the kernel that threads overlap."""

        def create(
            item: tuple[TopicMetadata, PartitionState],
        ) -> Partition | OSError | StorageError:
            try:
                return self._create_partition(*item)
            except (OSError, StorageError) as e:
                return e

        if len(todo) < BULK_CREATE:
            made = [create(item) for item in todo]
        else:
            with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="log-create") as pool:
                made = list(pool.map(sharing_deferred_sync(create), todo))
        return {
            (topic.name, pstate.partition): m for (topic, pstate), m in zip(todo, made, strict=True)
        }

    def _create_partition(self, topic: TopicMetadata, pstate: PartitionState) -> Partition:
        plog = self.log_manager.get_or_create_log(
            topic.name,
            pstate.partition,
            topic_id=topic.topic_id,
            config_overrides=dict(topic.configs),
        )
        ProducerStateManager.attach(plog, producer_id_expiration_ms=self._producer_id_expiration_ms)
        config = self.topic_config(topic)
        part = Partition(
            topic.name,
            pstate.partition,
            topic.topic_id,
            plog,
            topic_rules(config),
            broker_id=self.broker_id,
            state=pstate,
            fetch_purgatory=self.fetch_purgatory,
            produce_purgatory=self.produce_purgatory,
            isr_manager=self.isr_manager,
            replica_lag_time_max_ms=self._replica_lag_time_max_ms,
            min_insync_replicas=int(config["min.insync.replicas"]),
            on_storage_error=self.handle_log_dir_failure,
        )
        # a log kept in an offline dir (the partition left this broker and came back)
        part.offline = self.log_manager.is_offline(topic.name, pstate.partition)
        return part

    # -- finding partitions ------------------------------------------------------------------

    def high_watermark(self, topic: str, partition: int) -> int | None:
        """The high watermark of a partition hosted here (leader or follower), else None."""
        part = self.partitions.get((topic, partition))
        return part.high_watermark if part is not None else None

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def missing_partition_error(self, topic: str | None, partition: int) -> ErrorCode:
        """Why a request for a partition not hosted here fails: NOT_LEADER_OR_FOLLOWER when it
        exists on another broker, UNKNOWN_TOPIC_OR_PARTITION when it does not exist at all."""
        if topic is not None and self.metadata.view.partition(topic, partition) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def partition_or_raise(self, topic: str | None, partition: int) -> Partition:
        """The hosted partition, or NotLeaderOrFollower / UnknownTopicOrPartition (the
        partition's own methods check leadership and epochs)."""
        part = self.partitions.get((topic, partition)) if topic is not None else None
        if part is not None:
            if part.offline:
                raise KafkaApiError(
                    f"{topic}-{partition} is in an offline log dir", ErrorCode.KAFKA_STORAGE_ERROR
                )
            return part
        if self.missing_partition_error(topic, partition) == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            raise NotLeaderOrFollower(f"Broker {self.broker_id} does not host {topic}-{partition}")
        raise UnknownTopicOrPartition(f"{topic}-{partition} does not exist")

    # -- produce -----------------------------------------------------------------------------

    @staticmethod
    def _append_failure(
        part: Partition,
        code: ErrorCode,
        message: str | None,
        record_errors: tuple[tuple[int, str], ...],
    ) -> AppendResult:
        """A failed append as Kafka answers it: errors met before the log (leadership, sizes,
        corrupt batches, codecs the version may not carry) carry no log start offset; the others
        carry the partition's. Record validation failures naming records keep their message and
        record errors (KIP-467), corrupt batches their message; the others have none."""
        if code in _UNREACHED_ERRORS:
            return AppendResult(code)
        if code == ErrorCode.CORRUPT_MESSAGE:
            return AppendResult(code, None, message)
        if code in _RECORD_VALIDATION_ERRORS and record_errors:
            return AppendResult(
                code, None, message, record_errors, log_start_offset=part.log.log_start_offset
            )
        return AppendResult(code, log_start_offset=part.log.log_start_offset)

    def append_records(
        self,
        topic: str | None,
        partition: int,
        records: memoryview | bytes | None,
        *,
        api_version: int,
        now_ms: int,
        required_acks: int = 1,
        verification: VerificationGuard | None = None,
    ) -> AppendResult:
        """Appends one partition's part of a Produce request (its batches are validated by the
        partition); the error, if any, is returned for the response. With ``required_acks=-1``
        on a replicated partition whose high watermark has not reached the appended batches,
        ``waiting`` says what the produce must wait for (see :meth:`wait_for_replicas`).
        ``verification``: the KIP-890 guard of a transactional produce (None: unchecked)."""
        part = self.partitions.get((topic, partition)) if topic is not None else None
        if part is None:
            return AppendResult(self.missing_partition_error(topic, partition))
        if part.offline:
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, None, _OFFLINE_MESSAGE)
        epoch = part.leadership_epoch
        try:
            info = part.append_records_to_leader(
                records,
                api_version=api_version,
                now_ms=now_ms,
                required_acks=required_acks,
                verification=verification,
            )
        except RecordError as e:
            if e.before_log:
                return AppendResult(e.error_code)
            return self._append_failure(part, e.error_code, str(e), tuple(e.record_errors))
        except (KafkaApiError, StorageError) as e:
            # (a KafkaStorageError took the log dir offline already: Partition.on_storage_error)
            if isinstance(e, _PRODUCER_STATE_REFUSALS):
                # Kafka's ReplicaManager logs these (not a too-large record or batch, which any
                # client can send at will): "Error processing append operation on partition"
                log.error(
                    "Error processing append operation on partition %s-%d (leader epoch %d, "
                    "log end offset %d): %s", topic, partition, part.leader_epoch,
                    part.log_end_offset, e,
                )  # fmt: skip
            code, message = error_of(e)
            return self._append_failure(part, code, message, ())
        if required_acks == -1 and part.replicated:
            required = info.last_offset + 1
            status = ProducePartitionStatus(part, required, epoch)
            status.error = part.check_enough_replicas_reach_offset(required, epoch)
            if status.error is None:
                return AppendResult(ErrorCode.NONE, info, waiting=status)
            if status.error != ErrorCode.NONE:
                return AppendResult(status.error, None)
        return AppendResult(ErrorCode.NONE, info)

    def leadership_expected(self, topic: str, partition: int) -> bool:
        """Whether this broker, which does not lead the partition, may learn a moment later
        that it does (see :mod:`broker.replication.delayed_leadership`): it hosts the partition
        in a log dir that is online, belongs to its ISR (only an ISR member can be elected),
        and the leader in its view is not a live broker (the leader died; its successor is
        being elected), or this broker is the preferred replica (a preferred election)."""
        part = self.partitions.get((topic, partition))
        if part is None or part.is_leader or part.offline or self.broker_id not in part.isr:
            return False
        if part.leader_id not in self.metadata.view.brokers:
            return True
        return bool(part.replicas) and part.replicas[0] == self.broker_id

    async def wait_for_leadership(
        self, partitions: Sequence[TopicPartition], timeout_ms: int
    ) -> None:
        """Waits (up to ``timeout_ms``) until each of ``partitions`` has a new state applied
        (a leader epoch other than now), or is led here, or is no longer
        :meth:`leadership_expected`. Runs on the request's loop."""

        def settled(tp: TopicPartition, epoch: int) -> bool:
            part = self.partitions.get(tp)
            # (leadership_expected is False for a partition gone or led here)
            return part is None or part.leader_epoch != epoch or not self.leadership_expected(*tp)

        epochs = {}
        for tp in partitions:
            part = self.partitions.get(tp)
            epochs[tp] = part.leader_epoch if part is not None else -1
        op = DelayedLeadership(
            asyncio.get_running_loop(), timeout_ms=timeout_ms, epochs=epochs, settled=settled
        )
        self.topic_purgatory.try_complete_else_watch(op, {t for t, _ in partitions})
        await op.future

    def start_transaction_verification(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequences: dict[tuple[str, int], int],
    ) -> ProduceVerification:
        """KIP-890 for one transactional produce (Kafka's
        ``maybeStartTransactionVerificationForPartitions``): a guard in each partition of
        ``base_sequences`` (its first batch's sequence) where the producer has no transaction
        open, to verify with the coordinator; a partition this broker does not lead is
        answered with its error; one not hosted is left to the append."""
        verification = ProduceVerification(producer_id, producer_epoch)
        for tp, sequence in base_sequences.items():
            part = self.partitions.get(tp)
            if part is None:
                continue
            try:
                guard = part.maybe_start_transaction_verification(
                    producer_id, sequence, producer_epoch
                )
            except (KafkaApiError, StorageError) as e:
                verification.errors[tp] = error_of(e)
                continue
            if guard is not None:
                verification.guards[tp] = guard
        return verification

    async def wait_for_replicas(
        self, statuses: list[ProducePartitionStatus], timeout_ms: int
    ) -> list[ErrorCode]:
        """An ``acks=all`` produce waits (in the produce purgatory) until every partition's ISR
        has its batches, leadership moves, or ``timeout_ms`` passes; returns each partition's
        answer (REQUEST_TIMED_OUT where the deadline came first). Runs on the request's loop."""
        op = DelayedProduce(asyncio.get_running_loop(), timeout_ms=timeout_ms, statuses=statuses)
        self.produce_purgatory.try_complete_else_watch(op, [s.partition.key for s in statuses])
        await op.future
        return op.result()

    # -- fetch -------------------------------------------------------------------------------

    def read_from_local_log(self, params: FetchParams, reads: Sequence[FetchRead]) -> int:
        """Reads every partition of a fetch into ``read.result``, stopping at the request's
        ``max_bytes`` (but always at least one whole batch); returns the bytes found."""
        total = 0
        max_bytes = params.max_bytes
        isolation = params.isolation
        for read in reads:
            part = read.partition
            if part is None:
                read.result = LogReadResult(self.missing_partition_error(read.name, read.index))
                continue
            if part.offline:
                read.result = LogReadResult(ErrorCode.KAFKA_STORAGE_ERROR)
                continue
            limit = min(read.max_bytes, max_bytes - total)
            if params.replica_id >= 0:
                result = part.read_for_follower(
                    params.replica_id,
                    read.fetch_offset,
                    limit,
                    current_leader_epoch=read.current_leader_epoch,
                    last_fetched_epoch=read.last_fetched_epoch,
                    follower_log_start_offset=read.log_start_offset,
                    min_one_batch=total == 0,
                )
            else:
                result = part.read_records(
                    read.fetch_offset,
                    limit,
                    current_leader_epoch=read.current_leader_epoch,
                    isolation=isolation,
                    min_one_batch=total == 0,
                    last_fetched_epoch=read.last_fetched_epoch,
                )
            if result.region is not None:
                total += result.region.length
            read.result = result
        return total

    async def fetch_messages(self, params: FetchParams, reads: Sequence[FetchRead]) -> None:
        """Reads the fetch's partitions; below ``min_bytes`` (and with no partition in error),
        waits for appends up to ``max_wait_ms`` and reads again. Results are in
        ``read.result``. Runs on the requesting connection's loop."""
        follower = params.replica_id >= 0
        partitions: dict[TopicPartition, Partition] = {}
        counted_from: list[int] = []
        if params.max_wait_ms > 0:
            # the byte counters before the read: what arrives between the read and the wait
            # must wake it (else a follower could sit out max_wait_ms behind an append)
            for r in reads:
                part = r.partition
                if part is not None and part.key not in partitions:
                    partitions[part.key] = part
                    counted_from.append(part.bytes_appended if follower else part.bytes_visible)
        total = self.read_from_local_log(params, reads)
        if total >= params.min_bytes or params.max_wait_ms <= 0:
            return
        if any(r.result.error != _NONE or r.result.diverging_epoch is not None for r in reads):
            return
        op = DelayedFetch(
            asyncio.get_running_loop(),
            timeout_ms=params.max_wait_ms,
            needed=params.min_bytes,
            partitions=list(partitions.values()),
            follower=follower,
            counted_from=counted_from,
        )
        self.fetch_purgatory.try_complete_else_watch(op, partitions)
        await op.future
        if total == 0 and op.expired and op.nothing_arrived():
            # the deadline came and nothing changed: the first read (no region, only offsets)
            # is the answer, as it would be again (a caught-up consumer's long poll)
            return
        self.read_from_local_log(params, reads)

    # -- metrics -----------------------------------------------------------------------------

    def _metrics(self) -> list[MetricSamples]:
        """Kafka's per-partition Log gauges (``kafka.log:type=Log,name=Size|LogStartOffset|
        LogEndOffset,topic=,partition=`` -> ``kafka_log_log_size{topic,partition}``...), the log
        manager's offline directories, and Odradek's own."""
        sizes = []
        starts = []
        ends = []
        producers = 0
        offline_dirs = self.log_manager.offline_dirs
        for (topic, index), part in list(self.partitions.items()):
            labels = f'{{topic="{topic}",partition="{index}"}}'
            try:
                sizes.append((labels, float(part.log.size_in_bytes)))
                starts.append((labels, float(part.log_start_offset)))
                ends.append((labels, float(part.log_end_offset)))
            except Exception:  # noqa: BLE001 - a log being deleted has no size to report
                log.debug("no size for %s-%d", topic, index)
            state = part.log.producer_state
            if isinstance(state, ProducerStateManager):
                producers += len(state.producers)
        return [
            ("kafka_log_log_size", "gauge", "Bytes on disk per partition log.", sizes),
            ("kafka_log_log_logstartoffset", "gauge", "Log start offset per partition.", starts),
            ("kafka_log_log_logendoffset", "gauge", "Log end offset per partition.", ends),
            (
                "kafka_log_logmanager_offlinelogdirectorycount",
                "gauge",
                "Log directories taken offline by an I/O error (a failed or full disk).",
                [("", float(len(offline_dirs)))],
            ),
            (
                "kafka_log_logmanager_logdirectoryoffline",
                "gauge",
                "1 for a log directory taken offline by an I/O error, else 0.",
                [
                    (f'{{logDirectory="{label_value(str(d))}"}}', float(d in offline_dirs))
                    for d in self.log_manager.log_dirs
                ],
            ),
            (
                "odradek_idempotent_producers",
                "gauge",
                "Producer ids with sequence state, summed over partitions.",
                [("", float(producers))],
            ),
            (
                "odradek_delayed_fetches",
                "gauge",
                "Fetches waiting in the fetch purgatory.",
                [("", float(self.fetch_purgatory.watched))],
            ),
            *self._replication_metrics(),
        ]

    def _replication_metrics(self) -> list[MetricSamples]:
        """Kafka's replication MBeans, named as the Prometheus JMX exporter's Kafka rules name
        them (``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` ->
        ``kafka_server_replicamanager_underreplicatedpartitions``; meters' counts ``_total``)."""
        parts = list(self.partitions.values())
        leaders = [p for p in parts if p.is_leader and not p.offline]
        isr = self.isr_manager
        return [
            (
                "kafka_server_replicamanager_leadercount",
                "gauge",
                "Partitions this broker leads.",
                [("", float(len(leaders)))],
            ),
            (
                "kafka_server_replicamanager_partitioncount",
                "gauge",
                "Partitions this broker hosts (leading or following).",
                [("", float(len(parts)))],
            ),
            (
                "kafka_server_replicamanager_offlinereplicacount",
                "gauge",
                "Replicas this broker hosts in offline log dirs.",
                [("", float(sum(p.offline for p in parts)))],
            ),
            (
                "kafka_server_replicamanager_underreplicatedpartitions",
                "gauge",
                "Partitions this broker leads whose ISR is smaller than their replicas.",
                [("", float(sum(p.under_replicated for p in leaders)))],
            ),
            (
                "kafka_server_replicamanager_underminisrpartitioncount",
                "gauge",
                "Partitions this broker leads whose ISR is below min.insync.replicas.",
                [("", float(sum(p.under_min_isr for p in leaders)))],
            ),
            (
                "kafka_server_replicamanager_isrshrinks_total",
                "counter",
                "ISR shrinks written by this broker.",
                [("", float(isr.shrinks))],
            ),
            (
                "kafka_server_replicamanager_isrexpands_total",
                "counter",
                "ISR expansions written by this broker.",
                [("", float(isr.expands))],
            ),
            (
                "kafka_server_replicamanager_failedisrupdates_total",
                "counter",
                "ISR changes this broker proposed that were not written.",
                [("", float(isr.failures))],
            ),
            (
                "kafka_server_replicafetchermanager_maxlag",
                "gauge",
                "The largest lag (in records) of a partition this broker follows.",
                [('{clientId="Replica"}', float(self.fetchers.max_lag))],
            ),
            (
                "kafka_server_delayedoperationpurgatory_purgatorysize",
                "gauge",
                "Operations waiting in a purgatory.",
                [
                    ('{delayedOperation="Fetch"}', float(self.fetch_purgatory.watched)),
                    ('{delayedOperation="Produce"}', float(self.produce_purgatory.watched)),
                ],
            ),
        ]
