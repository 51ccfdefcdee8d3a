"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as Kafka's
``GroupMetadataManager`` runs classic groups: membership, the delayed initial rebalance
(``group.initial.rebalance.delay.ms``, extended while members keep arriving, up to the rebalance
timeout), rebalance timeouts, session timeouts, the wait for members' SyncGroup, static members
(``group.instance.id``, KIP-345) and MEMBER_ID_REQUIRED members (KIP-394) that never come back.

The group's metadata record (generation, protocol, members and assignments) is written when a
rebalance completes; the answers that depend on it (SyncGroup, a static member's rejoin) are
given only once the write is committed, and a failed write resets the assignment or undoes the
rejoin. JoinGroup and SyncGroup may wait for other members: they take a callback, called exactly
once, possibly later from a timer or another member's request, always with the shard's lock held
(so it must only hand the result over).

Not thread-safe on its own: the shard's lock is held around every use
(:class:`~coordination.group.shard.GroupCoordinatorShard`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from coordination.group.config import GroupConfig, JoinRequest
from coordination.group.metadata import (
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinResult,
    MemberMetadata,
    SyncCallback,
    SyncResult,
    TokenTimer,
)
from coordination.group.offsets import write_error
from coordination.group.records import (
    GroupValue,
    MemberRecord,
    group_metadata_key,
    group_metadata_value,
)
from coordination.runtime.runtime import ShardContext
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: How long a new member's first JoinGroup may wait in a rebalance (Kafka's constant).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
UNKNOWN_MEMBER_ID = ""


class ClassicGroupManager:
    """The classic groups of one ``__consumer_offsets`` partition (``groups`` is the shard's
    map of groups by id, shared with the offsets side)."""

    def __init__(
        self, context: ShardContext, config: GroupConfig, groups: dict[str, GroupMetadata]
    ) -> None:
        self.context = context
        self.config = config
        self.groups = groups

    # -- members ---------------------------------------------------------------------------------

    def check_member(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
    ) -> ErrorCode | None:
        """Kafka's checks of a request from a member (SyncGroup, Heartbeat, OffsetCommit), in
        its order: the group is gone, the member is not a current one (an unknown instance id
        or member id, a fenced static member), the generation is not the group's."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.current_member_error(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def new_group(self, group_id: str) -> GroupMetadata:
        group = GroupMetadata(group_id, self.context.partition, self.context.now_ms())
        self.groups[group_id] = group
        return group

    # -- timers ------------------------------------------------------------------------------------

    def _schedule_token(self, delay_ms: int, fn: Callable[[TokenTimer], None]) -> TokenTimer:
        """A timer whose callback is handed the timer itself, to check that its group or member
        still holds it (a cancelled timer may already be waiting for the lock to fire)."""
        token = TokenTimer(self.context.monotonic_ms() + max(delay_ms, 0))
        token.timer = self.context.schedule(delay_ms, lambda: fn(token))
        return token

    def _is_current(self, group: GroupMetadata) -> bool:
        return self.groups.get(group.group_id) is group

    def complete_and_schedule_next_heartbeat(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        """The member has shown it is alive: expect the next sign within its session timeout.

        Only the member's deadline moves: its one timer is replaced only when it would fire
        after the new deadline, and a timer that fires before the deadline re-arms itself for
        the rest. So a heartbeat schedules nothing, and no cancelled timer per heartbeat waits
        a whole session timeout in the scheduler."""
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_deadline_ms = self.context.monotonic_ms() + timeout
        timer = member.heartbeat_timer
        if timer is not None:
            if timer.due_ms <= member.heartbeat_deadline_ms:
                return
            timer.cancel()
        self.schedule_heartbeat_expiration(group, member, timeout)

    def schedule_heartbeat_expiration(
        self, group: GroupMetadata, member: MemberMetadata, delay_ms: int
    ) -> None:
        def expire(timer: TokenTimer) -> None:
            if not self._is_current(group) or group.members.get(member.member_id) is not member:
                return
            if member.heartbeat_timer is not timer:
                return
            remaining = member.heartbeat_deadline_ms - self.context.monotonic_ms()
            if remaining > 0:
                # signs of life moved the deadline since this timer was armed
                self.schedule_heartbeat_expiration(group, member, remaining)
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

    def prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        """Starts a rebalance of a group in any rebalanceable state."""
        self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        now = self.context.now_ms()
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
        now = self.context.now_ms()
        group.init_next_generation(now)
        if group.is_in(GroupState.EMPTY):
            log.info(
                "group %s with generation %d is now empty", group.group_id, group.generation_id
            )

            def stored(error: ErrorCode | None) -> None:
                if error is not None:
                    log.warning(
                        "failed to write empty metadata for group %s: %s",
                        group.group_id,
                        error.name,
                    )

            self._store_group(group, {}, stored)
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
            self.complete_and_schedule_next_heartbeat(group, member)
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
                self.complete_and_schedule_next_heartbeat(group, member)

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
        self.complete_and_schedule_next_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
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

    def _store_group(
        self,
        group: GroupMetadata,
        assignment: dict[str, bytes],
        done: Callable[[ErrorCode | None], None],
    ) -> None:
        """Writes the group's metadata record; ``done`` gets None once it is committed, else
        the error as group clients understand it."""
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
        self.context.write(
            [record],
            lambda error: done(None if error is None else write_error(error, for_offsets=False)),
        )

    # -- JoinGroup -------------------------------------------------------------------------------

    def join_group(self, request: JoinRequest, callback: JoinCallback) -> None:
        member_id = request.member_id
        if not (
            self.config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            callback(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(request.group_id)
        if group is None:
            if not unknown:
                callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            group = self.new_group(request.group_id)
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
        self.complete_and_schedule_next_heartbeat(group, member)
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

            def stored(error: ErrorCode | None) -> None:
                if group.members.get(new_member_id) is not member or not self._is_current(group):
                    return  # the group moved on meanwhile (its members were answered)
                if error is not None:
                    # undo: the old member id stands (its callback is dropped first, so the
                    # replacement does not answer it FENCED_INSTANCE_ID)
                    group.update_member(member, old_protocols, *old_timeouts, None)
                    group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                    callback(JoinResult(error, UNKNOWN_MEMBER_ID))
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
                        group,
                        new_member_id,
                        leader_gets_members=False,
                        leader_id=current_leader or "",
                    )
                group.maybe_invoke_join_callback(member, result)

            self._store_group(group, assignment, stored)
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
        error = group.current_member_error(member_id, instance_id)
        if error is not None:
            callback(JoinResult(error, member_id))
            return
        member = group.members[member_id]
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
        group = self.groups.get(group_id)
        if group is None:
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self.check_member(group, member_id, group_instance_id, generation_id)
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
            self.complete_and_schedule_next_heartbeat(group, member)

    def _complete_sync_from_leader(
        self, group: GroupMetadata, leader_id: str, assignments: dict[str, bytes]
    ) -> None:
        assignment = {m: assignments.get(m, b"") for m in group.members}
        generation = group.generation_id

        def stored(error: ErrorCode | None) -> None:
            if (
                not self._is_current(group)
                or group.generation_id != generation
                or not group.is_in(GroupState.COMPLETING_REBALANCE)
            ):
                return  # a rebalance began meanwhile and answered the members
            if error is not None:
                log.warning(
                    "failed to store group %s after SyncGroup: %s", group.group_id, error.name
                )
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(
                    group,
                    f"error storing the group's assignment during SyncGroup (member {leader_id})",
                )
                return
            self._set_and_propagate_assignment(group, assignment)
            group.transition_to(GroupState.STABLE, self.context.now_ms())

        self._store_group(group, assignment, stored)

    # -- Heartbeat ---------------------------------------------------------------------------------

    def heartbeat(
        self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = self.check_member(group, member_id, group_instance_id, generation_id)
        if error is not None:
            return error
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.complete_and_schedule_next_heartbeat(group, group.members[member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup --------------------------------------------------------------------------------

    def leave_group(
        self, *, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``members``: (member id, group instance id). Returns the group-level error and one
        (member id, instance id, error) per leaving member."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        results = []
        for member_id, instance_id in members:
            results.append((member_id, instance_id, self._leave_one(group, member_id, instance_id)))
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
        error = group.current_member_error(member_id, instance_id)
        if error is not None:
            return error
        member = group.members[member_id]
        log.info("member %s is leaving group %s", member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"member {member_id} left the group")
        return ErrorCode.NONE


def restore_group(group: GroupMetadata, value: GroupValue) -> None:
    """Fills a new group from its metadata record (loading, or a consumer group converted back
    to the classic protocol): Stable with its members, Empty without."""
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
