"""One ``__consumer_offsets`` partition's groups and offsets (Kafka's ``GroupCoordinatorShard``):
the classic group machine (:mod:`~coordination.group.classic`), KIP-848 consumer groups
(:mod:`~coordination.group.consumer`, with the classic protocol members and conversions of
:mod:`~coordination.group.migration`) and the offsets manager (:mod:`~coordination.group.offsets`)
that both group types share. A group id names a classic group or a consumer group, never both.

Loading replays the partition's records: offset commits and tombstones, classic group metadata
records (members, generation, assignments), consumer group records; a restored group's members
get fresh session timers, as Kafka's coordinator does after a move. Unreadable records are
skipped with a warning.

Every method runs with the shard's lock held (the runtime takes it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence

from coordination.group.classic import UNKNOWN_MEMBER_ID, ClassicGroupManager, restore_group
from coordination.group.config import (
    DEAD_GROUP,
    NOT_CLASSIC_GROUP,
    GroupConfig,
    GroupOverview,
    GroupSummary,
    JoinRequest,
    MemberSummary,
)
from coordination.group.consumer import ConsumerGroupManager, GroupError, GroupRecord
from coordination.group.consumer_group import ConsumerGroup, ConsumerGroupState
from coordination.group.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from coordination.group.consumer_records import CorruptConsumerGroupRecord
from coordination.group.consumer_records import parse as parse_consumer_record
from coordination.group.metadata import (
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinResult,
    OffsetAndMetadata,
    SyncCallback,
    SyncResult,
)
from coordination.group.migration import GroupMigration, LeaveResults
from coordination.group.offsets import CommitCallback, OffsetManager, write_error
from coordination.group.records import (
    CorruptGroupRecord,
    GroupKey,
    GroupValue,
    OffsetKey,
    group_metadata_key,
    parse_group_value,
    parse_key,
    parse_offset_value,
)
from coordination.metadata.view import ClusterView
from coordination.runtime.runtime import (
    LoadedRecord,
    ShardContext,
    TransactionalRecord,
    TransactionMarker,
    loaded_offset,
)
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class GroupCoordinatorShard:
    def __init__(
        self,
        context: ShardContext,
        config: GroupConfig,
        *,
        cluster: Callable[[], ClusterView],
        topics_version: Callable[[], int] = lambda: 0,
    ) -> None:
        self.context = context
        self.config = config
        #: classic groups (and "simple" groups that only hold offsets)
        self.groups: dict[str, GroupMetadata] = {}
        #: KIP-848 consumer groups
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.offsets = OffsetManager(context, metadata_max_bytes=config.offset_metadata_max_bytes)
        self.classic = ClassicGroupManager(context, config, self.groups)
        self.consumer = ConsumerGroupManager(
            context,
            config,
            self.consumer_groups,
            cluster=cluster,
            classic_groups=self.groups,
            topics_version=topics_version,
        )
        self.migration = GroupMigration(config, self.consumer, self.classic)

    # -- loading (CoordinatorShard) --------------------------------------------------------------

    def replay(self, records: Iterable[LoadedRecord]) -> None:
        partition = self.context.partition
        values: dict[str, GroupValue] = {}
        skipped = 0
        for item in records:
            if isinstance(item, TransactionMarker):
                self.offsets.complete_transaction(item.producer_id, item.committed)
                continue
            producer_id = -1
            if isinstance(item, TransactionalRecord):
                producer_id, key_bytes, value_bytes = item.producer_id, item.key, item.value
            else:
                key_bytes, value_bytes = item[0], item[1]
            record_offset = loaded_offset(item)
            try:
                consumer_record = parse_consumer_record(key_bytes, value_bytes)
                if consumer_record is not None:
                    self.consumer.replay_record(consumer_record)
                    values.pop(consumer_record.key.group, None)
                    continue
                key = parse_key(key_bytes)
                if isinstance(key, OffsetKey) and producer_id >= 0:
                    parsed = None if value_bytes is None else parse_offset_value(value_bytes)
                    self.offsets.replay_pending(
                        producer_id,
                        key.group,
                        (key.topic, key.partition),
                        None
                        if parsed is None
                        else OffsetAndMetadata(
                            parsed.offset,
                            parsed.leader_epoch,
                            parsed.metadata,
                            parsed.commit_timestamp,
                            parsed.expire_timestamp,
                            record_offset=record_offset,
                        ),
                    )
                elif isinstance(key, OffsetKey):
                    tp = (key.topic, key.partition)
                    if value_bytes is None:
                        self.offsets.replay_tombstone(key.group, tp)
                    else:
                        v = parse_offset_value(value_bytes)
                        self.offsets.replay_commit(
                            key.group,
                            tp,
                            OffsetAndMetadata(
                                v.offset,
                                v.leader_epoch,
                                v.metadata,
                                v.commit_timestamp,
                                v.expire_timestamp,
                                record_offset=record_offset,
                            ),
                        )
                elif isinstance(key, GroupKey):
                    if value_bytes is None:
                        values.pop(key.group, None)
                    else:
                        values[key.group] = parse_group_value(value_bytes)
                        # a downgrade: the consumer group's tombstones came before
                        self.consumer_groups.pop(key.group, None)
            except (CorruptGroupRecord, CorruptConsumerGroupRecord) as e:
                skipped += 1
                log.warning(
                    "__consumer_offsets-%d: skipping an unreadable record: %s", partition, e
                )
        now = self.context.now_ms()
        pending_groups = {g for groups in self.offsets.pending.values() for g in groups}
        for group_id in set(values) | set(self.offsets.offsets) | pending_groups:
            if group_id in self.consumer_groups:
                continue
            group = GroupMetadata(group_id, partition, now)
            value = values.get(group_id)
            if value is not None:
                restore_group(group, value)
            self.groups[group_id] = group
        log.log(
            logging.INFO if self.groups or self.consumer_groups or skipped else logging.DEBUG,
            "loaded %d group(s) from __consumer_offsets-%d%s",
            len(self.groups) + len(self.consumer_groups),
            partition,
            f" ({skipped} unreadable records skipped)" if skipped else "",
        )

    def loaded(self) -> None:
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                self.classic.complete_and_schedule_next_heartbeat(group, member)
        self.consumer.loaded()

    def unloaded(self, error: ErrorCode) -> None:
        for group in list(self.groups.values()):
            for timer in group.all_timers():
                timer.cancel()
            for member in list(group.members.values()):
                group.maybe_invoke_join_callback(member, JoinResult(error, member.member_id))
                group.maybe_invoke_sync_callback(member, SyncResult(error))
                member.heartbeat_timer = None
            group.state = GroupState.DEAD
        self.groups.clear()
        self.consumer.unloaded(error)

    # -- the classic protocol (classic groups, or classic members of consumer groups) ------------

    def join_group(self, request: JoinRequest, callback: JoinCallback) -> None:
        self.migration.join_group(request, callback)

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
        self.migration.sync_group(
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
            callback=callback,
        )

    def heartbeat(
        self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        return self.migration.heartbeat(
            group_id=group_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            generation_id=generation_id,
        )

    def leave_group(
        self,
        *,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        callback: Callable[[LeaveResults], None],
    ) -> None:
        self.migration.leave_group(group_id=group_id, members=members, callback=callback)

    # -- offsets ---------------------------------------------------------------------------------

    def commit_offsets(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
        api_version: int = 8,
    ) -> None:
        """OffsetCommit: one error per partition, once the commit is durable. For a consumer
        group ``generation_id`` is the member epoch (Kafka's ``validateOffsetCommit``)."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            try:
                self.consumer.validate_offset_commit(
                    consumer_group,
                    member_id,
                    generation_id,
                    transactional=False,
                    api_version=api_version,
                    partitions=offsets,
                )
            except GroupError as e:
                callback(dict.fromkeys(offsets, e.code))
                return
            self.offsets.commit(group_id, offsets, callback)
            return
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # a generation of a group we do not know: stale or misdirected (v9+: the
                # answer both protocols understand)
                code = (
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if api_version >= 9
                    else ErrorCode.ILLEGAL_GENERATION
                )
                callback(dict.fromkeys(offsets, code))
                return
            group = self.classic.new_group(group_id)
        error = self._validate_offset_commit(group, member_id, group_instance_id, generation_id)
        if error is None and group.is_in(GroupState.COMPLETING_REBALANCE):
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            callback(dict.fromkeys(offsets, error))
            return
        member = group.members.get(member_id)
        if member is not None and generation_id >= 0:
            # a commit is a sign of life too
            self.classic.complete_and_schedule_next_heartbeat(group, member)
        self.offsets.commit(group_id, offsets, callback)

    def txn_commit_offsets(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """TxnOffsetCommit (KIP-98; v3+ carry the member's generation, KIP-447): the offsets
        stay pending until the producer's transaction ends."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            try:
                self.consumer.validate_offset_commit(
                    consumer_group,
                    member_id,
                    generation_id,
                    transactional=True,
                    api_version=0,
                    partitions=offsets,
                )
            except GroupError as e:
                callback(dict.fromkeys(offsets, e.code))
                return
            self.offsets.txn_commit(group_id, producer_id, producer_epoch, offsets, callback)
            return
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                callback(dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION))
                return
            group = self.classic.new_group(group_id)
        error = self._validate_offset_commit(
            group, member_id, group_instance_id, generation_id, transactional=True
        )
        if error is not None:
            callback(dict.fromkeys(offsets, error))
            return
        self.offsets.txn_commit(group_id, producer_id, producer_epoch, offsets, callback)

    def complete_transaction(self, producer_id: int, committed: bool) -> None:
        """A marker of the producer's transaction was written to this partition."""
        self.offsets.complete_transaction(producer_id, committed)

    def has_pending_offsets(self, group_id: str, tp: TopicPartition) -> bool:
        return self.offsets.has_pending(group_id, tp)

    def _validate_offset_commit(
        self,
        group: GroupMetadata,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool = False,
    ) -> ErrorCode | None:
        """Kafka's ``GroupCoordinator.validateOffsetCommit``, in its order: a commit with no
        generation to an empty group is taken whatever member it names; one naming a
        generation, a member or an instance must come from a current member of that
        generation; a plain commit from outside the group (a "simple" consumer, an admin tool)
        is refused while the group has members, whose commits it would undo. A transactional
        one is not (TxnOffsetCommit before v3 names no member)."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(GroupState.EMPTY):
            return None
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            return self.classic.check_member(group, member_id, group_instance_id, generation_id)
        if not transactional and not group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets; for a consumer group, OffsetFetch v9+'s member id and epoch are
        checked (raises GroupError UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            self.consumer.validate_offset_fetch(consumer_group, member_id, member_epoch)
            return self.offsets.fetch(group_id, partitions)
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return dict.fromkeys(partitions or (), None)
        return self.offsets.fetch(group_id, partitions)

    def delete_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetDelete (KIP-496): offsets of topics the group does not consume."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            self._delete_consumer_offsets(consumer_group, partitions, callback)
            return
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            callback(ErrorCode.GROUP_ID_NOT_FOUND, {})
            return
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
            callback(ErrorCode.NON_EMPTY_GROUP, {})
            return
        if not eligible:
            callback(ErrorCode.NONE, results)
            return

        def removed(error: ErrorCode | None) -> None:
            if error is not None:
                callback(write_error(error, for_offsets=True), {})
                return
            for tp in eligible:
                results[tp] = ErrorCode.NONE
            callback(ErrorCode.NONE, results)

        self._remove_offsets(group, eligible, removed)

    def _delete_consumer_offsets(
        self,
        group: ConsumerGroup,
        partitions: Sequence[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        results: dict[TopicPartition, ErrorCode] = {}
        eligible = []
        for tp in partitions:
            if group.is_subscribed_to(tp[0]):
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                eligible.append(tp)
        doomed = [tp for tp in eligible if tp in self.offsets.of(group.group_id)]
        if not doomed:
            for tp in eligible:
                results[tp] = ErrorCode.NONE
            callback(ErrorCode.NONE, results)
            return

        def removed(error: ErrorCode | None) -> None:
            if error is not None:
                callback(write_error(error, for_offsets=True), {})
                return
            self.offsets.forget(group.group_id, doomed)
            for tp in eligible:
                results[tp] = ErrorCode.NONE
            callback(ErrorCode.NONE, results)

        self.context.write(self.offsets.tombstones(group.group_id, doomed), removed)

    def _remove_consumer_group(
        self,
        group: ConsumerGroup,
        partitions: Iterable[TopicPartition],
        done: Callable[[ErrorCode | None], None],
    ) -> None:
        """Tombstones for the given offsets, and for the group itself once it is empty with
        no offsets left (then it goes); applied once committed."""
        group_id = group.group_id
        doomed = [tp for tp in partitions if tp in self.offsets.of(group_id)]
        offset_tombstones = self.offsets.tombstones(group_id, doomed)
        remaining = set(self.offsets.of(group_id)) - set(doomed)
        drop_group = group.is_empty and not remaining

        def written(error: ErrorCode | None) -> None:
            if error is None:
                self.offsets.forget(group_id, doomed)
            done(error)

        if not drop_group:
            self.context.write(offset_tombstones, written)
            return

        def op() -> None:
            current = self.consumer_groups.get(group_id)
            if current is None or not current.is_empty:
                done(None if current is None else ErrorCode.NON_EMPTY_GROUP)
                return
            records: list[GroupRecord] = []
            self.consumer.group_tombstones(current, records)
            # the offsets, then the group, in one write
            self.consumer.write(group_id, records, written, extra=offset_tombstones)

        self.consumer.run(group_id, op, done)

    def _remove_offsets(
        self,
        group: GroupMetadata,
        partitions: Iterable[TopicPartition],
        done: Callable[[ErrorCode | None], None],
    ) -> None:
        """Tombstones for the given offsets (and for the group itself once it is empty with no
        offsets left, which then goes away); applied once committed."""
        group_id = group.group_id
        doomed = [tp for tp in partitions if tp in self.offsets.of(group_id)]
        records = self.offsets.tombstones(group_id, doomed)
        remaining = set(self.offsets.of(group_id)) - set(doomed)
        drop_group = group.is_in(GroupState.EMPTY) and not remaining
        if drop_group:
            records.append((group_metadata_key(group_id), None))

        def written(error: ErrorCode | None) -> None:
            if error is None:
                self.offsets.forget(group_id, doomed)
                if drop_group and group.is_in(GroupState.EMPTY):
                    self._drop_group(group)
            done(error)

        self.context.write(records, written)

    def _drop_group(self, group: GroupMetadata) -> None:
        group.transition_to(GroupState.DEAD, self.context.now_ms())
        for timer in group.all_timers():
            timer.cancel()
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # -- deleted topics --------------------------------------------------------------------------

    def on_partitions_deleted(self, partitions: Collection[TopicPartition]) -> int:
        """Tombstones for every group's committed and pending transactional offsets of deleted
        partitions (Kafka's ``OffsetMetadataManager.onPartitionsDeleted``), so a topic created
        again under its name starts with none; one write per group (a batch each, however
        many groups), applied once committed. The groups stay: an empty one left with no
        offsets goes at the next cleanup, as with Kafka's coordinator. Returns how many
        offsets it asked to remove."""
        held = self.offsets.holding(partitions)
        for group_id, tps in held.items():

            def written(
                error: ErrorCode | None, group_id: str = group_id, tps: list[TopicPartition] = tps
            ) -> None:
                if error is None:
                    self.offsets.forget(group_id, tps)
                else:
                    log.warning(
                        "removing group %s's offsets of deleted partitions failed: %s (they "
                        "stay until offset retention)",
                        group_id,
                        error.name,
                    )

            self.context.write(self.offsets.tombstones(group_id, tps, pending=True), written)
        return sum(len(tps) for tps in held.values())

    # -- expiration ------------------------------------------------------------------------------

    def cleanup_group_metadata(self, now_ms: int | None = None) -> int:
        """Expires offsets past ``offsets.retention.minutes`` (Kafka's rules) and removes empty
        groups with no offsets left. Returns how many offsets it asked to expire."""
        now = self.context.now_ms() if now_ms is None else now_ms
        expired_total = 0
        for group in list(self.groups.values()):
            expired = self._expired_offsets(group, now)
            if expired:
                expired_total += len(expired)
            elif not (
                group.is_in(GroupState.EMPTY)
                and not self.offsets.has_offsets(group.group_id)
                and not group.pending_members
            ):
                continue

            def done(error: ErrorCode | None, group_id: str = group.group_id) -> None:
                if error is not None:
                    log.warning("expiring offsets of group %s failed: %s", group_id, error.name)

            self._remove_offsets(group, expired, done)
        for consumer_group in list(self.consumer_groups.values()):
            # Kafka's rule for consumer groups: offsets of topics the group does not subscribe
            # to, by commit time; the group goes once empty with no offsets left
            subscribed = frozenset(consumer_group.subscribed_topics())
            expired = self.offsets.expired(
                consumer_group.group_id,
                now,
                self.config.offsets_retention_ms,
                lambda o: o.commit_timestamp_ms,
                subscribed,
            )
            if not expired and not (
                consumer_group.is_empty and not self.offsets.has_offsets(consumer_group.group_id)
            ):
                continue
            expired_total += len(expired)

            def failed(error: ErrorCode | None, group_id: str = consumer_group.group_id) -> None:
                if error is not None:
                    log.warning("expiring offsets of group %s failed: %s", group_id, error.name)

            self._remove_consumer_group(consumer_group, expired, failed)
        if expired_total:
            log.info("removed %d expired offset(s)", expired_total)
        return expired_total

    def _expired_offsets(self, group: GroupMetadata, now_ms: int) -> list[TopicPartition]:
        retention = self.config.offsets_retention_ms
        group_id = group.group_id
        if group.protocol_type is None:
            # a "simple" group: offsets only
            return self.offsets.expired(
                group_id, now_ms, retention, lambda o: o.commit_timestamp_ms, frozenset()
            )
        if group.is_in(GroupState.EMPTY):
            state_ts = group.state_timestamp_ms
            return self.offsets.expired(
                group_id,
                now_ms,
                retention,
                lambda o: state_ts if state_ts >= 0 else o.commit_timestamp_ms,
                frozenset(),
            )
        if (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.subscribed_topics is not None
            and group.is_in(GroupState.STABLE)
        ):
            return self.offsets.expired(
                group_id,
                now_ms,
                retention,
                lambda o: o.commit_timestamp_ms,
                group.subscribed_topics,
            )
        return []

    # -- ListGroups, DescribeGroups, DeleteGroups --------------------------------------------------

    def list_groups(self, wanted_states: set[str]) -> list[GroupOverview]:
        out = [
            GroupOverview(g.group_id, g.protocol_type or "", g.state.value, "classic")
            for g in self.groups.values()
            if not wanted_states or g.state.value.lower() in wanted_states
        ]
        for c in self.consumer_groups.values():
            state = c.state.value
            if not wanted_states or state.lower() in wanted_states:
                out.append(GroupOverview(c.group_id, CONSUMER_PROTOCOL_TYPE, state, "consumer"))
        return out

    def describe_group(self, group_id: str) -> GroupSummary:
        """DescribeGroups: classic groups only; a consumer group is answered as Kafka does,
        like a group that does not exist (v6: "Group X is not a classic group.")."""
        if group_id in self.consumer_groups:
            return NOT_CLASSIC_GROUP
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return DEAD_GROUP
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
        return GroupSummary(
            group.state.value, group.protocol_type or "", protocol if stable else "", members
        )

    def delete_group(self, group_id: str, callback: Callable[[ErrorCode], None]) -> None:
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.state != ConsumerGroupState.EMPTY:
                callback(ErrorCode.NON_EMPTY_GROUP)
                return
            self._remove_consumer_group(
                consumer_group,
                list(self.offsets.of(group_id)),
                lambda error: callback(
                    ErrorCode.NONE if error is None else write_error(error, for_offsets=False)
                ),
            )
            return
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            callback(ErrorCode.GROUP_ID_NOT_FOUND)
        elif not group.is_in(GroupState.EMPTY):
            callback(ErrorCode.NON_EMPTY_GROUP)
        else:
            self._remove_offsets(
                group,
                list(self.offsets.of(group_id)),
                lambda error: callback(
                    ErrorCode.NONE if error is None else write_error(error, for_offsets=False)
                ),
            )
