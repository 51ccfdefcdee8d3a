"""The coordinators' runtime: what the sans-loop coordinators of coordination/ need from a broker.

* :class:`LoopScheduler`: timers on the broker's main event loop, armable and cancellable from
  any thread (handlers run on the processor threads).
* :class:`OffsetsTopicLog`: the group coordinator's writes, as record batches appended to the
  leader replicas of ``__consumer_offsets`` partitions.
* :class:`CoordinatorRuntime` (``broker.group_coordinator``): creates ``__consumer_offsets`` when
  first needed (FindCoordinator) with Kafka's topic configs (compacted,
  ``offsets.topic.num.partitions``, ``offsets.topic.segment.bytes``,
  ``offsets.topic.replication.factor`` capped at the live brokers), follows the leadership of its
  partitions through the metadata store (each broker coordinates the groups whose partition it
  leads), loads newly led partitions on a loader thread (COORDINATOR_LOAD_IN_PROGRESS meanwhile),
  and hands out producer ids. It also expires idle producers (``producer.id.expiration.ms``).
* :func:`runtime`, :func:`future_callback` and :func:`client_host`: what the group handlers
  share.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from broker.admin import TopicAdmin
from broker.config import BrokerConfig
from broker.metrics import MetricSamples, MetricsRegistry
from broker.replication.errors import error_of
from broker.replication.replica_manager import ReplicaManager
from coordination.errors import KafkaApiError, TopicExists
from coordination.group_coordinator import (
    CoordinatorWriteError,
    GroupConfig,
    GroupCoordinator,
    Record,
)
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import OFFSETS_TOPIC, ClusterView
from coordination.producer_id_manager import ProducerIdManager
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.records.record import RecordBatchBuilder, iter_record_batches
from storage.errors import StorageError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How much of a ``__consumer_offsets`` partition the loader reads at a time.
LOAD_CHUNK_BYTES = 4 * 1024 * 1024


class _LoopTimer:
    __slots__ = ("cancelled", "handle")

    def __init__(self) -> None:
        self.cancelled = False
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        # a flag, not handle.cancel(): timer handles are not thread-safe; a cancelled timer
        # that fires does nothing
        self.cancelled = True


class LoopScheduler:
    """coordination's Scheduler on an asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._loop_thread = threading.get_ident()

    def now_ms(self) -> int:
        # CLOCK_MONOTONIC, the clock of asyncio's and uvloop's timers (loop.time() is not for
        # other threads: uvloop's updates the loop's cached time)
        return time.monotonic_ns() // 1_000_000

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> _LoopTimer:
        timer = _LoopTimer()
        delay = max(delay_ms, 0) / 1000

        def fire() -> None:
            if timer.cancelled:
                return
            timer.cancelled = True
            try:
                callback()
            except Exception:
                log.exception("coordinator timer failed")

        def arm() -> None:
            if not timer.cancelled:
                timer.handle = self.loop.call_later(delay, fire)

        if threading.get_ident() == self._loop_thread:
            arm()
        else:
            try:
                self.loop.call_soon_threadsafe(arm)
            except RuntimeError:
                timer.cancelled = True  # the main loop is closed: the broker is stopping
        return timer


class OffsetsTopicLog:
    """coordination's CoordinatorLog on the ``__consumer_offsets`` partitions this broker leads."""

    def __init__(self, replica_manager: ReplicaManager, codec: int) -> None:
        self.replica_manager = replica_manager
        self.codec = codec

    def append(self, partition: int, records: Sequence[Record]) -> None:
        part = self.replica_manager.get_partition(OFFSETS_TOPIC, partition)
        if part is None:
            raise CoordinatorWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not part.is_leader:
            raise CoordinatorWriteError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        now = time.time_ns() // 1_000_000
        builder = RecordBatchBuilder(compression=self.codec)
        for key, value in records:
            builder.append(value, key=key, timestamp=now)
        buf = bytearray(builder.build())
        try:
            part.append_batches_to_leader(buf, now_ms=now)
        except (StorageError, KafkaApiError) as e:
            code, message = error_of(e)
            raise CoordinatorWriteError(code, message or "") from e


def read_offsets_partition(plog: Any) -> Iterator[Record]:
    """Every (key, value) record of a ``__consumer_offsets`` log up to its high watermark."""
    offset = plog.log_start_offset
    end = plog.high_watermark
    while offset < end:
        region = plog.read(offset, LOAD_CHUNK_BYTES, max_offset=end)
        if region is None:
            return
        data = region.read()
        advanced = False
        for batch in iter_record_batches(data):
            if batch.header.is_control:
                offset = max(offset, batch.header.next_offset)
                continue
            for record in batch.records:
                if record.offset >= offset and record.key is not None:
                    yield record.key, record.value
            if batch.header.next_offset > offset:
                offset = batch.header.next_offset
                advanced = True
        if not advanced:
            return


def read_for_load(name: str, get_log: Callable[[], Any]) -> list[Record]:
    """The records of a ``__consumer_offsets`` partition to load (``get_log()``: its log, or
    None). A failed read is tried once more; if that fails too, the records read before the
    failure are returned, so the partition's groups are loaded from those rather than answering
    COORDINATOR_LOAD_IN_PROGRESS until leadership moves."""
    records: list[Record] = []
    failure = ""
    for attempt in (1, 2):
        records = []
        try:
            plog = get_log()
            if plog is not None:
                for record in read_offsets_partition(plog):
                    records.append(record)
            return records
        except (StorageError, RemoteProtocolError, OSError) as e:
            failure = f"{type(e).__name__}: {e}"
        except Exception as e:  # a bug: keep its traceback
            log.exception("reading %s failed", name)
            failure = f"{type(e).__name__}: {e}"
        if attempt == 1:
            log.warning("reading %s failed (%s), retrying", name, failure)
    log.error(
        "reading %s failed again (%s): loading its groups from the %d records read before the "
        "failure",
        name,
        failure,
        len(records),
    )
    return records


def future_callback(
    loop: asyncio.AbstractEventLoop, kind: type[T]
) -> tuple[asyncio.Future[T], Callable[[T], None]]:
    """A future on ``loop`` and a thread-safe callback that completes it (once)."""
    future: asyncio.Future[T] = loop.create_future()

    def resolve(value: T) -> None:
        if not future.done():
            future.set_result(value)

    def callback(value: T) -> None:
        try:
            loop.call_soon_threadsafe(resolve, value)
        except RuntimeError:
            pass  # the processor's loop is closed: the broker is stopping

    return future, callback


@dataclass(frozen=True, slots=True)
class CoordinatorNode:
    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


class CoordinatorRuntime:
    """See the module docstring. Created and started by the broker after its storage."""

    def __init__(
        self,
        *,
        broker_id: int,
        config: BrokerConfig,
        loop: asyncio.AbstractEventLoop,
        metadata: MetadataStore,
        replica_manager: ReplicaManager,
        admin: TopicAdmin,
        metrics: MetricsRegistry,
    ) -> None:
        self.config = config
        self.broker_id = broker_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.admin = admin
        self.metrics = metrics
        self.scheduler = LoopScheduler(loop)
        view = metadata.view
        existing = view.topics.get(OFFSETS_TOPIC)
        c = self.config
        self.groups = GroupCoordinator(
            GroupConfig(
                num_partitions=len(existing.partitions)
                if existing is not None
                else int(c["offsets.topic.num.partitions"]),
                min_session_timeout_ms=int(c["group.min.session.timeout.ms"]),
                max_session_timeout_ms=int(c["group.max.session.timeout.ms"]),
                initial_rebalance_delay_ms=int(c["group.initial.rebalance.delay.ms"]),
                max_size=int(c["group.max.size"]),
                offsets_retention_ms=int(c["offsets.retention.minutes"]) * 60_000,
                offsets_retention_check_interval_ms=int(c["offsets.retention.check.interval.ms"]),
                offset_metadata_max_bytes=int(c["offset.metadata.max.bytes"]),
            ),
            self.scheduler,
            OffsetsTopicLog(replica_manager, int(c["offsets.topic.compression.codec"])),
        )
        self.producer_ids = ProducerIdManager(metadata)
        self._led: set[int] = set()
        self._lock = threading.Lock()
        self._offsets_topic_lock = threading.Lock()
        self._loads: queue.Queue[tuple[int, int] | None] = queue.Queue()
        self._loader: threading.Thread | None = None
        self._stopped = False

    # -- lifecycle -----------------------------------------------------------------------------

    def startup(self) -> None:
        self.groups.startup()
        self._loader = threading.Thread(
            target=self._load_loop, name="coordinator-loader", daemon=True
        )
        self._loader.start()
        self.metadata.add_listener(self._on_metadata)
        self._follow_leadership(self.metadata.view)
        self.metrics.add(self._metrics)

    def shutdown(self) -> None:
        """Stops the coordinators (members waiting in a rebalance are answered
        COORDINATOR_NOT_AVAILABLE) and the loader. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self.groups.shutdown()
        self._loads.put(None)
        if self._loader is not None:
            self._loader.join(10)

    # -- leadership of __consumer_offsets --------------------------------------------------------

    def _on_metadata(self, old: ClusterView, new: ClusterView) -> None:
        if old.topics.get(OFFSETS_TOPIC) is not new.topics.get(OFFSETS_TOPIC):
            self._follow_leadership(new)

    def _follow_leadership(self, view: ClusterView) -> None:
        """Takes and gives up coordinator partitions as leadership moves. The store's current
        view is read under the lock, so interleaved notifications converge on the newest view
        (``view`` only says that something changed)."""
        if self._stopped:
            return
        with self._lock:
            view = self.metadata.view
            topic = view.topics.get(OFFSETS_TOPIC)
            led = set()
            if topic is not None:
                led = {p.partition for p in topic.partitions if p.leader == self.broker_id}
                if len(topic.partitions) != self.groups.config.num_partitions:
                    log.warning(
                        "%s has %d partitions, the coordinator was configured for %d",
                        OFFSETS_TOPIC,
                        len(topic.partitions),
                        self.groups.config.num_partitions,
                    )
            gained = sorted(led - self._led)
            lost = sorted(self._led - led)
            self._led = led
        for p in lost:
            log.info("no longer coordinating the groups of %s-%d", OFFSETS_TOPIC, p)
            self.groups.unload(p)
        for p in gained:
            load_id = self.groups.begin_loading(p)
            part = self.replica_manager.get_partition(OFFSETS_TOPIC, p)
            if part is not None and part.log.log_end_offset == part.log.log_start_offset:
                # nothing to read: no need to make clients wait for the loader
                self.groups.complete_loading(p, load_id, [])
            else:
                self._loads.put((p, load_id))

    def _load_loop(self) -> None:
        while True:
            item = self._loads.get()
            if item is None:
                return
            partition, load_id = item
            started = time.monotonic()
            records = read_for_load(
                f"{OFFSETS_TOPIC}-{partition}", functools.partial(self._offsets_log, partition)
            )
            try:
                loaded = self.groups.complete_loading(partition, load_id, records)
            except Exception:
                log.exception("replaying %s-%d failed", OFFSETS_TOPIC, partition)
                continue
            if loaded:
                log.info(
                    "loaded %s-%d (%d records) in %.0f ms",
                    OFFSETS_TOPIC,
                    partition,
                    len(records),
                    (time.monotonic() - started) * 1000,
                )

    def _offsets_log(self, partition: int) -> Any:
        part = self.replica_manager.get_partition(OFFSETS_TOPIC, partition)
        return part.log if part is not None else None

    # -- FindCoordinator -------------------------------------------------------------------------

    def ensure_offsets_topic(self) -> bool:
        """Creates ``__consumer_offsets`` if it does not exist; returns whether it exists now.

        Concurrent callers wait for the one creating it: the embedded store tells its listeners
        (the replicas, then this coordinator) on the creating thread after publishing the topic,
        so without the wait the others would answer COORDINATOR_NOT_AVAILABLE meanwhile (a few
        hundred ms), which librdkafka's admin client can take long to retry (seen: its
        DescribeConsumerGroups not answered within 10 s)."""
        if OFFSETS_TOPIC in self.metadata.view.topics:
            return True
        with self._offsets_topic_lock:
            if OFFSETS_TOPIC in self.metadata.view.topics:
                return True
            c = self.config
            live = max(len(self.metadata.view.brokers), 1)
            try:
                self.admin.create_topic(
                    OFFSETS_TOPIC,
                    num_partitions=int(c["offsets.topic.num.partitions"]),
                    replication_factor=min(int(c["offsets.topic.replication.factor"]), live),
                    configs={
                        "cleanup.policy": "compact",
                        "compression.type": "producer",
                        "segment.bytes": str(c["offsets.topic.segment.bytes"]),
                    },
                    internal=True,
                )
            except TopicExists:
                pass
            except KafkaApiError as e:
                log.warning("could not create %s: %s", OFFSETS_TOPIC, e)
                return False
            return OFFSETS_TOPIC in self.metadata.view.topics

    def find_group_coordinator(self, group_id: str, listener: str) -> CoordinatorNode:
        if not self.ensure_offsets_topic():
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        view = self.metadata.view
        topic = view.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        p = self.groups.partition_for(group_id)
        if p >= len(topic.partitions):
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        leader = topic.partitions[p].leader
        if leader == self.broker_id and not self.groups.coordinates(p):
            # the view already names us, but the coordinator has not taken the partition yet
            # (metadata listeners run after the view is published): ask the client to retry
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        info = view.brokers.get(leader)
        if info is None:
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        ep = info.endpoint(listener)
        return CoordinatorNode(ErrorCode.NONE, leader, ep.host, ep.port)

    # -- metrics ---------------------------------------------------------------------------------

    def _metrics(self) -> list[MetricSamples]:
        _, groups = self.groups.list_groups()
        states = Counter(g.state for g in groups)
        return [
            (
                "odradek_consumer_groups",
                "gauge",
                "Classic groups this broker coordinates, by state.",
                [(f'{{state="{s}"}}', float(n)) for s, n in sorted(states.items())],
            ),
            (
                "odradek_coordinator_partitions_loading",
                "gauge",
                "__consumer_offsets partitions being loaded.",
                [("", float(len(self.groups.loading_partitions)))],
            ),
        ]
