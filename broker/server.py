"""The broker: configuration, metadata, logs, network threads, and their lifecycle.

``Broker(config)`` is started with ``await broker.start()`` on the main event loop (which runs the
acceptor and the periodic jobs) and stopped with ``await broker.stop()``: stop accepting, let
in-flight requests finish, flush, checkpoint, write the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from broker.admin import TopicAdmin
from broker.config import BrokerConfig, Listener
from broker.dispatch import Dispatcher
from broker.metrics import MetricSamples, serve_metrics
from broker.network import Acceptor, Processor
from broker.registry import load_handlers
from coordination.embedded import FILE_NAME as EMBEDDED_METADATA_FILE
from coordination.embedded import EmbeddedMetadataStore
from coordination.metadata import BrokerInfo, Endpoint, MetadataStore, TopicMetadata
from coordination.zk_errors import ZooKeeperStartupError

log = logging.getLogger(__name__)


class StartupError(Exception):
    """The broker cannot start; the message says why, for the operator."""


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.loop: asyncio.AbstractEventLoop | None = None
        self.registry = load_handlers()
        self.dispatcher = Dispatcher(self, self.registry)
        self.processors: list[Processor] = []
        self.acceptor: Acceptor | None = None
        self.admin = TopicAdmin(self)
        self.metadata: MetadataStore = None  # type: ignore[assignment]
        self.replica_manager: Any = None
        self.group_coordinator: Any = None
        self.bound: list[Listener] = []
        self.advertised: list[Listener] = []
        self._metrics_server: asyncio.AbstractServer | None = None
        self._extra_metrics: list[Callable[[], Iterable[MetricSamples]]] = []
        self._stopping = False
        self.started = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        config = self.config
        for d in config.log_dirs:
            d.mkdir(parents=True, exist_ok=True)

        self.processors = [
            Processor(
                i,
                self.dispatcher,
                max_request_bytes=int(config["socket.request.max.bytes"]),
                queued_max_requests=int(config["queued.max.requests"]),
                idle_timeout_ms=int(config["connections.max.idle.ms"]),
            )
            for i in range(int(config["num.network.threads"]))
        ]
        self.acceptor = Acceptor(
            self.loop,
            self.processors,
            backlog=int(config["socket.listen.backlog.size"]),
            send_buffer=int(config["socket.send.buffer.bytes"]),
            receive_buffer=int(config["socket.receive.buffer.bytes"]),
        )
        # Bind first, so that port 0 resolves before we advertise anything.
        for lst in config.listeners:
            try:
                host, port = self.acceptor.listen(lst.name, lst.host, lst.port)
            except OSError as e:
                raise StartupError(
                    f"cannot listen on {lst}: {e.strerror or e} (is another broker running? "
                    f"set another port with --override listeners=PLAINTEXT://HOST:PORT)"
                ) from None
            self.bound.append(Listener(lst.name, host, port))
        bound_ports = {b.name: b.port for b in self.bound}
        self.advertised = [
            Listener(a.name, a.host, bound_ports.get(a.name, a.port) if a.port == 0 else a.port)
            for a in config.advertised_listeners
        ]

        self.metadata = self._make_metadata_store()
        self._start_metadata_store()
        await self._start_storage()
        self._start_coordinators()

        for p in self.processors:
            p.start_and_wait()
        if int(config["metrics.port"]) > 0:
            self._metrics_server = await serve_metrics(
                self, str(config["metrics.host"]), int(config["metrics.port"])
            )
        log.info(
            "Odradek broker %d started, listening on %s (advertised %s), cluster %s, "
            "%d network threads",
            self.broker_id,
            ", ".join(str(b) for b in self.bound),
            ", ".join(str(a) for a in self.advertised),
            self.metadata.view.cluster_id,
            len(self.processors),
        )
        self.started.set()

    def _broker_info(self) -> BrokerInfo:
        return BrokerInfo(
            broker_id=self.broker_id,
            endpoints=tuple(Endpoint(a.name, a.host, a.port) for a in self.advertised),
            rack=self.config["broker.rack"],
        )

    def _make_metadata_store(self) -> MetadataStore:
        connect = self.config["zookeeper.connect"]
        if connect:
            from coordination.zk_data import parse_security_protocol_map
            from coordination.zookeeper import ZkMetadataStore

            timeout = self.config["zookeeper.connection.timeout.ms"]
            return ZkMetadataStore(
                str(connect),
                self._broker_info(),
                session_timeout_ms=int(self.config["zookeeper.session.timeout.ms"]),
                connection_timeout_ms=int(timeout) if timeout is not None else None,
                cluster_id=self.config["cluster.id"],
                stored_cluster_id=self._stored_cluster_id(),
                security_protocol_map=parse_security_protocol_map(
                    self.config["listener.security.protocol.map"]
                ),
                unclean_leader_election_enable=bool(self.config["unclean.leader.election.enable"]),
            )
        path = self.config.log_dirs[0] / EMBEDDED_METADATA_FILE
        return EmbeddedMetadataStore(
            path, self._broker_info(), cluster_id=self.config["cluster.id"]
        )

    def _stored_cluster_id(self) -> str | None:
        """The cluster id the log dirs' ``meta.properties`` name (the log manager checks that
        they agree); checked against ZooKeeper's before this broker registers, as Kafka does."""
        from storage.checkpoint import read_meta_properties
        from storage.files import META_PROPERTIES

        for d in self.config.log_dirs:
            meta = read_meta_properties(d / META_PROPERTIES)
            if meta is not None and meta.cluster_id:
                return meta.cluster_id
        return None

    def _start_metadata_store(self) -> None:
        try:
            self.metadata.start()
        except ZooKeeperStartupError as e:
            log.error("broker %d cannot join the cluster: %s", self.broker_id, e)
            raise

    async def _start_storage(self) -> None:
        from broker.replica_manager import ReplicaManager

        self.replica_manager = ReplicaManager(self)
        self.replica_manager.startup()

    def _start_coordinators(self) -> None:
        from broker.coordinator_runtime import CoordinatorRuntime

        self.group_coordinator = CoordinatorRuntime(self)
        self.group_coordinator.startup()

    async def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        log.info("Odradek broker %d shutting down", self.broker_id)
        if self.acceptor is not None:
            self.acceptor.close()
        if self._metrics_server is not None:
            self._metrics_server.close()
        if self.group_coordinator is not None:
            # answers members waiting in JoinGroup/SyncGroup, so the drain need not wait for them
            self.group_coordinator.shutdown()
        await self._drain_in_flight(timeout_s=5.0)
        for p in self.processors:
            p.stop()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
        if self.metadata is not None:
            self.metadata.stop()
        if self.started.is_set():
            log.info("Odradek broker %d stopped cleanly", self.broker_id)
        else:
            log.info("Odradek broker %d stopped (it had not finished starting)", self.broker_id)

    async def _drain_in_flight(self, timeout_s: float) -> None:
        """Waits (briefly) for requests being handled to finish and their responses to leave."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            busy = any(c._busy or c._out for p in self.processors for c in list(p.connections))
            if not busy:
                return
            await asyncio.sleep(0.02)

    # -- services used by handlers -----------------------------------------------------------

    def auto_create_topic(self, name: str) -> TopicMetadata:
        return self.admin.create_topic(name)

    def add_metrics(self, source: Callable[[], Iterable[MetricSamples]]) -> None:
        self._extra_metrics.append(source)

    def extra_metrics(self) -> Iterable[MetricSamples]:
        for source in self._extra_metrics:
            yield from source()
