"""The group coordinator (Kafka's ``GroupCoordinatorService``): routes each request to the shard
of the ``__consumer_offsets`` partition that stores its group (``partition_for(group_id)``:
``abs(Java String.hashCode(group_id)) % offsets.topic.num.partitions``), through the generic
:class:`~coordination.runtime.runtime.CoordinatorRuntime`, which answers NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE when the shard cannot serve.

Requests that write (JoinGroup, SyncGroup, OffsetCommit, OffsetDelete, DeleteGroups) answer
through a callback, called exactly once when the answer is known: possibly before the method
returns, possibly later (another member's request, a timer, a write committed by the ISR). The
callback runs with a shard's lock held, so it must only hand the result over.

Thread-safety: every public method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from coordination.group.config import (
    NO_GROUP,
    GroupConfig,
    GroupOverview,
    GroupSummary,
    JoinRequest,
    partition_for,
)
from coordination.group.consumer import (
    GroupError,
    HeartbeatCallback,
    HeartbeatRequest,
    HeartbeatResult,
)
from coordination.group.consumer_describe import DescribedGroup
from coordination.group.metadata import (
    GroupMetadata,
    JoinCallback,
    JoinResult,
    OffsetAndMetadata,
    SyncCallback,
    SyncResult,
)
from coordination.group.offsets import CommitCallback
from coordination.group.shard import GroupCoordinatorShard
from coordination.metadata.view import ClusterView
from coordination.runtime.runtime import (
    CoordinatorLog,
    CoordinatorRuntime,
    LoadedRecord,
    Scheduler,
    ShardContext,
    Timer,
)
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_NO_CLUSTER = ClusterView(cluster_id="", controller_id=-1, brokers={}, topics={})


def changed_topics(old: ClusterView, new: ClusterView) -> tuple[set[str], bool]:
    """Topics created, deleted, recreated or grown between two views, and whether any was
    created (Kafka's ``TopicsDelta``, as the group coordinator uses it)."""
    changed = set()
    created = False
    for name, topic in new.topics.items():
        before = old.topics.get(name)
        if before is None or before.topic_id != topic.topic_id:
            changed.add(name)
            created = True
        elif len(before.partitions) != len(topic.partitions):
            changed.add(name)
    changed.update(name for name in old.topics if name not in new.topics)
    return changed, created


def deleted_partitions(old: ClusterView, new: ClusterView) -> list[TopicPartition]:
    """The partitions of topics deleted between two views, or deleted and created again under
    their name (a new topic id): Kafka's ``TopicsDelta.deletedTopicIds``."""
    out: list[TopicPartition] = []
    for name, before in old.topics.items():
        after = new.topics.get(name)
        if after is None or after.topic_id != before.topic_id:
            out.extend((name, p.partition) for p in before.partitions)
    return out


class GroupCoordinator:
    def __init__(
        self,
        config: GroupConfig,
        scheduler: Scheduler,
        coordinator_log: CoordinatorLog,
        *,
        clock: Callable[[], int] = _now_ms,
        cluster: Callable[[], ClusterView] = lambda: _NO_CLUSTER,
    ) -> None:
        self.config = config
        self._scheduler = scheduler
        self._cleanup_timer: Timer | None = None
        #: the metadata the consumer groups subscribe against
        self.cluster = cluster
        #: when topics were last created, in wall-clock ms (consumer groups resolve their regexes
        #: again when theirs are older; it starts at start-up, as topics may have been created
        #: while this broker was away, and the resolutions in the log come from before)
        self._clock = clock
        self._topics_version = clock()
        self.runtime: CoordinatorRuntime[GroupCoordinatorShard] = CoordinatorRuntime(
            "group", self._new_shard, coordinator_log, scheduler, clock=clock
        )

    def _new_shard(self, context: ShardContext) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(
            context, self.config, cluster=self.cluster, topics_version=self.topics_version
        )

    def topics_version(self) -> int:
        return self._topics_version

    def on_metadata_change(self, old: ClusterView, new: ClusterView) -> None:
        """The metadata changed (any thread): consumer groups subscribed to topics that were
        created, deleted or grew partitions recompute their assignment at their next
        heartbeat; regex subscriptions are resolved again (Kafka's ``onNewMetadataImage``);
        every group's offsets of deleted topics go (Kafka's ``onPartitionsDeleted``, which
        its brokers call for each metadata delta that deletes topics)."""
        if old.topics is new.topics:
            return
        changed, created = changed_topics(old, new)
        if not changed:
            return
        if created:
            self._topics_version = max(self._topics_version + 1, self._clock())
        deleted = deleted_partitions(old, new)
        removed = 0
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                if deleted:
                    removed += shard.on_partitions_deleted(deleted)
                shard.consumer.on_topics_changed(changed)
        if removed:
            log.info("removing %d offset(s) of deleted partitions", removed)

    # -- lifecycle and loading -------------------------------------------------------------------

    def startup(self) -> None:
        self.runtime.startup()
        self._schedule_cleanup()

    def shutdown(self) -> None:
        """Forgets every group (their state is in the log); waiting members are answered
        COORDINATOR_NOT_AVAILABLE and every timer is cancelled."""
        self.runtime.shutdown()
        if self._cleanup_timer is not None:
            self._cleanup_timer.cancel()
            self._cleanup_timer = None

    def _schedule_cleanup(self) -> None:
        """Expires offsets every ``offsets.retention.check.interval.ms``."""

        def run() -> None:
            if not self.runtime.is_active:
                return
            try:
                self.cleanup_group_metadata()
            finally:
                self._schedule_cleanup()

        self._cleanup_timer = self._scheduler.schedule(
            self.config.offsets_retention_check_interval_ms, run
        )

    @property
    def is_active(self) -> bool:
        return self.runtime.is_active

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def begin_loading(self, partition: int) -> int:
        return self.runtime.begin_loading(partition)

    def complete_loading(
        self, partition: int, load_id: int, records: Iterable[LoadedRecord]
    ) -> bool:
        return self.runtime.complete_loading(partition, load_id, records)

    def unload(self, partition: int) -> None:
        self.runtime.unload(partition)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return self.runtime.loading_partitions

    def coordinates(self, partition: int) -> bool:
        return self.runtime.coordinates(partition)

    def is_loading(self, partition: int) -> bool:
        return self.runtime.is_loading(partition)

    # -- routing ---------------------------------------------------------------------------------

    def _partition(self, group_id: str | None, *, allow_empty: bool) -> int | ErrorCode:
        """The group's partition, or INVALID_GROUP_ID (Kafka's validateGroupStatus)."""
        if group_id is None or (not group_id and not allow_empty):
            return ErrorCode.INVALID_GROUP_ID
        return self.partition_for(group_id)

    # -- the classic protocol --------------------------------------------------------------------

    def join_group(self, request: JoinRequest, callback: JoinCallback) -> None:
        p = self._partition(request.group_id, allow_empty=False)
        if isinstance(p, ErrorCode):
            callback(JoinResult(p, request.member_id))
            return
        self.runtime.with_shard(
            p,
            lambda shard: shard.join_group(request, callback),
            lambda error: callback(JoinResult(error, request.member_id)),
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
        p = self._partition(group_id, allow_empty=False)
        if isinstance(p, ErrorCode):
            callback(SyncResult(p))
            return

        def refused(error: ErrorCode) -> None:
            # a loading group lost its rebalance state: make the member rejoin (as Kafka does)
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                error = ErrorCode.REBALANCE_IN_PROGRESS
            callback(SyncResult(error))

        self.runtime.with_shard(
            p,
            lambda shard: shard.sync_group(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                callback=callback,
            ),
            refused,
        )

    def heartbeat(
        self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        p = self._partition(group_id, allow_empty=False)
        if isinstance(p, ErrorCode):
            return p
        return self.runtime.with_shard(
            p,
            lambda shard: shard.heartbeat(
                group_id=group_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
            ),
            # a loading group is answered blindly (as Kafka does)
            lambda e: ErrorCode.NONE if e == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else e,
        )

    def leave_group(
        self,
        *,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        callback: Callable[[tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]], None]
        | None = None,
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]] | None:
        """``members``: (member id, group instance id). The group-level error and one (member
        id, instance id, error) per leaving member go to ``callback`` once the change is
        durable (a consumer group's classic members leave through a write); without a
        callback they are returned (None while a write is pending)."""
        answer: list[tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]] = []

        def deliver(result: tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]) -> None:
            if callback is not None:
                callback(result)
            else:
                answer.append(result)

        p = self._partition(group_id, allow_empty=False)

        def refused(error: ErrorCode) -> None:
            deliver((error, [(m, i, error) for m, i in members]))

        if isinstance(p, ErrorCode):
            refused(p)
        else:
            self.runtime.with_shard(
                p,
                lambda shard: shard.leave_group(
                    group_id=group_id, members=members, callback=deliver
                ),
                refused,
            )
        return answer[0] if answer else None

    # -- KIP-848 consumer groups -------------------------------------------------------------------

    def consumer_group_heartbeat(
        self, request: HeartbeatRequest, callback: HeartbeatCallback
    ) -> None:
        """ConsumerGroupHeartbeat: ``callback`` gets the answer once the group's records are
        committed. An empty group id reaches the group's checks, which refuse it with
        INVALID_REQUEST as Kafka's do (its request checks come before any group lookup)."""
        p = self._partition(request.group_id, allow_empty=True)
        if isinstance(p, ErrorCode):
            callback(HeartbeatResult(p))
            return
        self.runtime.with_shard(
            p,
            lambda shard: shard.consumer.heartbeat(request, callback),
            lambda error: callback(HeartbeatResult(error)),
        )

    def consumer_group_describe(self, group_id: str) -> DescribedGroup:
        p = self._partition(group_id, allow_empty=True)
        if isinstance(p, ErrorCode):
            return DescribedGroup(p, None, group_id)
        return self.runtime.with_shard(
            p,
            lambda shard: shard.consumer.describe(group_id),
            lambda error: DescribedGroup(error, None, group_id),
        )

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
        """OffsetCommit: ``callback`` gets one error per partition once the commit is
        durable. ``generation_id`` is a consumer group member's epoch (v9+)."""
        p = self._partition(group_id, allow_empty=True)
        if isinstance(p, ErrorCode):
            callback(dict.fromkeys(offsets, p))
            return
        self.runtime.with_shard(
            p,
            lambda shard: shard.commit_offsets(
                group_id=group_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
                offsets=offsets,
                callback=callback,
                api_version=api_version,
            ),
            lambda error: callback(dict.fromkeys(offsets, error)),
        )

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
        """TxnOffsetCommit: ``callback`` gets one error per partition once the transactional
        batch is written; the offsets count once the transaction commits."""
        p = self._partition(group_id, allow_empty=False)
        if isinstance(p, ErrorCode):
            callback(dict.fromkeys(offsets, p))
            return
        self.runtime.with_shard(
            p,
            lambda shard: shard.txn_commit_offsets(
                group_id=group_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
                offsets=offsets,
                callback=callback,
            ),
            lambda error: callback(dict.fromkeys(offsets, error)),
        )

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """A transaction marker was written to ``__consumer_offsets-<partition>`` (Kafka's
        ``onTransactionCompleted``): the producer's pending offsets there apply or go."""
        self.runtime.with_shard(
            partition,
            lambda shard: shard.complete_transaction(producer_id, committed),
            lambda error: None,
        )

    def fetch_offsets(
        self,
        *,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | ErrorCode | None]]:
        """OffsetFetch: committed offsets of ``partitions`` (None: every committed one); None
        for a partition without a commit; with ``require_stable`` (KIP-447)
        UNSTABLE_OFFSET_COMMIT for a partition with a transactional commit pending."""
        p = self._partition(group_id, allow_empty=True)
        if isinstance(p, ErrorCode):
            return p, {}

        def fetch(
            shard: GroupCoordinatorShard,
        ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | ErrorCode | None]]:
            try:
                fetched = shard.fetch_offsets(
                    group_id, partitions, member_id=member_id, member_epoch=member_epoch
                )
            except GroupError as e:
                return e.code, {}
            found: dict[TopicPartition, OffsetAndMetadata | ErrorCode | None] = dict(fetched)
            if require_stable:
                for tp in found:
                    if shard.has_pending_offsets(group_id, tp):
                        found[tp] = ErrorCode.UNSTABLE_OFFSET_COMMIT
            return ErrorCode.NONE, found

        return self.runtime.with_shard(p, fetch, lambda error: (error, {}))

    def delete_offsets(
        self,
        *,
        group_id: str,
        partitions: Sequence[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetDelete (KIP-496)."""
        p = self._partition(group_id, allow_empty=False)
        if isinstance(p, ErrorCode):
            callback(p, {})
            return
        self.runtime.with_shard(
            p,
            lambda shard: shard.delete_offsets(group_id, partitions, callback),
            lambda error: callback(error, {}),
        )

    def cleanup_group_metadata(self, now_ms: int | None = None) -> int:
        """Expires offsets past ``offsets.retention.minutes`` and removes empty groups with no
        offsets left, on every loaded shard; returns how many offsets expired."""
        total = 0
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                total += shard.cleanup_group_metadata(now_ms)
        return total

    # -- ListGroups, DescribeGroups, DeleteGroups --------------------------------------------------

    def list_groups(self, states: Sequence[str] = ()) -> tuple[ErrorCode, list[GroupOverview]]:
        if not self.runtime.is_active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        error = (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            if self.runtime.loading_partitions
            else ErrorCode.NONE
        )
        wanted = {s.lower() for s in states}
        out: list[GroupOverview] = []
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                out.extend(shard.list_groups(wanted))
        return error, out

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        """(error, summary); ``DEAD_GROUP`` for a group this broker does not know,
        ``NO_GROUP`` with an error."""
        p = self._partition(group_id, allow_empty=True)
        if isinstance(p, ErrorCode):
            return p, NO_GROUP
        return self.runtime.with_shard(
            p,
            lambda shard: (ErrorCode.NONE, shard.describe_group(group_id)),
            lambda error: (error, NO_GROUP),
        )

    def delete_groups(
        self, group_ids: Sequence[str], callback: Callable[[dict[str, ErrorCode]], None]
    ) -> None:
        """DeleteGroups: ``callback`` gets one error per group once every deletion is
        durable."""
        results: dict[str, ErrorCode] = {}
        remaining = [len(group_ids)]
        lock = threading.Lock()

        def answer(group_id: str, code: ErrorCode) -> None:
            with lock:
                results[group_id] = code
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                callback(results)

        if not group_ids:
            callback(results)
            return
        for group_id in group_ids:
            p = self._partition(group_id, allow_empty=True)
            if isinstance(p, ErrorCode):
                answer(group_id, p)
                continue
            self.runtime.with_shard(
                p,
                lambda shard, g=group_id: shard.delete_group(g, lambda code: answer(g, code)),  # type: ignore[misc]
                lambda error, g=group_id: answer(g, error),  # type: ignore[misc]
            )

    # -- introspection (tests, metrics) ------------------------------------------------------------

    def group(self, group_id: str) -> GroupMetadata | None:
        p = self.partition_for(group_id)
        return self.runtime.with_shard(p, lambda shard: shard.groups.get(group_id), lambda e: None)

    def all_committed_offsets(self) -> dict[str, dict[TopicPartition, int]]:
        """Every group's committed offsets on the shards this broker has loaded (metrics: the
        consumer lag of the groups it coordinates)."""
        out: dict[str, dict[TopicPartition, int]] = {}
        for shard, lock in self.runtime.loaded_shards():
            with lock:
                for group_id, offsets in shard.offsets.offsets.items():
                    out[group_id] = {tp: oam.offset for tp, oam in offsets.items()}
        return out

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        p = self.partition_for(group_id)
        return self.runtime.with_shard(
            p, lambda shard: dict(shard.offsets.of(group_id)), lambda e: {}
        )
