"""A KIP-848 consumer group's state (Kafka's ``ConsumerGroup`` and ``ConsumerGroupMember``) and
the member reconciliation state machine (Kafka's ``CurrentAssignmentBuilder``).

The state is what the group's records say (:mod:`~coordination.group.consumer_records`):
:meth:`ConsumerGroup.apply` replays one record, and nothing else changes the hard state, so a
group rebuilt from the log after a restart or a coordinator move is the group that was served.
Derived indexes (subscription counts, static members, the owner epoch of every partition, the
inverted target assignment) are kept up to date by the same calls. Soft state (the metadata
refresh deadline) is not in the log.

Epochs: the **group epoch** grows with every change of membership or subscriptions; the
**target assignment epoch** is the group epoch the target assignment was computed for; a
member's **member epoch** reaches the target epoch once it has revoked what it must give up
(a partition is owned by one member at a time: a member is assigned a partition only when no
other member's current assignment still holds it).

Not thread-safe on its own: its shard's lock is held around every use.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from types import MappingProxyType

from coordination.group.consumer_records import (
    ClassicMetadata,
    ConsumerRecord,
    CurrentAssignment,
    CurrentAssignmentKey,
    GroupEpochKey,
    MemberSubscription,
    MemberSubscriptionKey,
    Partitions,
    RegexKey,
    ResolvedRegex,
    SubscriptionMetadataKey,
    TargetEpochKey,
    TargetMemberKey,
    TopicInfo,
)
from protocol.error_codes import ErrorCode

EMPTY_PARTITIONS: Partitions = MappingProxyType({})
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class GroupError(Exception):
    """A request refused with a Kafka error code (and Kafka's message)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


class MemberState(IntEnum):
    """Kafka's ``MemberState`` (the value is the byte in the records)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState(Enum):
    """``value`` is the name Kafka's APIs use."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def merge(a: Partitions, b: Partitions) -> dict[uuid.UUID, frozenset[int]]:
    out = dict(a)
    for t, p in b.items():
        out[t] = out.get(t, frozenset()) | p
    return out


def is_subset(owned: Partitions | None, of: Partitions) -> bool:
    """Kafka's ``isSubset``: owned partitions are all in ``of`` (None is not a subset)."""
    if owned is None:
        return False
    return all(p <= of.get(t, frozenset()) for t, p in owned.items())


@dataclass(frozen=True, slots=True, eq=True)
class ConsumerGroupMember:
    """A member: its subscription (ConsumerGroupMemberMetadata) and its current assignment
    (ConsumerGroupCurrentMemberAssignment). Immutable: changes make a new member."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Partitions = field(default_factory=lambda: EMPTY_PARTITIONS)
    pending_revocation: Partitions = field(default_factory=lambda: EMPTY_PARTITIONS)
    classic: ClassicMetadata | None = None
    #: KIP-1251's assignment epochs: the member epoch at which each partition of ``assigned``
    #: and ``pending_revocation`` came to the member (the tagged AssignmentEpochs of its
    #: current-assignment record); a partition without one (a record from before them) counts
    #: as assigned at the member's epoch, as Kafka reads such a record.
    assignment_epochs: Mapping[tuple[uuid.UUID, int], int] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch at which the member got the partition; None: neither assigned to it nor
        pending its revocation (Kafka's ``assignmentEpoch`` / ``pendingRevocationEpoch``)."""
        if partition in self.assigned.get(topic_id, frozenset()) or partition in (
            self.pending_revocation.get(topic_id, frozenset())
        ):
            return self.assignment_epochs.get((topic_id, partition), max(self.member_epoch, 0))
        return None

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's ``updateMemberEpoch``: the current epoch becomes the previous one."""
        return self.replace(member_epoch=epoch, previous_member_epoch=self.member_epoch)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch

    @property
    def subscription(self) -> MemberSubscription:
        return MemberSubscription(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic=self.classic,
        )

    @property
    def current_assignment(self) -> CurrentAssignment:
        return CurrentAssignment(
            self.member_epoch,
            self.previous_member_epoch,
            int(self.state),
            self.assigned,
            self.pending_revocation,
            self.assignment_epochs,
        )

    def with_subscription(self, s: MemberSubscription) -> ConsumerGroupMember:
        return self.replace(
            instance_id=s.instance_id,
            rack_id=s.rack_id,
            client_id=s.client_id,
            client_host=s.client_host,
            subscribed_topic_names=s.subscribed_topic_names,
            subscribed_topic_regex=s.subscribed_topic_regex,
            rebalance_timeout_ms=s.rebalance_timeout_ms,
            server_assignor=s.server_assignor,
            classic=s.classic,
        )

    def with_current_assignment(self, a: CurrentAssignment) -> ConsumerGroupMember:
        return self.replace(
            member_epoch=a.member_epoch,
            previous_member_epoch=a.previous_member_epoch,
            state=MemberState.of(a.state),
            assigned=a.assigned,
            pending_revocation=a.pending_revocation,
            assignment_epochs=a.assignment_epochs,
        )

    def same_subscription(self, other: ConsumerGroupMember) -> bool:
        return (
            self.subscribed_topic_names == other.subscribed_topic_names
            and self.subscribed_topic_regex == other.subscribed_topic_regex
        )


@dataclass(slots=True)
class MetadataRefresh:
    """When the group must recompute its subscription metadata (soft state): at the deadline,
    or when its epoch is below the one the deadline was set at."""

    deadline_ms: int = 0
    epoch: int = 0


@dataclass
class ConsumerGroup:
    """One consumer group's hard state, as replayed from its records."""

    group_id: str
    group_epoch: int = 0
    target_assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    #: member id -> target assignment
    target_assignment: dict[str, Partitions] = field(default_factory=dict)
    #: topic name -> the topic as subscribed (ConsumerGroupPartitionMetadata)
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)
    #: regex -> the topics it resolved to (ConsumerGroupRegularExpression)
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    # -- derived indexes -------------------------------------------------------------------------
    static_members: dict[str, str] = field(default_factory=dict)
    #: topic name -> members subscribing to it by name
    names_count: Counter[str] = field(default_factory=Counter)
    #: regex -> members subscribing with it
    regex_count: Counter[str] = field(default_factory=Counter)
    server_assignors: Counter[str] = field(default_factory=Counter)
    classic_protocols: Counter[str] = field(default_factory=Counter)
    num_classic_members: int = 0
    #: topic id -> partition -> the epoch of the member that currently owns it
    partition_epochs: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)
    #: topic id -> partition -> the member the target assignment gives it to
    inverted_target: dict[uuid.UUID, dict[int, str]] = field(default_factory=dict)
    # -- soft state ------------------------------------------------------------------------------
    metadata_refresh: MetadataRefresh = field(default_factory=MetadataRefresh)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        target = self.target_assignment_epoch
        if all(m.is_reconciled_to(target) for m in self.members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    @property
    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def member(self, member_id: str) -> ConsumerGroupMember:
        """Raises UNKNOWN_MEMBER_ID."""
        m = self.members.get(member_id)
        if m is None:
            raise GroupError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {self.group_id}.",
            )
        return m

    def target_of(self, member_id: str, instance_id: str | None = None) -> Partitions:
        """The target assignment of a member, or of the static member it replaces."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target_assignment.get(previous, EMPTY_PARTITIONS)
            return EMPTY_PARTITIONS
        return self.target_assignment.get(member_id, EMPTY_PARTITIONS)

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when it is free."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def regex_topics(self, regex: str | None) -> frozenset[str]:
        if not regex:
            return frozenset()
        resolved = self.resolved_regexes.get(regex)
        return resolved.topics if resolved is not None else frozenset()

    def member_topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        """The topic names a member subscribes to: by name and through its regex."""
        return member.subscribed_topic_names | self.regex_topics(member.subscribed_topic_regex)

    def subscribed_topics(self) -> set[str]:
        topics = set(self.names_count)
        for regex in self.regex_count:
            topics |= self.regex_topics(regex)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        if topic in self.names_count:
            return True
        return any(topic in self.regex_topics(r) for r in self.regex_count)

    def preferred_assignor(self) -> str | None:
        """The server assignor most members asked for (None: the default)."""
        if not self.server_assignors:
            return None
        return max(self.server_assignors.items(), key=lambda item: item[1])[0]

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a classic member with these protocols may join (Kafka's
        ``supportsClassicProtocols``): consumer protocol type, and a protocol every classic
        member supports."""
        if protocol_type != "consumer":
            return False
        names = list(names)
        if self.is_empty:
            return bool(names)
        return any(self.classic_protocols[n] == self.num_classic_members for n in names)

    def all_members_use_classic_except(self, member_id: str) -> bool:
        m = self.members.get(member_id)
        return (
            m is not None
            and not m.uses_classic_protocol
            and self.num_classic_members == len(self.members) - 1
        )

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """The member's target holds a partition another member still owns."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        for t, parts in self.target_assignment.get(member.member_id, EMPTY_PARTITIONS).items():
            assigned = member.assigned.get(t, frozenset())
            for p in parts:
                if p not in assigned and self.partition_epoch(t, p) != -1:
                    return True
        return False

    # -- soft state ------------------------------------------------------------------------------

    def has_metadata_expired(self, now_ms: int) -> bool:
        r = self.metadata_refresh
        return now_ms >= r.deadline_ms or self.group_epoch < r.epoch

    def set_metadata_refresh_deadline(self, deadline_ms: int, epoch: int) -> None:
        self.metadata_refresh = MetadataRefresh(deadline_ms, epoch)

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh = MetadataRefresh(0, 0)

    # -- replay ------------------------------------------------------------------------------------

    def apply(self, record: ConsumerRecord) -> None:
        """Replays one record of this group (Kafka's ``GroupMetadataManager.replay``)."""
        key, value = record.key, record.value
        if isinstance(key, GroupEpochKey):
            if value is not None:
                assert isinstance(value, int)
                self.group_epoch = value
        elif isinstance(key, SubscriptionMetadataKey):
            self.subscription_metadata = dict(value) if isinstance(value, dict) else {}
        elif isinstance(key, TargetEpochKey):
            self.target_assignment_epoch = value if isinstance(value, int) else -1
        elif isinstance(key, TargetMemberKey):
            if value is None:
                self._set_target(key.member_id, None)
            else:
                assert isinstance(value, Mapping)
                self._set_target(key.member_id, value)  # type: ignore[arg-type]
        elif isinstance(key, MemberSubscriptionKey):
            old = self.members.get(key.member_id)
            if value is None:
                if old is not None:
                    self._remove_member(key.member_id)
            else:
                assert isinstance(value, MemberSubscription)
                base = old or ConsumerGroupMember(key.member_id)
                self._update_member(base.with_subscription(value))
        elif isinstance(key, CurrentAssignmentKey):
            old = self.members.get(key.member_id)
            if value is None:
                if old is not None:
                    self._update_member(
                        old.replace(
                            member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            assigned=EMPTY_PARTITIONS,
                            pending_revocation=EMPTY_PARTITIONS,
                        )
                    )
            else:
                assert isinstance(value, CurrentAssignment)
                base = old or ConsumerGroupMember(key.member_id)
                self._update_member(base.with_current_assignment(value))
        elif isinstance(key, RegexKey):
            if value is None:
                self.resolved_regexes.pop(key.regex, None)
            else:
                assert isinstance(value, ResolvedRegex)
                self.resolved_regexes[key.regex] = value

    def _update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self._unindex(old)
        self.members[new.member_id] = new
        self._index(new)

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        self._unindex(old)

    def _index(self, m: ConsumerGroupMember) -> None:
        self.names_count.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            self.regex_count[m.subscribed_topic_regex] += 1
        if m.server_assignor:
            self.server_assignors[m.server_assignor] += 1
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        if m.classic is not None:
            self.num_classic_members += 1
            self.classic_protocols.update({n for n, _ in m.classic.protocols})
        for assignment in (m.assigned, m.pending_revocation):
            for t, parts in assignment.items():
                epochs = self.partition_epochs.setdefault(t, {})
                for p in parts:
                    epochs[p] = m.member_epoch

    def _unindex(self, m: ConsumerGroupMember | None) -> None:
        if m is None:
            return
        self.names_count.subtract(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            self.regex_count[m.subscribed_topic_regex] -= 1
        if m.server_assignor:
            self.server_assignors[m.server_assignor] -= 1
        for counter in (self.names_count, self.regex_count, self.server_assignors):
            for k in [k for k, n in counter.items() if n <= 0]:
                del counter[k]
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
        if m.classic is not None:
            self.num_classic_members -= 1
            self.classic_protocols.subtract({n for n, _ in m.classic.protocols})
            for k in [k for k, n in self.classic_protocols.items() if n <= 0]:
                del self.classic_protocols[k]
        for assignment in (m.assigned, m.pending_revocation):
            for t, parts in assignment.items():
                epochs = self.partition_epochs.get(t)
                if epochs is None:
                    continue
                for p in parts:
                    if epochs.get(p) == m.member_epoch:
                        del epochs[p]
                if not epochs:
                    del self.partition_epochs[t]

    def _set_target(self, member_id: str, new: Partitions | None) -> None:
        old = self.target_assignment.get(member_id, EMPTY_PARTITIONS)
        for t, parts in old.items():
            owners = self.inverted_target.get(t)
            if owners is None:
                continue
            keep = new.get(t, frozenset()) if new is not None else frozenset()
            for p in parts - keep:
                if owners.get(p) == member_id:
                    del owners[p]
            if not owners:
                del self.inverted_target[t]
        if new is None:
            self.target_assignment.pop(member_id, None)
            return
        for t, parts in new.items():
            owners = self.inverted_target.setdefault(t, {})
            for p in parts:
                owners[p] = member_id
        self.target_assignment[member_id] = MappingProxyType(dict(new))


class CurrentAssignmentBuilder:
    """The reconciliation state machine (Kafka's ``CurrentAssignmentBuilder``): moves a member's
    current assignment towards its target. A partition the target takes away is put in
    ``pending_revocation`` and the member stays at its epoch (UNREVOKED_PARTITIONS) until its
    heartbeat no longer reports it; a partition the target gives it is assigned only once no
    other member owns it (otherwise UNRELEASED_PARTITIONS, retried at every heartbeat). A
    member assigned partitions moves to the target epoch.

    As in later Kafka versions: topics the member no longer subscribes to are revoked at once,
    a member leaving UNREVOKED_PARTITIONS never moves past the target epoch, and a partition
    pending revocation from this very member does not count as owned by another."""

    def __init__(
        self,
        member: ConsumerGroupMember,
        *,
        target_epoch: int,
        target: Partitions,
        partition_epoch: Callable[[uuid.UUID, int], int],
        owned: Partitions | None,
        subscribed_topic_ids: frozenset[uuid.UUID],
    ) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.partition_epoch = partition_epoch
        #: what the member's heartbeat reports (None: not reported)
        self.owned = owned
        self.subscribed = subscribed_topic_ids

    def build(self) -> ConsumerGroupMember:
        m = self.member
        if m.state == MemberState.STABLE:
            if m.member_epoch != self.target_epoch:
                return self._next(m.member_epoch, m.assigned)
            return m
        if m.state == MemberState.UNREVOKED_PARTITIONS:
            if self._owns_any(m.pending_revocation):
                return m
            return self._next(min(m.member_epoch + 1, self.target_epoch), m.assigned)
        if m.state == MemberState.UNRELEASED_PARTITIONS:
            return self._next(m.member_epoch, m.assigned)
        # UNKNOWN: a state from a newer coordinator; start again from scratch
        if self.owned is None or any(self.owned.values()):
            raise GroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                "The consumer group member is in a unknown state. "
                "The member must abandon all its partitions and rejoin.",
            )
        return self._next(self.target_epoch, m.assigned)

    def _owns_any(self, partitions: Partitions) -> bool:
        if self.owned is None:
            return True
        return any(p & partitions.get(t, frozenset()) for t, p in self.owned.items())

    def _next(self, epoch: int, current: Partitions) -> ConsumerGroupMember:
        m = self.member
        unreleased = False
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        revoking: dict[uuid.UUID, frozenset[int]] = {}
        pending: dict[uuid.UUID, frozenset[int]] = {}
        for t in set(self.target) | set(current):
            target = self.target.get(t, frozenset()) if t in self.subscribed else frozenset()
            mine = current.get(t, frozenset())
            keep = mine & target
            revoke = mine - keep
            own_pending = m.pending_revocation.get(t, frozenset())
            wanted = target - keep
            free = frozenset(
                p for p in wanted if self.partition_epoch(t, p) == -1 or p in own_pending
            )
            if free != wanted:
                unreleased = True
            if keep:
                assigned[t] = keep
            if revoke:
                revoking[t] = revoke
            if free:
                pending[t] = free
        # partitions the member keeps keep their assignment epoch; new ones take the epoch the
        # member moves to (KIP-1251)
        epochs = {
            (t, p): m.assignment_epoch(t, p) or 0
            for held in (assigned, revoking)
            for t, ps in held.items()
            for p in ps
        }
        if revoking and self._owns_any(revoking):
            return m.replace(
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=MappingProxyType(assigned),
                pending_revocation=MappingProxyType(revoking),
                assignment_epochs=MappingProxyType(epochs),
            ).with_epoch(epoch)
        for t, p in pending.items():
            assigned[t] = assigned.get(t, frozenset()) | p
        kept = {tp: e for tp, e in epochs.items() if tp[1] in assigned.get(tp[0], frozenset())}
        for t, fresh in pending.items():
            for index in fresh:
                kept[(t, index)] = self.target_epoch
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return m.replace(
            state=state,
            assigned=MappingProxyType(assigned),
            pending_revocation=EMPTY_PARTITIONS,
            assignment_epochs=MappingProxyType(kept),
        ).with_epoch(self.target_epoch)
