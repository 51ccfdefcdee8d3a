"""What request handlers use, built once by the composition root (:mod:`broker.server`).

Handlers receive a :class:`BrokerServices` through their request context: typed components, each
constructed with its own explicit dependencies, not an object that hands out everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.admin import TopicAdmin
from broker.blocking import BlockingCalls
from broker.config import BrokerConfig, HandlerConfig
from broker.coordinators.groups import GroupService
from broker.coordinators.transactions import TransactionService
from broker.replication.fetch_session import FetchSessionCache
from broker.replication.replica_manager import ReplicaManager
from broker.security.authorizer import Authorizer
from broker.security.services import SecurityServices
from broker.telemetry import ClientMetricsManager
from coordination.metadata.store import MetadataStore
from coordination.producer_id_manager import ProducerIdManager


@dataclass(frozen=True, slots=True)
class BrokerServices:
    broker_id: int
    #: every key (DescribeConfigs, AlterConfigs, the topic defaults CreateTopics reports)
    config: BrokerConfig
    #: the keys handlers act on, typed
    handler_config: HandlerConfig
    metadata: MetadataStore
    replica_manager: ReplicaManager
    admin: TopicAdmin
    groups: GroupService
    producer_ids: ProducerIdManager
    #: the transaction coordinator (None in tests that build services without one)
    transactions: TransactionService | None = None
    #: None: no ``authorizer.class.name``, every operation is allowed (Kafka's default)
    authorizer: Authorizer | None = None
    #: SASL, credentials, ACL management, quotas, audit (None: none configured, e.g. in tests)
    security: SecurityServices | None = None
    #: incremental fetch sessions (KIP-227; None: every fetch is sessionless, e.g. in tests)
    fetch_sessions: FetchSessionCache | None = None
    #: threads for requests that wait on the metadata store (None: asyncio's default executor)
    blocking: BlockingCalls | None = None
    #: client telemetry (KIP-714; None: GetTelemetrySubscriptions/PushTelemetry refused)
    telemetry: ClientMetricsManager | None = None
