"""The cluster's metadata as immutable snapshots, and the store interface behind it.

Readers (every request handler, on any network thread) take ``store.view`` — a
:class:`ClusterView` that never changes — and use it without locks. Writers (admin requests, the
controller) go through a :class:`MetadataStore`, which publishes a new view and tells listeners.

Two stores implement the interface: :class:`coordination.embedded.EmbeddedMetadataStore` (one
file beside the logs; standalone mode) and the ZooKeeper-backed store (cluster mode).
"""

from __future__ import annotations

import base64
import re
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from coordination.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidTopic,
)

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
    """Leader, epochs and replicas of one partition (Kafka's LeaderAndIsr)."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0


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


Listener = Callable[[ClusterView, ClusterView], None]


def assign_replicas(
    brokers: Sequence[BrokerInfo],
    num_partitions: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    start_index: int | None = None,
    replica_shift: int | None = None,
) -> list[list[int]]:
    """Kafka's AdminUtils.assignReplicasToBrokers for partitions ``first_partition ...``.

    Leaders go round-robin over the brokers from ``start_index``; each further replica is shifted
    by ``replica_shift`` (+1 every time the leaders wrap around). When every broker has a rack
    (and there are several racks), brokers are ordered rack-alternated and a follower is skipped
    while its rack (or the broker itself) already holds a replica and another rack (broker) does
    not, so replicas land on as many racks as possible. Kafka draws both numbers at random; the
    defaults here (``first_partition``) keep the result deterministic. Partition ``i`` of the
    result is partition ``first_partition + i``.
    """
    if num_partitions < 1:
        raise InvalidPartitions("Number of partitions must be larger than 0.")
    if replication_factor < 1:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    ordered = sorted(brokers, key=lambda b: b.broker_id)
    rack_of = {b.broker_id: b.rack or "" for b in ordered}
    num_racks = len(set(rack_of.values()))
    rack_aware = all(b.rack for b in ordered) and num_racks > 1
    if rack_aware:
        ordered = _rack_alternated(ordered)
    ids = [b.broker_id for b in ordered]
    n = len(ids)
    start = (first_partition if start_index is None else start_index) % n
    shift = start if replica_shift is None else replica_shift % n
    result = []
    for i in range(num_partitions):
        p = first_partition + i
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        if not rack_aware:
            for j in range(replication_factor - 1):
                replicas.append(ids[_replica_index(first, shift, j, n)])
        else:
            racks = {rack_of[ids[first]]}
            k = 0
            while len(replicas) < replication_factor:
                broker = ids[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                if (rack not in racks or len(racks) == num_racks) and (
                    broker not in replicas or len(replicas) == n
                ):
                    replicas.append(broker)
                    racks.add(rack)
                k += 1
        result.append(replicas)
    return result


def validate_assignment(
    assignment: Sequence[Sequence[int]],
    brokers: Collection[int],
    *,
    replication_factor: int | None = None,
    partitions_added: int | None = None,
) -> list[list[int]]:
    """Kafka's checks of an explicit replica assignment (CreateTopics, CreatePartitions): one
    per added partition (``partitions_added``), none empty, no broker twice, only known
    ``brokers``, and the same number of replicas everywhere (``replication_factor`` too, when
    given: the existing partitions'). Returns the layout; raises InvalidReplicaAssignment."""
    if partitions_added is not None and len(assignment) != partitions_added:
        raise InvalidReplicaAssignment(
            f"Increasing the number of partitions by {partitions_added} but "
            f"{len(assignment)} assignments provided."
        )
    known = set(brokers)
    layout = [list(r) for r in assignment]
    for p, replicas in enumerate(layout):
        if not replicas:
            raise InvalidReplicaAssignment(f"Partition {p} has an empty replica assignment")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(
                f"Duplicate replica assignment found: {replicas} for partition {p}"
            )
        unknown = sorted(set(replicas) - known)
        if unknown:
            raise InvalidReplicaAssignment(f"Unknown broker(s) in replica assignment: {unknown}")
    sizes = {len(r) for r in layout}
    if replication_factor is not None:
        sizes.add(replication_factor)
    if len(sizes) > 1:
        raise InvalidReplicaAssignment("All partitions should have the same number of replicas")
    return layout


def new_partition_states(
    layout: Sequence[Sequence[int]], *, first_partition: int = 0
) -> tuple[PartitionState, ...]:
    """The states of new partitions ``first_partition...``: the first replica leads, every
    replica is in sync, epochs 0."""
    return tuple(
        PartitionState(first_partition + i, r[0], 0, tuple(r), tuple(r))
        for i, r in enumerate(layout)
    )


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    if n == 1:
        return first
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(brokers: Sequence[BrokerInfo]) -> list[BrokerInfo]:
    """Brokers ordered rack by rack in turn (racks sorted, brokers sorted by id within a rack)."""
    by_rack: dict[str, list[BrokerInfo]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(b.rack or "", []).append(b)
    racks = sorted(by_rack)
    out: list[BrokerInfo] = []
    while len(out) < len(brokers):
        for rack in racks:
            if by_rack[rack]:
                out.append(by_rack[rack].pop(0))
    return out


class MetadataStore(ABC):
    """Where topics, partitions, configs and brokers live. Thread-safe."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()

    @property
    @abstractmethod
    def view(self) -> ClusterView:
        """The current snapshot (cheap; never blocks)."""

    def add_listener(self, listener: Listener) -> None:
        """``listener(old, new)`` is called after every change, on the thread that made it."""
        with self._listeners_lock:
            self._listeners.append(listener)

    def _notify(self, old: ClusterView, new: ClusterView) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(old, new)

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
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
        """Raises TopicExists, InvalidTopic, InvalidPartitions, InvalidReplicationFactor..."""

    @abstractmethod
    def delete_topic(self, name: str) -> TopicMetadata:
        """Raises UnknownTopic."""

    @abstractmethod
    def create_partitions(
        self,
        name: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata: ...

    @abstractmethod
    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicMetadata:
        """Replaces the topic's config overrides."""

    @abstractmethod
    def allocate_producer_id_block(self, size: int) -> tuple[int, int]:
        """A fresh block of producer ids, [start, end] inclusive, never handed out before."""
