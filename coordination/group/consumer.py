"""KIP-848 consumer groups (Kafka's ``GroupMetadataManager`` for groups of type "consumer"): the
ConsumerGroupHeartbeat protocol, server-side assignment and reconciliation, beside the classic
groups of the same ``__consumer_offsets`` partition, sharing its offsets manager and runtime.

A heartbeat, as Kafka handles it:

1. the member joins (epoch 0), is found (its epoch checked: FENCED_MEMBER_EPOCH when it is
   neither its current nor its previous epoch), or is replaced (a static member coming back
   with a new member id after leaving with epoch -2); its subscription is updated;
2. when the subscriptions (topic names, regular expressions resolved against the metadata) or
   the subscribed topics' metadata changed, the group epoch is bumped and the target assignment
   is computed again by the group's server assignor;
3. the member is reconciled towards its target (:class:`~coordination.group.consumer_group.
   CurrentAssignmentBuilder`): partitions it must give up are revoked first, partitions it gets
   are assigned only once no other member owns them.

Every change is a list of records (:mod:`~coordination.group.consumer_records`) written to the
partition; the group changes only when the write is committed, by replaying those records
(:meth:`ConsumerGroup.apply`), which is also how a group is loaded. So that each computation
starts from the group's latest state, the operations on one group run one after another: an
operation arriving while the group has a write in flight waits for it (at once on a single
replica, where a write is committed when appended).

Timers (soft state, not in the log): each member's session timeout
(``group.consumer.session.timeout.ms``; a classic member's own), the rebalance timeout of a
member that must revoke partitions, and the JoinGroup/SyncGroup deadlines of classic members
(:mod:`~coordination.group.migration`).

Not thread-safe on its own: the shard's lock is held around every use.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import re2  # the compiled pattern type

from coordination.group.assignors import (
    ASSIGNOR_CLASS_NAMES,
    GroupSpec,
    MemberSpec,
    PartitionAssignor,
    PartitionAssignorError,
    assignor_named,
)
from coordination.group.config import (
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    CONSUMER_SESSION_TIMEOUT_MS,
    GroupConfig,
)
from coordination.group.consumer_describe import DescribedGroup, describe_group
from coordination.group.consumer_group import (
    EMPTY_PARTITIONS,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    CurrentAssignmentBuilder,
    GroupError,
    MemberState,
    is_subset,
)
from coordination.group.consumer_records import (
    ConsumerRecord,
    CurrentAssignmentKey,
    GroupEpochKey,
    MemberSubscriptionKey,
    Partitions,
    RegexKey,
    ResolvedRegex,
    SubscriptionMetadataKey,
    TargetEpochKey,
    TargetMemberKey,
    TopicInfo,
    encode,
)
from coordination.group.metadata import GroupMetadata, GroupState
from coordination.group.offsets import write_error
from coordination.group.records import group_metadata_key
from coordination.group.timers import DeadlineTimers
from coordination.metadata.view import INTERNAL_TOPICS, ClusterView
from coordination.regex import InvalidRegex, compile_re2
from coordination.runtime.runtime import Record, ShardContext
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: ConsumerGroupHeartbeat v1 (KIP-1082): members generate their own ids
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
#: regular expressions are resolved again at most this often (Kafka's
#: REGEX_BATCH_REFRESH_INTERVAL_MS), when topics were created since
REGEX_REFRESH_INTERVAL_MS = 10_000


def new_member_id() -> str:
    """A member id as Kafka generates them (``Uuid.randomUuid().toString()``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def heartbeat_write_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of a failed write to what a ConsumerGroupHeartbeat answers."""
    if code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return write_error(code, for_offsets=False)


def compile_regex(regex: str) -> re2._Regexp:
    """RE2 syntax, as Kafka's RE2/J; raises GroupError INVALID_REGULAR_EXPRESSION."""
    try:
        return compile_re2(regex)
    except InvalidRegex as e:
        raise GroupError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.",
        ) from None


@dataclass(frozen=True, slots=True)
class ClassicTombstone:
    """The tombstone of a classic group's metadata record, written when the group id becomes a
    consumer group's."""

    group_id: str


#: what a consumer group write holds
GroupRecord = ConsumerRecord | ClassicTombstone


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat request, as the coordinator needs it."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: Sequence[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    #: the member's owned partitions (None: not sent)
    owned: Partitions | None
    client_id: str
    client_host: str
    api_version: int
    #: whether the member's principal may DESCRIBE a topic (regex resolution); None: all
    may_describe: Callable[[str], bool] | None = None


@dataclass(slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assignment, when it must be sent
    assignment: Partitions | None = None


HeartbeatCallback = Callable[[HeartbeatResult], None]
Done = Callable[[ErrorCode | None], None]


class ConsumerGroupManager:
    """The consumer groups of one ``__consumer_offsets`` partition. ``groups`` is the shard's
    map of consumer groups, ``classic_groups`` its classic ones (a group id is in one map at
    most); ``cluster()`` the metadata view; ``topics_version()`` grows whenever topics are
    created (regex resolution)."""

    def __init__(
        self,
        context: ShardContext,
        config: GroupConfig,
        groups: dict[str, ConsumerGroup],
        *,
        cluster: Callable[[], ClusterView],
        classic_groups: dict[str, GroupMetadata],
        topics_version: Callable[[], int],
    ) -> None:
        self.context = context
        self.config = config
        self.groups = groups
        self.classic_groups = classic_groups
        self.cluster = cluster
        self.topics_version = topics_version
        #: hooks the migration module installs (classic <-> consumer conversions)
        self.upgrade: Callable[[str, list[GroupRecord]], ConsumerGroup | None] | None = None
        self.after_upgrade: Callable[[str], None] | None = None
        self.downgrade: Callable[[ConsumerGroup, str, Done], bool] | None = None
        self._in_flight: set[str] = set()
        #: group id -> operations waiting for its write, each with how to refuse it
        self._queued: dict[str, deque[tuple[Callable[[], None], Callable[[ErrorCode], None]]]] = {}
        #: (group id, member id, kind) -> deadline: "session", "rebalance", "join", "sync"
        self.timers: DeadlineTimers[tuple[str, str, str]] = DeadlineTimers(context)
        self.assignors: dict[str, PartitionAssignor] = {}
        for name in config.consumer_assignors:
            assignor = assignor_named(name)
            self.assignors[assignor.name] = assignor
        self.default_assignor = next(iter(self.assignors.values()))

    # -- the group's own configs -------------------------------------------------------------

    def session_timeout_ms(self, group_id: str) -> int:
        """``consumer.session.timeout.ms`` of the group, else the broker's (Kafka's
        ``GroupMetadataManager.consumerGroupSessionTimeoutMs``)."""
        return self._group_config(
            group_id, CONSUMER_SESSION_TIMEOUT_MS, self.config.consumer_session_timeout_ms
        )

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """``consumer.heartbeat.interval.ms`` of the group, else the broker's."""
        return self._group_config(
            group_id, CONSUMER_HEARTBEAT_INTERVAL_MS, self.config.consumer_heartbeat_interval_ms
        )

    def _group_config(self, group_id: str, key: str, default: int) -> int:
        value = self.cluster().group_configs.get(group_id, {}).get(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:  # checked when written: another writer's value
            return default

    # -- one operation at a time per group ---------------------------------------------------

    def run(
        self,
        group_id: str,
        op: Callable[[], None],
        refuse: Callable[[ErrorCode], None] = lambda error: None,
    ) -> None:
        """Runs ``op`` now, or once the group's write in flight is committed; ``refuse`` answers
        its caller instead if the shard is unloaded meanwhile."""
        if group_id in self._in_flight:
            self._queued.setdefault(group_id, deque()).append((op, refuse))
            return
        op()

    def busy(self, group_id: str) -> bool:
        return group_id in self._in_flight

    def write(
        self,
        group_id: str,
        records: Sequence[GroupRecord],
        done: Done,
        *,
        extra: Sequence[Record] = (),
        trailing: Sequence[Record] = (),
    ) -> None:
        """Writes ``records`` in one batch (after ``extra`` and before ``trailing``: records
        the caller applies itself, such as offset tombstones); once committed they are replayed
        into the groups, then ``done`` gets None (else the error, nothing applied). Later
        operations on the group wait."""
        if not records and not extra and not trailing:
            done(None)
            return
        encoded: list[Record] = list(extra)
        for r in records:
            if isinstance(r, ClassicTombstone):
                encoded.append((group_metadata_key(r.group_id), None))
            else:
                encoded.append(encode(r))
        encoded.extend(trailing)
        self._in_flight.add(group_id)

        def committed(error: ErrorCode | None) -> None:
            self._in_flight.discard(group_id)
            try:
                if error is None:
                    self.replay(records)
                    if self.after_upgrade is not None and any(
                        isinstance(r, ClassicTombstone) for r in records
                    ):
                        self.after_upgrade(group_id)
                else:
                    log.warning("writing consumer group %s failed: %s", group_id, error.name)
                done(error)
            finally:
                self._drain(group_id)

        self.context.write(encoded, committed)

    def _drain(self, group_id: str) -> None:
        queue = self._queued.get(group_id)
        while queue and group_id not in self._in_flight:
            op, _ = queue.popleft()
            try:
                op()
            except Exception:
                log.exception("an operation on consumer group %s failed", group_id)
        if queue is not None and not queue and self._queued.get(group_id) is queue:
            del self._queued[group_id]

    def fail_queued(self, error: ErrorCode) -> None:
        """The shard is unloaded: operations still waiting are refused with ``error`` (a write
        in flight is answered by the runtime's NOT_COORDINATOR callback)."""
        queued, self._queued = self._queued, {}
        for queue in queued.values():
            for _, refuse in queue:
                try:
                    refuse(error)
                except Exception:
                    log.exception("refusing a waiting consumer group operation failed")

    # -- replay -------------------------------------------------------------------------------

    def _drop_classic_group(self, group_id: str) -> None:
        """The group id now belongs to a consumer group: its classic group goes."""
        classic = self.classic_groups.pop(group_id, None)
        if classic is not None:
            for timer in classic.all_timers():
                timer.cancel()
            classic.state = GroupState.DEAD

    def _classic_group_exists(self, group_id: str) -> bool:
        return group_id in self.classic_groups

    def replay(self, records: Iterable[GroupRecord]) -> None:
        """Applies committed records (a write's, or a partition's when loading)."""
        for r in records:
            if isinstance(r, ClassicTombstone):
                self._drop_classic_group(r.group_id)
                continue
            self.replay_record(r)

    def replay_record(self, record: ConsumerRecord) -> None:
        group_id = record.key.group
        group = self.groups.get(group_id)
        if group is None:
            if record.value is None:
                return  # a tombstone for a group we do not have
            group = self.groups[group_id] = ConsumerGroup(group_id)
            self._drop_classic_group(group_id)  # a simple group holding offsets, if any
        group.apply(record)
        if isinstance(record.key, GroupEpochKey) and record.value is None:
            del self.groups[group_id]
            self.cancel_group_timers(group_id)

    # -- timers ---------------------------------------------------------------------------------

    def set_deadline(
        self, key: tuple[str, str, str], delay_ms: int, fn: Callable[[], None]
    ) -> None:
        self.timers.set(key, delay_ms, fn)

    def cancel(self, key: tuple[str, str, str]) -> None:
        self.timers.cancel(key)

    def has_deadline(self, key: tuple[str, str, str]) -> bool:
        return key in self.timers

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("session", "rebalance", "join", "sync"):
            self.timers.cancel((group_id, member_id, kind))

    def cancel_group_timers(self, group_id: str) -> None:
        self.timers.cancel_where(lambda key: key[0] == group_id)

    def cancel_all_timers(self) -> None:
        self.timers.cancel_where(lambda key: True)

    def schedule_session_timeout(
        self, group_id: str, member_id: str, timeout_ms: int | None = None
    ) -> None:
        timeout = self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms
        self.set_deadline(
            (group_id, member_id, "session"),
            timeout,
            lambda: self.fence_later(group_id, member_id, "the member session expired"),
        )

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        member_id, epoch = member.member_id, member.member_epoch
        timeout = member.rebalance_timeout_ms

        def expired() -> None:
            def op() -> None:
                group = self.groups.get(group_id)
                m = group.members.get(member_id) if group is not None else None
                if group is None or m is None or m.member_epoch != epoch:
                    return
                log.info(
                    "[GroupId %s] member %s fenced from the group because it failed to "
                    "transition from epoch %d within %d ms",
                    group_id,
                    member_id,
                    epoch,
                    timeout,
                )
                self.fence(group, m, lambda error: None)

            self.run(group_id, op)

        self.set_deadline((group_id, member_id, "rebalance"), timeout, expired)

    def fence_later(self, group_id: str, member_id: str, reason: str) -> None:
        """Fences a member from a timer (when the group's turn comes)."""

        def op() -> None:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if group is None or member is None:
                return
            log.info(
                "[GroupId %s] member %s fenced from the group because %s",
                group_id,
                member_id,
                reason,
            )
            self.fence(group, member, lambda error: None)

        self.run(group_id, op)

    # -- loading ---------------------------------------------------------------------------------

    def loaded(self) -> None:
        """Session timers for every member of every loaded group (Kafka's ``onLoaded``)."""
        for group_id, group in self.groups.items():
            log.info(
                "loaded consumer group %s with %d member(s), epoch %d",
                group_id,
                len(group.members),
                group.group_epoch,
            )
            for member in group.members.values():
                timeout = member.classic.session_timeout_ms if member.classic is not None else None
                self.schedule_session_timeout(group_id, member.member_id, timeout)
                if member.state == MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                    self._schedule_rebalance_timeout(group_id, member)

    def unloaded(self, error: ErrorCode = ErrorCode.NOT_COORDINATOR) -> None:
        self.cancel_all_timers()
        self.fail_queued(error)
        self.groups.clear()

    # -- metadata -----------------------------------------------------------------------------

    def on_topics_changed(self, topics: set[str]) -> None:
        """Topics were created, deleted or grew partitions: the groups subscribed to them
        recompute their subscription metadata at their next heartbeat (Kafka's
        ``onNewMetadataImage``)."""
        for group in self.groups.values():
            if any(group.is_subscribed_to(t) for t in topics):
                group.request_metadata_refresh()

    def topic_infos(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        view = self.cluster()
        out = {}
        for name in names:
            topic = view.topics.get(name)
            if topic is not None:
                out[name] = TopicInfo(topic.topic_id, name, len(topic.partitions))
        return out

    def resolve_regex(
        self, regex: str, may_describe: Callable[[str], bool] | None = None
    ) -> ResolvedRegex:
        """The topics ``regex`` matches (whole names, RE2 syntax; internal topics excluded),
        of those ``may_describe`` allows."""
        pattern = compile_regex(regex)
        view = self.cluster()
        topics = frozenset(
            name
            for name in view.topics
            if name not in INTERNAL_TOPICS
            and pattern.fullmatch(name) is not None
            and (may_describe is None or may_describe(name))
        )
        return ResolvedRegex(topics, self.topics_version(), self.context.now_ms())

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------------

    def validate(self, r: HeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        if (
            r.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
            or r.member_epoch > 0
            or r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
        ) and not r.member_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not r.group_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if r.instance_id is not None and not r.instance_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if r.rack_id is not None and not r.rack_id.strip():
            raise GroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if r.member_epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise GroupError(
                    ErrorCode.INVALID_REQUEST,
                    "RebalanceTimeoutMs must be provided in first request.",
                )
            if r.owned is None or any(r.owned.values()):
                raise GroupError(
                    ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
                )
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise GroupError(
                    ErrorCode.INVALID_REQUEST,
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                    "(re-)joining.",
                )
        elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if r.instance_id is None:
                raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if r.server_assignor is not None and r.server_assignor not in self.assignors:
            raise GroupError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self.assignors)}.",
            )

    def heartbeat(self, r: HeartbeatRequest, callback: HeartbeatCallback) -> None:
        try:
            self.validate(r)
        except GroupError as e:
            callback(HeartbeatResult(e.code, e.message))
            return

        def op() -> None:
            try:
                if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                    self._leave(r, callback)
                else:
                    self._heartbeat(r, callback)
            except GroupError as e:
                callback(HeartbeatResult(e.code, e.message))

        self.run(r.group_id, op, lambda error: callback(HeartbeatResult(error)))

    def _group_for_join(
        self, group_id: str, create: bool, records: list[GroupRecord]
    ) -> ConsumerGroup:
        """The consumer group, a new one (materialized when its records are replayed), or the
        conversion of a classic group (Kafka's ``getOrMaybeCreateConsumerGroup``)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.classic_groups.get(group_id)
        if classic is None:
            if not create:
                raise GroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
                )
            return ConsumerGroup(group_id)
        if create and classic.is_in(GroupState.EMPTY):
            # an empty classic group (or one that only holds offsets) becomes a consumer group
            records.append(ClassicTombstone(group_id))
            return ConsumerGroup(group_id)
        if create and self.upgrade is not None:
            converted = self.upgrade(group_id, records)
            if converted is not None:
                return converted
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def check_not_full(self, group: ConsumerGroup, member_id: str) -> None:
        limit = self.config.consumer_max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            raise GroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {limit} members.",
            )

    @staticmethod
    def check_epoch(member: ConsumerGroupMember, epoch: int, owned: Partitions | None) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``; a rejoin with epoch 0 is
        accepted (KAFKA-19233: a fenced member rejoins with its member id)."""
        if epoch == 0:
            return
        if epoch > member.member_epoch:
            raise GroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch and (
            epoch != member.previous_member_epoch or not is_subset(owned, member.assigned)
        ):
            raise GroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )

    def member_for(
        self,
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        instance_id: str | None,
        owned: Partitions | None,
        create: bool,
        records: list[GroupRecord],
        *,
        classic: bool,
    ) -> ConsumerGroupMember:
        """The existing member, a new one, or a static member replacing its previous
        instance (Kafka's ``getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember``)."""
        gid = group.group_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not create:
                    raise GroupError(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {gid}.",
                    )
                log.info(
                    "[GroupId %s] member %s joins the consumer group using the %s protocol",
                    gid,
                    member_id,
                    "classic" if classic else "consumer",
                )
                return ConsumerGroupMember(member_id)
            if not classic:
                self.check_epoch(member, epoch, owned)
            return member
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                log.info(
                    "[GroupId %s] static member %s with instance id %s joins the consumer group",
                    gid,
                    member_id,
                    instance_id,
                )
                return ConsumerGroupMember(member_id)
            if existing.member_id == member_id:
                # the same member rejoining (its join answer was lost, or it was fenced)
                return existing
            if (
                not classic
                and not existing.uses_classic_protocol
                and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ):
                raise GroupError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {existing.member_id} member.",
                )
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self.replace_member_records(group, existing, new, records)
            log.info(
                "[GroupId %s] static member with instance id %s re-joins the consumer group as "
                "%s, replacing %s",
                gid,
                instance_id,
                member_id,
                existing.member_id,
            )
            return new
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        if not classic:
            self.check_epoch(existing, epoch, owned)
        return existing

    def _heartbeat(self, r: HeartbeatRequest, callback: HeartbeatCallback) -> None:
        records: list[GroupRecord] = []
        create = r.member_epoch == 0
        group = self._group_for_join(r.group_id, create, records)
        self.check_not_full(group, r.member_id)
        member_id = r.member_id or new_member_id()
        member = self.member_for(
            group, member_id, r.member_epoch, r.instance_id, r.owned, create, records, classic=False
        )
        updated = member.replace(
            instance_id=r.instance_id if r.instance_id is not None else member.instance_id,
            rack_id=r.rack_id if r.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=r.rebalance_timeout_ms
            if r.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=r.server_assignor
            if r.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=frozenset(r.subscribed_topic_names)
            if r.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=(r.subscribed_topic_regex or None)
            if r.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            client_id=r.client_id,
            client_host=r.client_host,
            classic=None,
        )
        updated = self.update_member(group, member, updated, r.owned, records, r.may_describe)
        self.write(
            group.group_id,
            records,
            lambda error: self._heartbeat_done(r, member, updated, error, callback),
        )

    def update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        owned: Partitions | None,
        records: list[GroupRecord],
        may_describe: Callable[[str], bool] | None = None,
    ) -> ConsumerGroupMember:
        """Steps 1-3 of a heartbeat (or a classic member's JoinGroup) for ``updated``, the
        member with its new subscription: records its subscription, bumps the group epoch and
        computes a new target assignment when subscriptions or metadata changed, and reconciles
        it. Returns the member as it will be once ``records`` are committed."""
        gid = group.group_id
        now = self.context.now_ms()
        bump = group.group_epoch == 0
        if updated != member:
            records.append(
                ConsumerRecord(MemberSubscriptionKey(gid, updated.member_id), updated.subscription)
            )
            if not updated.same_subscription(member):
                bump = True
        regex_bump, resolved = self._maybe_update_regexes(
            group, member, updated, records, may_describe
        )
        bump |= regex_bump
        group_epoch = group.group_epoch
        metadata = group.subscription_metadata
        if bump or group.has_metadata_expired(now):
            metadata = self._subscription_metadata(group, [member], [updated], resolved)
            if metadata != group.subscription_metadata:
                bump = True
                records.append(ConsumerRecord(SubscriptionMetadataKey(gid), metadata))
            if bump:
                group_epoch += 1
                records.append(ConsumerRecord(GroupEpochKey(gid), group_epoch))
                log.info("[GroupId %s] bumped group epoch to %d", gid, group_epoch)
            group.set_metadata_refresh_deadline(2**62, group_epoch)
        if group_epoch > group.target_assignment_epoch:
            target = self._update_target_assignment(
                group, group_epoch, member, updated, metadata, resolved, records
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.target_assignment_epoch
            target = group.target_of(updated.member_id, updated.instance_id)
        return self._reconcile(
            group, updated, target_epoch, target, owned, metadata, resolved, records
        )

    def _heartbeat_done(
        self,
        r: HeartbeatRequest,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        error: ErrorCode | None,
        callback: HeartbeatCallback,
    ) -> None:
        if error is not None:
            callback(HeartbeatResult(heartbeat_write_error(error)))
            return
        gid = r.group_id
        self.schedule_session_timeout(gid, updated.member_id)
        if updated.state == MemberState.UNREVOKED_PARTITIONS:
            if not self.has_deadline((gid, updated.member_id, "rebalance")) or (
                member.member_epoch != updated.member_epoch
                or member.state != MemberState.UNREVOKED_PARTITIONS
            ):
                self._schedule_rebalance_timeout(gid, updated)
        else:
            self.cancel((gid, updated.member_id, "rebalance"))
        full = r.member_epoch == 0 or (
            r.rebalance_timeout_ms != -1
            and (r.subscribed_topic_names is not None or r.subscribed_topic_regex is not None)
            and r.owned is not None
        )
        result = HeartbeatResult(
            ErrorCode.NONE,
            member_id=updated.member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(gid),
        )
        if full or updated.assigned != member.assigned:
            result.assignment = updated.assigned
        callback(result)

    # -- subscriptions -------------------------------------------------------------------------

    def _maybe_update_regexes(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        records: list[GroupRecord],
        may_describe: Callable[[str], bool] | None = None,
    ) -> tuple[bool, dict[str, ResolvedRegex | None]]:
        """Kafka's ``maybeUpdateRegularExpressions``, resolving at once: a regex no member used
        before is resolved now; the group's regexes are resolved again when topics were created
        since and the last resolution is older than 10 s. Returns whether the group epoch must
        be bumped and the resolutions that will hold once ``records`` are committed."""
        gid = group.group_id
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        in_group = member.member_id in group.members
        counts = Counter(group.regex_count)
        resolved: dict[str, ResolvedRegex | None] = {}
        bump = False
        fresh: set[str] = set()
        if old != new:
            if old and in_group:
                counts[old] -= 1
                if counts[old] <= 0:
                    del counts[old]
                    records.append(ConsumerRecord(RegexKey(gid, old), None))
                    resolved[old] = None
            if new:
                if counts[new] == 0:
                    compile_regex(new)  # refuse an invalid one before anything is written
                    fresh.add(new)
                elif new in group.resolved_regexes:
                    bump = True
                counts[new] += 1
        if not counts:
            return bump, resolved
        now = self.context.now_ms()
        last = max((v.timestamp_ms for v in group.resolved_regexes.values()), default=0)
        version = self.topics_version()
        stale = any(
            r not in group.resolved_regexes or group.resolved_regexes[r].version < version
            for r in counts
        )
        if fresh or (stale and now > last + REGEX_REFRESH_INTERVAL_MS):
            todo = set(counts) if stale and now > last + REGEX_REFRESH_INTERVAL_MS else fresh
            for regex in sorted(todo):
                try:
                    result = self.resolve_regex(regex, may_describe)
                except GroupError:
                    log.error("[GroupId %s] cannot resolve regular expression %r", gid, regex)
                    continue
                before = group.resolved_regexes.get(regex)
                if before is None or before.topics != result.topics:
                    bump = True
                records.append(ConsumerRecord(RegexKey(gid, regex), result))
                resolved[regex] = result
        return bump, resolved

    def topics_of(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        resolved: dict[str, ResolvedRegex | None],
    ) -> frozenset[str]:
        regex = member.subscribed_topic_regex
        if not regex:
            return member.subscribed_topic_names
        if regex in resolved:
            r = resolved[regex]
            return member.subscribed_topic_names | (r.topics if r is not None else frozenset())
        return member.subscribed_topic_names | group.regex_topics(regex)

    def _subscription_metadata(
        self,
        group: ConsumerGroup,
        removed: Sequence[ConsumerGroupMember],
        added: Sequence[ConsumerGroupMember],
        resolved: dict[str, ResolvedRegex | None],
    ) -> dict[str, TopicInfo]:
        """The topics the group will subscribe to, with their current metadata."""
        names = Counter(group.names_count)
        regexes = Counter(group.regex_count)
        for m in removed:
            if m.member_id in group.members:
                names.subtract(m.subscribed_topic_names)
                if m.subscribed_topic_regex:
                    regexes[m.subscribed_topic_regex] -= 1
        for m in added:
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                regexes[m.subscribed_topic_regex] += 1
        topics = {t for t, n in names.items() if n > 0}
        for regex, n in regexes.items():
            if n <= 0:
                continue
            if regex in resolved:
                r = resolved[regex]
                topics |= r.topics if r is not None else frozenset()
            else:
                topics |= group.regex_topics(regex)
        return self.topic_infos(sorted(topics))

    # -- target assignment -----------------------------------------------------------------------

    def _assignor_for(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember | None,
        updated: ConsumerGroupMember | None,
    ) -> PartitionAssignor:
        counts = Counter(group.server_assignors)
        if member is not None and member.member_id in group.members and member.server_assignor:
            counts[member.server_assignor] -= 1
        if updated is not None and updated.server_assignor:
            counts[updated.server_assignor] += 1
        best = [(n, name) for name, n in counts.items() if n > 0]
        if best:
            name = max(best, key=lambda item: item[0])[1]
            return self.assignors.get(ASSIGNOR_CLASS_NAMES.get(name, name), self.default_assignor)
        return self.default_assignor

    def _update_target_assignment(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        member: ConsumerGroupMember | None,
        updated: ConsumerGroupMember | None,
        metadata: dict[str, TopicInfo],
        resolved: dict[str, ResolvedRegex | None],
        records: list[GroupRecord],
        *,
        removed: Sequence[str] = (),
    ) -> Partitions:
        """Kafka's ``TargetAssignmentBuilder``: the assignor over the members (``updated``
        added or changed, ``removed`` gone); records for every member whose target changed and
        the new target epoch. Returns ``updated``'s target."""
        gid = group.group_id
        assignor = self._assignor_for(group, member, updated)
        ids = {info.name: info.topic_id for info in metadata.values()}
        members = {m.member_id: m for m in group.members.values() if m.member_id not in removed}
        previous_ids: dict[str, str] = {}
        if updated is not None:
            if updated.instance_id is not None:
                previous = group.static_members.get(updated.instance_id)
                if previous is not None and previous != updated.member_id:
                    members.pop(previous, None)
                    previous_ids[updated.member_id] = previous
            members[updated.member_id] = updated
        specs = {}
        subscriptions = set()
        for m in members.values():
            topics = self.topics_of(group, m, resolved)
            subscriptions.add(topics)
            source = previous_ids.get(m.member_id, m.member_id)
            specs[m.member_id] = MemberSpec(
                m.member_id,
                m.instance_id,
                m.rack_id,
                frozenset(ids[t] for t in topics if t in ids),
                group.target_assignment.get(source, EMPTY_PARTITIONS),
            )
        spec = GroupSpec(
            specs,
            {info.topic_id: info.num_partitions for info in metadata.values()},
            len(subscriptions) <= 1,
        )
        try:
            new = assignor.assign(spec)
        except PartitionAssignorError as e:
            message = f"Failed to compute a new target assignment for epoch {group_epoch}: {e}"
            log.error("[GroupId %s] %s", gid, message)
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, message) from None
        for member_id in specs:
            assignment = new.get(member_id, {})
            if (
                member_id not in group.target_assignment
                or dict(group.target_assignment[member_id]) != assignment
            ):
                records.append(ConsumerRecord(TargetMemberKey(gid, member_id), assignment))
        records.append(ConsumerRecord(TargetEpochKey(gid), group_epoch))
        log.info(
            "[GroupId %s] computed a new target assignment for epoch %d with the '%s' assignor",
            gid,
            group_epoch,
            assignor.name,
        )
        if updated is None:
            return EMPTY_PARTITIONS
        return new.get(updated.member_id, {})

    def _reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: Partitions,
        owned: Partitions | None,
        metadata: dict[str, TopicInfo],
        resolved: dict[str, ResolvedRegex | None],
        records: list[GroupRecord],
    ) -> ConsumerGroupMember:
        if member.is_reconciled_to(target_epoch):
            return member
        topics = self.topics_of(group, member, resolved)
        subscribed = frozenset(info.topic_id for name, info in metadata.items() if name in topics)
        updated = CurrentAssignmentBuilder(
            member,
            target_epoch=target_epoch,
            target=target,
            partition_epoch=group.partition_epoch,
            owned=owned,
            subscribed_topic_ids=subscribed,
        ).build()
        if updated != member:
            records.append(
                ConsumerRecord(
                    CurrentAssignmentKey(group.group_id, updated.member_id),
                    updated.current_assignment,
                )
            )
            log.debug(
                "[GroupId %s] member %s: epoch %d (previous %d), %s, assigned %s, revoking %s",
                group.group_id,
                updated.member_id,
                updated.member_epoch,
                updated.previous_member_epoch,
                updated.state.name,
                dict(updated.assigned),
                dict(updated.pending_revocation),
            )
        return updated

    # -- leaving and fencing -------------------------------------------------------------------

    def _leave(self, r: HeartbeatRequest, callback: HeartbeatCallback) -> None:
        group = self.groups.get(r.group_id)
        if group is None:
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {r.group_id} not found."
            )
        answer = HeartbeatResult(ErrorCode.NONE, member_id=r.member_id, member_epoch=r.member_epoch)

        def done(error: ErrorCode | None) -> None:
            if error is not None:
                callback(HeartbeatResult(heartbeat_write_error(error)))
            else:
                callback(answer)

        if r.instance_id is None:
            member = group.member(r.member_id)
            log.info("[GroupId %s] member %s left the consumer group", r.group_id, r.member_id)
            self.fence(group, member, done)
            return
        member_or_none = group.static_member(r.instance_id)
        if member_or_none is None:
            raise GroupError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown."
            )
        member = member_or_none
        if member.member_id != r.member_id:
            raise GroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {r.member_id} with instance id {r.instance_id} was fenced by "
                f"member {member.member_id}.",
            )
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info(
                "[GroupId %s] static member %s with instance id %s temporarily left the "
                "consumer group",
                r.group_id,
                member.member_id,
                r.instance_id,
            )
            leaving = member.replace(
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation=EMPTY_PARTITIONS
            )
            record = ConsumerRecord(
                CurrentAssignmentKey(group.group_id, member.member_id), leaving.current_assignment
            )
            answer.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            self.write(group.group_id, [record], done)
            return
        log.info(
            "[GroupId %s] static member %s with instance id %s left the consumer group",
            r.group_id,
            member.member_id,
            r.instance_id,
        )
        self.fence(group, member, done)

    def remove_member_records(
        self, group: ConsumerGroup, member_id: str, records: list[GroupRecord]
    ) -> None:
        """The member's tombstones, in Kafka's order."""
        gid = group.group_id
        records.append(ConsumerRecord(CurrentAssignmentKey(gid, member_id), None))
        records.append(ConsumerRecord(TargetMemberKey(gid, member_id), None))
        records.append(ConsumerRecord(MemberSubscriptionKey(gid, member_id), None))

    def replace_member_records(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember,
        new: ConsumerGroupMember,
        records: list[GroupRecord],
    ) -> None:
        """A static member moves to a new member id (Kafka's ``replaceMember``)."""
        gid = group.group_id
        self.remove_member_records(group, old.member_id, records)
        records.append(ConsumerRecord(MemberSubscriptionKey(gid, new.member_id), new.subscription))
        records.append(
            ConsumerRecord(
                TargetMemberKey(gid, new.member_id),
                dict(group.target_assignment.get(old.member_id, EMPTY_PARTITIONS)),
            )
        )
        records.append(
            ConsumerRecord(CurrentAssignmentKey(gid, new.member_id), new.current_assignment)
        )

    def fence_records(
        self,
        group: ConsumerGroup,
        members: Sequence[ConsumerGroupMember],
        records: list[GroupRecord],
    ) -> None:
        """Removes ``members``: their tombstones, regexes nobody else uses, the subscription
        metadata without them, and a group epoch bump."""
        gid = group.group_id
        regexes = Counter(group.regex_count)
        for m in members:
            self.remove_member_records(group, m.member_id, records)
            if m.subscribed_topic_regex:
                regexes[m.subscribed_topic_regex] -= 1
                if regexes[m.subscribed_topic_regex] == 0:
                    records.append(ConsumerRecord(RegexKey(gid, m.subscribed_topic_regex), None))
        metadata = self._subscription_metadata(group, members, [], {})
        if metadata != group.subscription_metadata:
            records.append(ConsumerRecord(SubscriptionMetadataKey(gid), metadata))
        records.append(ConsumerRecord(GroupEpochKey(gid), group.group_epoch + 1))

    def fence(self, group: ConsumerGroup, member: ConsumerGroupMember, done: Done) -> None:
        """Removes a member (a leave, a session or rebalance timeout); the group may go back to
        the classic protocol when only classic members remain (online downgrade)."""
        if self.downgrade is not None and self.downgrade(group, member.member_id, done):
            return
        records: list[GroupRecord] = []
        self.fence_records(group, [member], records)
        self.cancel_member_timers(group.group_id, member.member_id)
        self.write(group.group_id, records, done)

    # -- offsets -----------------------------------------------------------------------------------

    def validate_offset_commit(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        *,
        transactional: bool,
        api_version: int,
        partitions: Iterable[tuple[str, int]] = (),
    ) -> None:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` with KIP-1251's assignment epochs: a
        commit with the member's epoch is taken; with a newer one refused; with an older one
        (the member's heartbeat moved it on while the commit was under way) taken when every
        partition in it is the member's (assigned or pending revocation) since that epoch or
        before. A refusal refuses the whole commit, as in Kafka."""
        if member_epoch < 0 and group.is_empty:
            return
        member = group.member(member_id)
        if not transactional and not member.uses_classic_protocol and api_version < 9:
            raise GroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        if member_epoch == member.member_epoch:
            return
        code = (
            ErrorCode.ILLEGAL_GENERATION
            if member.uses_classic_protocol
            else ErrorCode.STALE_MEMBER_EPOCH
        )
        if member_epoch > member.member_epoch:
            what = "generation id" if member.uses_classic_protocol else "member epoch"
            raise GroupError(
                code,
                f"Received {what} {member_epoch} is newer than current member epoch "
                f"{member.member_epoch}.",
            )
        partitions = list(partitions)
        ids = {
            info.name: info.topic_id
            for info in self.topic_infos({t for t, _ in partitions}).values()
        }
        for topic, partition in partitions:
            topic_id = ids.get(topic)
            epoch = None if topic_id is None else member.assignment_epoch(topic_id, partition)
            if epoch is None:
                raise GroupError(
                    code,
                    f"Partition {topic}-{partition} is not assigned or pending revocation for "
                    "member.",
                )
            if member_epoch < epoch:
                what = "generation id" if member.uses_classic_protocol else "member epoch"
                raise GroupError(
                    code,
                    f"Received {what} {member_epoch} is older than assignment epoch {epoch} "
                    f"for partition {topic}-{partition}.",
                )

    def validate_offset_fetch(
        self, group: ConsumerGroup, member_id: str | None, member_epoch: int
    ) -> None:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and member_epoch < 0:
            return
        member = group.member(member_id or "")
        self._validate_epoch(member, member_epoch)

    @staticmethod
    def _validate_epoch(member: ConsumerGroupMember, epoch: int) -> None:
        if epoch != member.member_epoch:
            if member.uses_classic_protocol:
                raise GroupError(
                    ErrorCode.ILLEGAL_GENERATION,
                    f"The received generation id {epoch} does not match the expected member "
                    f"epoch {member.member_epoch}.",
                )
            raise GroupError(
                ErrorCode.STALE_MEMBER_EPOCH,
                f"The received member epoch {epoch} does not match the expected member epoch "
                f"{member.member_epoch}.",
            )

    # -- deletion ----------------------------------------------------------------------------------

    @staticmethod
    def group_tombstones(group: ConsumerGroup, records: list[GroupRecord]) -> None:
        """Every record of the group, deleted (Kafka's ``createGroupTombstoneRecords``)."""
        gid = group.group_id
        for member_id in group.members:
            records.append(ConsumerRecord(CurrentAssignmentKey(gid, member_id), None))
        for member_id in group.members:
            records.append(ConsumerRecord(TargetMemberKey(gid, member_id), None))
        records.append(ConsumerRecord(TargetEpochKey(gid), None))
        for member_id in group.members:
            records.append(ConsumerRecord(MemberSubscriptionKey(gid, member_id), None))
        for regex in group.resolved_regexes:
            records.append(ConsumerRecord(RegexKey(gid, regex), None))
        records.append(ConsumerRecord(SubscriptionMetadataKey(gid), None))
        records.append(ConsumerRecord(GroupEpochKey(gid), None))

    # -- describing -------------------------------------------------------------------------------

    def describe(self, group_id: str) -> DescribedGroup:
        """ConsumerGroupDescribe for one group."""
        group = self.groups.get(group_id)
        if group is None:
            message = (
                f"Group {group_id} is not a consumer group."
                if group_id in self.classic_groups
                else f"Group {group_id} not found."
            )
            return DescribedGroup(ErrorCode.GROUP_ID_NOT_FOUND, message, group_id)
        return describe_group(group, self.cluster(), self.default_assignor.name)


__all__ = [
    "ClassicTombstone",
    "ConsumerGroupManager",
    "ConsumerGroupState",
    "GroupError",
    "GroupRecord",
    "HeartbeatRequest",
    "HeartbeatResult",
]
