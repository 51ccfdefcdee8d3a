"""Fakes for testing the dispatcher and handlers without a broker: a connection, a replica
manager that records what handlers ask and answers from a script, an authorizer that denies the
cluster resource, the services around them, a metadata store whose views the test publishes
(:class:`ScriptedStore`, with :func:`view`), and :func:`call`, which sends one request through a
dispatcher with real codecs and decodes the answer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from broker.config import BrokerConfig, HandlerConfig
from broker.coordinators.groups import GroupService
from broker.dispatch import Dispatcher
from broker.metrics import RequestMetrics
from broker.net.session import KafkaPrincipal, Session
from broker.replication.partition import LogReadResult
from broker.replication.replica_manager import AppendResult, FetchParams, FetchRead
from broker.services import BrokerServices
from coordination.metadata.view import (
    BrokerInfo,
    ClusterView,
    Endpoint,
    PartitionState,
    TopicMetadata,
)
from protocol.acl import AclOperation, ResourceType
from protocol.error_codes import ErrorCode
from protocol.headers import decode_response, encode_request
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from storage.log import AppendInfo
from tests.unit.storage.util import make_batch


@dataclass
class FakeConnection:
    session: Session
    request_metrics: RequestMetrics = field(default_factory=RequestMetrics)
    read_ns: int = 0


class FakeReplicaManager:
    """Records what handlers ask; answers from a script."""

    def __init__(self) -> None:
        self.appends: list[tuple[str | None, int, int]] = []
        self.fetches: list[tuple[FetchParams, list[tuple[str | None, int, int]]]] = []

    def append_records(
        self,
        topic: str | None,
        partition: int,
        records: Any,
        *,
        api_version: int,
        now_ms: int,
        required_acks: int = 1,
        verification: object = None,
    ) -> AppendResult:
        self.appends.append((topic, partition, len(records)))
        if topic == "missing":
            return AppendResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return AppendResult(ErrorCode.NONE, AppendInfo(41, 42, -1, 41, -1, 0, 2, len(records)))

    def get_partition(self, topic: str, partition: int) -> None:
        return None

    async def fetch_messages(self, params: FetchParams, reads: list[FetchRead]) -> None:
        self.fetches.append((params, [(r.name, r.index, r.fetch_offset) for r in reads]))
        for r in reads:
            r.result = LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)


class DenyCluster:
    def authorize(
        self, principal: KafkaPrincipal, host: str, operation: AclOperation,
        resource_type: ResourceType, resource_name: str,
    ) -> bool:  # fmt: skip
        return resource_type != ResourceType.CLUSTER


def services(
    replica_manager: Any,
    authorizer: Any = None,
    *,
    topics: Mapping[str, TopicMetadata] | None = None,
    groups: GroupService | None = None,
) -> BrokerServices:
    """Services around a fake replica manager (and, for the group handlers, a group service);
    ``topics`` are the metadata view's."""
    view = ClusterView(
        cluster_id="c" * 22,
        controller_id=1,
        brokers=MappingProxyType({1: BrokerInfo(1, (Endpoint("PLAINTEXT", "h", 9),))}),
        topics=MappingProxyType(dict(topics or {})),
    )
    metadata = type("Metadata", (), {"view": view})()
    config = BrokerConfig.from_dict({})
    return BrokerServices(
        broker_id=1,
        config=config,
        handler_config=HandlerConfig.from_broker(config),
        metadata=metadata,  # type: ignore[arg-type]
        replica_manager=replica_manager,
        admin=None,  # type: ignore[arg-type]
        groups=groups,  # type: ignore[arg-type]
        producer_ids=None,  # type: ignore[arg-type]
        authorizer=authorizer,
    )


def session(protocol: str = "PLAINTEXT") -> Session:
    return Session.accepted("PLAINTEXT", protocol, ("127.0.0.1", 5555))


def call(dispatcher: Dispatcher, conn: FakeConnection, body: Any, version: int) -> Any:
    frame = encode_request(body, version, 7, "test")
    result = dispatcher.handle(conn, memoryview(frame)[4:])  # type: ignore[arg-type]
    if result is not None and not isinstance(result, list):
        result = asyncio.run(awaited(result))
    if result is None:
        return None
    data = b"".join(bytes(p) for p in result)
    correlation_id, response = decode_response(body.api_key, version, memoryview(data)[4:])
    assert correlation_id == 7
    return response


async def awaited(awaitable: Any) -> Any:
    return await awaitable


def produce(topic: str, acks: int = 1) -> Any:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[PartitionProduceData(index=0, records=bytes(make_batch(2)))],
            )
        ],
    )


Listener = Callable[[ClusterView, ClusterView], None]


def _broker(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (Endpoint("PLAINTEXT", "h", 9000 + broker_id),))


class ScriptedStore:
    """The metadata store's side the replica manager reads: a view the test publishes."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def publish(self, view: ClusterView) -> None:
        old, self.view = self.view, view
        for listener in self._listeners:
            listener(old, view)

    def report_offline_replicas(self, offline: object) -> None:
        pass


TOPIC_ID = uuid.uuid4()


def view(
    *, leader: int, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...], live: set[int]
) -> ClusterView:
    """A cluster of the ``live`` brokers holding one topic ``t`` of one partition."""
    state = PartitionState(0, leader, epoch, replicas, isr, epoch)
    topic = TopicMetadata("t", TOPIC_ID, (state,))
    return ClusterView(
        cluster_id="c" * 22,
        controller_id=min(live),
        brokers=MappingProxyType({b: _broker(b) for b in sorted(live)}),
        topics=MappingProxyType({"t": topic}),
    )
