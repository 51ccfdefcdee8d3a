"""The cluster's metadata as immutable snapshots: brokers, topics, partitions, and the names and
ids Kafka gives them.

Readers (every request handler, on any network thread) take ``store.view`` — a
:class:`ClusterView` that never changes — and use it without locks. Writers go through a
:class:`~coordination.metadata.store.MetadataStore`, which publishes a new view and tells its
listeners.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from coordination.errors import InvalidTopic

#: The entity name of the cluster-wide dynamic broker config (Kafka's ``ZooKeeperInternals.
#: DEFAULT_STRING``): ``/config/brokers/<default>``.
DEFAULT_BROKER_ENTITY = "<default>"

#: Internal topics Kafka creates itself.
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str, *, existing: Iterable[str] = ()) -> None:
    """Kafka's rules: 1-249 chars of [a-zA-Z0-9._-], not '.' or '..', and (for a topic about to
    be created) no collision with an ``existing`` topic (:func:`topics_colliding`)."""
    if not name:
        raise InvalidTopic("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopic('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopic(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
        )
    if not _LEGAL_TOPIC.fullmatch(name):
        raise InvalidTopic(
            f"Topic name {name} is illegal, it contains a character other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    collisions = topics_colliding(name, existing)
    if collisions:
        raise InvalidTopic(f"Topic '{name}' collides with existing topics: {', '.join(collisions)}")


def topics_colliding(name: str, existing: Iterable[str]) -> list[str]:
    """Kafka's Topic.hasCollision: names equal once '.' is read as '_' (metric names collide)."""
    key = name.replace(".", "_")
    return sorted(t for t in existing if t != name and t.replace(".", "_") == key)


# storage/checkpoint.py has its own copy (uuid_to_kafka_string, uuid_from_kafka_string) for
# partition.metadata: storage may not import coordination.
def uuid_to_base64(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, without padding (22 chars)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_base64(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def random_kafka_uuid() -> uuid.UUID:
    """A random UUID as Kafka makes them: never all-zero, and its base64 never starts with '-'."""
    while True:
        u = uuid.uuid4()
        if not uuid_to_base64(u).startswith("-"):
            return u


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str
    port: int


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str | None = None) -> Endpoint:
        for ep in self.endpoints:
            if listener is None or ep.listener == listener:
                return ep
        return self.endpoints[0]


@dataclass(frozen=True)
class PartitionState:
    """Leader, epochs and replicas of one partition (Kafka's ``PartitionRegistration``).

    ``partition_epoch`` grows with every change of the partition's state (in ZooKeeper mode it
    is the state znode's version); :meth:`MetadataStore.alter_partition` compares it to refuse
    stale proposals."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0


@dataclass(frozen=True)
class LeaderAndIsr:
    """A proposed leader, leader epoch and ISR of a partition (Kafka's ``LeaderAndIsr``), for
    :meth:`~coordination.metadata.store.MetadataStore.alter_partition`."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionState, ...]
    #: topic-level config overrides, as strings (as Kafka stores them)
    configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    internal: bool = False


@dataclass(frozen=True)
class ClusterView:
    """An immutable snapshot of the cluster."""

    cluster_id: str
    controller_id: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, TopicMetadata]
    #: dynamic broker configs by entity, as Kafka stores them: ``"<default>"`` (the cluster-wide
    #: default) or a broker id as a string -> {key: value}
    broker_configs: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: client metrics subscriptions (KIP-714): subscription name -> its configs (``metrics``,
    #: ``interval.ms``, ``match``), as Kafka stores CLIENT_METRICS config resources
    client_metrics: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: groups' own configs (KIP-848's group configs: ``consumer.session.timeout.ms``,
    #: ``consumer.heartbeat.interval.ms``): group id -> {key: value}, as Kafka stores GROUP
    #: config resources, whether or not the group exists
    group_configs: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: feature levels finalized with UpdateFeatures (KIP-584): name -> level. A feature not
    #: here is at the level the broker's configuration gives it.
    features: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: bumped by every change of ``features`` (ApiVersions' FinalizedFeaturesEpoch); 0 before
    #: the first
    features_epoch: int = 0
    #: the replicas each registered broker holds in log dirs it took offline (an I/O error, a
    #: full disk: KIP-112), as it reported them: broker id -> {(topic, partition)}
    offline_replicas: Mapping[int, frozenset[tuple[str, int]]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def offline_replica_ids(self, topic: str, partition: PartitionState) -> list[int]:
        """A partition's offline replicas as Kafka's Metadata answers them: on a broker that is
        not registered, or in a log dir its broker took offline."""
        brokers, offline = self.brokers, self.offline_replicas
        if not offline:
            return [r for r in partition.replicas if r not in brokers]
        key = (topic, partition.partition)
        return [
            r for r in partition.replicas if r not in brokers or key in offline.get(r, frozenset())
        ]

    @property
    def topics_by_id(self) -> Mapping[uuid.UUID, TopicMetadata]:
        cached = self.__dict__.get("_by_id")
        if cached is None:
            cached = {t.topic_id: t for t in self.topics.values()}
            object.__setattr__(self, "_by_id", cached)
        return cached

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        meta = self.topics.get(topic)
        if meta is None or not 0 <= partition < len(meta.partitions):
            return None
        return meta.partitions[partition]
