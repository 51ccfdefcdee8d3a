"""Following an internal topic's leadership (Kafka's ``CoordinatorLoaderImpl`` and the part of
``GroupCoordinatorService`` that reacts to leader changes): each broker coordinates the keys
whose partition it leads.

:class:`InternalTopicCoordinator` creates the topic when first needed (FindCoordinator), with
the configs the coordinator asks for; watches the metadata store; when this broker gains the
leadership of a partition it tells the coordinator to begin loading it (requests meanwhile get
COORDINATOR_LOAD_IN_PROGRESS) and reads the partition on a loader thread; when it loses one, the
coordinator unloads it. It works for any coordinator with the :class:`Loadable` methods: the
group coordinator on ``__consumer_offsets`` today, the transaction coordinator on
``__transaction_state`` next.

Thread-safety: every public method may be called from any thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker.admin import TopicAdmin
from broker.coordinators.partition_log import PartitionCoordinatorLog
from coordination.errors import KafkaApiError, TopicExists
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import ClusterView
from coordination.runtime.runtime import LoadedRecord
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)


class Loadable(Protocol):
    """What a coordinator offers for its partitions' lifecycle."""

    def begin_loading(self, partition: int) -> int: ...

    def complete_loading(
        self, partition: int, load_id: int, records: Iterable[LoadedRecord]
    ) -> bool: ...

    def unload(self, partition: int) -> None: ...

    def coordinates(self, partition: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class CoordinatorNode:
    """A FindCoordinator answer."""

    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


@dataclass(frozen=True, slots=True)
class InternalTopicSpec:
    """How to create the internal topic (Kafka's ``offsets.topic.*`` /
    ``transaction.state.log.*`` configs)."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]


class InternalTopicCoordinator:
    def __init__(
        self,
        spec: InternalTopicSpec,
        coordinator: Loadable,
        *,
        broker_id: int,
        metadata: MetadataStore,
        admin: TopicAdmin,
        log_: PartitionCoordinatorLog,
        cap_replication_factor: bool = True,
    ) -> None:
        self.spec = spec
        #: standalone: the topic gets min(replication factor, live brokers) replicas; in a
        #: cluster it is created only once that many brokers are alive, as in Kafka
        self.cap_replication_factor = cap_replication_factor
        self.topic = spec.name
        self.coordinator = coordinator
        self.broker_id = broker_id
        self.metadata = metadata
        self.admin = admin
        self.log = log_
        self._led: set[int] = set()
        self._lock = threading.Lock()
        self._create_lock = threading.Lock()
        self._last_not_enough_log = 0.0
        self._loads: queue.Queue[tuple[int, int] | None] = queue.Queue()
        self._loader: threading.Thread | None = None
        self._stopped = False
        self._pending_loads = 0
        self._pending_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------

    def startup(self) -> None:
        self._loader = threading.Thread(
            target=self._load_loop, name=f"{self.topic}-loader", daemon=True
        )
        self._loader.start()
        self.metadata.add_listener(self._on_metadata)
        self._follow_leadership()

    def shutdown(self) -> None:
        """Stops the loader. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._loads.put(None)
        if self._loader is not None:
            self._loader.join(10)

    # -- leadership ------------------------------------------------------------------------------

    def _on_metadata(self, old: ClusterView, new: ClusterView) -> None:
        if old.topics.get(self.topic) is not new.topics.get(self.topic):
            self._follow_leadership()

    def _follow_leadership(self) -> None:
        """Takes and gives up partitions as leadership moves. The store's current view is read
        under the lock, so interleaved notifications converge on the newest view."""
        if self._stopped:
            return
        with self._lock:
            topic = self.metadata.view.topics.get(self.topic)
            led = set()
            if topic is not None:
                led = {p.partition for p in topic.partitions if p.leader == self.broker_id}
                if len(topic.partitions) != self.spec.num_partitions:
                    log.warning(
                        "%s has %d partitions, the coordinator was configured for %d",
                        self.topic,
                        len(topic.partitions),
                        self.spec.num_partitions,
                    )
            gained = sorted(led - self._led)
            lost = sorted(self._led - led)
            self._led = led
        for p in lost:
            log.info("no longer coordinating %s-%d", self.topic, p)
            self.coordinator.unload(p)
        for p in gained:
            load_id = self.coordinator.begin_loading(p)
            plog = self.log.local_log(p)
            if plog is not None and plog.log_end_offset == plog.log_start_offset:
                # nothing to read: no need to make clients wait for the loader
                self.coordinator.complete_loading(p, load_id, [])
            else:
                with self._pending_lock:
                    self._pending_loads += 1
                self._loads.put((p, load_id))

    @property
    def loading(self) -> bool:
        """Whether partitions this broker leads are still being loaded (readiness)."""
        return self._pending_loads > 0

    def _load_loop(self) -> None:
        while True:
            item = self._loads.get()
            if item is None:
                return
            partition, load_id = item
            started = time.monotonic()
            try:
                records = self.log.read_for_load(partition)
                loaded = self.coordinator.complete_loading(partition, load_id, records)
            except Exception:
                log.exception("replaying %s-%d failed", self.topic, partition)
                continue
            finally:
                with self._pending_lock:
                    self._pending_loads -= 1
            if loaded:
                log.info(
                    "loaded %s-%d (%d records) in %.0f ms",
                    self.topic,
                    partition,
                    len(records),
                    (time.monotonic() - started) * 1000,
                )

    # -- FindCoordinator -------------------------------------------------------------------------

    def ensure_topic(self) -> bool:
        """Creates the topic if it does not exist; returns whether it exists now.

        Concurrent callers wait for the one creating it: the embedded store tells its listeners
        (the replicas, then this coordinator) on the creating thread after publishing the topic,
        so without the wait the others would answer COORDINATOR_NOT_AVAILABLE meanwhile (a few
        hundred ms), which librdkafka's admin client can take long to retry (seen: its
        DescribeConsumerGroups not answered within 10 s)."""
        # the view shows the topic before the creating thread (holding the lock) has run the
        # listeners: a caller that sees it then waits for the creation too
        if self.topic in self.metadata.view.topics and not self._create_lock.locked():
            return True
        with self._create_lock:
            if self.topic in self.metadata.view.topics:
                return True
            live = max(len(self.metadata.view.brokers), 1)
            if not self.cap_replication_factor and live < self.spec.replication_factor:
                now = time.monotonic()
                if now - self._last_not_enough_log > 10:
                    self._last_not_enough_log = now
                    log.warning(
                        "Number of alive brokers '%d' does not meet the required replication "
                        "factor '%d' for %s. This error can be ignored if the cluster is "
                        "starting up and not all brokers are up yet.",
                        live,
                        self.spec.replication_factor,
                        self.topic,
                    )
                return False
            replication_factor = min(self.spec.replication_factor, live)
            configs = dict(self.spec.configs)
            if "min.insync.replicas" in configs:
                # never above the replicas the topic gets (a standalone broker has one)
                configs["min.insync.replicas"] = str(
                    min(int(configs["min.insync.replicas"]), replication_factor)
                )
            try:
                self.admin.create_topic(
                    self.topic,
                    num_partitions=self.spec.num_partitions,
                    replication_factor=replication_factor,
                    configs=configs,
                    internal=True,
                )
            except TopicExists:
                pass
            except KafkaApiError as e:
                log.warning("could not create %s: %s", self.topic, e)
                return False
            return self.topic in self.metadata.view.topics

    def coordinator_node(self, partition: int, listener: str) -> CoordinatorNode:
        """The broker leading ``partition`` of the topic, for FindCoordinator."""
        if not self.ensure_topic():
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        view = self.metadata.view
        topic = view.topics.get(self.topic)
        if topic is None or partition >= len(topic.partitions):
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        leader = topic.partitions[partition].leader
        if leader == self.broker_id and not self.coordinator.coordinates(partition):
            # the view already names us, but the coordinator has not taken the partition yet
            # (metadata listeners run after the view is published): ask the client to retry
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        info = view.brokers.get(leader)
        if info is None:
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        ep = info.endpoint(listener)
        return CoordinatorNode(ErrorCode.NONE, leader, ep.host, ep.port)
