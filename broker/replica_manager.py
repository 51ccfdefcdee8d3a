"""The partitions this broker hosts, on top of storage: appends, reads, waiting fetches.

``ReplicaManager`` (Kafka's noun) keeps one :class:`Partition` per hosted topic-partition, created
and deleted as the metadata store announces topics, and re-configured when topic configs change.

Waiting fetches: a Fetch that found fewer than ``min_bytes`` registers a :class:`FetchWaiter` on
each partition it reads. An append (on any network thread) adds the appended bytes to every waiter
of that partition; a waiter that has seen enough wakes its fetch on the fetch's own event loop with
``call_soon_threadsafe``. Fetches are therefore woken by data, not by a timer.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any

from broker.config import TOPIC_CONFIGS, parse_value
from broker.validation import TopicRules
from coordination.metadata import ClusterView, TopicMetadata
from protocol.error_codes import ErrorCode
from storage.producer_state import ProducerStateManager

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)

#: How often the maintenance thread runs the log manager's periodic work.
MAINTENANCE_INTERVAL_S = 1.0


class FetchWaiter:
    """One waiting fetch: woken once ``needed`` more bytes were appended to its partitions."""

    __slots__ = ("_fired", "future", "got", "loop", "needed")

    def __init__(self, loop: asyncio.AbstractEventLoop, needed: int) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.needed = needed
        self.got = 0
        self._fired = False

    def on_append(self, nbytes: int) -> None:
        """Called by the appending thread (any thread)."""
        self.got += nbytes
        if self.got >= self.needed and not self._fired:
            self._fired = True
            self.loop.call_soon_threadsafe(self._wake)

    def wake(self) -> None:
        if not self._fired:
            self._fired = True
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class Partition:
    """A hosted topic-partition: its log, its leadership, and the fetches waiting on it."""

    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: uuid.UUID,
        log: Any,
        rules: TopicRules,
        leader_epoch: int,
        is_leader: bool,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.rules = rules
        self.leader_epoch = leader_epoch
        self.is_leader = is_leader
        self._waiters: set[FetchWaiter] = set()
        self._waiters_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    def add_waiter(self, waiter: FetchWaiter) -> None:
        with self._waiters_lock:
            self._waiters.add(waiter)

    def remove_waiter(self, waiter: FetchWaiter) -> None:
        with self._waiters_lock:
            self._waiters.discard(waiter)

    def notify_append(self, nbytes: int) -> None:
        if self._waiters:
            with self._waiters_lock:
                waiters = list(self._waiters)
            for w in waiters:
                w.on_append(nbytes)

    def wake_all(self) -> None:
        with self._waiters_lock:
            waiters = list(self._waiters)
        for w in waiters:
            w.wake()


def topic_rules(config: dict[str, Any]) -> TopicRules:
    return TopicRules(
        compression_type=str(config["compression.type"]),
        log_append_time=config["message.timestamp.type"] == "LogAppendTime",
        timestamp_before_max_ms=int(config["message.timestamp.before.max.ms"]),
        timestamp_after_max_ms=int(config["message.timestamp.after.max.ms"]),
    )


class ReplicaManager:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config
        self.broker_id = broker.broker_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._lock = threading.RLock()
        self.log_manager: Any = None
        self._shut_down = False
        #: the last metadata view applied to the partitions (None before start-up)
        self._applied: ClusterView | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def startup(self) -> None:
        from storage.config import LogManagerConfig, log_config_from_broker
        from storage.manager import LogManager

        values = self.config.values
        view = self.broker.metadata.view
        self.log_manager = LogManager(
            self.config.log_dirs,
            log_config_from_broker(values),
            manager_config=LogManagerConfig.from_mapping(values),
            broker_id=self.broker_id,
            cluster_id=view.cluster_id,
            # recovery and the first retention pass use each topic's own configs
            topic_overrides={name: dict(t.configs) for name, t in view.topics.items() if t.configs},
        )
        self.log_manager.startup()
        # Listen first, then apply the current view: a change published while the logs were
        # loading (a controller handing leadership back to a restarted broker) is not missed.
        self.broker.metadata.add_listener(self._on_metadata)
        self._refresh()
        self.broker.add_metrics(self._metrics)
        self._maintenance = threading.Thread(
            target=self._maintain, name="log-maintenance", daemon=True
        )
        self._stop_maintenance = threading.Event()
        self._maintenance.start()

    def _maintain(self) -> None:
        """Flushes, retention, checkpoints, deletions and compaction, off the network threads."""
        while not self._stop_maintenance.wait(MAINTENANCE_INTERVAL_S):
            try:
                self.log_manager.run_periodic()
            except Exception:
                log.exception("log maintenance failed")

    def shutdown(self) -> None:
        self._shut_down = True
        if self.log_manager is not None:
            self._stop_maintenance.set()
            self._maintenance.join(30)
            self._snapshot_producer_state()
            self.log_manager.shutdown()

    def _snapshot_producer_state(self) -> None:
        """A producer-state snapshot at each log end, so the next start need not replay."""
        for part in list(self.partitions.values()):
            state = part.log.producer_state
            if state is not None:
                try:
                    state.take_snapshot()
                except OSError as e:
                    log.warning("producer snapshot of %s failed: %s", part, e)

    # -- metadata ----------------------------------------------------------------------------

    def _on_metadata(self, old: ClusterView, new: ClusterView) -> None:
        if self._shut_down:
            return  # a late notification (e.g. from ZooKeeper) after the logs were closed
        self._refresh()

    def _refresh(self) -> None:
        """Applies the store's current view, diffed against the last view applied. Reading the
        view under the lock makes concurrent notifications converge on the newest view."""
        with self._lock:
            view = self.broker.metadata.view
            if view is not self._applied:
                self._sync(self._applied, view)
                self._applied = view

    def _topic_config(self, topic: TopicMetadata) -> dict[str, Any]:
        overrides = {}
        for name, raw in topic.configs.items():
            key = TOPIC_CONFIGS.get(name)
            if key is not None:
                overrides[name] = parse_value(name, key.kind, raw)
        return self.config.topic_config(overrides)

    def _sync(self, old: ClusterView | None, new: ClusterView) -> None:
        """Creates logs for partitions we host, deletes those of deleted topics, applies configs."""
        with self._lock:
            wanted: dict[tuple[str, int], tuple[TopicMetadata, Any]] = {}
            for topic in new.topics.values():
                for p in topic.partitions:
                    if self.broker_id in p.replicas:
                        wanted[(topic.name, p.partition)] = (topic, p)
            for key in list(self.partitions):
                if key not in wanted or wanted[key][0].topic_id != self.partitions[key].topic_id:
                    gone = self.partitions.pop(key)
                    gone.is_leader = False
                    gone.wake_all()
                    self.log_manager.delete_log(key[0], key[1])
                    log.info("deleted log %s-%d", key[0], key[1])
            reconfigured: set[str] = set()
            for key, (topic, pstate) in wanted.items():
                part = self.partitions.get(key)
                old_topic = old.topics.get(topic.name) if old is not None else None
                if part is None:
                    plog = self.log_manager.get_or_create_log(
                        topic.name,
                        pstate.partition,
                        topic_id=topic.topic_id,
                        config_overrides=dict(topic.configs),
                    )
                    ProducerStateManager.attach(
                        plog,
                        producer_id_expiration_ms=int(self.config["producer.id.expiration.ms"]),
                    )
                    part = Partition(
                        topic.name,
                        pstate.partition,
                        topic.topic_id,
                        plog,
                        topic_rules(self._topic_config(topic)),
                        pstate.leader_epoch,
                        pstate.leader == self.broker_id,
                    )
                    self.partitions[key] = part
                    continue
                if (old_topic is None or old_topic.configs != topic.configs) and (
                    topic.name not in reconfigured
                ):
                    reconfigured.add(topic.name)
                    rules = topic_rules(self._topic_config(topic))
                    for (t, _), other in self.partitions.items():
                        if t == topic.name:
                            other.rules = rules
                    self.log_manager.update_config(topic.name, dict(topic.configs))
                was_leader = part.is_leader
                part.leader_epoch = pstate.leader_epoch
                part.is_leader = pstate.leader == self.broker_id
                if was_leader and not part.is_leader:
                    part.wake_all()

    # -- access ------------------------------------------------------------------------------

    def leader_partition(
        self, topic: str | None, partition: int
    ) -> tuple[Partition | None, ErrorCode]:
        """The partition if this broker leads it, else the error a leader-only request gets:
        NOT_LEADER_OR_FOLLOWER when the partition exists (on another broker, or here as a
        follower), UNKNOWN_TOPIC_OR_PARTITION when it does not exist at all."""
        if topic is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        part = self.partitions.get((topic, partition))
        if part is not None and part.is_leader:
            return part, ErrorCode.NONE
        if part is not None or self.broker.metadata.view.partition(topic, partition) is not None:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def _metrics(self) -> list[tuple[str, str, str, list[tuple[str, float]]]]:
        sizes = []
        for (topic, index), part in list(self.partitions.items()):
            try:
                sizes.append(
                    (f'{{topic="{topic}",partition="{index}"}}', float(part.log.size_in_bytes))
                )
            except Exception:  # noqa: BLE001 - a log being deleted has no size to report
                log.debug("no size for %s-%d", topic, index)
        return [
            (
                "odradek_partitions",
                "gauge",
                "Partitions hosted by this broker.",
                [("", float(len(self.partitions)))],
            ),
            ("odradek_log_size_bytes", "gauge", "Bytes on disk per partition log.", sizes),
        ]
