"""The ZooKeeper-backed metadata store: cluster mode, as Kafka's ZooKeeper mode does it.

``ZkMetadataStore(connect, broker)`` implements
:class:`~coordination.metadata.store.MetadataStore` on Kafka's own ZooKeeper layout
(:mod:`coordination.zk.data` has every znode and its JSON), so Kafka's tools read it as they
read a Kafka cluster's. It composes:

* :mod:`~coordination.zk.registration`: chroot, cluster id, the broker's ephemeral registration;
* :mod:`~coordination.zk.cache`: what this broker reads of ZooKeeper, and the view built from it;
* :mod:`~coordination.zk.controller`: election and the controller's writes;
* :mod:`~coordination.zk.elections`: controlled shutdown, ElectLeaders, automatic rebalancing;
* :mod:`~coordination.zk.reassignments`: partition reassignments (KIP-455);
* :mod:`~coordination.zk.admin`: admin writes (topics, partitions, configs);
* :mod:`~coordination.zk.producer_ids`: producer id blocks.

Start-up (:meth:`ZkMetadataStore.start`), on the caller's thread: the chroot is created if
missing; Kafka's persistent paths are created; the cluster id is read (or created) and checked;
the broker registers; a full read of the cluster sets watches, elects a controller if there is
none, and publishes the first :class:`~coordination.metadata.view.ClusterView`.

After that, one worker thread (``zk-metadata-<id>``) handles every ZooKeeper event in order:
watch callbacks and connection-state changes only post events, which the worker coalesces,
re-reads (re-arming the one-shot watches) and turns into a new view; listeners are called on that
thread. A connection loss drops kazoo's watches, so every reconnection posts a full re-read; a
session expiry also re-creates the registration (without a restart) and re-runs the election.

ISR changes (:meth:`ZkMetadataStore.alter_partition`) are what Kafka's ZooKeeper-mode leaders did
before AlterPartition (KIP-497): a conditional write of the partition's state znode at the
zkVersion the leader knows (``partition_epoch``), then a sequential
``/isr_change_notification/isr_change_NNNNNNNNNN`` node naming the partition for the
controller. Every broker watches the state znodes, so each one's view follows.

A log dir failure (KIP-112, :meth:`ZkMetadataStore.report_offline_replicas`) is written by the
worker: this broker's replicas in offline log dirs go to the ephemeral
``/brokers/offline_replicas/<id>`` (with the broker epoch), then a sequential
``/log_dir_event_notification/log_dir_event_NNNNNNNNNN`` names the broker for the controller,
as Kafka's ``propagateLogDirEvent`` does. The record is written again under a new session (it
went with the old one).

The controller's duties that brokers and admin clients ask for (:meth:`controlled_shutdown`,
:meth:`elect_leaders`, :meth:`alter_partition_reassignments`,
:meth:`list_partition_reassignments`) run on the worker thread, like every other controller
decision: the caller posts them and waits for the answer, which comes once the view they
produced is published. Timed work (the automatic leader rebalance) is posted by the worker's own
timers.

Thread-safety: ``view`` is an immutable snapshot, read without locks from any thread. Admin
methods, the controller's duties and :meth:`alter_partition` may be called from any thread.
Everything else is owned by the worker thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import MappingProxyType
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from coordination.errors import InvalidUpdateVersion, KafkaApiError, NotController, UnknownTopic
from coordination.metadata.election import ElectionType
from coordination.metadata.reassignment import ReplicaAssignment
from coordination.metadata.store import ApiResult, ElectionResult, MetadataStore, TopicPartition
from coordination.metadata.view import (
    BrokerInfo,
    ClusterView,
    LeaderAndIsr,
    PartitionState,
    TopicMetadata,
    validate_topic_name,
)
from coordination.zk import data as zd
from coordination.zk.admin import ZkAdmin, timed_out
from coordination.zk.cache import Event, ZkClusterCache
from coordination.zk.client import ZkClient, split_connect
from coordination.zk.controller import ZkController
from coordination.zk.elections import AUTO_REBALANCE, PREFERRED_REPLICA_ELECTION, ZkElections
from coordination.zk.errors import ZooKeeperStartupError, ZooKeeperUnavailable
from coordination.zk.producer_ids import allocate_producer_id_block
from coordination.zk.reassignments import REASSIGN_PARTITIONS, ZkReassignments
from coordination.zk.registration import BrokerRegistration, ensure_chroot
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

T = TypeVar("T")

_RESYNC: Event = ("resync",)
_STOP: Event = ("stop",)
#: this broker's offline replicas changed: write them (and a log dir event notification)
_REPORT_OFFLINE: Event = ("report_offline",)
#: ("call", fn, future): a controller duty asked for from another thread
_CALL = "call"


class _Parts:
    """The store's parts, made once the ZooKeeper client exists."""

    def __init__(
        self,
        zk: ZkClient,
        registration: BrokerRegistration,
        cache: ZkClusterCache,
        controller: ZkController,
        admin: ZkAdmin,
        elections: ZkElections,
        reassignments: ZkReassignments,
    ) -> None:
        self.zk = zk
        self.registration = registration
        self.cache = cache
        self.controller = controller
        self.admin = admin
        self.elections = elections
        self.reassignments = reassignments


class ZkMetadataStore(MetadataStore):
    """Cluster metadata in ZooKeeper, in Kafka's layout. See the module docstring."""

    def __init__(
        self,
        connect: str,
        broker: BrokerInfo,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        cluster_id: str | None = None,
        stored_cluster_id: str | None = None,
        security_protocol_map: Mapping[str, str] | None = None,
        unclean_leader_election_enable: bool = False,
        admin_timeout_ms: int = 30000,
        jmx_port: int = -1,
        auto_leader_rebalance_enable: bool = True,
        leader_imbalance_check_interval_s: float = 300.0,
        leader_imbalance_per_broker_percentage: int = 10,
    ) -> None:
        super().__init__()
        self.connect = connect
        self.broker = broker
        self.broker_id = broker.broker_id
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self.expected_cluster_id = cluster_id
        self.stored_cluster_id = stored_cluster_id
        self.security_protocol_map = dict(security_protocol_map or {})
        self.unclean_leader_election_enable = unclean_leader_election_enable
        self.admin_timeout_ms = admin_timeout_ms
        self.jmx_port = jmx_port
        self.auto_leader_rebalance_enable = auto_leader_rebalance_enable
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self.hosts, self.chroot = split_connect(connect)

        self._parts: _Parts | None = None
        self._view = ClusterView("", -1, MappingProxyType({}), MappingProxyType({}))
        self._view_changed = threading.Condition()
        self._events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._first_sync = threading.Event()
        self._first_sync_error: BaseException | None = None
        self._retry_at: float | None = None
        #: the worker's timers: event -> when it is due (monotonic)
        self._timers: dict[Event, float] = {}
        self._stopping = False
        self._cluster_id = ""
        #: this broker's replicas in offline log dirs, as last reported by the replica manager
        self._offline_replicas: frozenset[TopicPartition] = frozenset()
        #: (broker epoch, replicas) last written to ZooKeeper (worker thread only)
        self._offline_written: tuple[int, frozenset[TopicPartition]] = (-1, frozenset())

    # -- public state ------------------------------------------------------------------------

    @property
    def view(self) -> ClusterView:
        return self._view

    @property
    def parts(self) -> _Parts:
        if self._parts is None:
            raise RuntimeError("ZkMetadataStore is not started")
        return self._parts

    @property
    def zk(self) -> ZkClient:
        return self.parts.zk

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's registration (Kafka's broker epoch); -1 before start."""
        return self._parts.registration.broker_epoch if self._parts is not None else -1

    @property
    def is_controller(self) -> bool:
        return self._parts is not None and self._parts.controller.is_controller

    @property
    def controller_epoch(self) -> int:
        return self._parts.controller.epoch if self._parts is not None else -1

    @property
    def session_id(self) -> int:
        return self.zk.session_id

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        timeout_s = self.connection_timeout_ms / 1000
        if self.chroot:
            ensure_chroot(
                self.hosts,
                self.chroot,
                session_timeout_ms=self.session_timeout_ms,
                timeout_s=timeout_s,
            )
        client = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=self.session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2.0),
        )
        client.add_listener(self._on_connection_state)
        try:
            client.start(timeout=timeout_s)
        except KazooTimeoutError:
            raise ZooKeeperUnavailable(
                f"could not connect to ZooKeeper at {self.connect} within "
                f"{self.connection_timeout_ms} ms (zookeeper.connection.timeout.ms)"
            ) from None
        zk = ZkClient(client, op_timeout_s=max(timeout_s, 10.0))
        cache = ZkClusterCache(zk, self._events.put)
        controller = ZkController(
            zk,
            cache,
            broker_id=self.broker_id,
            unclean_leader_election_enable=self.unclean_leader_election_enable,
            post=self._events.put,
            schedule_retry=self._schedule_retry,
        )
        self._parts = parts = _Parts(
            zk,
            BrokerRegistration(
                zk,
                self.broker,
                connect=self.connect,
                session_timeout_ms=self.session_timeout_ms,
                security_protocol_map=self.security_protocol_map,
                jmx_port=self.jmx_port,
            ),
            cache,
            controller,
            ZkAdmin(
                zk,
                view=lambda: self._view,
                await_view=self._await,
                on_worker=self._on_worker,
                deadline=self._deadline,
            ),
            ZkElections(
                controller,
                auto_leader_rebalance_enable=self.auto_leader_rebalance_enable,
                leader_imbalance_check_interval_s=self.leader_imbalance_check_interval_s,
                leader_imbalance_per_broker_percentage=self.leader_imbalance_per_broker_percentage,
                schedule=self._schedule,
            ),
            ZkReassignments(controller),
        )
        try:
            self._register(zk, parts.registration, deadline=time.monotonic() + timeout_s)
            self._worker = threading.Thread(
                target=self._run, name=f"zk-metadata-{self.broker_id}", daemon=True
            )
            self._worker.start()
            self._events.put(_RESYNC)
            if not self._first_sync.wait(timeout_s + zk.op_timeout_s):
                raise ZooKeeperUnavailable("timed out reading the cluster state from ZooKeeper")
            if self._first_sync_error is not None:
                raise self._first_sync_error
        except BaseException:
            self.stop()
            raise
        log.info(
            "registered broker %d in ZooKeeper %s (cluster %s, broker epoch %d, controller %d)",
            self.broker_id,
            self.connect,
            self._cluster_id,
            self.broker_epoch,
            self._view.controller_id,
        )

    def _register(self, zk: ZkClient, registration: BrokerRegistration, deadline: float) -> None:
        """The persistent paths, the cluster id and this broker's registration. A connection
        lost meanwhile (ZooKeeper or this process starved for a moment) is not a failed start:
        as Kafka's ``KafkaZkClient`` retries its requests until connected, every step is
        retried once the session is connected again, until ``zookeeper.connection.timeout.ms``
        has passed. The steps are idempotent: an existing path or cluster id is read, and a
        registration node already owned by this session is this broker's."""
        while True:
            try:
                for path in (*zd.PERSISTENT_PATHS, zd.OFFLINE_REPLICAS_PATH):
                    zk.ensure_path(path)
                self._cluster_id = registration.cluster_id(
                    expected=self.expected_cluster_id, stored=self.stored_cluster_id
                )
                registration.register()
                return
            except ConnectionLoss:
                if time.monotonic() > deadline:
                    raise
                log.warning("connection to ZooKeeper lost while registering; retrying")
                while not zk.raw.connected and time.monotonic() < deadline:
                    time.sleep(0.05)

    def stop(self) -> None:
        self._stopping = True
        # a request waiting for its change to show (a topic created for FindCoordinator) ends
        # now: its session is closing, and the process's exit would wait for it
        with self._view_changed:
            self._view_changed.notify_all()
        worker, self._worker = self._worker, None
        if worker is not None:
            self._events.put(_STOP)
        parts, self._parts = self._parts, None
        if parts is not None:
            # Closing the session deletes our ephemeral nodes at once (registration, /controller)
            # and fails the worker's calls in flight.
            try:
                parts.zk.raw.stop()
                parts.zk.raw.close()
            except Exception:
                log.exception("error closing the ZooKeeper client")
        if worker is not None and worker is not threading.current_thread():
            worker.join(5)

    # -- connection state (kazoo's threads: only post) ---------------------------------------

    def _on_connection_state(self, state: str) -> None:
        if state == KazooState.LOST:
            if self._parts is not None:
                self._parts.controller.is_controller = False
            if not self._stopping:
                log.warning("ZooKeeper session of broker %d expired", self.broker_id)
        elif state == KazooState.SUSPENDED:
            if not self._stopping:
                log.warning("connection to ZooKeeper lost; waiting to reconnect")
        elif state == KazooState.CONNECTED and self._worker is not None:
            self._events.put(_RESYNC)

    # -- the worker --------------------------------------------------------------------------

    def _on_worker(self) -> bool:
        return threading.current_thread() is self._worker

    def _run(self) -> None:
        pending: dict[Event, None] = {}
        while True:
            timeout = None
            due = [at for at in (self._retry_at, *self._timers.values()) if at is not None]
            if due:
                timeout = max(0.0, min(due) - time.monotonic())
            try:
                pending[self._events.get(timeout=timeout)] = None
            except queue.Empty:
                pass
            while True:
                try:
                    pending[self._events.get_nowait()] = None
                except queue.Empty:
                    break
            if _STOP in pending or self._stopping:
                self._fail_calls(pending)
                self._fail_calls(self._drain())
                return
            now = time.monotonic()
            if self._retry_at is not None and now >= self._retry_at:
                self._retry_at = None
                pending[_RESYNC] = None
            for event, at in list(self._timers.items()):
                if now >= at:
                    del self._timers[event]
                    pending[event] = None
            if not pending:
                continue
            batch = list(pending)
            pending.clear()
            calls = [e for e in batch if e[0] == _CALL]
            batch = [e for e in batch if e[0] != _CALL]
            if batch and not self._handle(batch):
                self._fail_calls(calls)
                return
            if calls:
                self._run_calls(calls)

    def _handle(self, batch: list[Event]) -> bool:
        """Processes a batch of events and publishes the view; False when the worker must stop
        (the first read failed)."""
        try:
            self._process(batch)
            parts = self.parts
            if parts.controller.is_controller:
                parts.reassignments.maybe_complete()
        except Exception as e:
            if self._stopping:
                return False
            if not self._first_sync.is_set() and not isinstance(
                e, KazooException | KazooTimeoutError
            ):
                self._first_sync_error = e
                self._first_sync.set()
                return False
            if isinstance(e, KazooException | KazooTimeoutError):
                log.warning("ZooKeeper error while handling %s: %r; retrying", batch, e)
                self._schedule_retry(1.0)
            elif isinstance(e, ZooKeeperStartupError):
                log.error("%s; retrying", e)
                self._schedule_retry(2.0)
            else:
                log.exception("error while handling ZooKeeper events %s", batch)
                self._schedule_retry(1.0)
        try:
            self._publish()
        except Exception:
            log.exception("error publishing the cluster view")
        if _RESYNC in batch and self._retry_at is None:
            self._first_sync.set()
        return True

    def _run_calls(self, calls: list[Event]) -> None:
        """Runs the controller duties asked for, publishes the view they produced, then
        answers their callers (so a caller's next look at the view shows the result)."""
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        for _, fn, future in calls:
            try:
                outcomes.append((future, fn(self.parts), None))
            except (KazooException, KazooTimeoutError) as e:
                unavailable = KafkaApiError(
                    f"ZooKeeper is not available: {e!r}", ErrorCode.REQUEST_TIMED_OUT
                )
                outcomes.append((future, None, unavailable))
            except Exception as e:  # handed to the caller, who answers with it
                if not isinstance(e, KafkaApiError):
                    log.exception("a controller request failed")
                outcomes.append((future, None, e))
        try:
            self._publish()
        except Exception:
            log.exception("error publishing the cluster view")
        for future, result, error in outcomes:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

    def _drain(self) -> list[Event]:
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    @staticmethod
    def _fail_calls(events: Collection[Event]) -> None:
        for event in events:
            if event[0] == _CALL and not event[2].done():
                event[2].set_exception(
                    KafkaApiError("the broker is shutting down", ErrorCode.BROKER_NOT_AVAILABLE)
                )

    def _schedule(self, delay_s: float, event: Event) -> None:
        """Posts ``event`` to the worker in ``delay_s`` (worker thread only)."""
        self._timers[event] = time.monotonic() + delay_s

    def _schedule_retry(self, delay_s: float) -> None:
        at = time.monotonic() + delay_s
        if self._retry_at is None or at < self._retry_at:
            self._retry_at = at

    def _process(self, batch: list[Event]) -> None:
        parts = self.parts
        cache, controller = parts.cache, parts.controller
        if _RESYNC in batch:
            self._resync(parts)
            # everything was re-read; only the timer's own work is left
            batch = [e for e in batch if e == AUTO_REBALANCE]
        reconcile = False
        for event in batch:
            kind = event[0]
            if kind == "brokers":
                cache.load_brokers()
                reconcile = True
            elif kind == "topics":
                cache.load_topic_list()
                reconcile = True
            elif kind == "topic":
                cache.load_topic(event[1])
                reconcile = True
            elif kind == "state":
                cache.load_state(event[1], event[2])
            elif kind == "controller":
                controller.load()
            elif kind == "config_changes":
                # a topic's (or the cluster's) unclean.leader.election.enable may have changed:
                # the controller elects again (Kafka's TopicUncleanLeaderElectionEnable)
                controller.purge_config_changes(cache.load_config_changes())
                reconcile = True
            elif kind == "delete_topics":
                controller.complete_topic_deletions()
            elif kind == "isr_changes":
                controller.process_isr_changes()
                reconcile = True
            elif kind == "offline_replicas":
                cache.load_offline_replicas()
                reconcile = True
            elif kind == "features":
                cache.load_features()
            elif kind == "log_dir_events":
                controller.process_log_dir_events()
                reconcile = True
            elif event == _REPORT_OFFLINE:
                self._write_offline_replicas(parts)
            elif kind == "reconcile":
                reconcile = True
            elif event == AUTO_REBALANCE:
                parts.elections.check_auto_rebalance()
            elif event == PREFERRED_REPLICA_ELECTION:
                parts.elections.process_preferred_replica_election_znode()
            elif event == REASSIGN_PARTITIONS:
                parts.reassignments.process_znode()
        if reconcile and controller.is_controller:
            controller.assign_missing_topic_ids()
            controller.reconcile()

    def _resync(self, parts: _Parts) -> None:
        """Re-reads everything (re-arming every watch): at start and after each reconnection."""
        registration, cache, controller = parts.registration, parts.cache, parts.controller
        registration.check_cluster_id(self._cluster_id)
        if registration.stale:
            log.info("new ZooKeeper session: registering broker %d again", self.broker_id)
            registration.register()
        self._write_offline_replicas(parts)
        cache.load_brokers()
        cache.load_config_changes(initial=True)
        cache.load_broker_configs()
        cache.load_named_configs(zd.CONFIG_TYPE_CLIENT_METRICS)
        cache.load_named_configs(zd.CONFIG_TYPE_GROUPS)
        cache.load_topic_list(full=True)
        cache.load_offline_replicas()
        cache.load_features()
        controller.load()
        if controller.is_controller:
            controller.complete_topic_deletions()
            controller.process_isr_changes()
            controller.process_log_dir_events()
            controller.reconcile()
            parts.elections.process_preferred_replica_election_znode()
            parts.reassignments.process_znode()

    # -- the view ----------------------------------------------------------------------------

    def _publish(self) -> None:
        old = self._view
        new = self.parts.cache.build_view(self._cluster_id, self.parts.controller.controller_id)
        if new == old:
            return
        with self._view_changed:
            self._view = new
            self._view_changed.notify_all()
        try:
            self._notify(old, new)
        except Exception:
            log.exception("a metadata listener failed")

    def _await(self, what: str, predicate: Callable[[ClusterView], T | None], deadline: float) -> T:
        """Waits until ``predicate(view)`` returns something; REQUEST_TIMED_OUT after
        ``deadline``. On the worker thread (a listener) there is nothing to wait for; once the
        store stops, BROKER_NOT_AVAILABLE."""
        with self._view_changed:
            while True:
                result = predicate(self._view)
                if result is not None:
                    return result
                if self._stopping:
                    raise KafkaApiError(
                        f"{what}: the broker is shutting down", ErrorCode.BROKER_NOT_AVAILABLE
                    )
                if self._on_worker():
                    raise timed_out(f"{what}: not visible yet (called from a metadata listener)")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise timed_out(
                        f"{what}: the change was written to ZooKeeper but was not visible "
                        f"within {self.admin_timeout_ms} ms"
                    )
                self._view_changed.wait(remaining)

    def _deadline(self) -> float:
        return time.monotonic() + self.admin_timeout_ms / 1000

    # -- writes ------------------------------------------------------------------------------

    def _call(self, call: Callable[[_Parts], T]) -> T:
        """Runs a write, turning ZooKeeper outages into REQUEST_TIMED_OUT."""
        parts = self._parts
        if parts is None:
            raise KafkaApiError("the metadata store is not started", ErrorCode.BROKER_NOT_AVAILABLE)
        try:
            return call(parts)
        except (KazooException, KazooTimeoutError) as e:
            raise KafkaApiError(
                f"ZooKeeper is not available: {e!r}", ErrorCode.REQUEST_TIMED_OUT
            ) from e

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        internal: bool = False,
        validate_only: bool = False,
    ) -> TopicMetadata:
        # before any ZooKeeper path is made of the name
        validate_topic_name(name, existing=self._view.topics)
        return self._call(
            lambda p: p.admin.create_topic(
                name,
                num_partitions,
                replication_factor,
                configs,
                assignment=assignment,
                internal=internal,
                validate_only=validate_only,
            )
        )

    def delete_topic(self, name: str) -> TopicMetadata:
        return self._call(lambda p: p.admin.delete_topic(name))

    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        return self._call(
            lambda p: p.admin.create_partitions(
                name, total_count, assignment=assignment, validate_only=validate_only
            )
        )

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        return self._call(lambda p: p.admin.set_topic_configs(name, configs))

    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        self._call(lambda p: p.admin.set_broker_configs(entity, configs))

    def set_client_metrics_configs(self, name: str, configs: Mapping[str, str]) -> None:
        self._call(lambda p: p.admin.set_client_metrics_configs(name, configs))

    def set_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        self._call(lambda p: p.admin.set_group_configs(group_id, configs))

    def update_features(self, levels: Mapping[str, int]) -> None:
        self._call(lambda p: p.admin.update_features(levels))

    def allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        if size < 1:
            raise ValueError("producer id block size must be positive")
        return self._call(lambda p: allocate_producer_id_block(p.zk, self.broker_id, size))

    def alter_partition(
        self, topic: str, partition: int, new: LeaderAndIsr, *, partition_epoch: int
    ) -> PartitionState:
        return self._call(
            lambda p: self._alter_partition(p, topic, partition, new, partition_epoch)
        )

    def _alter_partition(
        self, parts: _Parts, topic: str, partition: int, new: LeaderAndIsr, partition_epoch: int
    ) -> PartitionState:
        zk = parts.zk
        path = zd.partition_state_path(topic, partition)
        got = zk.get(path)
        if got is None:
            raise UnknownTopic(f"{topic}-{partition} has no state in ZooKeeper")
        current = zd.decode_partition_state(topic, partition, got[0], got[1].version)
        if current.zk_version != partition_epoch:
            raise InvalidUpdateVersion(
                f"{topic}-{partition}: partition epoch {partition_epoch} is stale "
                f"(ZooKeeper has {current.zk_version})"
            )
        data = zd.encode_partition_state(
            new.leader, new.leader_epoch, new.isr, current.controller_epoch
        )
        try:
            stat = zk.set(path, data, partition_epoch)
        except BadVersionError:
            raise InvalidUpdateVersion(
                f"{topic}-{partition}: the partition state changed under partition epoch "
                f"{partition_epoch}"
            ) from None
        except NoNodeError:
            raise UnknownTopic(f"{topic}-{partition} was deleted") from None
        zk.create(
            f"{zd.ISR_CHANGE_NOTIFICATION_PATH}/{zd.ISR_CHANGE_PREFIX}",
            zd.encode_isr_change_notification([(topic, partition)]),
            sequence=True,
        )
        log.info(
            "%s-%d: leader %d, isr %s, leader epoch %d (partition epoch %d -> %d)",
            topic,
            partition,
            new.leader,
            list(new.isr),
            new.leader_epoch,
            partition_epoch,
            stat.version,
        )
        replicas: tuple[int, ...] = ()
        meta = self._view.topics.get(topic)
        if meta is not None and partition < len(meta.partitions):
            replicas = meta.partitions[partition].replicas
        return PartitionState(
            partition, new.leader, new.leader_epoch, replicas, tuple(new.isr), stat.version
        )

    def report_offline_replicas(self, partitions: Collection[TopicPartition]) -> None:
        wanted = frozenset(partitions)
        if wanted == self._offline_replicas:
            return
        self._offline_replicas = wanted
        self._events.put(_REPORT_OFFLINE)

    def _write_offline_replicas(self, parts: _Parts) -> None:
        """Writes this broker's offline replicas under its current registration, and a log dir
        event notification, unless ZooKeeper has them already (worker thread)."""
        epoch = parts.registration.broker_epoch
        wanted = self._offline_replicas
        if epoch < 0 or self._offline_written == (epoch, wanted):
            return
        if not wanted and self._offline_written[1] == wanted:
            self._offline_written = (epoch, wanted)
            return  # nothing offline, before or now: nothing to tell
        zk = parts.zk
        path = zd.offline_replicas_path(self.broker_id)
        if wanted:
            data = zd.encode_offline_replicas(epoch, sorted(wanted))
            zk.ensure_path(zd.OFFLINE_REPLICAS_PATH)
            try:
                zk.create(path, data, ephemeral=True)
            except NodeExistsError:
                zk.set(path, data)
        else:
            try:
                zk.delete(path)
            except NoNodeError:
                pass
        zk.create(
            f"{zd.LOG_DIR_EVENT_NOTIFICATION_PATH}/{zd.LOG_DIR_EVENT_PREFIX}",
            zd.encode_log_dir_event(self.broker_id),
            sequence=True,
            makepath=True,
        )
        self._offline_written = (epoch, wanted)
        log.info(
            "broker %d: %d replica(s) in offline log dirs written to ZooKeeper for the "
            "controller: %s",
            self.broker_id,
            len(wanted),
            ", ".join(f"{t}-{p}" for t, p in sorted(wanted)[:20]),
        )

    # -- the controller's duties ------------------------------------------------------------------

    def _on_controller(self, what: str, fn: Callable[[_Parts], T]) -> T:
        """Runs ``fn`` on the worker thread (where the controller's state lives) and returns
        its result once the view it produced is published; REQUEST_TIMED_OUT if that takes
        longer than the admin timeout."""
        if self._parts is None or self._worker is None:
            raise KafkaApiError("the metadata store is not started", ErrorCode.BROKER_NOT_AVAILABLE)
        if self._on_worker():
            return fn(self._parts)
        future: Future[T] = Future()
        self._events.put((_CALL, fn, future))
        try:
            return future.result(self.admin_timeout_ms / 1000)
        except FutureTimeout:
            raise timed_out(
                f"{what}: the controller did not answer within {self.admin_timeout_ms} ms"
            ) from None

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        return self._on_controller(
            "Controlled shutdown",
            lambda p: p.elections.controlled_shutdown(broker_id, broker_epoch),
        )

    def elect_leaders(
        self, election_type: ElectionType, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ElectionResult]:
        wanted = None if partitions is None else list(partitions)
        try:
            return self._on_controller(
                "Leader election", lambda p: p.elections.elect(election_type, wanted)
            )
        except NotController as e:
            return {tp: ElectionResult(ErrorCode.NOT_CONTROLLER, str(e)) for tp in wanted or ()}

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, ApiResult]:
        wanted = dict(reassignments)
        return self._on_controller(
            "Partition reassignment",
            lambda p: p.reassignments.alter(
                wanted, allow_replication_factor_change=allow_replication_factor_change
            ),
        )

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        wanted = None if partitions is None else list(partitions)
        return self._on_controller(
            "Listing partition reassignments", lambda p: p.reassignments.list(wanted)
        )
