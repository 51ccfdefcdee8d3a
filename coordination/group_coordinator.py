"""The group coordinator for classic consumer groups (Kafka's GroupCoordinator and
GroupMetadataManager), as a state machine over time and storage it is given.

What it owns: every group whose ``__consumer_offsets`` partition this broker leads
(``partition_for(group_id)`` is Kafka's rule: ``abs(Java String.hashCode(group_id)) %
offsets.topic.num.partitions``), their members, rebalances and committed offsets.

What it is given (so it owns no loop and no thread):

* a :class:`~coordination.group_metadata.Scheduler` for its timers: the delayed initial rebalance
  (``group.initial.rebalance.delay.ms``, extended while members keep arriving, up to the
  rebalance timeout), the rebalance timeout of a join phase, session timeouts, the wait for
  members' SyncGroup, MEMBER_ID_REQUIRED members that never come back, and the periodic offset
  expiration (``offsets.retention.minutes``, checked every
  ``offsets.retention.check.interval.ms``);
* a :class:`CoordinatorLog` that appends (key, value) records to a ``__consumer_offsets``
  partition and raises :class:`CoordinatorWriteError` when it cannot;
* a clock (milliseconds).

Partitions are loaded by the broker: :meth:`begin_loading` (requests for their groups are answered
COORDINATOR_LOAD_IN_PROGRESS), then :meth:`complete_loading` with the partition's records in log
order; :meth:`unload` when leadership moves away.

JoinGroup and SyncGroup may have to wait for other members: they take a callback, called exactly
once (possibly before the method returns, possibly later from a timer or another member's
request, always with the coordinator's lock held, so it must only hand the result over).

Thread-safety: one lock around everything; every public method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from coordination.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from coordination.group_metadata import (
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinResult,
    MemberMetadata,
    OffsetAndMetadata,
    Scheduler,
    SyncCallback,
    SyncResult,
    Timer,
    TokenTimer,
)
from coordination.group_records import (
    CorruptGroupRecord,
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
)
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: How long a new member's first JoinGroup may wait in a rebalance (Kafka's constant).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
INT32_MAX = 2**31 - 1

TopicPartition = tuple[str, int]
Record = tuple[bytes, bytes | None]


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class CoordinatorWriteError(Exception):
    """The log could not take the coordinator's records; carries Kafka's error code for it."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code


class CoordinatorLog(Protocol):
    """Where the coordinator's records go: ``__consumer_offsets`` partitions."""

    def append(self, partition: int, records: Sequence[Record]) -> None:
        """Appends (key, value) records (value None: a tombstone) in one batch; raises
        CoordinatorWriteError."""


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
        return [name for name, _ in self.protocols]

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
#: what goes with an error (Kafka's GroupCoordinator.EmptyGroup)
NO_GROUP = GroupSummary("", "", "", ())


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str


def _write_error(code: ErrorCode, *, for_offsets: bool) -> ErrorCode:
    """Kafka's mapping of append errors to what group and offset clients understand."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return (
            ErrorCode.INVALID_COMMIT_OFFSET_SIZE if for_offsets else ErrorCode.UNKNOWN_SERVER_ERROR
        )
    if code == ErrorCode.REQUEST_TIMED_OUT and not for_offsets:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return code


class GroupCoordinator:
    """Classic groups and committed offsets for the ``__consumer_offsets`` partitions this
    broker leads. See the module docstring."""

    def __init__(
        self,
        config: GroupConfig,
        scheduler: Scheduler,
        coordinator_log: CoordinatorLog,
        *,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.config = config
        self._scheduler = scheduler
        self._log = coordinator_log
        self._clock = clock
        self._lock = threading.RLock()
        self._groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set()
        #: partition -> load id (a later begin_loading or unload makes an older load stale)
        self._loading: dict[int, int] = {}
        self._load_ids = 0
        self._active = False
        self._cleanup_timer: Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def startup(self) -> None:
        with self._lock:
            self._active = True
            self._schedule_cleanup()

    def shutdown(self) -> None:
        """Cancels every timer and forgets every group (their state is in the log)."""
        with self._lock:
            self._active = False
            if self._cleanup_timer is not None:
                self._cleanup_timer.cancel()
                self._cleanup_timer = None
            for group in list(self._groups.values()):
                self._forget(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            self._groups.clear()
            self._owned.clear()
            self._loading.clear()

    @property
    def is_active(self) -> bool:
        return self._active

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    # -- partitions: loading and unloading ---------------------------------------------------------

    def begin_loading(self, partition: int) -> int:
        """This broker now leads ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS
        until :meth:`complete_loading` with the returned load id."""
        with self._lock:
            self._unload_locked(partition)
            self._load_ids += 1
            self._loading[partition] = self._load_ids
            return self._load_ids

    def complete_loading(self, partition: int, load_id: int, records: Iterable[Record]) -> bool:
        """Replays the partition's records (in log order) into groups and offsets; returns False
        if the load was superseded (leadership moved meanwhile). Unreadable records are skipped
        with a warning."""
        offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        groups: dict[str, GroupValue] = {}
        skipped = 0
        for key_bytes, value_bytes in records:
            try:
                key = parse_key(key_bytes)
                if isinstance(key, OffsetKey):
                    tp = (key.topic, key.partition)
                    if value_bytes is None:
                        offsets.get(key.group, {}).pop(tp, None)
                    else:
                        v = parse_offset_value(value_bytes)
                        offsets.setdefault(key.group, {})[tp] = OffsetAndMetadata(
                            v.offset,
                            v.leader_epoch,
                            v.metadata,
                            v.commit_timestamp,
                            v.expire_timestamp,
                        )
                elif isinstance(key, GroupKey):
                    if value_bytes is None:
                        groups.pop(key.group, None)
                    else:
                        groups[key.group] = parse_group_value(value_bytes)
            except CorruptGroupRecord as e:
                skipped += 1
                log.warning(
                    "__consumer_offsets-%d: skipping an unreadable record: %s", partition, e
                )
        with self._lock:
            if self._loading.get(partition) != load_id:
                return False
            del self._loading[partition]
            self._owned.add(partition)
            now = self._clock()
            loaded = 0
            for group_id in set(offsets) | set(groups):
                value = groups.get(group_id)
                group_offsets = offsets.get(group_id, {})
                if value is None and not group_offsets:
                    continue
                group = GroupMetadata(group_id, partition, now)
                if value is not None:
                    self._restore_group(group, value, now)
                group.offsets = dict(group_offsets)
                self._groups[group_id] = group
                loaded += 1
                for member in list(group.members.values()):
                    self._complete_and_schedule_next_heartbeat(group, member)
            log.log(
                logging.INFO if loaded or skipped else logging.DEBUG,
                "loaded %d group(s) from __consumer_offsets-%d%s",
                loaded,
                partition,
                f" ({skipped} unreadable records skipped)" if skipped else "",
            )
            return True

    def _restore_group(self, group: GroupMetadata, value: GroupValue, now_ms: int) -> None:
        group.protocol_type = value.protocol_type or None
        group.generation_id = value.generation
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        group.state_timestamp_ms = (
            value.current_state_timestamp if value.current_state_timestamp >= 0 else -1
        )
        for m in value.members:
            member = MemberMetadata(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
                m.assignment,
            )
            group.add(member, None)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        group.subscribed_topics = group.compute_subscribed_topics()

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: drop its groups (waiting members are
        answered NOT_COORDINATOR)."""
        with self._lock:
            self._unload_locked(partition)

    def _unload_locked(self, partition: int) -> None:
        self._loading.pop(partition, None)
        self._owned.discard(partition)
        for group in [g for g in self._groups.values() if g.partition == partition]:
            self._forget(group, ErrorCode.NOT_COORDINATOR)
            del self._groups[group.group_id]

    def _forget(self, group: GroupMetadata, error: ErrorCode) -> None:
        for timer in group.all_timers():
            timer.cancel()
        for member in list(group.members.values()):
            group.maybe_invoke_join_callback(member, JoinResult(error, member.member_id))
            group.maybe_invoke_sync_callback(member, SyncResult(error))
            member.heartbeat_timer = None
        group.state = GroupState.DEAD

    @property
    def loading_partitions(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._loading)

    def coordinates(self, partition: int) -> bool:
        """Whether this coordinator owns (or is loading) the groups of ``partition``."""
        with self._lock:
            return partition in self._owned or partition in self._loading

    def is_loading(self, partition: int) -> bool:
        with self._lock:
            return partition in self._loading

    # -- validation ------------------------------------------------------------------------------

    def _validate_group(self, group_id: str | None, *, allow_empty: bool) -> ErrorCode | None:
        """Kafka's validateGroupStatus."""
        if group_id is None or (not group_id and not allow_empty):
            return ErrorCode.INVALID_GROUP_ID
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id)
        if p in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def _check_member(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
    ) -> ErrorCode | None:
        """Kafka's checks of a request from a member (SyncGroup, Heartbeat, OffsetCommit), in
        its order: the group is gone, the static member was fenced, the member is unknown, the
        generation is not the group's."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(group_instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def _new_group(self, group_id: str, now_ms: int) -> GroupMetadata:
        group = GroupMetadata(group_id, self.partition_for(group_id), now_ms)
        self._groups[group_id] = group
        return group

    # -- timers ------------------------------------------------------------------------------------

    def _schedule(self, delay_ms: int, fn: Callable[[], None]) -> Timer:
        def run() -> None:
            with self._lock:
                if self._active:
                    fn()

        return self._scheduler.schedule(max(delay_ms, 0), run)

    def _schedule_token(self, delay_ms: int, fn: Callable[[TokenTimer], None]) -> TokenTimer:
        """A timer whose callback is handed the timer itself, to check that its group or member
        still holds it (a cancelled timer may already be waiting for the lock to fire)."""
        token = TokenTimer(self._scheduler.now_ms() + max(delay_ms, 0))
        token.timer = self._schedule(delay_ms, lambda: fn(token))
        return token

    def _is_current(self, group: GroupMetadata) -> bool:
        return self._groups.get(group.group_id) is group

    def _complete_and_schedule_next_heartbeat(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        """The member has shown it is alive: expect the next sign within its session timeout.

        Only the member's deadline moves: its one timer is replaced only when it would fire
        after the new deadline, and a timer that fires before the deadline re-arms itself for
        the rest. So a heartbeat schedules nothing, and no cancelled timer per heartbeat waits
        a whole session timeout in the scheduler."""
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_deadline_ms = self._scheduler.now_ms() + timeout
        timer = member.heartbeat_timer
        if timer is not None:
            if timer.due_ms <= member.heartbeat_deadline_ms:
                return
            timer.cancel()
        self._schedule_heartbeat_expiration(group, member, timeout)

    def _schedule_heartbeat_expiration(
        self, group: GroupMetadata, member: MemberMetadata, delay_ms: int
    ) -> None:
        def expire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.members.get(member.member_id) is not member:
                return
            if member.heartbeat_timer is not timer:
                return
            remaining = member.heartbeat_deadline_ms - self._scheduler.now_ms()
            if remaining > 0:
                # signs of life moved the deadline since this timer was armed
                self._schedule_heartbeat_expiration(group, member, remaining)
                return
            member.heartbeat_timer = None
            if not member.has_satisfied_heartbeat():
                log.info(
                    "member %s in group %s has failed (session timeout), removing it",
                    member.member_id,
                    group.group_id,
                )
                self._remove_member_and_update_group(group, member, "session timeout expired")

        member.heartbeat_timer = self._schedule_token(delay_ms, expire)

    def _schedule_pending_member_expiration(
        self, group: GroupMetadata, member_id: str, timeout_ms: int
    ) -> None:
        def expire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.pending_members.get(member_id) is not timer:
                return
            log.info("pending member %s in group %s has expired", member_id, group.group_id)
            self._remove_pending_member_and_update_group(group, member_id)

        group.pending_members[member_id] = self._schedule_token(timeout_ms, expire)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        timer = group.pending_members.pop(member_id, None)
        if timer is not None:
            timer.cancel()
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- rebalancing -------------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        now = self._clock()
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync_members.clear()
        initial = group.is_in(GroupState.EMPTY)
        previous = group.state
        group.transition_to(GroupState.PREPARING_REBALANCE, now)
        log.info(
            "preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
            group.group_id,
            previous.value,
            group.generation_id,
            reason,
        )
        if group.join_timer is not None:
            group.join_timer.cancel()
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.initial_delay_remaining_ms = remaining
            self._schedule_initial_delay(group, delay)
        else:
            group.initial_delay_remaining_ms = None
            self._schedule_join_expiration(group)
            self._try_complete_join(group)

    def _schedule_initial_delay(self, group: GroupMetadata, delay_ms: int) -> None:
        def fire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.join_timer is not timer:
                return
            group.join_timer = None
            remaining = group.initial_delay_remaining_ms or 0
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                delay = min(self.config.initial_rebalance_delay_ms, remaining)
                group.initial_delay_remaining_ms = max(remaining - delay_ms, 0)
                self._schedule_initial_delay(group, delay)
            else:
                group.initial_delay_remaining_ms = None
                self._on_complete_join(group)

        group.join_timer = self._schedule_token(delay_ms, fire)

    def _schedule_join_expiration(self, group: GroupMetadata) -> None:
        def fire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.join_timer is not timer:
                return
            group.join_timer = None
            self._on_complete_join(group)

        group.join_timer = self._schedule_token(group.rebalance_timeout_ms, fire)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_remaining_ms is None
            and group.has_all_members_joined()
        ):
            if group.join_timer is not None:
                group.join_timer.cancel()
                group.join_timer = None
            self._on_complete_join(group)

    def _on_complete_join(self, group: GroupMetadata) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        # dynamic members that did not rejoin in time leave the group
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                log.info(
                    "member %s did not rejoin group %s in time, removing it",
                    member.member_id,
                    group.group_id,
                )
                group.maybe_invoke_sync_callback(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody has rejoined yet (only static members remain): wait another round
            self._schedule_join_expiration(group)
            return
        now = self._clock()
        group.init_next_generation(now)
        if group.is_in(GroupState.EMPTY):
            log.info(
                "group %s with generation %d is now empty", group.group_id, group.generation_id
            )
            try:
                self._store_group(group, {})
            except CoordinatorWriteError as e:
                log.warning("failed to write empty metadata for group %s: %s", group.group_id, e)
            return
        log.info(
            "stabilized group %s generation %d with %d member(s), protocol %s",
            group.group_id,
            group.generation_id,
            group.size,
            group.protocol_name,
        )
        for member in list(group.members.values()):
            result = self._join_ok(group, member.member_id, leader_gets_members=True)
            group.maybe_invoke_join_callback(member, result)
            self._complete_and_schedule_next_heartbeat(group, member)
            member.is_new = False
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        group.pending_sync_members = set(group.members)
        generation = group.generation_id

        def fire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.sync_timer is not timer:
                return
            group.sync_timer = None
            if generation != group.generation_id or not group.is_in(
                GroupState.COMPLETING_REBALANCE, GroupState.STABLE
            ):
                return
            pending = list(group.pending_sync_members)
            if not pending:
                return
            log.info(
                "group %s: members %s did not send SyncGroup in time, removing them",
                group.group_id,
                pending,
            )
            for member_id in pending:
                member = group.members.get(member_id)
                if member is not None:
                    group.maybe_invoke_sync_callback(
                        member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
                    )
                group.remove(member_id)
            self._prepare_rebalance(group, f"removing {pending} on pending sync expiration")

        if group.sync_timer is not None:
            group.sync_timer.cancel()
        group.sync_timer = self._schedule_token(group.rebalance_timeout_ms, fire)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(
        self, group: GroupMetadata, assignment: dict[str, bytes]
    ) -> None:
        for member_id, data in assignment.items():
            member = group.members.get(member_id)
            if member is not None:
                member.assignment = data
        self._propagate_assignment(group, ErrorCode.NONE)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            result = SyncResult(
                error,
                group.protocol_type if ok else None,
                group.protocol_name if ok else None,
                member.assignment,
            )
            if group.maybe_invoke_sync_callback(member, result):
                self._complete_and_schedule_next_heartbeat(group, member)

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str
    ) -> None:
        group.maybe_invoke_join_callback(
            member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id)
        )
        group.maybe_invoke_sync_callback(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        request: JoinRequest,
        callback: JoinCallback,
        reason: str,
    ) -> None:
        member = MemberMetadata(
            member_id,
            request.group_instance_id,
            request.client_id,
            request.client_host,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            request.protocol_type,
            request.protocols,
        )
        member.is_new = True
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        self._complete_and_schedule_next_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, reason)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request: JoinRequest,
        callback: JoinCallback,
        reason: str,
    ) -> None:
        group.update_member(
            member,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            callback,
        )
        self._maybe_prepare_rebalance(group, reason)

    # -- storage -----------------------------------------------------------------------------------

    def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        """Writes the group's metadata record; raises CoordinatorWriteError (mapped)."""
        protocol = group.protocol_name
        members = []
        for m in group.members.values():
            members.append(
                MemberRecord(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol is not None else b"",
                    assignment=assignment.get(m.member_id, b""),
                )
            )
        value = GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp_ms,
            members=tuple(members),
        )
        record = (group_metadata_key(group.group_id), group_metadata_value(value))
        try:
            self._log.append(group.partition, [record])
        except CoordinatorWriteError as e:
            raise CoordinatorWriteError(
                _write_error(e.error_code, for_offsets=False), str(e)
            ) from e

    # -- JoinGroup -------------------------------------------------------------------------------

    def join_group(self, request: JoinRequest, callback: JoinCallback) -> None:
        with self._lock:
            member_id = request.member_id
            error = self._validate_group(request.group_id, allow_empty=False)
            if error is not None:
                callback(JoinResult(error, member_id))
                return
            if not (
                self.config.min_session_timeout_ms
                <= request.session_timeout_ms
                <= self.config.max_session_timeout_ms
            ):
                callback(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
                return
            unknown = member_id == UNKNOWN_MEMBER_ID
            group = self._groups.get(request.group_id)
            if group is None:
                if not unknown:
                    callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                    return
                group = self._new_group(request.group_id, self._clock())
            if not self._accept_joining_member(group, member_id):
                callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
                return
            if group.is_in(GroupState.DEAD):
                callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
                return
            if not group.supports_protocols(request.protocol_type, request.protocol_names):
                callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
                return
            if unknown:
                self._do_unknown_join(group, request, callback)
            else:
                self._do_current_member_join(group, request, callback)
            if group.is_in(GroupState.PREPARING_REBALANCE):
                self._try_complete_join(group)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        max_size = self.config.max_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (
                member is not None and member.is_awaiting_join
            ) or group.num_members_awaiting_join < max_size
        return group.has(member_id) or group.size < max_size

    def _join_ok(
        self,
        group: GroupMetadata,
        member_id: str,
        *,
        leader_gets_members: bool,
        leader_id: str | None = None,
        skip_assignment: bool = False,
    ) -> JoinResult:
        """A successful JoinGroup answer in the group's current generation. The leader gets
        the members' metadata when ``leader_gets_members``; ``leader_id`` overrides the group's
        leader in the answer."""
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            (group.leader_id if leader_id is None else leader_id) or "",
            group.current_member_metadata()
            if leader_gets_members and group.is_leader(member_id)
            else [],
            skip_assignment=skip_assignment,
        )

    def _do_unknown_join(
        self, group: GroupMetadata, request: JoinRequest, callback: JoinCallback
    ) -> None:
        new_member_id = f"{request.group_instance_id or request.client_id}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            self._do_static_join(group, request, request.group_instance_id, new_member_id, callback)
        elif request.require_known_member_id:
            # KIP-394: hand out the id first; the member joins with it
            self._schedule_pending_member_expiration(
                group, new_member_id, request.session_timeout_ms
            )
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_and_rebalance(
                group,
                new_member_id,
                request,
                callback,
                f"adding new member {new_member_id} ({request.why})",
            )

    def _do_static_join(
        self,
        group: GroupMetadata,
        request: JoinRequest,
        group_instance_id: str,
        new_member_id: str,
        callback: JoinCallback,
    ) -> None:
        old_member_id = group.static_member_id(group_instance_id)
        if old_member_id is None:
            self._add_member_and_rebalance(
                group,
                new_member_id,
                request,
                callback,
                f"adding new static member {group_instance_id} ({request.why})",
            )
            return
        # a known static member came back with a new member id: it replaces the old one
        current_leader = group.leader_id
        old = group.members[old_member_id]
        old_protocols = old.protocols
        old_timeouts = (old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        self._complete_and_schedule_next_heartbeat(group, member)
        group.update_member(
            member,
            request.protocols,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            callback,
        )
        log.info(
            "static member %s of group %s rejoined as %s (was %s)",
            group_instance_id,
            group.group_id,
            new_member_id,
            old_member_id,
        )
        if group.is_in(GroupState.STABLE):
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance(
                    group, f"static member {group_instance_id} changed the group's protocol"
                )
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            try:
                self._store_group(group, assignment)
            except CoordinatorWriteError as e:
                # undo: the old member id stands (its callback is dropped first, so the
                # replacement does not answer it FENCED_INSTANCE_ID)
                group.update_member(member, old_protocols, *old_timeouts, None)
                group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                callback(JoinResult(e.error_code, UNKNOWN_MEMBER_ID))
                return
            if request.supports_skip_assignment:
                result = self._join_ok(
                    group,
                    new_member_id,
                    leader_gets_members=True,
                    skip_assignment=group.is_leader(new_member_id),
                )
            else:
                # the old leader id keeps the member from running an assignment the stable
                # group would ignore
                result = self._join_ok(
                    group, new_member_id, leader_gets_members=False, leader_id=current_leader or ""
                )
            group.maybe_invoke_join_callback(member, result)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(
                group, f"updating metadata of static member {group_instance_id} ({request.why})"
            )

    def _do_current_member_join(
        self, group: GroupMetadata, request: JoinRequest, callback: JoinCallback
    ) -> None:
        member_id = request.member_id
        instance_id = request.group_instance_id
        if group.is_pending_member(member_id):
            if instance_id is not None:
                callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            self._add_member_and_rebalance(
                group,
                member_id,
                request,
                callback,
                f"pending member {member_id} joined ({request.why})",
            )
            return
        if group.is_static_member_fenced(instance_id, member_id):
            callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        member = group.members.get(member_id)
        if member is None or (instance_id is not None and instance_id not in group.static_members):
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        changed = not member.matches(request.protocols)
        completing = group.is_in(GroupState.COMPLETING_REBALANCE)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            reason = f"member {member_id} joining during a rebalance"
        elif group.is_in(GroupState.STABLE) and group.is_leader(member_id):
            # the leader may rejoin to force a rebalance (topic metadata changed...)
            reason = f"leader {member_id} rejoined"
        elif completing or group.is_in(GroupState.STABLE):
            if not changed:
                # the same answer again (in CompletingRebalance it missed the JoinGroup answer)
                callback(self._join_ok(group, member_id, leader_gets_members=completing))
                return
            reason = f"member {member_id} changed its metadata"
        else:
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        self._update_member_and_rebalance(
            group, member, request, callback, f"{reason} ({request.why})"
        )

    # -- SyncGroup -------------------------------------------------------------------------------

    def sync_group(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        callback: SyncCallback,
    ) -> None:
        with self._lock:
            error = self._validate_group(group_id, allow_empty=False)
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                # the rebalance state is gone: make the member rejoin (Kafka does the same)
                callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                return
            if error is not None:
                callback(SyncResult(error))
                return
            group = self._groups.get(group_id)
            if group is None:
                callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
                return
            error = self._check_member(group, member_id, group_instance_id, generation_id)
            if error is not None:
                callback(SyncResult(error))
            elif (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name
            ):
                callback(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            elif group.is_in(GroupState.EMPTY):
                callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            elif group.is_in(GroupState.COMPLETING_REBALANCE):
                member = group.members[member_id]
                member.awaiting_sync = callback
                group.pending_sync_members.discard(member_id)
                if group.is_leader(member_id):
                    self._complete_sync_from_leader(group, member_id, assignments)
            else:  # STABLE: the current assignment
                member = group.members[member_id]
                group.pending_sync_members.discard(member_id)
                callback(
                    SyncResult(
                        ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
                    )
                )
                self._complete_and_schedule_next_heartbeat(group, member)

    def _complete_sync_from_leader(
        self, group: GroupMetadata, leader_id: str, assignments: dict[str, bytes]
    ) -> None:
        assignment = {m: assignments.get(m, b"") for m in group.members}
        try:
            self._store_group(group, assignment)
        except CoordinatorWriteError as e:
            log.warning("failed to store group %s after SyncGroup: %s", group.group_id, e)
            self._reset_and_propagate_assignment_error(group, e.error_code)
            self._maybe_prepare_rebalance(
                group, f"error storing the group's assignment during SyncGroup (member {leader_id})"
            )
            return
        self._set_and_propagate_assignment(group, assignment)
        group.transition_to(GroupState.STABLE, self._clock())

    # -- Heartbeat ---------------------------------------------------------------------------------

    def heartbeat(
        self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        with self._lock:
            error = self._validate_group(group_id, allow_empty=False)
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                return ErrorCode.NONE  # the group is loading: answer blindly (as Kafka does)
            if error is not None:
                return error
            group = self._groups.get(group_id)
            if group is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            error = self._check_member(group, member_id, group_instance_id, generation_id)
            if error is not None:
                return error
            if group.is_in(GroupState.EMPTY):
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._complete_and_schedule_next_heartbeat(group, group.members[member_id])
            if group.is_in(GroupState.PREPARING_REBALANCE):
                return ErrorCode.REBALANCE_IN_PROGRESS
            return ErrorCode.NONE

    # -- LeaveGroup --------------------------------------------------------------------------------

    def leave_group(
        self, *, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``members``: (member id, group instance id). Returns the group-level error and one
        (member id, instance id, error) per leaving member."""
        with self._lock:
            error = self._validate_group(group_id, allow_empty=False)
            if error is not None:
                return error, [(m, i, error) for m, i in members]
            group = self._groups.get(group_id)
            if group is None:
                return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
            results = []
            for member_id, instance_id in members:
                results.append(
                    (member_id, instance_id, self._leave_one(group, member_id, instance_id))
                )
            return ErrorCode.NONE, results

    def _leave_one(
        self, group: GroupMetadata, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if member_id == UNKNOWN_MEMBER_ID and instance_id is not None:
            known = group.static_member_id(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = known
        if group.is_pending_member(member_id):
            self._remove_pending_member_and_update_group(group, member_id)
            return ErrorCode.NONE
        if group.is_static_member_fenced(instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("member %s is leaving group %s", member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"member {member_id} left the group")
        return ErrorCode.NONE

    # -- offsets -----------------------------------------------------------------------------------

    def commit_offsets(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit: one error per partition."""
        with self._lock:
            error = self._validate_group(group_id, allow_empty=True)
            if error is not None:
                return dict.fromkeys(offsets, error)
            group = self._groups.get(group_id)
            if group is None:
                if generation_id >= 0:
                    # a generation of a group we do not know: stale or misdirected
                    return dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION)
                group = self._new_group(group_id, self._clock())
            error = self._validate_offset_commit(group, member_id, group_instance_id, generation_id)
            if error is None and group.is_in(GroupState.COMPLETING_REBALANCE):
                error = ErrorCode.REBALANCE_IN_PROGRESS
            if error is not None:
                return dict.fromkeys(offsets, error)
            member = group.members.get(member_id)
            if member is not None and generation_id >= 0:
                # a commit is a sign of life too
                self._complete_and_schedule_next_heartbeat(group, member)
            return self._store_offsets(group, offsets)

    def _validate_offset_commit(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
    ) -> ErrorCode | None:
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            return self._check_member(group, member_id, group_instance_id, generation_id)
        # a commit from outside the group (a "simple" consumer, an admin tool)
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not group.is_in(GroupState.EMPTY):
            # commits without membership while the group has members would undo theirs
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _store_offsets(
        self, group: GroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, ErrorCode]:
        results: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        limit = self.config.offset_metadata_max_bytes
        for tp, oam in offsets.items():
            if len(oam.metadata.encode()) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = oam
        if valid:
            records = [
                (
                    offset_commit_key(group.group_id, tp[0], tp[1]),
                    _offset_value(oam),
                )
                for tp, oam in valid.items()
            ]
            try:
                self._log.append(group.partition, records)
            except CoordinatorWriteError as e:
                code = _write_error(e.error_code, for_offsets=True)
                log.warning("offset commit of group %s failed: %s", group.group_id, e)
                for tp in valid:
                    results[tp] = code
                return results
            group.offsets.update(valid)
            for tp in valid:
                results[tp] = ErrorCode.NONE
        return results

    def fetch_offsets(
        self, *, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """OffsetFetch: committed offsets of ``partitions`` (None: every committed one); None
        for a partition without a commit."""
        with self._lock:
            error = self._validate_group(group_id, allow_empty=True)
            if error is not None:
                return error, {}
            group = self._groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                return ErrorCode.NONE, dict.fromkeys(partitions or (), None)
            if partitions is None:
                return ErrorCode.NONE, dict(group.offsets)
            return ErrorCode.NONE, {tp: group.offsets.get(tp) for tp in partitions}

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete (KIP-496)."""
        with self._lock:
            error = self._validate_group(group_id, allow_empty=False)
            if error is not None:
                return error, {}
            group = self._groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                return ErrorCode.GROUP_ID_NOT_FOUND, {}
            results: dict[TopicPartition, ErrorCode] = {}
            if group.is_in(GroupState.EMPTY):
                eligible = list(partitions)
            elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
                subscribed = group.subscribed_topics or frozenset()
                eligible = [tp for tp in partitions if tp[0] not in subscribed]
                for tp in partitions:
                    if tp[0] in subscribed:
                        results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                return ErrorCode.NON_EMPTY_GROUP, {}
            if eligible:
                try:
                    self._remove_offsets(group, eligible)
                except CoordinatorWriteError as e:
                    return _write_error(e.error_code, for_offsets=True), {}
                for tp in eligible:
                    results[tp] = ErrorCode.NONE
            return ErrorCode.NONE, results

    def _remove_offsets(self, group: GroupMetadata, partitions: Iterable[TopicPartition]) -> int:
        """Tombstones for the given offsets (and for the group itself once it is empty with no
        offsets left, which then goes away). Raises CoordinatorWriteError."""
        doomed = [tp for tp in partitions if tp in group.offsets]
        records: list[Record] = [(offset_commit_key(group.group_id, t, p), None) for t, p in doomed]
        remaining = set(group.offsets) - set(doomed)
        drop_group = group.is_in(GroupState.EMPTY) and not remaining
        if drop_group:
            records.append((group_metadata_key(group.group_id), None))
        if records:
            self._log.append(group.partition, records)
        for tp in doomed:
            del group.offsets[tp]
        if drop_group:
            self._drop_group(group)
        return len(doomed)

    def _drop_group(self, group: GroupMetadata) -> None:
        group.transition_to(GroupState.DEAD, self._clock())
        for timer in group.all_timers():
            timer.cancel()
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    # -- expiration --------------------------------------------------------------------------------

    def _schedule_cleanup(self) -> None:
        def run() -> None:
            try:
                self.cleanup_group_metadata()
            finally:
                if self._active:
                    self._schedule_cleanup()

        self._cleanup_timer = self._schedule(self.config.offsets_retention_check_interval_ms, run)

    def cleanup_group_metadata(self, now_ms: int | None = None) -> int:
        """Expires offsets past ``offsets.retention.minutes`` (Kafka's rules) and removes empty
        groups with no offsets left. Returns how many offsets expired."""
        with self._lock:
            now = self._clock() if now_ms is None else now_ms
            expired_total = 0
            for group in list(self._groups.values()):
                expired = self._expired_offsets(group, now)
                try:
                    if expired:
                        expired_total += self._remove_offsets(group, expired)
                    elif (
                        group.is_in(GroupState.EMPTY)
                        and not group.offsets
                        and not group.pending_members
                    ):
                        self._remove_offsets(group, [])
                except CoordinatorWriteError as e:
                    log.warning("expiring offsets of group %s failed: %s", group.group_id, e)
            if expired_total:
                log.info("removed %d expired offset(s)", expired_total)
            return expired_total

    def _expired_offsets(self, group: GroupMetadata, now_ms: int) -> list[TopicPartition]:
        retention = self.config.offsets_retention_ms

        def expired(
            base: Callable[[OffsetAndMetadata], int], subscribed: frozenset[str]
        ) -> list[TopicPartition]:
            out = []
            for tp, oam in group.offsets.items():
                if tp[0] in subscribed:
                    continue
                if oam.expire_timestamp_ms >= 0:
                    if now_ms >= oam.expire_timestamp_ms:
                        out.append(tp)
                elif now_ms - base(oam) >= retention:
                    out.append(tp)
            return out

        if group.protocol_type is None:
            # a "simple" group: offsets only
            return expired(lambda o: o.commit_timestamp_ms, frozenset())
        if group.is_in(GroupState.EMPTY):
            state_ts = group.state_timestamp_ms
            return expired(
                lambda o: state_ts if state_ts >= 0 else o.commit_timestamp_ms, frozenset()
            )
        if (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.subscribed_topics is not None
            and group.is_in(GroupState.STABLE)
        ):
            return expired(lambda o: o.commit_timestamp_ms, group.subscribed_topics)
        return []

    # -- ListGroups, DescribeGroups, DeleteGroups ------------------------------------------------

    def list_groups(self, states: Sequence[str] = ()) -> tuple[ErrorCode, list[GroupOverview]]:
        with self._lock:
            if not self._active:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
            error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
            wanted = {s.lower() for s in states}
            out = [
                GroupOverview(g.group_id, g.protocol_type or "", g.state.value)
                for g in self._groups.values()
                if not wanted or g.state.value.lower() in wanted
            ]
            return error, out

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        """(error, summary); :data:`DEAD_GROUP` for a group this broker does not know,
        :data:`NO_GROUP` with an error."""
        with self._lock:
            error = self._validate_group(group_id, allow_empty=True)
            if error is not None:
                return error, NO_GROUP
            group = self._groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                return ErrorCode.NONE, DEAD_GROUP
            stable = group.is_in(GroupState.STABLE)
            protocol = group.protocol_name or ""
            members = tuple(
                MemberSummary(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(protocol) if stable else b"",
                    m.assignment if stable else b"",
                )
                for m in group.members.values()
            )
            return ErrorCode.NONE, GroupSummary(
                group.state.value,
                group.protocol_type or "",
                protocol if stable else "",
                members,
            )

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        with self._lock:
            results: dict[str, ErrorCode] = {}
            for group_id in group_ids:
                error = self._validate_group(group_id, allow_empty=True)
                if error is not None:
                    results[group_id] = error
                    continue
                group = self._groups.get(group_id)
                if group is None or group.is_in(GroupState.DEAD):
                    results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                elif not group.is_in(GroupState.EMPTY):
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    try:
                        self._remove_offsets(group, list(group.offsets))
                    except CoordinatorWriteError as e:
                        results[group_id] = _write_error(e.error_code, for_offsets=False)
                        continue
                    results[group_id] = ErrorCode.NONE
            return results

    # -- introspection (tests, metrics) ------------------------------------------------------

    def group(self, group_id: str) -> GroupMetadata | None:
        with self._lock:
            return self._groups.get(group_id)


def _offset_value(oam: OffsetAndMetadata) -> bytes:
    return offset_commit_value(
        oam.offset,
        oam.leader_epoch,
        oam.metadata,
        oam.commit_timestamp_ms,
        expire_timestamp=oam.expire_timestamp_ms,
    )
