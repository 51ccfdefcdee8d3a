"""The ZooKeeper-backed metadata store: cluster mode, as Kafka's ZooKeeper mode does it.

``ZkMetadataStore(connect, broker)`` implements :class:`coordination.metadata.MetadataStore` on
Kafka's own ZooKeeper layout (see :mod:`coordination.zk_data` for every znode and its JSON), so
Kafka's tools (``zookeeper-shell``, ``kafka-topics --zookeeper`` of old) read it as they read a
Kafka cluster's.

Start-up (:meth:`ZkMetadataStore.start`), on the caller's thread:

1. the chroot of ``connect`` (``host:port[,host:port]/chroot``) is created if it is missing;
2. Kafka's persistent paths are created (``/brokers/ids``, ``/brokers/topics``, ``/config/...``);
3. ``/cluster/id`` is read, or created by the first broker (``cluster_id`` when given, else a
   random Kafka UUID); when it differs from ``cluster_id`` (configured) or ``stored_cluster_id``
   (the log dirs' ``meta.properties``), :class:`InconsistentClusterId` stops the start-up before
   the broker registers;
4. ``/brokers/ids/<id>`` is created, EPHEMERAL, in one multi-op (create + set data, as Kafka
   does); a node owned by another session raises :class:`BrokerIdInUse`. The node's czxid is
   the broker epoch;
5. a full read of the cluster sets watches, elects a controller if there is none, and publishes
   the first :class:`ClusterView`.

After that, one worker thread (``zk-metadata-<id>``) handles every ZooKeeper event in order: watch
callbacks and connection-state changes only queue events, which the worker coalesces, re-reads
(re-arming the one-shot watches) and turns into a new view; listeners are called on that thread.
A connection loss drops kazoo's watches, so every reconnection queues a full re-read; a session
expiry also re-creates the broker registration (without a restart) and re-runs the election.

Controller (the broker holding ``/controller``): elected as Kafka does — read (or create)
``/controller_epoch``, then one multi-op creating the ephemeral ``/controller`` and setting the
epoch + 1 at the version read; losers get NODEEXISTS/BADVERSION and watch ``/controller``. Every
controller write is a multi-op that begins with a version check of ``/controller_epoch``, so a
controller that was replaced cannot write. It writes the state of new partitions (leader = first
live replica, ISR = live replicas), moves the leadership of partitions whose leader is gone
(:mod:`coordination.leader_election`), bumping their leader epoch, completes topic deletions
queued under ``/admin/delete_topics``, gives topics written without a ``topic_id`` one, and purges
config change notifications older than 15 minutes.

Admin calls (create/delete topics, create partitions, topic configs) work on any broker: they
write the znodes as Kafka's admin path (AdminZkClient) does, the controller reacts, and the call
returns once this broker's view shows the result; if it does not within ``admin_timeout_ms`` they
raise a ``KafkaApiError`` with REQUEST_TIMED_OUT (the change itself is made). They block the
calling thread for that long at most; called on the worker thread (from a listener) they do not
wait.

Thread-safety: ``view`` is an immutable snapshot, read without locks from any thread. The admin
methods may be called from any thread. Everything else is owned by the worker thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from coordination import zk_data as zd
from coordination.errors import (
    InvalidPartitions,
    InvalidTopic,
    KafkaApiError,
    TopicExists,
    UnknownTopic,
)
from coordination.leader_election import initial_leader_and_isr, leader_and_isr_after_change
from coordination.metadata import (
    INTERNAL_TOPICS,
    BrokerInfo,
    ClusterView,
    MetadataStore,
    PartitionState,
    TopicMetadata,
    assign_replicas,
    new_partition_states,
    random_kafka_uuid,
    uuid_to_base64,
    validate_assignment,
    validate_topic_name,
)
from coordination.zk_errors import (
    BrokerIdInUse,
    InconsistentClusterId,
    ZooKeeperStartupError,
    ZooKeeperUnavailable,
)
from protocol.error_codes import ErrorCode
from protocol.primitives import ZERO_UUID

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Kafka's ZkNodeChangeNotificationListener: notifications older than this are purged.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
LONG_MAX = 2**63 - 1


def _timed_out(message: str) -> KafkaApiError:
    return KafkaApiError(message, ErrorCode.REQUEST_TIMED_OUT)


def _unavailable(e: BaseException) -> KafkaApiError:
    return KafkaApiError(f"ZooKeeper is not available: {e!r}", ErrorCode.REQUEST_TIMED_OUT)


# --- a typed layer over kazoo ----------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    version: int
    czxid: int
    ephemeral_owner: int
    ctime_ms: int
    num_children: int


def _stat(raw: Any) -> Stat:
    return Stat(
        version=int(raw.version),
        czxid=int(raw.czxid),
        ephemeral_owner=int(raw.ephemeralOwner),
        ctime_ms=int(raw.ctime),
        num_children=int(raw.numChildren),
    )


Watch = Callable[[Any], None]


@dataclass(frozen=True)
class Op:
    """One operation of a ZooKeeper multi-op."""

    kind: str  # "create" | "set" | "delete" | "check"
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False
    sequence: bool = False

    @staticmethod
    def create(path: str, data: bytes = b"", *, ephemeral: bool = False) -> Op:
        return Op("create", path, data, ephemeral=ephemeral)

    @staticmethod
    def set(path: str, data: bytes, version: int = -1) -> Op:
        return Op("set", path, data, version)

    @staticmethod
    def delete(path: str, version: int = -1) -> Op:
        return Op("delete", path, version=version)

    @staticmethod
    def check(path: str, version: int) -> Op:
        return Op("check", path, version=version)


def first_failure(results: Sequence[Any]) -> tuple[int, Exception] | None:
    """The operation that made a multi-op fail (the others report rollbacks), or None."""
    for i, r in enumerate(results):
        if isinstance(r, Exception) and not isinstance(r, RolledBackError | RuntimeInconsistency):
            return i, r
    return None


class ZkClient:
    """The few ZooKeeper calls the store makes, with a timeout on each and typed results.

    Missing nodes come back as None; other ZooKeeper errors raise kazoo exceptions.
    """

    def __init__(self, client: KazooClient, op_timeout_s: float) -> None:
        self.raw = client
        self.op_timeout_s = op_timeout_s

    def _wait(self, result: Any, timeout_s: float | None) -> Any:
        return result.get(timeout=self.op_timeout_s if timeout_s is None else timeout_s)

    @property
    def session_id(self) -> int:
        client_id = self.raw.client_id
        return int(client_id[0]) if client_id else 0

    def get(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> tuple[bytes, Stat] | None:
        try:
            data, stat = self._wait(self.raw.get_async(path, watch), timeout_s)
        except NoNodeError:
            return None
        return (data or b""), _stat(stat)

    def exists(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> Stat | None:
        raw = self._wait(self.raw.exists_async(path, watch), timeout_s)
        return None if raw is None else _stat(raw)

    def children(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> list[str] | None:
        try:
            names = self._wait(self.raw.get_children_async(path, watch), timeout_s)
        except NoNodeError:
            return None
        return [str(n) for n in names]

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
        timeout_s: float | None = None,
    ) -> str:
        """Raises NodeExistsError (or NoNodeError for a missing parent without ``makepath``)."""
        created = self._wait(
            self.raw.create_async(
                path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath
            ),
            timeout_s,
        )
        return str(created)

    def set(
        self, path: str, data: bytes, version: int = -1, *, timeout_s: float | None = None
    ) -> Stat:
        """Raises BadVersionError or NoNodeError."""
        return _stat(self._wait(self.raw.set_async(path, data, version), timeout_s))

    def delete(self, path: str, version: int = -1, *, timeout_s: float | None = None) -> None:
        self._wait(self.raw.delete_async(path, version), timeout_s)

    def ensure_path(self, path: str) -> None:
        """Creates ``path`` and its parents (no data) when missing."""
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if self.exists(sub) is None:
                try:
                    self.create(sub)
                except NodeExistsError:
                    pass

    def multi(self, ops: Sequence[Op], *, timeout_s: float | None = None) -> list[Any]:
        """One atomic multi-op. Returns one result per op: a path (create), a Stat (set), True
        (delete, check) or, when the multi failed, exceptions (see :func:`first_failure`)."""
        txn = self.raw.transaction()
        for op in ops:
            if op.kind == "create":
                txn.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequence)
            elif op.kind == "set":
                txn.set_data(op.path, op.data, op.version)
            elif op.kind == "delete":
                txn.delete(op.path, op.version)
            elif op.kind == "check":
                txn.check(op.path, op.version)
            else:
                raise ValueError(f"unknown multi-op kind {op.kind!r}")
        results = self._wait(txn.commit_async(), timeout_s)
        return [_stat(r) if hasattr(r, "czxid") else r for r in results]


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/kafka"`` -> ``("h1:2181,h2:2181", "/kafka")``; no chroot -> ``""``."""
    hosts, sep, chroot = connect.strip().partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect {connect!r} names no server")
    chroot = ("/" + chroot.strip("/")) if sep and chroot.strip("/") else ""
    return hosts, chroot


# --- the store -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Topic:
    """What this broker knows of ``/brokers/topics/<t>``."""

    assignment: zd.TopicAssignment
    zk_version: int


_RESYNC = ("resync",)
_STOP = ("stop",)
_Event = tuple[Any, ...]


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
        self.hosts, self.chroot = split_connect(connect)

        self._zk: ZkClient | None = None
        self._view = ClusterView("", -1, MappingProxyType({}), MappingProxyType({}))
        self._view_changed = threading.Condition()
        self._events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._first_sync = threading.Event()
        self._first_sync_error: BaseException | None = None
        self._retry_at: float | None = None
        self._stopping = False

        # Owned by the worker thread (start() fills some before the worker runs).
        self._cluster_id = ""
        self._registered_session = 0
        self._broker_epoch = -1
        self._brokers: dict[int, BrokerInfo] = {}
        self._broker_epochs: dict[int, int] = {}
        self._topics: dict[str, _Topic] = {}
        self._states: dict[tuple[str, int], zd.LeaderIsrAndControllerEpoch] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._last_config_change = -1
        self._last_config_purge = 0.0
        self._controller_id = -1
        self._is_controller = False
        self._controller_epoch = -1
        self._controller_epoch_zk_version = -1
        self._conflicts = 0

    # -- public state ------------------------------------------------------------------------

    @property
    def view(self) -> ClusterView:
        return self._view

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's registration (Kafka's broker epoch); -1 before start."""
        return self._broker_epoch

    @property
    def is_controller(self) -> bool:
        return self._is_controller

    @property
    def controller_epoch(self) -> int:
        return self._controller_epoch

    @property
    def zk(self) -> ZkClient:
        if self._zk is None:
            raise RuntimeError("ZkMetadataStore is not started")
        return self._zk

    @property
    def session_id(self) -> int:
        return self.zk.session_id

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        timeout_s = self.connection_timeout_ms / 1000
        if self.chroot:
            self._ensure_chroot(timeout_s)
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
        self._zk = ZkClient(client, op_timeout_s=max(timeout_s, 10.0))
        try:
            for path in zd.PERSISTENT_PATHS:
                self.zk.ensure_path(path)
            self._cluster_id = self._get_or_create_cluster_id()
            self._register()
            self._worker = threading.Thread(
                target=self._run, name=f"zk-metadata-{self.broker_id}", daemon=True
            )
            self._worker.start()
            self._events.put(_RESYNC)
            if not self._first_sync.wait(timeout_s + self.zk.op_timeout_s):
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
            self._broker_epoch,
            self._view.controller_id,
        )

    def stop(self) -> None:
        self._stopping = True
        worker, self._worker = self._worker, None
        if worker is not None:
            self._events.put(_STOP)
        zk, self._zk = self._zk, None
        if zk is not None:
            # Closing the session deletes our ephemeral nodes at once (registration, /controller)
            # and fails the worker's calls in flight.
            try:
                zk.raw.stop()
                zk.raw.close()
            except Exception:
                log.exception("error closing the ZooKeeper client")
        if worker is not None and worker is not threading.current_thread():
            worker.join(5)

    def _ensure_chroot(self, timeout_s: float) -> None:
        """Kafka creates a missing chroot path with a client that has no chroot."""
        client = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
        try:
            client.start(timeout=timeout_s)
        except KazooTimeoutError:
            raise ZooKeeperUnavailable(
                f"could not connect to ZooKeeper at {self.hosts} within "
                f"{self.connection_timeout_ms} ms (zookeeper.connection.timeout.ms)"
            ) from None
        try:
            ZkClient(client, max(timeout_s, 10.0)).ensure_path(self.chroot)
        finally:
            client.stop()
            client.close()

    def _get_or_create_cluster_id(self) -> str:
        got = self.zk.get(zd.CLUSTER_ID_PATH)
        if got is None:
            new_id = self.expected_cluster_id or uuid_to_base64(random_kafka_uuid())
            try:
                self.zk.create(zd.CLUSTER_ID_PATH, zd.encode_cluster_id(new_id), makepath=True)
                log.info("created cluster id %s in ZooKeeper", new_id)
            except NodeExistsError:
                pass
            got = self.zk.get(zd.CLUSTER_ID_PATH)
            if got is None:
                raise ZooKeeperStartupError(f"{zd.CLUSTER_ID_PATH} vanished while being read")
        cluster_id = zd.decode_cluster_id(got[0])
        if self.expected_cluster_id and self.expected_cluster_id != cluster_id:
            raise InconsistentClusterId(
                f"The cluster id {cluster_id} in ZooKeeper ({self.connect}{zd.CLUSTER_ID_PATH}) "
                f"does not match this broker's cluster id {self.expected_cluster_id}. The broker "
                "is trying to join the wrong cluster: zookeeper.connect may be wrong."
            )
        if self.stored_cluster_id and self.stored_cluster_id != cluster_id:
            raise InconsistentClusterId(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId "
                f"{self.stored_cluster_id} in meta.properties. The broker is trying to join the "
                "wrong cluster. Configured zookeeper.connect may be wrong."
            )
        return cluster_id

    def _registration(self) -> bytes:
        return zd.encode_broker_registration(
            self.broker,
            timestamp_ms=int(time.time() * 1000),
            security_protocol_map=self.security_protocol_map,
            jmx_port=self.jmx_port,
        )

    def _register(self) -> None:
        """Creates ``/brokers/ids/<id>`` (create + set data in one multi-op, as Kafka does)."""
        path = zd.broker_path(self.broker_id)
        data = self._registration()
        session = self.zk.session_id
        results = self.zk.multi([Op.create(path, data, ephemeral=True), Op.set(path, data)])
        failure = first_failure(results)
        if failure is None:
            stat = results[1]
            assert isinstance(stat, Stat)
            self._broker_epoch = stat.czxid
        elif isinstance(failure[1], NodeExistsError):
            got = self.zk.get(path)
            if got is None:  # the other session just ended: try again
                return self._register()
            stat = got[1]
            if stat.ephemeral_owner != session:
                raise BrokerIdInUse(
                    f"broker.id {self.broker_id} is already registered in ZooKeeper "
                    f"({self.connect}{path}) by another session (0x{stat.ephemeral_owner:x}, "
                    f"ours 0x{session:x}): another broker runs with this id. Choose another "
                    "broker.id, or, if this broker was just restarted after a crash, wait "
                    f"for ZooKeeper to expire the old session "
                    f"(zookeeper.session.timeout.ms={self.session_timeout_ms})."
                )
            self._broker_epoch = stat.czxid
        else:
            raise failure[1]
        self._registered_session = session
        log.info("registered %s (broker epoch %d)", path, self._broker_epoch)

    # -- connection state and watches (kazoo's threads: only queue events) -------------------

    def _on_connection_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._is_controller = False
            if not self._stopping:
                log.warning("ZooKeeper session of broker %d expired", self.broker_id)
        elif state == KazooState.SUSPENDED:
            if not self._stopping:
                log.warning("connection to ZooKeeper lost; waiting to reconnect")
        elif state == KazooState.CONNECTED and self._worker is not None:
            self._events.put(_RESYNC)

    def _watch_brokers(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("brokers",))

    def _watch_topics(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("topics",))

    def _watch_topic(self, event: Any) -> None:
        if event.type != "NONE":
            name = zd.parse_topic_path(event.path)
            if name is not None:
                self._events.put(("topic", name))

    def _watch_state(self, event: Any) -> None:
        if event.type != "NONE":
            parsed = zd.parse_partition_state_path(event.path)
            if parsed is not None:
                self._events.put(("state", *parsed))

    def _watch_controller(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("controller",))

    def _watch_config_changes(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("config_changes",))

    def _watch_delete_topics(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("delete_topics",))

    # -- the worker --------------------------------------------------------------------------

    def _run(self) -> None:
        pending: dict[_Event, None] = {}
        while True:
            timeout = None
            if self._retry_at is not None:
                timeout = max(0.0, self._retry_at - time.monotonic())
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
                return
            if self._retry_at is not None and time.monotonic() >= self._retry_at:
                self._retry_at = None
                pending[_RESYNC] = None
            if not pending:
                continue
            batch = list(pending)
            pending.clear()
            try:
                self._process(batch)
            except Exception as e:
                if self._stopping:
                    return
                if not self._first_sync.is_set() and not isinstance(
                    e, KazooException | KazooTimeoutError
                ):
                    self._first_sync_error = e
                    self._first_sync.set()
                    return
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

    def _schedule_retry(self, delay_s: float) -> None:
        at = time.monotonic() + delay_s
        if self._retry_at is None or at < self._retry_at:
            self._retry_at = at

    def _process(self, batch: list[_Event]) -> None:
        if _RESYNC in batch:
            self._resync()
            return
        reconcile = False
        for event in batch:
            kind = event[0]
            if kind == "brokers":
                self._load_brokers()
                reconcile = True
            elif kind == "topics":
                self._load_topic_list()
                reconcile = True
            elif kind == "topic":
                self._load_topic(event[1])
                reconcile = True
            elif kind == "state":
                self._load_state(event[1], event[2])
            elif kind == "controller":
                self._load_controller()
            elif kind == "config_changes":
                self._load_config_changes()
            elif kind == "delete_topics":
                if self._is_controller:
                    self._complete_topic_deletions()
            elif kind == "reconcile":
                reconcile = True
        if reconcile and self._is_controller:
            self._assign_missing_topic_ids()
            self._reconcile()

    def _resync(self) -> None:
        """Re-reads everything (re-arming every watch): at start and after each reconnection."""
        self._check_cluster_id()
        if self._registered_session != self.zk.session_id:
            log.info("new ZooKeeper session: registering broker %d again", self.broker_id)
            self._register()
        self._load_brokers()
        self._load_config_changes(initial=True)
        self._load_topic_list(full=True)
        self._load_controller()
        if self._is_controller:
            self._complete_topic_deletions()
            self._reconcile()

    def _check_cluster_id(self) -> None:
        """A ZooKeeper that was wiped or swapped for another cluster's must not be applied: its
        (lack of) topics would make this broker delete its logs."""
        got = self.zk.get(zd.CLUSTER_ID_PATH)
        found = None if got is None else zd.decode_cluster_id(got[0])
        if found != self._cluster_id:
            raise InconsistentClusterId(
                f"ZooKeeper ({self.connect}) now holds cluster id {found}, but broker "
                f"{self.broker_id} belongs to cluster {self._cluster_id}: ignoring ZooKeeper's "
                "state until this is resolved"
            )

    # -- reading ZooKeeper into the caches ---------------------------------------------------

    def _load_brokers(self) -> None:
        ids = self.zk.children(zd.BROKER_IDS_PATH, self._watch_brokers) or []
        brokers: dict[int, BrokerInfo] = {}
        epochs: dict[int, int] = {}
        for child in ids:
            try:
                broker_id = int(child)
            except ValueError:
                continue
            got = self.zk.get(zd.broker_path(broker_id))
            if got is None:
                continue
            try:
                brokers[broker_id] = zd.decode_broker_registration(broker_id, got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring broker %d: %s", broker_id, e)
                continue
            epochs[broker_id] = got[1].czxid
        gone = set(self._brokers) - set(brokers)
        new = set(brokers) - set(self._brokers)
        if gone or new:
            log.info(
                "live brokers: %s (new %s, gone %s)", sorted(brokers), sorted(new), sorted(gone)
            )
        self._brokers = brokers
        self._broker_epochs = epochs

    def _load_topic_list(self, *, full: bool = False) -> None:
        names = self.zk.children(zd.TOPICS_PATH, self._watch_topics) or []
        for gone in set(self._topics) - set(names):
            self._forget_topic(gone)
        for name in names:
            if full or name not in self._topics:
                self._load_topic(name, full=full)

    def _forget_topic(self, name: str) -> None:
        old = self._topics.pop(name, None)
        self._configs.pop(name, None)
        if old is not None:
            for p in old.assignment.partitions:
                self._states.pop((name, p), None)

    def _load_topic(self, name: str, *, full: bool = False) -> None:
        got = self.zk.get(zd.topic_path(name), self._watch_topic)
        if got is None:
            self._forget_topic(name)
            return
        data, stat = got
        try:
            assignment = zd.decode_topic_assignment(name, data)
        except zd.ZkDataError as e:
            # Keep what we knew: a topic that vanishes from the view has its logs deleted.
            log.warning("ignoring an unreadable version of topic %s: %s", name, e)
            return
        old = self._topics.get(name)
        if old is not None and old.assignment.topic_id != assignment.topic_id:
            self._forget_topic(name)  # deleted and created again between two reads
            old = None
            full = True
        self._topics[name] = _Topic(assignment, stat.version)
        if old is not None:
            for p in set(old.assignment.partitions) - set(assignment.partitions):
                self._states.pop((name, p), None)
        for p in assignment.partitions:
            if full or old is None or (name, p) not in self._states:
                self._load_state(name, p)
        if full or old is None:
            self._configs[name] = self._read_topic_config(name)

    def _load_state(self, topic: str, partition: int) -> None:
        if topic not in self._topics:  # deleted: do not leave an exists-watch behind
            self._states.pop((topic, partition), None)
            return
        path = zd.partition_state_path(topic, partition)
        got = self.zk.get(path, self._watch_state)
        if got is None:
            # Not written yet: watch for its creation.
            if self.zk.exists(path, self._watch_state) is None:
                self._states.pop((topic, partition), None)
                return
            got = self.zk.get(path, self._watch_state)
            if got is None:
                self._states.pop((topic, partition), None)
                return
        data, stat = got
        try:
            state = zd.decode_partition_state(topic, partition, data, stat.version)
        except zd.ZkDataError as e:
            log.warning("ignoring an unreadable partition state: %s", e)
            return
        self._states[(topic, partition)] = state

    def _read_topic_config(self, name: str) -> dict[str, str]:
        path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        got = self.zk.get(path)
        if got is None:
            return {}
        try:
            return zd.decode_entity_config(path, got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring config of topic %s: %s", name, e)
            return {}

    def _load_config_changes(self, *, initial: bool = False) -> None:
        children = self.zk.children(zd.CONFIG_CHANGES_PATH, self._watch_config_changes) or []
        changes = sorted(
            (seq, child)
            for child in children
            if (seq := zd.config_change_sequence(child)) is not None
        )
        if initial:
            # Configs are all (re-)read next; later notifications have larger numbers.
            if changes:
                self._last_config_change = max(self._last_config_change, changes[-1][0])
            return
        for seq, child in changes:
            if seq <= self._last_config_change:
                continue
            got = self.zk.get(f"{zd.CONFIG_CHANGES_PATH}/{child}")
            self._last_config_change = seq
            if got is None:
                continue
            try:
                entity = zd.decode_config_change(got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring config change %s: %s", child, e)
                continue
            if entity is None:
                continue
            entity_type, name = entity
            if entity_type == zd.CONFIG_TYPE_TOPICS and name in self._topics:
                self._configs[name] = self._read_topic_config(name)
        if self._is_controller:
            self._purge_config_changes(changes)

    def _purge_config_changes(self, changes: list[tuple[int, str]]) -> None:
        now = time.monotonic()
        if now - self._last_config_purge < 60:
            return
        self._last_config_purge = now
        horizon_ms = int(time.time() * 1000) - CONFIG_CHANGE_EXPIRATION_MS
        for _, child in changes:
            path = f"{zd.CONFIG_CHANGES_PATH}/{child}"
            stat = self.zk.exists(path)
            if stat is not None and stat.ctime_ms < horizon_ms:
                try:
                    self.zk.delete(path)
                except NoNodeError:
                    pass

    # -- controller election -----------------------------------------------------------------

    def _load_controller(self) -> None:
        for _ in range(5):
            got = self.zk.get(zd.CONTROLLER_PATH, self._watch_controller)
            if got is None:
                if self.zk.exists(zd.CONTROLLER_PATH, self._watch_controller) is not None:
                    continue
                if self._elect():
                    return
                continue
            data, stat = got
            try:
                controller_id = zd.decode_controller(data)
            except zd.ZkDataError as e:
                log.warning("unreadable %s: %s", zd.CONTROLLER_PATH, e)
                controller_id = -1
            ours = controller_id == self.broker_id and stat.ephemeral_owner == self.zk.session_id
            if self._is_controller and not ours:
                log.info("broker %d is no longer the controller", self.broker_id)
                self._is_controller = False
            self._controller_id = controller_id
            if ours and not self._is_controller:
                # Our own node from this session (an election whose answer we lost).
                epoch = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
                if epoch is not None:
                    self._become_controller(zd.decode_controller_epoch(epoch[0]), epoch[1].version)
            return
        raise KazooException("the controller znode keeps changing")

    def _elect(self) -> bool:
        """Kafka's registerControllerAndIncrementControllerEpoch. True when the election is
        settled (won or lost to a broker that holds ``/controller``)."""
        got = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
        if got is None:
            try:
                self.zk.create(
                    zd.CONTROLLER_EPOCH_PATH,
                    zd.encode_controller_epoch(zd.INITIAL_CONTROLLER_EPOCH),
                )
                epoch, epoch_version = zd.INITIAL_CONTROLLER_EPOCH, 0
            except NodeExistsError:
                return False
        else:
            epoch, epoch_version = zd.decode_controller_epoch(got[0]), got[1].version
        new_epoch = epoch + 1
        results = self.zk.multi(
            [
                Op.create(
                    zd.CONTROLLER_PATH,
                    zd.encode_controller(self.broker_id, int(time.time() * 1000)),
                    ephemeral=True,
                ),
                Op.set(
                    zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(new_epoch), epoch_version
                ),
            ]
        )
        failure = first_failure(results)
        if failure is None:
            stat = results[1]
            assert isinstance(stat, Stat)
            self.zk.exists(zd.CONTROLLER_PATH, self._watch_controller)
            self._controller_id = self.broker_id
            self._become_controller(new_epoch, stat.version)
            return True
        if not isinstance(failure[1], NodeExistsError | BadVersionError):
            raise failure[1]
        # Lost (or our answer was lost): see who holds /controller, and watch it.
        holder = self.zk.get(zd.CONTROLLER_PATH, self._watch_controller)
        if holder is None:
            return False
        try:
            self._controller_id = zd.decode_controller(holder[0])
        except zd.ZkDataError:
            self._controller_id = -1
        if (
            self._controller_id == self.broker_id
            and holder[1].ephemeral_owner == self.zk.session_id
        ):
            current = self.zk.get(zd.CONTROLLER_EPOCH_PATH)
            if current is not None and zd.decode_controller_epoch(current[0]) == new_epoch:
                self._become_controller(new_epoch, current[1].version)
        return True

    def _become_controller(self, epoch: int, epoch_zk_version: int) -> None:
        self._is_controller = True
        self._controller_epoch = epoch
        self._controller_epoch_zk_version = epoch_zk_version
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        if self.zk.exists(zd.FEATURE_PATH) is None:
            try:
                self.zk.create(zd.FEATURE_PATH, zd.encode_feature_znode())
            except NodeExistsError:
                pass
        self._assign_missing_topic_ids()
        self._complete_topic_deletions()
        self._reconcile()

    def _controller_multi(self, ops: Sequence[Op]) -> list[Any] | None:
        """``ops`` behind a check of ``/controller_epoch``'s version: None (and resignation)
        when another controller was elected since; else the results of ``ops``."""
        results = self.zk.multi(
            [Op.check(zd.CONTROLLER_EPOCH_PATH, self._controller_epoch_zk_version), *ops]
        )
        failure = first_failure(results)
        if failure is not None and failure[0] == 0:
            log.warning(
                "controller epoch %d of broker %d is stale: resigning",
                self._controller_epoch,
                self.broker_id,
            )
            self._is_controller = False
            self._events.put(("controller",))
            return None
        return results[1:]

    # -- controller duties -------------------------------------------------------------------

    def _assign_missing_topic_ids(self) -> None:
        for name, topic in list(self._topics.items()):
            if topic.assignment.topic_id is not None:
                continue
            data = zd.encode_topic_assignment(
                random_kafka_uuid(),
                topic.assignment.partitions,
                adding_replicas=topic.assignment.adding_replicas,
                removing_replicas=topic.assignment.removing_replicas,
            )
            if (
                self._controller_multi([Op.set(zd.topic_path(name), data, topic.zk_version)])
                is None
            ):
                return
            self._load_topic(name)

    def _unclean(self, topic: str) -> bool:
        value = self._configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None:
            return self.unclean_leader_election_enable
        return value.strip().lower() == "true"

    def _reconcile(self) -> None:
        """Writes the partition states the live brokers call for: new partitions get a leader,
        partitions whose leader is gone get another, gone replicas leave the ISR."""
        if not self._is_controller:
            return
        live = set(self._brokers)
        for name in sorted(self._topics):
            topic = self._topics.get(name)
            if topic is None:
                continue
            creates: list[tuple[int, int, tuple[int, ...]]] = []
            updates: list[tuple[int, int, tuple[int, ...], zd.LeaderIsrAndControllerEpoch]] = []
            for p, replicas in sorted(topic.assignment.partitions.items()):
                current = self._states.get((name, p))
                if current is None:
                    initial = initial_leader_and_isr(replicas, live)
                    if initial is not None:
                        creates.append((p, *initial))
                else:
                    change = leader_and_isr_after_change(
                        current.leader, current.isr, replicas, live, unclean=self._unclean(name)
                    )
                    if change is not None:
                        updates.append((p, *change, current))
            if (creates or updates) and not self._write_states(name, creates, updates):
                return

    def _write_states(
        self,
        topic: str,
        creates: list[tuple[int, int, tuple[int, ...]]],
        updates: list[tuple[int, int, tuple[int, ...], zd.LeaderIsrAndControllerEpoch]],
    ) -> bool:
        epoch = self._controller_epoch
        ops: list[Op] = []
        if creates:
            existing = self.zk.children(zd.topic_partitions_path(topic))
            if existing is None:
                ops.append(Op.create(zd.topic_partitions_path(topic)))
                existing = []
            for p, leader, isr in creates:
                if str(p) not in existing:
                    ops.append(Op.create(zd.partition_path(topic, p)))
                ops.append(
                    Op.create(
                        zd.partition_state_path(topic, p),
                        zd.encode_partition_state(leader, 0, isr, epoch),
                    )
                )
        for p, leader, isr, current in updates:
            ops.append(
                Op.set(
                    zd.partition_state_path(topic, p),
                    zd.encode_partition_state(leader, current.leader_epoch + 1, isr, epoch),
                    current.zk_version,
                )
            )
        results = self._controller_multi(ops)
        if results is None:
            return False
        failure = first_failure(results)
        if failure is not None:
            self._conflicts += 1
            log.info(
                "partition states of %s changed under the controller (%r): re-reading",
                topic,
                failure[1],
            )
            self._load_topic(topic, full=True)
            if self._conflicts > 5:
                self._schedule_retry(0.5)
            else:
                self._events.put(("reconcile",))
            return True
        self._conflicts = 0
        for p, leader, isr in creates:
            self._states[(topic, p)] = zd.LeaderIsrAndControllerEpoch(leader, 0, isr, epoch, 0)
            log.info("%s-%d: leader %d, isr %s (new partition)", topic, p, leader, list(isr))
        stats = [r for r in results if isinstance(r, Stat)]
        for (p, leader, isr, current), stat in zip(updates, stats, strict=True):
            self._states[(topic, p)] = zd.LeaderIsrAndControllerEpoch(
                leader, current.leader_epoch + 1, isr, epoch, stat.version
            )
            log.info(
                "%s-%d: leader %d -> %d, isr %s -> %s, leader epoch %d",
                topic,
                p,
                current.leader,
                leader,
                list(current.isr),
                list(isr),
                current.leader_epoch + 1,
            )
        return True

    def _subtree(self, path: str) -> list[str]:
        """Every node under ``path`` and ``path`` itself, children before parents."""
        children = self.zk.children(path)
        if children is None:
            return []
        out: list[str] = []
        for child in sorted(children):
            out.extend(self._subtree(f"{path}/{child}"))
        out.append(path)
        return out

    def _complete_topic_deletions(self) -> None:
        names = self.zk.children(zd.DELETE_TOPICS_PATH, self._watch_delete_topics) or []
        for name in names:
            ops = [Op.delete(p) for p in self._subtree(zd.topic_path(name))]
            config = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
            if self.zk.exists(config) is not None:
                ops.append(Op.delete(config))
            ops.append(Op.delete(zd.delete_topic_path(name)))
            results = self._controller_multi(ops)
            if results is None:
                return
            failure = first_failure(results)
            if failure is not None:
                if isinstance(failure[1], NoNodeError | NotEmptyError | NodeExistsError):
                    log.info("deletion of topic %s raced with a change: retrying", name)
                    self._schedule_retry(0.2)
                    continue
                raise failure[1]
            log.info("deleted topic %s", name)
            self._forget_topic(name)

    # -- the view ----------------------------------------------------------------------------

    def _build_view(self) -> ClusterView:
        topics: dict[str, TopicMetadata] = {}
        for name, topic in self._topics.items():
            parts = []
            for p in range(len(topic.assignment.partitions)):
                replicas = topic.assignment.partitions.get(p)
                if replicas is None:
                    log.warning("topic %s: partition %d missing from its assignment", name, p)
                    break
                state = self._states.get((name, p))
                if state is None:
                    parts.append(PartitionState(p, -1, -1, replicas, ()))
                else:
                    parts.append(
                        PartitionState(
                            p,
                            state.leader,
                            state.leader_epoch,
                            replicas,
                            state.isr,
                            state.zk_version,
                        )
                    )
            topics[name] = TopicMetadata(
                name=name,
                topic_id=topic.assignment.topic_id or ZERO_UUID,
                partitions=tuple(parts),
                configs=MappingProxyType(dict(self._configs.get(name, {}))),
                internal=name in INTERNAL_TOPICS,
            )
        return ClusterView(
            cluster_id=self._cluster_id,
            controller_id=self._controller_id,
            brokers=MappingProxyType(dict(sorted(self._brokers.items()))),
            topics=MappingProxyType(topics),
        )

    def _publish(self) -> None:
        old = self._view
        new = self._build_view()
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
        ``deadline``. On the worker thread (a listener) there is nothing to wait for."""
        with self._view_changed:
            while True:
                result = predicate(self._view)
                if result is not None:
                    return result
                if threading.current_thread() is self._worker:
                    raise _timed_out(f"{what}: not visible yet (called from a metadata listener)")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _timed_out(
                        f"{what}: the change was written to ZooKeeper but was not visible "
                        f"within {self.admin_timeout_ms} ms"
                    )
                self._view_changed.wait(remaining)

    # -- admin -------------------------------------------------------------------------------

    def _deadline(self) -> float:
        return time.monotonic() + self.admin_timeout_ms / 1000

    def _admin(self, call: Callable[[], T]) -> T:
        """Runs an admin call, turning ZooKeeper outages into REQUEST_TIMED_OUT."""
        if self._zk is None:
            raise KafkaApiError("the metadata store is not started", ErrorCode.BROKER_NOT_AVAILABLE)
        try:
            return call()
        except (KazooException, KazooTimeoutError) as e:
            raise _unavailable(e) from e

    @staticmethod
    def _random_index(n: int) -> int:
        return uuid.uuid4().int % max(n, 1)

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
        return self._admin(
            lambda: self._create_topic(
                name,
                num_partitions,
                replication_factor,
                configs,
                assignment=assignment,
                internal=internal,
                validate_only=validate_only,
            )
        )

    def _create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        assignment: Sequence[Sequence[int]] | None,
        internal: bool,
        validate_only: bool,
    ) -> TopicMetadata:
        deadline = self._deadline()
        view = self._view
        if name in view.topics or self.zk.exists(zd.topic_path(name)) is not None:
            raise TopicExists(f"Topic '{name}' already exists.")
        if self.zk.exists(zd.delete_topic_path(name)) is not None:
            raise TopicExists(f"Topic '{name}' is marked for deletion.")
        if assignment is not None:
            layout = validate_assignment(assignment, view.brokers)
        else:
            brokers = list(view.brokers.values())
            layout = assign_replicas(
                brokers,
                num_partitions,
                replication_factor,
                start_index=self._random_index(len(brokers)),
                replica_shift=self._random_index(len(brokers)),
            )
        topic_id = random_kafka_uuid()
        prospective = TopicMetadata(
            name=name,
            topic_id=topic_id,
            partitions=new_partition_states(layout),
            configs=MappingProxyType(dict(configs)),
            internal=internal or name in INTERNAL_TOPICS,
        )
        if validate_only:
            return prospective
        topic_data = zd.encode_topic_assignment(topic_id, dict(enumerate(layout)))
        config_path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        config_data = zd.encode_entity_config(configs)
        for _ in range(5):
            # The topic and its config in one multi-op, so a failed create changes nothing.
            stat = self.zk.exists(config_path)
            config_op = (
                Op.create(config_path, config_data)
                if stat is None
                else Op.set(config_path, config_data, stat.version)
            )
            results = self.zk.multi([Op.create(zd.topic_path(name), topic_data), config_op])
            failure = first_failure(results)
            if failure is None:
                break
            if failure[0] == 0 and isinstance(failure[1], NodeExistsError):
                raise TopicExists(f"Topic '{name}' already exists.")
            if not isinstance(failure[1], NodeExistsError | NoNodeError | BadVersionError):
                raise failure[1]
        else:
            raise _timed_out(f"Topic '{name}': its config node keeps changing")
        log.info("wrote topic %s (%d partitions) to ZooKeeper", name, len(layout))

        def ready(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            if t is None or t.topic_id != topic_id:
                return None
            if len(t.partitions) != len(layout) or any(p.leader_epoch < 0 for p in t.partitions):
                return None
            return t

        if threading.current_thread() is self._worker:
            return prospective
        return self._await(f"Topic '{name}'", ready, deadline)

    def delete_topic(self, name: str) -> TopicMetadata:
        return self._admin(lambda: self._delete_topic(name))

    def _delete_topic(self, name: str) -> TopicMetadata:
        deadline = self._deadline()
        topic = self._view.topics.get(name)
        if topic is None:
            if self.zk.exists(zd.topic_path(name)) is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            topic = self._await(f"Topic '{name}'", lambda v: v.topics.get(name), deadline)
        try:
            self.zk.create(zd.delete_topic_path(name))
            log.info("marked topic %s for deletion", name)
        except NodeExistsError:
            pass
        topic_id = topic.topic_id

        def gone(v: ClusterView) -> bool | None:
            t = v.topics.get(name)
            return True if t is None or t.topic_id != topic_id else None

        if threading.current_thread() is not self._worker:
            self._await(f"Deletion of topic '{name}'", gone, deadline)
        return topic

    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        return self._admin(
            lambda: self._create_partitions(
                name, total_count, assignment=assignment, validate_only=validate_only
            )
        )

    def _create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None,
        validate_only: bool,
    ) -> TopicMetadata:
        deadline = self._deadline()
        for _ in range(5):
            got = self.zk.get(zd.topic_path(name))
            if got is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            if self.zk.exists(zd.delete_topic_path(name)) is not None:
                raise InvalidTopic("The topic is queued for deletion.")
            data, stat = got
            current = zd.decode_topic_assignment(name, data)
            count = len(current.partitions)
            if total_count <= count:
                raise InvalidPartitions(
                    f"Topic currently has {count} partitions, {total_count} would not be an "
                    "increase."
                )
            existing = current.partitions.get(0, ())
            rf = len(existing)
            new_count = total_count - count
            if assignment is not None:
                layout = validate_assignment(
                    assignment,
                    self._view.brokers,
                    replication_factor=rf,
                    partitions_added=new_count,
                )
            else:
                brokers = list(self._view.brokers.values())
                ids = sorted(b.broker_id for b in brokers)
                start = next((i for i, b in enumerate(ids) if existing and b >= existing[0]), 0)
                layout = assign_replicas(
                    brokers, new_count, rf, first_partition=count, start_index=start
                )
            partitions = dict(current.partitions)
            for i, replicas in enumerate(layout):
                partitions[count + i] = tuple(replicas)
            updated = TopicMetadata(
                name=name,
                topic_id=current.topic_id or ZERO_UUID,
                partitions=new_partition_states([r for _, r in sorted(partitions.items())]),
                configs=MappingProxyType(dict(self._view.topics[name].configs))
                if name in self._view.topics
                else MappingProxyType({}),
                internal=name in INTERNAL_TOPICS,
            )
            if validate_only:
                return updated
            new_data = zd.encode_topic_assignment(
                current.topic_id,
                partitions,
                adding_replicas=current.adding_replicas,
                removing_replicas=current.removing_replicas,
            )
            try:
                self.zk.set(zd.topic_path(name), new_data, stat.version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise UnknownTopic(f"Topic '{name}' does not exist.") from None
            log.info("topic %s: %d -> %d partitions", name, count, total_count)
            break
        else:
            raise _timed_out(f"Topic '{name}' keeps changing")

        def ready(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            if t is None or len(t.partitions) < total_count:
                return None
            if any(p.leader_epoch < 0 for p in t.partitions):
                return None
            return t

        if threading.current_thread() is self._worker:
            return updated
        return self._await(f"Partitions of topic '{name}'", ready, deadline)

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        return self._admin(lambda: self._set_topic_configs(name, configs))

    def _set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        deadline = self._deadline()
        if name not in self._view.topics and self.zk.exists(zd.topic_path(name)) is None:
            raise UnknownTopic(f"Topic '{name}' does not exist.")
        path = zd.config_entity_path(zd.CONFIG_TYPE_TOPICS, name)
        data = zd.encode_entity_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            try:
                self.zk.create(path, data)
            except NodeExistsError:
                self.zk.set(path, data)
        self.zk.create(
            f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
            zd.encode_config_change(f"{zd.CONFIG_TYPE_TOPICS}/{name}"),
            sequence=True,
        )
        wanted = dict(configs)

        def applied(v: ClusterView) -> TopicMetadata | None:
            t = v.topics.get(name)
            return t if t is not None and dict(t.configs) == wanted else None

        if threading.current_thread() is self._worker:
            topic = self._view.topics.get(name)
            if topic is None:
                raise UnknownTopic(f"Topic '{name}' does not exist.")
            return TopicMetadata(
                topic.name,
                topic.topic_id,
                topic.partitions,
                MappingProxyType(wanted),
                topic.internal,
            )
        return self._await(f"Configs of topic '{name}'", applied, deadline)

    def allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        if size < 1:
            raise ValueError("producer id block size must be positive")
        return self._admin(lambda: self._allocate_producer_id_block(size))

    def _allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        """Kafka's ZkProducerIdManager: read the last block, write the next one at the version
        read; a concurrent allocation makes the write fail and the loop read again."""
        for _ in range(100):
            got = self.zk.get(zd.PRODUCER_ID_BLOCK_PATH)
            if got is None:
                self.zk.ensure_path(zd.PRODUCER_ID_BLOCK_PATH)
                continue
            data, stat = got
            previous = zd.decode_producer_id_block(data)
            start = 0 if previous is None else previous[2] + 1
            end = start + size - 1
            if end > LONG_MAX:
                raise KafkaApiError("Have exhausted all producerIds.")
            try:
                self.zk.set(
                    zd.PRODUCER_ID_BLOCK_PATH,
                    zd.encode_producer_id_block(self.broker_id, start, end),
                    stat.version,
                )
            except BadVersionError:
                continue
            log.info("allocated producer id block [%d, %d]", start, end)
            return start, end
        raise _timed_out("producer id block allocation keeps conflicting")
