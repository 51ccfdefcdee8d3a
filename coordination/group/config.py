"""The group coordinator's configuration, its requests and answers, and Kafka's rule for which
``__consumer_offsets`` partition stores a group."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from coordination.group.metadata import GroupState

INT32_MAX = 2**31 - 1


@lru_cache(maxsize=65536)
def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units, 32-bit signed); cached, as every
    request naming a group or a transactional id asks for its partition."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


#: KIP-848's group configs (Kafka's GroupConfig), each a group's own value of a broker config:
#: set with IncrementalAlterConfigs on a GROUP resource (``ClusterView.group_configs``)
CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"


@dataclass(frozen=True)
class GroupConfig:
    """The broker configs the coordinator follows (Kafka's keys in the comments)."""

    num_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = INT32_MAX  # group.max.size
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    # KIP-848 consumer groups
    consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = INT32_MAX  # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    #: group.consumer.migration.policy: disabled, upgrade, downgrade or bidirectional
    consumer_migration_policy: str = "bidirectional"
    #: group.coordinator.rebalance.protocols
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer")

    @property
    def online_upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("upgrade", "bidirectional")

    @property
    def online_downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("downgrade", "bidirectional")


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request, as the coordinator needs it."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    #: KIP-394 (JoinGroup v4+, dynamic members): answer MEMBER_ID_REQUIRED first
    require_known_member_id: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (protocol name, member metadata), in the member's order of preference
    protocols: list[tuple[str, bytes]]
    #: KIP-814 (JoinGroup v9+)
    supports_skip_assignment: bool = False
    #: KIP-800 (JoinGroup v8+)
    reason: str | None = None

    @property
    def protocol_names(self) -> list[str]:
        """Distinct names in order of preference (a client may repeat one; counting it twice
        would make the group's protocol vote impossible)."""
        return list(dict.fromkeys(name for name, _ in self.protocols))

    @property
    def why(self) -> str:
        """The reason, for the coordinator's log lines."""
        return f"client reason: {self.reason}" if self.reason else "no reason given"


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """What DescribeGroups shows (metadata and assignments only for Stable groups)."""

    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...]


#: a group this broker does not know (Kafka's GroupCoordinator.DeadGroup)
DEAD_GROUP = GroupSummary(GroupState.DEAD.value, "", "", ())
#: DescribeGroups of a consumer group: Dead, as Kafka answers (v6+: GROUP_ID_NOT_FOUND)
NOT_CLASSIC_GROUP = GroupSummary(GroupState.DEAD.value, "", "", ())
#: what goes with an error (Kafka's GroupCoordinator.EmptyGroup)
NO_GROUP = GroupSummary("", "", "", ())


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    #: "classic" or "consumer" (ListGroups v5)
    group_type: str = "classic"
