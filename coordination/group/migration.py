"""Classic and consumer groups under one group id (Kafka 3.9/4.0's online migration,
``group.consumer.migration.policy``):

* **classic members in a consumer group**: a consumer using the classic protocol (JoinGroup,
  SyncGroup, Heartbeat, LeaveGroup) may join a consumer group. It is a member like the others:
  its subscription comes from its JoinGroup metadata (the "consumer" embedded protocol, its
  owned partitions included), the coordinator's assignor computes its target, and it is
  reconciled like any member; its generation is its member epoch. It learns that it must
  revoke or can get more partitions from REBALANCE_IN_PROGRESS heartbeats, rejoins, and
  receives its assignment in SyncGroup (Kafka's ``classicGroup*ToConsumerGroup``). Its session
  timeout is its own; it must send SyncGroup within its rebalance timeout after JoinGroup, and
  rejoin within it once asked.
* **conversions**: an empty group changes type with the first member of the other protocol;
  a non-empty classic group of the "consumer" protocol type becomes a consumer group when a
  ConsumerGroupHeartbeat member joins it (online upgrade: its members keep their partitions,
  the generation becomes the group epoch); a consumer group whose last member of the consumer
  protocol leaves while classic members remain becomes a classic group again (online
  downgrade), which then rebalances.

Not thread-safe on its own: the shard's lock is held around every use.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from coordination.group.classic import UNKNOWN_MEMBER_ID, ClassicGroupManager, restore_group
from coordination.group.config import GroupConfig, JoinRequest
from coordination.group.consumer import (
    ClassicTombstone,
    ConsumerGroupManager,
    Done,
    GroupRecord,
    new_member_id,
)
from coordination.group.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    GroupError,
    MemberState,
)
from coordination.group.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolSubscription,
    assigned_partitions,
    encode_assignment,
)
from coordination.group.consumer_records import (
    ClassicMetadata,
    ConsumerRecord,
    CurrentAssignmentKey,
    GroupEpochKey,
    MemberSubscriptionKey,
    Partitions,
    TargetEpochKey,
    TargetMemberKey,
)
from coordination.group.metadata import (
    GroupMetadata,
    JoinCallback,
    JoinResult,
    MemberMetadata,
    SyncCallback,
    SyncResult,
)
from coordination.group.records import (
    GroupValue,
    MemberRecord,
    group_metadata_key,
    group_metadata_value,
)
from coordination.metadata.view import ClusterView
from protocol.codegen import decode_version_prefixed
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError

log = logging.getLogger(__name__)

LeaveResults = tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]


def _subscription(metadata: bytes) -> tuple[int, object]:
    """(version, ConsumerProtocolSubscription); raises GroupError when unreadable."""
    try:
        return decode_version_prefixed(ConsumerProtocolSubscription, metadata, newer_as_latest=True)
    except RemoteProtocolError:
        raise GroupError(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            "Malformed embedded consumer protocol in subscription deserialization.",
        ) from None


def _to_ids(view: ClusterView, partitions: dict[str, list[int]]) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for name, parts in partitions.items():
        topic = view.topics.get(name)
        if topic is not None and parts:
            out[topic.topic_id] = frozenset(parts)
    return out


def _to_names(view: ClusterView, partitions: Partitions) -> dict[str, list[int]]:
    out = {}
    for topic_id, parts in partitions.items():
        topic = view.topics_by_id.get(topic_id)
        if topic is not None:
            out[topic.name] = sorted(parts)
    return out


class GroupMigration:
    """Classic protocol requests for consumer groups, and the conversions between the two
    group types, for one shard."""

    def __init__(
        self,
        config: GroupConfig,
        consumer: ConsumerGroupManager,
        classic: ClassicGroupManager,
    ) -> None:
        self.config = config
        self.consumer = consumer
        self.classic = classic
        consumer.upgrade = self._upgrade
        consumer.after_upgrade = self.after_upgrade
        consumer.downgrade = self._maybe_downgrade

    @property
    def consumer_groups(self) -> dict[str, ConsumerGroup]:
        return self.consumer.groups

    @property
    def classic_groups(self) -> dict[str, GroupMetadata]:
        return self.consumer.classic_groups

    # -- JoinGroup -------------------------------------------------------------------------------

    def join_group(self, request: JoinRequest, callback: JoinCallback) -> None:
        gid = request.group_id
        if self.consumer.busy(gid):
            self.consumer.run(
                gid,
                lambda: self.join_group(request, callback),
                lambda error: callback(JoinResult(error, request.member_id)),
            )
            return
        group = self.consumer_groups.get(gid)
        if group is None:
            self.classic.join_group(request, callback)
            return
        if group.is_empty:
            # an empty consumer group becomes a classic group (its offsets stay)
            records: list[GroupRecord] = []
            self.consumer.group_tombstones(group, records)

            def deleted(error: ErrorCode | None) -> None:
                if error is not None:
                    callback(JoinResult(error, request.member_id))
                else:
                    self.classic.join_group(request, callback)

            self.consumer.write(gid, records, deleted)
            return
        try:
            self._join_consumer_group(group, request, callback)
        except GroupError as e:
            callback(JoinResult(e.code, request.member_id))

    def _join_consumer_group(
        self, group: ConsumerGroup, request: JoinRequest, callback: JoinCallback
    ) -> None:
        """Kafka's ``classicGroupJoinToConsumerGroup``."""
        if not (
            self.config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            raise GroupError(ErrorCode.INVALID_SESSION_TIMEOUT)
        gid = group.group_id
        unknown = request.member_id == UNKNOWN_MEMBER_ID
        member_id = new_member_id() if unknown else request.member_id
        instance_id = request.group_instance_id
        self.consumer.check_not_full(group, member_id)
        if not group.supports_classic_protocols(request.protocol_type, request.protocol_names):
            raise GroupError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Member {member_id}'s protocols are not supported.",
            )
        if unknown and request.require_known_member_id:
            log.info(
                "[GroupId %s] dynamic member with unknown member id joins the consumer group: "
                "asking it to join again as %s",
                gid,
                member_id,
            )
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            return
        records: list[GroupRecord] = []
        member = self.consumer.member_for(
            group,
            member_id,
            -1,
            instance_id,
            {},
            instance_id is None or unknown,
            records,
            classic=True,
        )
        _, subscription = _subscription(request.protocols[0][1])
        view = self.consumer.cluster()
        owned_names = {
            tp.topic: list(tp.partitions)
            for tp in getattr(subscription, "owned_partitions", None) or []
        }
        rack = getattr(subscription, "rack_id", None)
        updated = member.replace(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack if rack is not None else member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=frozenset(subscription.topics),  # type: ignore[attr-defined]
            client_id=request.client_id,
            client_host=request.client_host,
            classic=ClassicMetadata(request.session_timeout_ms, tuple(request.protocols)),
        )
        updated = self.consumer.update_member(
            group, member, updated, _to_ids(view, owned_names), records
        )
        protocol_name = request.protocols[0][0]

        def written(error: ErrorCode | None) -> None:
            if error is not None:
                callback(JoinResult(error, request.member_id))
                return
            mid = updated.member_id
            self.consumer.cancel((gid, mid, "join"))
            self.consumer.schedule_session_timeout(gid, mid, request.session_timeout_ms)
            self.consumer.set_deadline(
                (gid, mid, "sync"),
                request.rebalance_timeout_ms,
                lambda: self.consumer.fence_later(
                    gid, mid, "the member failed to sync within timeout"
                ),
            )
            callback(
                JoinResult(
                    ErrorCode.NONE,
                    mid,
                    updated.member_epoch,
                    CONSUMER_PROTOCOL_TYPE,
                    protocol_name,
                    "",
                )
            )

        self.consumer.write(gid, records, written)

    # -- SyncGroup, Heartbeat, LeaveGroup --------------------------------------------------------

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerGroupMember:
        """The classic member a request names (Kafka's ``validateConsumerGroupMember`` and
        ``throwIfMemberDoesNotUseClassicProtocol``)."""
        if instance_id is None:
            member = group.member(member_id)
        else:
            found = group.static_member(instance_id)
            if found is None:
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member with instance id {instance_id} is not a member of group "
                    f"{group.group_id}.",
                )
            if found.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
            member = found
        if not member.uses_classic_protocol:
            raise GroupError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member.member_id} does not use the classic protocol.",
            )
        return member

    def _check_rebalance(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """A new epoch asks the member to rejoin (Kafka's ``throwIfRebalanceInProgress``)."""
        if (
            group.group_epoch > member.member_epoch
            and member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            self._schedule_join_timeout(group.group_id, member)
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    def _schedule_join_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        key = (group_id, member.member_id, "join")
        if not self.consumer.has_deadline(key):
            self.consumer.set_deadline(
                key,
                member.rebalance_timeout_ms,
                lambda: self.consumer.fence_later(
                    group_id,
                    member.member_id,
                    "the classic member failed to join within the rebalance timeout",
                ),
            )

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
        if self.consumer.busy(group_id):
            self.consumer.run(
                group_id,
                lambda: self.sync_group(
                    group_id=group_id,
                    generation_id=generation_id,
                    member_id=member_id,
                    group_instance_id=group_instance_id,
                    protocol_type=protocol_type,
                    protocol_name=protocol_name,
                    assignments=assignments,
                    callback=callback,
                ),
                lambda error: callback(SyncResult(error)),
            )
            return
        group = self.consumer_groups.get(group_id)
        if group is None:
            self.classic.sync_group(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                callback=callback,
            )
            return
        try:
            if group.is_empty:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            member = self._classic_member(group, member_id, group_instance_id)
            if generation_id != member.member_epoch:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
            assert member.classic is not None
            name = member.classic.protocols[0][0]
            if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != name
            ):
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._check_rebalance(group, member)
        except GroupError as e:
            callback(SyncResult(e.code))
            return
        self.consumer.cancel((group_id, member.member_id, "sync"))
        self.consumer.schedule_session_timeout(
            group_id, member.member_id, member.classic.session_timeout_ms
        )
        callback(
            SyncResult(
                ErrorCode.NONE,
                protocol_type,
                protocol_name,
                self._assignment_bytes(member),
            )
        )

    def _assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """The member's assigned partitions in the consumer protocol, at the version of its
        subscription (Kafka's ``prepareAssignment``)."""
        assert member.classic is not None
        version, _ = _subscription(member.classic.protocols[0][1])
        partitions = _to_names(self.consumer.cluster(), member.assigned)
        return encode_assignment(partitions, version=min(version, 3))

    def heartbeat(
        self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        group = self.consumer_groups.get(group_id)
        if group is None:
            return self.classic.heartbeat(
                group_id=group_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
            )
        try:
            member = self._classic_member(group, member_id, group_instance_id)
        except GroupError as e:
            return e.code
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        assert member.classic is not None
        self.consumer.schedule_session_timeout(
            group_id, member.member_id, member.classic.session_timeout_ms
        )
        if (
            member.member_epoch < group.group_epoch
            or member.state == MemberState.UNREVOKED_PARTITIONS
            or (
                member.state == MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            self._schedule_join_timeout(group_id, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self,
        *,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        callback: Callable[[LeaveResults], None],
    ) -> None:
        if self.consumer.busy(group_id):
            self.consumer.run(
                group_id,
                lambda: self.leave_group(group_id=group_id, members=members, callback=callback),
                lambda error: callback((error, [(m, i, error) for m, i in members])),
            )
            return
        group = self.consumer_groups.get(group_id)
        if group is None:
            callback(self.classic.leave_group(group_id=group_id, members=members))
            return
        results: list[tuple[str, str | None, ErrorCode]] = []
        leaving: list[ConsumerGroupMember] = []
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    member = group.member(member_id)
                else:
                    found = group.static_member(instance_id)
                    if found is None:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
                    if member_id != UNKNOWN_MEMBER_ID and found.member_id != member_id:
                        raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
                    member = found
                if not member.uses_classic_protocol:
                    raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            except GroupError as e:
                results.append((member_id, instance_id, e.code))
                continue
            if all(m.member_id != member.member_id for m in leaving):
                leaving.append(member)
            log.info(
                "[GroupId %s] member %s has left the consumer group through LeaveGroup",
                group_id,
                member.member_id,
            )
            results.append((member.member_id, instance_id, ErrorCode.NONE))
        if not leaving:
            callback((ErrorCode.NONE, results))
            return
        records: list[GroupRecord] = []
        self.consumer.fence_records(group, leaving, records)
        for m in leaving:
            self.consumer.cancel_member_timers(group_id, m.member_id)

        def written(error: ErrorCode | None) -> None:
            if error is not None:
                callback((error, [(m, i, error) for m, i in members]))
            else:
                callback((ErrorCode.NONE, results))

        self.consumer.write(group_id, records, written)

    # -- conversions -------------------------------------------------------------------------------

    def _upgrade(self, group_id: str, records: list[GroupRecord]) -> ConsumerGroup | None:
        """A ConsumerGroupHeartbeat member joins a non-empty classic group: the group becomes a
        consumer group, its members keep their partitions (Kafka's ``convertToConsumerGroup``).
        Returns the converted group (materialized when ``records`` are committed), or None when
        the group cannot be converted."""
        classic = self.classic_groups.get(group_id)
        if classic is None:
            return None
        if not self.config.online_upgrade_enabled:
            log.info(
                "cannot upgrade classic group %s to a consumer group: the online upgrade is "
                "disabled",
                group_id,
            )
            return None
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            log.info(
                "cannot upgrade classic group %s to a consumer group: it does not use the "
                "consumer embedded protocol",
                group_id,
            )
            return None
        if classic.size > self.config.consumer_max_size:
            log.info(
                "cannot upgrade classic group %s to a consumer group: it has more members than "
                "group.consumer.max.size",
                group_id,
            )
            return None
        view = self.consumer.cluster()
        epoch = classic.generation_id
        members = []
        try:
            for m in classic.members.values():
                protocol = classic.protocol_name or ""
                _, subscription = _subscription(m.metadata(protocol))
                names = assigned_partitions(m.assignment)
                if names is None:
                    raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
                assigned = _to_ids(view, names)
                rack = getattr(subscription, "rack_id", None)
                members.append(
                    ConsumerGroupMember(
                        m.member_id,
                        member_epoch=epoch,
                        previous_member_epoch=epoch,
                        state=MemberState.STABLE,
                        instance_id=m.group_instance_id,
                        rack_id=rack,
                        rebalance_timeout_ms=m.rebalance_timeout_ms,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=frozenset(subscription.topics),  # type: ignore[attr-defined]
                        assigned=assigned,
                        classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols)),
                    )
                )
        except (GroupError, KeyError):
            log.warning(
                "cannot upgrade classic group %s to a consumer group: its embedded consumer "
                "protocol is malformed",
                group_id,
            )
            return None
        # members waiting in the classic rebalance rejoin the consumer group
        for m in list(classic.members.values()):
            classic.maybe_invoke_join_callback(
                m, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id)
            )
            classic.maybe_invoke_sync_callback(m, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        conversion: list[GroupRecord] = [ClassicTombstone(group_id)]
        for cm in members:
            conversion.append(
                ConsumerRecord(MemberSubscriptionKey(group_id, cm.member_id), cm.subscription)
            )
        conversion.append(ConsumerRecord(GroupEpochKey(group_id), epoch))
        for cm in members:
            conversion.append(
                ConsumerRecord(TargetMemberKey(group_id, cm.member_id), dict(cm.assigned))
            )
        conversion.append(ConsumerRecord(TargetEpochKey(group_id), epoch))
        for cm in members:
            conversion.append(
                ConsumerRecord(CurrentAssignmentKey(group_id, cm.member_id), cm.current_assignment)
            )
        converted = ConsumerGroup(group_id)
        for r in conversion:
            if isinstance(r, ConsumerRecord):
                converted.apply(r)
        records.extend(conversion)
        log.info(
            "[GroupId %s] upgrading the classic group (generation %d, %d member(s)) to a "
            "consumer group",
            group_id,
            epoch,
            len(members),
        )
        return converted

    def after_upgrade(self, group_id: str) -> None:
        """Session timers for the members a conversion brought in."""
        group = self.consumer_groups.get(group_id)
        if group is None:
            return
        for m in group.members.values():
            if m.classic is not None and not self.consumer.has_deadline(
                (group_id, m.member_id, "session")
            ):
                self.consumer.schedule_session_timeout(
                    group_id, m.member_id, m.classic.session_timeout_ms
                )

    def _maybe_downgrade(self, group: ConsumerGroup, leaving_id: str, done: Done) -> bool:
        """The last member of the consumer protocol leaves and classic members remain: the
        group goes back to the classic protocol and rebalances (Kafka's
        ``convertToClassicGroup``). Returns False when no downgrade applies."""
        if not group.all_members_use_classic_except(leaving_id):
            return False
        if len(group.members) <= 1:
            return False
        if not self.config.online_downgrade_enabled:
            log.info(
                "cannot downgrade consumer group %s to a classic group: the online downgrade is "
                "disabled",
                group.group_id,
            )
            return False
        if len(group.members) - 1 > self.config.max_size:
            log.info(
                "cannot downgrade consumer group %s to a classic group: it has more members "
                "than group.max.size",
                group.group_id,
            )
            return False
        gid = group.group_id
        remaining = [m for m in group.members.values() if m.member_id != leaving_id]
        # the protocol every remaining member supports that most of them prefer
        classic_group = GroupMetadata(gid, self.consumer.context.partition, 0)
        try:
            value = self._classic_value(group, remaining, classic_group)
        except (GroupError, RuntimeError, ValueError) as e:
            log.warning("cannot downgrade consumer group %s: %s", gid, e)
            return False
        records: list[GroupRecord] = []
        self.consumer.group_tombstones(group, records)
        for m in group.members.values():
            self.consumer.cancel_member_timers(gid, m.member_id)
        classic_record = (group_metadata_key(gid), group_metadata_value(value))
        protocols = {m.member_id: m.classic for m in remaining}

        def written(error: ErrorCode | None) -> None:
            if error is None:
                restored = GroupMetadata(
                    gid, self.consumer.context.partition, self.consumer.context.now_ms()
                )
                restore_group(restored, value)
                for member in restored.members.values():
                    meta = protocols.get(member.member_id)
                    if meta is not None:
                        restored.update_member(
                            member,
                            list(meta.protocols),
                            member.rebalance_timeout_ms,
                            member.session_timeout_ms,
                            None,
                        )
                self.classic_groups[gid] = restored
                for member in restored.members.values():
                    self.classic.complete_and_schedule_next_heartbeat(restored, member)
                log.info("[GroupId %s] downgraded the consumer group to a classic group", gid)
                self.classic.prepare_rebalance(
                    restored, f"downgrade of group {gid} from consumer to classic"
                )
            done(error)

        # the consumer group's tombstones, then the classic group's record, in one write
        self.consumer.write(gid, records, written, trailing=[classic_record])
        return True

    def _classic_value(
        self,
        group: ConsumerGroup,
        remaining: list[ConsumerGroupMember],
        scratch: GroupMetadata,
    ) -> GroupValue:
        """The classic group's metadata record for the remaining (classic) members, each with
        its target assignment in the consumer protocol (Kafka's
        ``ClassicGroup.fromConsumerGroup``)."""
        for m in remaining:
            assert m.classic is not None
            scratch.add(
                MemberMetadata(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.classic.session_timeout_ms,
                    CONSUMER_PROTOCOL_TYPE,
                    list(m.classic.protocols),
                ),
                None,
            )
        protocol = scratch.select_protocol()
        view = self.consumer.cluster()
        members = []
        for m in remaining:
            meta = scratch.members[m.member_id].metadata(protocol)
            version, _ = _subscription(meta)
            target = group.target_assignment.get(m.member_id, {})
            assignment = encode_assignment(_to_names(view, target), version=min(version, 3))
            assert m.classic is not None
            members.append(
                MemberRecord(
                    member_id=m.member_id,
                    group_instance_id=m.instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.classic.session_timeout_ms,
                    subscription=meta,
                    assignment=assignment,
                )
            )
        return GroupValue(
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            generation=group.group_epoch,
            protocol=protocol,
            leader=scratch.leader_id,
            current_state_timestamp=self.consumer.context.now_ms(),
            members=tuple(members),
        )
