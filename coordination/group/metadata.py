"""A classic consumer group's in-memory state (Kafka's ``ClassicGroup`` and
``ClassicGroupMember``), and the answers to its requests.

Not thread-safe on its own: its shard's lock is held around every use
(:class:`~coordination.group.shard.GroupCoordinatorShard`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from coordination.group.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from coordination.runtime.runtime import Timer
from protocol.error_codes import ErrorCode


class TokenTimer:
    """A group coordinator's timer, and the token its callback checks: the callback is handed
    this object and does nothing unless its group or member still holds it (a timer cancelled
    under the coordinator's lock may already be waiting for that lock to fire)."""

    __slots__ = ("due_ms", "timer")

    def __init__(self, due_ms: int) -> None:
        #: when it fires, on the scheduler's clock
        self.due_ms = due_ms
        self.timer: Timer | None = None

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


class GroupState(Enum):
    """The classic group state machine. ``value`` is the name Kafka's APIs use."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: state -> the states it may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """One member as the leader's JoinGroup response lists it."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinResult:
    """The answer to a JoinGroup."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[JoinedMember] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    """The answer to a SyncGroup."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(slots=True)
class OffsetAndMetadata:
    """A committed offset (Kafka's OffsetAndMetadata)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    #: only from OffsetCommit v1-4 with an explicit retention (-1: none)
    expire_timestamp_ms: int = -1
    #: the offset of the record that committed it in ``__consumer_offsets`` (-1: not written
    #: yet, or unknown); decides between a transactional commit and a regular one
    record_offset: int = field(default=-1, compare=False)


class MemberMetadata:
    """A member of a classic group."""

    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client_host",
        "client_id",
        "group_instance_id",
        "heartbeat_deadline_ms",
        "heartbeat_timer",
        "is_new",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.awaiting_join: JoinCallback | None = None
        self.awaiting_sync: SyncCallback | None = None
        self.is_new = False
        #: on the scheduler's clock: the session ends unless a sign of life moves it
        self.heartbeat_deadline_ms = 0
        #: the one session timer; it re-arms itself while the deadline lies ahead
        self.heartbeat_timer: TokenTimer | None = None

    def __repr__(self) -> str:
        return f"Member({self.member_id}, instance={self.group_instance_id})"

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def protocol_names(self) -> list[str]:
        """Distinct names in order of preference (see JoinRequest.protocol_names)."""
        return list(dict.fromkeys(name for name, _ in self.protocols))

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Asked when the session deadline has passed. Kafka's rule: members waiting in a
        rebalance need no heartbeat, except new members, which are expired if they never come
        back for their JoinGroup answer. (Kafka's heartbeatSatisfied flag is only true while a
        heartbeat completes its delayed operation; with a deadline instead of one delayed
        operation per heartbeat, a passed deadline means it is false.)"""
        return not self.is_new and (self.is_awaiting_join or self.is_awaiting_sync)


class GroupMetadata:
    """One group: its state, generation and members (its committed offsets are kept by the
    shard's :class:`~coordination.group.offsets.OffsetManager`, whatever the group's type)."""

    def __init__(self, group_id: str, partition: int, now_ms: int) -> None:
        self.group_id = group_id
        #: the ``__consumer_offsets`` partition that stores this group
        self.partition = partition
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        #: group.instance.id -> member id
        self.static_members: dict[str, str] = {}
        #: members that were answered MEMBER_ID_REQUIRED and have not joined yet
        self.pending_members: dict[str, TokenTimer] = {}
        self.pending_sync_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.new_member_added = False
        self.subscribed_topics: frozenset[str] | None = None
        #: the delayed join (rebalance) and the pending-sync timers
        self.join_timer: TokenTimer | None = None
        self.sync_timer: TokenTimer | None = None
        #: (remaining_ms) while the delayed initial rebalance is running, else None
        self.initial_delay_remaining_ms: int | None = None

    def __repr__(self) -> str:
        return (
            f"Group({self.group_id}, {self.state.value}, generation={self.generation_id}, "
            f"members={list(self.members)})"
        )

    # -- state -----------------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise RuntimeError(
                f"group {self.group_id}: illegal transition {self.state.value} -> {state.value}"
            )
        self.state = state
        self.state_timestamp_ms = now_ms

    # -- members ---------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def current_member_error(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Whether a request speaks for a current member, as Kafka's
        ``GroupCoordinator.validateCurrentMember`` decides: with a group.instance.id, that id
        must be a static member's (else UNKNOWN_MEMBER_ID) held by this member id (else
        FENCED_INSTANCE_ID); without one, the member id must be in the group."""
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols[p] == len(self.members) for p in protocols
        )

    def add(self, member: MemberMetadata, callback: JoinCallback | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names)
        member.awaiting_join = callback
        if callback is not None:
            self.num_members_awaiting_join += 1
        timer = self.pending_members.pop(member.member_id, None)
        if timer is not None:
            timer.cancel()

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names)
            self.supported_protocols = +self.supported_protocols
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            instance = member.group_instance_id
            if instance is not None and self.static_members.get(instance) == member_id:
                del self.static_members[instance]
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
                member.heartbeat_timer = None
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        timer = self.pending_members.pop(member_id, None)
        if timer is not None:
            timer.cancel()
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(
        self,
        member: MemberMetadata,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: JoinCallback | None,
    ) -> None:
        self.supported_protocols.subtract(member.protocol_names)
        self.supported_protocols = +self.supported_protocols
        member.protocols = protocols
        self.supported_protocols.update(member.protocol_names)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join = callback

    def replace_static_member(
        self, instance_id: str, old_member_id: str, new_member_id: str
    ) -> MemberMetadata:
        """Moves a static member to a new member id; the old id's waiting requests are answered
        FENCED_INSTANCE_ID."""
        member = self.members.pop(old_member_id)
        if member.awaiting_join is not None:
            member.awaiting_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
        if member.awaiting_sync is not None:
            member.awaiting_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
            member.awaiting_sync = None
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return member

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """If the leader has not rejoined, make a member that has the leader. Returns whether the
        group has a joined leader."""
        if self.leader_id is not None:
            leader = self.members.get(self.leader_id)
            if leader is not None and leader.is_awaiting_join:
                return True
            for member in self.members.values():
                if member.is_awaiting_join:
                    self.leader_id = member.member_id
                    return True
            return False
        return False

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinResult) -> None:
        if member.awaiting_join is not None:
            callback = member.awaiting_join
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
            callback(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncResult) -> bool:
        if member.awaiting_sync is not None:
            callback = member.awaiting_sync
            member.awaiting_sync = None
            callback(result)
            return True
        return False

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer."""
        candidates = {p for p, n in self.supported_protocols.items() if n == len(self.members)}
        if not candidates:
            raise RuntimeError(f"group {self.group_id}: no protocol common to all members")
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        # ties go to the protocol the first member prefers (deterministic)
        best = max(votes.values())
        for m in self.members.values():
            choice = m.vote(candidates)
            if votes[choice] == best:
                return choice
        raise AssertionError("unreachable")

    def current_member_metadata(self) -> list[JoinedMember]:
        if self.protocol_name is None:
            raise RuntimeError(f"group {self.group_id}: no protocol selected")
        return [
            JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Union of the members' subscribed topics (consumer groups), None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                subscription = subscribed_topics(m.metadata(self.protocol_name))
            except KeyError:
                return None
            if subscription is None:
                return None
            topics |= subscription
        return frozenset(topics)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def all_timers(self) -> list[TokenTimer]:
        timers = [self.join_timer, self.sync_timer]
        timers += [m.heartbeat_timer for m in self.members.values()]
        timers += list(self.pending_members.values())
        return [t for t in timers if t is not None]
