"""The composition root: builds the broker's components, each with explicit typed dependencies,
in the order they need each other, and stops them in reverse.

``Broker(config)`` is started with ``await broker.start()`` on the main event loop (which runs the
acceptor, the coordinators' timers and the metrics endpoint) and stopped with
``await broker.stop()``: stop accepting, let in-flight requests finish, flush, checkpoint, write
the clean-shutdown marker.

Start-up order (Kafka's ``KafkaServer.startup`` has the same shape):

1. the security settings (TLS contexts, SASL mechanisms and JAAS configs: a listener that
   cannot be served as configured stops the start-up, never falls back to plaintext), then bind
   every listener (port 0 resolves now, before anything is advertised);
2. the metadata store (embedded file, or ZooKeeper: registration, controller election), then
   the security store beside it (ACLs, SCRAM credentials, quotas) and the authorizer;
3. the logs and the replica manager (recovery, then the partitions of the current view);
4. the coordinators (``__consumer_offsets`` leadership, loading);
5. the dispatcher over the handler registry, the processor loops, then accepting connections.
"""

from __future__ import annotations

import asyncio
import logging
import time

from broker.admin import TopicAdmin
from broker.blocking import BlockingCalls
from broker.broker_id import resolve_broker_id
from broker.config import (
    BrokerConfig,
    ConfigError,
    HandlerConfig,
    Listener,
    NetworkConfig,
    ReplicationConfig,
    TopicAdminConfig,
    ZooKeeperConfig,
    dynamic_listener_key,
)
from broker.controlled_shutdown import ControlledShutdownConfig, controlled_shutdown
from broker.controller_metrics import controller_metrics
from broker.coordinators.groups import GroupService, group_config, offsets_topic_spec
from broker.coordinators.internal_topic import InternalTopicCoordinator
from broker.coordinators.markers import TransactionMarkerChannel
from broker.coordinators.partition_log import PartitionCoordinatorLog
from broker.coordinators.scheduler import LoopScheduler
from broker.coordinators.transactions import TransactionService, txn_config, txn_topic_spec
from broker.coordinators.verification import TransactionVerifier
from broker.dispatch import Dispatcher
from broker.dynamic_config import DynamicBrokerConfig
from broker.handlers import load_handlers
from broker.metrics import MetricsRegistry, NetworkMetrics, process_samples, serve_metrics
from broker.net.acceptor import Acceptor
from broker.net.connection import Connection
from broker.net.limits import ConnectionQuotas, RequestMemoryPool
from broker.net.processor import Processor, TransportFactory, plaintext
from broker.replication.fetch_session import FetchSessionCache
from broker.replication.replica_manager import ReplicaManager
from broker.security.audit import SecurityAudit
from broker.security.authorizer import ACL_AUTHORIZER_CLASSES, AclAuthorizer
from broker.security.delegation_tokens import DelegationTokens
from broker.security.inter_broker import InterBrokerSecurity
from broker.security.quotas import QuotaManagers, ip_connection_rates
from broker.security.sasl import ListenerSasl, ScramCredentialCache
from broker.security.services import SecurityServices
from broker.security.tls import tls_transport_factory
from broker.services import BrokerServices
from broker.telemetry import ClientMetricsManager
from coordination.group.coordinator import GroupCoordinator
from coordination.metadata.embedded import FILE_NAME as EMBEDDED_METADATA_FILE
from coordination.metadata.embedded import EmbeddedMetadataStore
from coordination.metadata.embedded_security import FILE_NAME as EMBEDDED_SECURITY_FILE
from coordination.metadata.embedded_security import EmbeddedSecurityStore
from coordination.metadata.security import EntityConfigs, SecurityStore
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, BrokerInfo, Endpoint
from coordination.producer_id_manager import ProducerIdManager
from coordination.txn.coordinator import TransactionCoordinator
from coordination.zk.errors import ZooKeeperStartupError
from storage.checkpoint import read_meta_properties
from storage.config import BROKER_KEYS, LogManagerConfig, log_config_from_broker
from storage.files import META_PROPERTIES
from storage.manager import LogManager

log = logging.getLogger(__name__)

#: The security protocols this broker serves; a listener with another one stops the start-up
#: rather than being served as plaintext.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


#: Broker keys that feed the log defaults or the produce rules built from them.
LOG_DEFAULT_KEYS = frozenset(
    {
        *BROKER_KEYS,
        "log.roll.hours",
        "log.roll.jitter.hours",
        "log.retention.minutes",
        "log.retention.hours",
        "compression.type",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "min.insync.replicas",
        "unclean.leader.election.enable",
    }
)


class StartupError(Exception):
    """The broker cannot start; the message says why, for the operator."""


class Broker:
    """The broker's components and their lifecycle. Attributes are None until :meth:`start`
    built them."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.network = network = NetworkConfig.from_broker(config)
        self.metrics = MetricsRegistry()
        self.quotas = ConnectionQuotas(
            max_connections=network.max_connections,
            max_connections_per_ip=network.max_connections_per_ip,
            overrides=network.max_connections_per_ip_overrides,
            max_connection_creation_rate=network.max_connection_creation_rate,
            listener_max_connections=network.listener_max_connections,
            listener_creation_rates=network.listener_creation_rates,
            samples=int(config["quota.window.num"]),
            window_seconds=int(config["quota.window.size.seconds"]),
        )
        self.memory_pool = RequestMemoryPool(network.queued_max_request_bytes)
        self.audit = SecurityAudit()
        self.scram = ScramCredentialCache()
        self.quota_managers = QuotaManagers(
            samples=int(config["quota.window.num"]),
            window_seconds=int(config["quota.window.size.seconds"]),
        )
        self.sasl: dict[str, ListenerSasl] = {}
        self.security_store: SecurityStore | None = None
        self.tokens: DelegationTokens | None = None
        self.authorizer: AclAuthorizer | None = None
        #: how this broker connects to the others (replica fetchers, marker senders): the
        #: inter-broker listener, its TLS context and SASL credentials
        self.inter_broker: InterBrokerSecurity | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.acceptor: Acceptor | None = None
        self.processors: list[Processor] = []
        self.metadata: MetadataStore | None = None
        self.replica_manager: ReplicaManager | None = None
        self.admin: TopicAdmin | None = None
        self.groups: GroupService | None = None
        self.dynamic_config: DynamicBrokerConfig | None = None
        self.transactions: TransactionService | None = None
        self.bound: list[Listener] = []
        self.advertised: list[Listener] = []
        self._metrics_server: asyncio.AbstractServer | None = None
        #: threads for requests that wait on the metadata store (admin writes, auto-creation)
        self.blocking = BlockingCalls()
        self._stopping = False
        self.started = asyncio.Event()
        #: set to have whoever runs the broker stop it: by a signal (``odradek serve``), or by
        #: :meth:`halt`
        self.stop_requested = asyncio.Event()
        #: why the broker halted (every log dir offline), or None
        self.halt_reason: str | None = None
        #: what start() is doing, for /ready's answer until it is done
        self.startup_phase = "not started"

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.loop = loop = asyncio.get_running_loop()
        config = self.config
        for d in config.log_dirs:
            d.mkdir(parents=True, exist_ok=True)

        self.acceptor = self._bind_listeners(loop)
        if int(config["metrics.port"]) > 0:
            # up before the logs load: /ready answers 503 until start-up is complete
            self._metrics_server = await serve_metrics(
                self.metrics,
                str(config["metrics.host"]),
                int(config["metrics.port"]),
                health=self.health,
                ready=self.ready,
            )
        self.startup_phase = "registering in the metadata store"
        await self._resolve_broker_id()
        self.metadata = metadata = self._make_metadata_store()
        self._start_metadata_store(metadata)
        # dynamic broker configs stored in the cluster apply before the logs load, as in Kafka
        self.dynamic_config = dynamic = DynamicBrokerConfig(config, self.broker_id)
        dynamic.apply(metadata.view)
        security = self._start_security(metadata)
        log_manager = LogManager(
            config.log_dirs,
            log_config_from_broker(config.values),
            manager_config=LogManagerConfig.from_mapping(config.values),
            broker_id=self.broker_id,
            cluster_id=metadata.view.cluster_id,
            # recovery and the first retention pass use each topic's own configs
            topic_overrides={
                name: dict(t.configs) for name, t in metadata.view.topics.items() if t.configs
            },
        )
        self.replica_manager = replica_manager = ReplicaManager(
            broker_id=self.broker_id,
            config=config,
            # built after the stored dynamic configs applied (num.replica.fetchers and
            # producer.id.expiration.ms take effect at the next start)
            replication=ReplicationConfig.from_broker(config),
            metadata=metadata,
            log_manager=log_manager,
            metrics=self.metrics,
            inter_broker=self.inter_broker,
            on_all_log_dirs_offline=self.halt,
        )
        # log recovery may take long: off the main loop, which answers /health and /ready
        self.startup_phase = "loading logs"
        await asyncio.to_thread(replica_manager.startup)
        self.startup_phase = "starting the coordinators and network threads"
        self.metrics.add(lambda: controller_metrics(metadata))
        self._add_reconfigurables(dynamic, replica_manager, log_manager)
        dynamic.follow(metadata)
        self.admin = admin = TopicAdmin(TopicAdminConfig.from_broker(config), metadata)
        self.groups = groups = self._make_group_service(loop, metadata, replica_manager, admin)
        groups.startup()
        self.metrics.add(groups.metrics)
        self.metrics.add(lambda: groups.lag_metrics(replica_manager.high_watermark))
        blocking = self.blocking
        producer_ids = ProducerIdManager(metadata, background=lambda fn: blocking.call_soon(fn))
        producer_ids.prefetch()
        self.transactions = transactions = self._make_transaction_service(
            loop, metadata, replica_manager, admin, groups, producer_ids
        )
        transactions.startup()
        self.metrics.add(transactions.metrics)

        fetch_sessions = FetchSessionCache(
            max_entries=int(config["max.incremental.fetch.session.cache.slots"]),
            eviction_ms=int(config["min.incremental.fetch.session.eviction.ms"]),
        )
        self.metrics.add(fetch_sessions.metrics)
        telemetry = ClientMetricsManager(
            lambda: metadata.view.client_metrics,
            telemetry_max_bytes=int(config["telemetry.max.bytes"]),
        )
        self.metrics.add(telemetry.samples)
        dispatcher = Dispatcher(
            BrokerServices(
                broker_id=self.broker_id,
                config=config,
                handler_config=HandlerConfig.from_broker(config),
                metadata=metadata,
                replica_manager=replica_manager,
                admin=admin,
                groups=groups,
                producer_ids=producer_ids,
                transactions=transactions,
                authorizer=security.authorizer,
                security=security,
                fetch_sessions=fetch_sessions,
                blocking=self.blocking,
                telemetry=telemetry,
            ),
            load_handlers(),
        )
        network = self.network
        self.processors = processors = [
            Processor(
                i,
                dispatcher,
                max_request_bytes=network.socket_request_max_bytes,
                queued_max_requests=network.queued_max_requests,
                idle_timeout_ms=network.connections_max_idle_ms,
                receive_timeout_ms=network.request_receive_timeout_ms,
                memory_pool=self.memory_pool,
                quotas=self.quotas,
                max_unauthenticated_request_bytes=int(config["sasl.server.max.receive.size"]),
                on_refused=self._refused,
            )
            for i in range(network.num_network_threads)
        ]
        acceptor = self.acceptor
        self.metrics.add(
            NetworkMetrics(
                processors,
                acceptor,
                self.quotas,
                self.memory_pool,
                topics=lambda: metadata.view.topics,
            )
        )
        self.metrics.add(self.audit.samples)
        self.metrics.add(process_samples)
        self.metrics.add(self.quota_managers.samples)
        for p in processors:
            p.start_and_wait()
        self.acceptor.start(processors)
        log.info(
            "Odradek broker %d started, listening on %s (advertised %s), cluster %s, "
            "%d network threads",
            self.broker_id,
            ", ".join(str(b) for b in self.bound),
            ", ".join(str(a) for a in self.advertised),
            metadata.view.cluster_id,
            len(processors),
        )
        self.started.set()

    def _add_reconfigurables(
        self,
        dynamic: DynamicBrokerConfig,
        replica_manager: ReplicaManager,
        log_manager: LogManager,
    ) -> None:
        """What dynamic broker configs change at runtime (Kafka's BrokerReconfigurables)."""
        dynamic.add_reconfigurable(
            LOG_DEFAULT_KEYS, lambda _config, _changed: replica_manager.update_log_defaults()
        )

        connection_keys = {
            "max.connections",
            "max.connections.per.ip",
            "max.connections.per.ip.overrides",
            "max.connection.creation.rate",
        }

        def connection_limits(config: BrokerConfig, changed: set[str]) -> None:
            # the listener-prefixed limits are dynamic too, under names of their own
            if not changed & connection_keys and not any(
                dynamic_listener_key(k) is not None for k in changed
            ):
                return
            network = NetworkConfig.from_broker(config)
            self.quotas.max_connections = network.max_connections
            self.quotas.max_connections_per_ip = network.max_connections_per_ip
            self.quotas.overrides = dict(network.max_connections_per_ip_overrides)
            self.quotas.max_connection_creation_rate = network.max_connection_creation_rate
            self.quotas.listener_max_connections = dict(network.listener_max_connections)
            self.quotas.listener_creation_rates = dict(network.listener_creation_rates)
            if self.quotas.on_room is not None:
                self.quotas.on_room()  # a listener waiting for a slot may have one now

        dynamic.add_reconfigurable(None, connection_limits)

        def cleaner(config: BrokerConfig, _changed: set[str]) -> None:
            log_manager.manager_config = LogManagerConfig.from_mapping(config.values)

        dynamic.add_reconfigurable(("log.cleaner.backoff.ms",), cleaner)

    # -- probes (the metrics port's /health and /ready) ----------------------------------------

    def health(self) -> tuple[bool, str]:
        """Alive: the main loop answers (it serves this probe) and every processor thread and
        the log maintenance thread run."""
        if self._stopping:
            return False, "shutting down"
        dead = [p.name for p in self.processors if p.stopped]
        if dead:
            return False, f"processor threads stopped: {', '.join(dead)}"
        rm = self.replica_manager
        if rm is not None and not rm.maintenance_alive:
            return False, "the log maintenance thread stopped"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        """Ready for traffic: started (logs loaded, registered in the metadata store, accepting),
        still registered, and no partition of ``__consumer_offsets`` or ``__transaction_state``
        this broker leads still loading (its group or transaction coordinator would answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile)."""
        if self._stopping:
            return False, "shutting down"
        if not self.started.is_set():
            return False, f"starting: {self.startup_phase}"
        metadata = self.metadata
        if metadata is None or self.broker_id not in metadata.view.brokers:
            return False, f"broker {self.broker_id} is not registered in the cluster"
        if self.groups is not None and self.groups.topic.loading:
            return False, "loading group coordinator partitions"
        if self.transactions is not None and self.transactions.topic.loading:
            return False, "loading transaction coordinator partitions"
        healthy, why = self.health()
        if not healthy:
            return False, why
        return True, "ready"

    def _bind_listeners(self, loop: asyncio.AbstractEventLoop) -> Acceptor:
        """Binds every listener first, so that port 0 resolves before we advertise anything."""
        network = self.network
        acceptor = Acceptor(
            loop,
            quotas=self.quotas,
            backlog=network.socket_listen_backlog_size,
            send_buffer=network.socket_send_buffer_bytes,
            receive_buffer=network.socket_receive_buffer_bytes,
        )
        if len(self.config.listeners) > 1:
            self.quotas.protected_listener = self.config.inter_broker_listener_name
        factories = self._transports()
        try:
            self.inter_broker = InterBrokerSecurity.from_config(self.config)
        except (ConfigError, ValueError) as e:
            if ZooKeeperConfig.from_broker(self.config).connect:
                raise StartupError(f"inter-broker security: {e}") from None
            # a standalone broker never connects to another one
            log.warning("inter-broker security is not usable (standalone, unused): %s", e)
        for lst in self.config.listeners:
            protocol = self.config.security_protocol(lst.name)
            make_transport = factories[lst.name]
            try:
                host, port = acceptor.bind(
                    lst.name, lst.host, lst.port, security_protocol=protocol,
                    make_transport=make_transport,
                )  # fmt: skip
            except OSError as e:
                acceptor.close()
                raise StartupError(
                    f"cannot listen on {lst}: {e.strerror or e} (is another broker running? "
                    f"set another port with --override listeners=PLAINTEXT://HOST:PORT)"
                ) from None
            self.bound.append(Listener(lst.name, host, port))
        bound_ports = {b.name: b.port for b in self.bound}
        self.advertised = [
            Listener(a.name, a.host, bound_ports.get(a.name, a.port) if a.port == 0 else a.port)
            for a in self.config.advertised_listeners
        ]
        return acceptor

    def _update_ip_rates(self, entities: EntityConfigs) -> None:
        """The ip entities' ``connection_creation_rate`` quotas, to the acceptor's limits."""
        default, per_ip = ip_connection_rates(entities)
        self.quotas.set_ip_rates(default, per_ip)

    def _refused(self, conn: Connection, reason: str) -> None:
        """A connection closed for what its client sent. On a SASL listener before the client
        authenticated (garbage, a frame over ``sasl.server.max.receive.size``, a request other
        than the SASL exchange) it is a failed authentication, logged and counted as Kafka's
        ``SaslServerAuthenticator`` and ``Selector`` do; elsewhere the connection's own close
        line says why (with the peer's address)."""
        session = conn.session
        if session.authenticated or not session.security_protocol.startswith("SASL_"):
            return
        auth = session.authenticator
        self.audit.authentication_failed(
            session,
            getattr(auth, "mechanism", None) or "",
            getattr(auth, "user", None),
            reason,
        )

    def _transports(self) -> dict[str, TransportFactory]:
        """Each listener's transport factory, and each SASL listener's settings; raises
        StartupError when a listener cannot be served as configured."""
        config = self.config
        factories: dict[str, TransportFactory] = {}
        for lst in config.listeners:
            protocol = config.security_protocol(lst.name)
            try:
                if protocol not in SECURITY_PROTOCOLS:
                    raise ConfigError(
                        f"security protocol {protocol} is not supported (supported: "
                        f"{', '.join(SECURITY_PROTOCOLS)}); refusing to serve it as plaintext"
                    )
                if protocol.startswith("SASL_"):
                    self.sasl[lst.name] = ListenerSasl.from_config(config, lst.name, self.scram)
                if protocol in ("SSL", "SASL_SSL"):
                    factories[lst.name] = tls_transport_factory(
                        config,
                        lst.name,
                        set_principal=protocol == "SSL",
                        on_handshake_failure=self.audit.tls_handshake_failed,
                        on_client_certificate=self.audit.tls_authenticated,
                    )
                else:
                    factories[lst.name] = plaintext
            except (ConfigError, ValueError) as e:
                raise StartupError(f"listener {lst} ({protocol}): {e}") from None
        return factories

    def _start_security(self, metadata: MetadataStore) -> SecurityServices:
        """The security store beside the metadata store, the credential cache and quotas that
        follow it, and the authorizer (authorizer.class.name)."""
        config = self.config
        if isinstance(metadata, EmbeddedMetadataStore):
            store: SecurityStore = EmbeddedSecurityStore(
                config.log_dirs[0] / EMBEDDED_SECURITY_FILE
            )
        else:
            from coordination.zk.security import ZkSecurityStore
            from coordination.zk.store import ZkMetadataStore

            assert isinstance(metadata, ZkMetadataStore)
            store = ZkSecurityStore(metadata.zk)
        store.add_entity_listener(self.scram.update)
        store.add_entity_listener(self.quota_managers.update)
        store.add_entity_listener(self._update_ip_rates)
        store.start()
        self.security_store = store
        self.scram.update(store.entity_configs)
        self.quota_managers.update(store.entity_configs)
        self._update_ip_rates(store.entity_configs)
        name = str(config["authorizer.class.name"] or "").strip()
        if name:
            if name not in ACL_AUTHORIZER_CLASSES:
                raise StartupError(
                    f"authorizer.class.name={name} is not available: Odradek's built-in ACL "
                    f"authorizer answers to {', '.join(sorted(ACL_AUTHORIZER_CLASSES))}"
                )
            try:
                super_users = AclAuthorizer.parse_super_users(config["super.users"])
            except ValueError as e:
                raise StartupError(f"super.users: {e}") from None
            self.authorizer = AclAuthorizer(
                store,
                super_users=super_users,
                allow_everyone_if_no_acl_found=bool(config["allow.everyone.if.no.acl.found"]),
                audit=self.audit,
            )
            log.info(
                "ACL authorizer on: %d resource patterns with ACLs, super users %s",
                len(store.acls),
                ", ".join(str(p) for p in super_users) or "none",
            )
        self.tokens = tokens = DelegationTokens(store, config)
        for listener_sasl in self.sasl.values():
            listener_sasl.token_lookup = tokens.scram_lookup
        tokens.start()
        if tokens.enabled:
            log.info("delegation tokens on: %d token(s)", len(store.tokens))
        return SecurityServices(
            store=store,
            audit=self.audit,
            scram=self.scram,
            quotas=self.quota_managers,
            sasl=dict(self.sasl),
            authorizer=self.authorizer,
            tokens=tokens,
        )

    def _make_group_service(
        self,
        loop: asyncio.AbstractEventLoop,
        metadata: MetadataStore,
        replica_manager: ReplicaManager,
        admin: TopicAdmin,
    ) -> GroupService:
        config = self.config
        groups_config = group_config(config, metadata.view)
        partition_log = PartitionCoordinatorLog(
            replica_manager,
            OFFSETS_TOPIC,
            compression=int(config["offsets.topic.compression.codec"]),
        )
        coordinator = GroupCoordinator(
            groups_config,
            LoopScheduler(loop),
            partition_log,
            cluster=lambda: metadata.view,
        )
        topic = InternalTopicCoordinator(
            offsets_topic_spec(config, groups_config.num_partitions),
            coordinator,
            broker_id=self.broker_id,
            metadata=metadata,
            admin=admin,
            log_=partition_log,
            cap_replication_factor=config["zookeeper.connect"] is None,
        )
        return GroupService(coordinator, topic, metadata)

    def _make_transaction_service(
        self,
        loop: asyncio.AbstractEventLoop,
        metadata: MetadataStore,
        replica_manager: ReplicaManager,
        admin: TopicAdmin,
        groups: GroupService,
        producer_ids: ProducerIdManager,
    ) -> TransactionService:
        config = self.config
        txns_config = txn_config(config, metadata.view)
        partition_log = PartitionCoordinatorLog(
            replica_manager, TRANSACTION_STATE_TOPIC, compression=0
        )
        markers = TransactionMarkerChannel(
            loop,
            broker_id=self.broker_id,
            metadata=metadata,
            replica_manager=replica_manager,
            listener=config.inter_broker_listener_name,
            security=self.inter_broker,
            clock=lambda: time.time_ns() // 1_000_000,
        )
        markers.groups = groups.coordinator

        def coordinator_epoch(partition: int) -> int:
            state = metadata.view.partition(TRANSACTION_STATE_TOPIC, partition)
            return state.leader_epoch if state is not None else 0

        coordinator = TransactionCoordinator(
            txns_config,
            LoopScheduler(loop),
            partition_log,
            producer_ids=producer_ids.generate_producer_id,
            markers=markers,
            coordinator_epoch=coordinator_epoch,
        )
        topic = InternalTopicCoordinator(
            txn_topic_spec(config, txns_config.num_partitions),
            coordinator,
            broker_id=self.broker_id,
            metadata=metadata,
            admin=admin,
            log_=partition_log,
            cap_replication_factor=config["zookeeper.connect"] is None,
        )
        verifier = TransactionVerifier(
            loop,
            broker_id=self.broker_id,
            metadata=metadata,
            partition_for=coordinator.partition_for,
            listener=config.inter_broker_listener_name,
            security=self.inter_broker,
            request_timeout_s=int(config["request.timeout.ms"]) / 1000,
        )
        return TransactionService(coordinator, topic, markers, verifier)

    async def _resolve_broker_id(self) -> None:
        """``broker.id=-1`` (or unset in cluster mode): the stored or a generated id
        (:mod:`broker.broker_id`); every component built after this uses it."""
        try:
            self.broker_id = await asyncio.to_thread(resolve_broker_id, self.config)
        except (ConfigError, ZooKeeperStartupError) as e:
            raise StartupError(str(e)) from None
        self.config.values["broker.id"] = self.broker_id

    def _broker_info(self) -> BrokerInfo:
        return BrokerInfo(
            broker_id=self.broker_id,
            endpoints=tuple(Endpoint(a.name, a.host, a.port) for a in self.advertised),
            rack=self.config["broker.rack"],
        )

    def _make_metadata_store(self) -> MetadataStore:
        zk = ZooKeeperConfig.from_broker(self.config)
        if zk.connect:
            from coordination.zk.store import ZkMetadataStore

            return ZkMetadataStore(
                zk.connect,
                self._broker_info(),
                session_timeout_ms=zk.session_timeout_ms,
                connection_timeout_ms=zk.connection_timeout_ms,
                cluster_id=self.config["cluster.id"],
                stored_cluster_id=self._stored_cluster_id(),
                security_protocol_map=self.config.security_protocol_map,
                unclean_leader_election_enable=zk.unclean_leader_election_enable,
                auto_leader_rebalance_enable=zk.auto_leader_rebalance_enable,
                leader_imbalance_check_interval_s=zk.leader_imbalance_check_interval_s,
                leader_imbalance_per_broker_percentage=zk.leader_imbalance_per_broker_percentage,
            )
        path = self.config.log_dirs[0] / EMBEDDED_METADATA_FILE
        return EmbeddedMetadataStore(
            path, self._broker_info(), cluster_id=self.config["cluster.id"]
        )

    def _stored_cluster_id(self) -> str | None:
        """The cluster id the log dirs' ``meta.properties`` name (the log manager checks that
        they agree); checked against ZooKeeper's before this broker registers, as Kafka does."""
        for d in self.config.log_dirs:
            meta = read_meta_properties(d / META_PROPERTIES)
            if meta is not None and meta.cluster_id:
                return meta.cluster_id
        return None

    def _start_metadata_store(self, metadata: MetadataStore) -> None:
        try:
            metadata.start()
        except ZooKeeperStartupError as e:
            log.error("broker %d cannot join the cluster: %s", self.broker_id, e)
            raise

    def halt(self, reason: str) -> None:
        """Any thread: the broker cannot go on (Kafka halts when its last log dir fails). Sets
        :attr:`stop_requested`; ``odradek serve`` then stops the broker and exits with status 1."""
        loop = self.loop

        def flag() -> None:
            if self.halt_reason is None:
                self.halt_reason = reason
            self.stop_requested.set()

        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(flag)
        except RuntimeError:
            pass  # the main loop is closed: the broker is stopping anyway

    async def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        log.info("Odradek broker %d shutting down", self.broker_id)
        # while this broker still serves: its partitions' leadership moves to other replicas
        await self._controlled_shutdown()
        if self.acceptor is not None:
            self.acceptor.close()
        if self._metrics_server is not None:
            self._metrics_server.close()
        # Kafka's order (KafkaServer.shutdown: the socket server stops processing requests
        # before the coordinators shut down): no request is taken once the coordinators start
        # unloading, so no client is told COORDINATOR_NOT_AVAILABLE by a broker about to vanish;
        # it sees the connection close and finds the coordinator again once one is back.
        # librdkafka's KIP-848 consumer took that answer to an OffsetFetch as final and never
        # started the partitions it had asked about.
        stopped = [p.stop_taking_requests("the broker is shutting down") for p in self.processors]
        if stopped:
            await asyncio.wait([asyncio.wrap_future(f) for f in stopped], timeout=5.0)
        if self.groups is not None:
            # answers members waiting in JoinGroup/SyncGroup, so the drain need not wait for them
            self.groups.shutdown()
        if self.transactions is not None:
            self.transactions.shutdown()
        await self._drain_in_flight(timeout_s=5.0)
        for p in self.processors:
            p.stop()
        self.blocking.shutdown()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
        if self.tokens is not None:
            self.tokens.stop()
        if self.security_store is not None:
            self.security_store.stop()
        if self.metadata is not None:
            self.metadata.stop()
        if self.started.is_set():
            log.info("Odradek broker %d stopped cleanly", self.broker_id)
        else:
            log.info("Odradek broker %d stopped (it had not finished starting)", self.broker_id)

    async def _controlled_shutdown(self) -> None:
        """Cluster mode with ``controlled.shutdown.enable``: stops the replica fetchers, then
        asks the controller to move this broker's leadership to other in-sync replicas
        (:mod:`broker.controlled_shutdown`), as Kafka's brokers do before they stop."""
        config = self.config
        rm, metadata = self.replica_manager, self.metadata
        if (
            not self.started.is_set()
            or not config["controlled.shutdown.enable"]
            or not config["zookeeper.connect"]
            or rm is None
            or metadata is None
        ):
            return
        settings = ControlledShutdownConfig(
            broker_id=self.broker_id,
            max_retries=int(config["controlled.shutdown.max.retries"]),
            retry_backoff_ms=int(config["controlled.shutdown.retry.backoff.ms"]),
            socket_timeout_ms=int(config["controller.socket.timeout.ms"]),
            inter_broker_listener=config.inter_broker_listener_name,
            security=self.inter_broker,
        )
        try:
            await asyncio.to_thread(rm.stop_fetchers)
            await asyncio.to_thread(controlled_shutdown, settings, metadata)
        except Exception:
            log.exception("controlled shutdown failed; stopping anyway")

    async def _drain_in_flight(self, timeout_s: float) -> None:
        """Waits (briefly) for requests being handled to finish and their responses to leave."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not any(p.busy for p in self.processors):
                return
            await asyncio.sleep(0.02)
