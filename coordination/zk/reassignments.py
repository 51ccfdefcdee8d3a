"""Partition reassignment (KIP-455), as Kafka's ZooKeeper-mode controller runs it
(``onPartitionReassignment``), started by AlterPartitionReassignments or by Kafka's legacy
``/admin/reassign_partitions`` znode.

With RS the replica set, ORS the original and TRS the target replicas, AR = TRS - ORS being
added and RR = ORS - TRS being removed (:class:`~coordination.metadata.reassignment.
ReplicaAssignment`):

1. **Start** (U): the topic znode gets RS = TRS + ORS, ``adding_replicas`` AR and
   ``removing_replicas`` RR, and the partition state its leader epoch bumped (Kafka's step A1),
   in one multi-op. Every broker reads the topic znode, so the replicas in AR create their logs
   and their fetchers follow the leader (this is Kafka's step A2): they catch up by replication
   and their leader adds them to the ISR.
2. **Complete** (B), once TRS is inside the ISR (checked after every batch of ZooKeeper events:
   ISR changes reach the controller through the state watches and ``/isr_change_notification``):
   one multi-op writes RS = TRS with no AR/RR, and the partition state with the leader moved into
   TRS if it is not there or not alive (first replica of TRS alive and in the ISR: Kafka's
   ``ReassignPartitionLeaderElectionStrategy``), RR out of the ISR and the leader epoch bumped.
   The brokers of RR see that they are no longer replicas: their replica managers delete the
   logs. The partition leaves ``/admin/reassign_partitions`` (the znode is deleted when empty).

A new reassignment of a moving partition replaces the old one (from the same original replicas);
a null target cancels it (the target becomes the original replicas). A reassignment that needs
no data to move (a reorder, fewer replicas) completes at once. In-progress reassignments are
resumed by a new controller: the topic znodes keep them.

Thread-safety: the store's worker thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from coordination.errors import NotController
from coordination.metadata.election import NO_LEADER, reassign_leader
from coordination.metadata.reassignment import ReplicaAssignment, validate_target
from coordination.metadata.store import ApiResult, TopicPartition
from coordination.zk import data as zd
from coordination.zk.cache import CachedTopic, Event
from coordination.zk.client import Op
from coordination.zk.controller import ZkController
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

REASSIGN_PARTITIONS: Event = ("reassign_partitions",)
#: How many times a step that raced with another writer is recomputed and written again.
WRITE_ATTEMPTS = 5


def assignment_of(cached: CachedTopic, partition: int) -> ReplicaAssignment | None:
    a = cached.assignment
    replicas = a.partitions.get(partition)
    if replicas is None:
        return None
    return ReplicaAssignment(
        tuple(replicas),
        tuple(a.adding_replicas.get(partition, ())),
        tuple(a.removing_replicas.get(partition, ())),
    )


def topic_data_with(cached: CachedTopic, partition: int, assignment: ReplicaAssignment) -> bytes:
    """The topic znode with ``partition`` set to ``assignment``."""
    a = cached.assignment
    partitions = dict(a.partitions)
    adding = dict(a.adding_replicas)
    removing = dict(a.removing_replicas)
    partitions[partition] = assignment.replicas
    for table, value in ((adding, assignment.adding), (removing, assignment.removing)):
        if value:
            table[partition] = value
        else:
            table.pop(partition, None)
    return zd.encode_topic_assignment(
        a.topic_id, partitions, adding_replicas=adding, removing_replicas=removing
    )


class ZkReassignments:
    def __init__(self, controller: ZkController) -> None:
        self.controller = controller
        self.cache = controller.cache
        self.zk = controller.zk
        controller.on_failover.append(self.on_failover)

    def _watch_znode(self, event: Any) -> None:
        if event.type != "NONE":
            self.controller.post(REASSIGN_PARTITIONS)

    def on_failover(self) -> None:
        """Kafka's ``initializePartitionReassignments``: the znode's reassignments, then the
        ongoing ones the topic znodes record."""
        named = self.process_znode()
        for topic, cached in list(self.cache.topics.items()):
            for p in sorted(
                set(cached.assignment.adding_replicas) | set(cached.assignment.removing_replicas)
            ):
                if (topic, p) not in named:
                    self._advance(topic, p)

    def _require_controller(self) -> None:
        if not self.controller.is_controller:
            raise NotController(
                f"Broker {self.controller.broker_id} is not the controller "
                f"(the controller is {self.controller.controller_id})"
            )

    # -- the API -------------------------------------------------------------------------------

    def alter(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, ApiResult]:
        """AlterPartitionReassignments: the latest reassignment of a partition wins over one in
        ``/admin/reassign_partitions``; without ``allow_replication_factor_change`` (KIP-860)
        a target of another replication factor is refused."""
        self._require_controller()
        results: dict[TopicPartition, ApiResult] = {}
        started: dict[TopicPartition, Sequence[int] | None] = {}
        deleting = set(self.zk.children(zd.DELETE_TOPICS_PATH) or [])
        live = self.controller.live_brokers() - self.controller.ineligible_brokers()
        for (topic, p), target in reassignments.items():
            cached = self.cache.topics.get(topic)
            current = assignment_of(cached, p) if cached is not None else None
            if current is None or topic in deleting:
                results[(topic, p)] = ApiResult(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
                continue
            if target is None:
                if not current.is_being_reassigned:
                    results[(topic, p)] = ApiResult(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
                    continue
            else:
                problem = validate_target(
                    target,
                    current,
                    live,
                    allow_replication_factor_change=allow_replication_factor_change,
                )
                if problem is not None:
                    results[(topic, p)] = ApiResult(*problem)
                    continue
            started[(topic, p)] = target
        if started:
            self._remove_from_znode(lambda tp, _replicas: tp in started)
        for (topic, p), target in started.items():
            results[(topic, p)] = self.start(topic, p, target)
        return results

    def list(
        self, partitions: Collection[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the ongoing ones (of ``partitions`` only, when given)."""
        self._require_controller()
        out: dict[TopicPartition, ReplicaAssignment] = {}
        if partitions is None:
            for topic, cached in self.cache.topics.items():
                a = cached.assignment
                for p in set(a.adding_replicas) | set(a.removing_replicas):
                    found = assignment_of(cached, p)
                    if found is not None and found.is_being_reassigned:
                        out[(topic, p)] = found
            return out
        for topic, p in partitions:
            wanted = self.cache.topics.get(topic)
            found = assignment_of(wanted, p) if wanted is not None else None
            if found is not None and found.is_being_reassigned:
                out[(topic, p)] = found
        return out

    # -- the reassignment ------------------------------------------------------------------------

    def start(self, topic: str, partition: int, target: Sequence[int] | None) -> ApiResult:
        """Starts (or replaces, or with ``target`` None cancels) a partition's reassignment."""
        for _ in range(WRITE_ATTEMPTS):
            cached = self.cache.topics.get(topic)
            current = assignment_of(cached, partition) if cached is not None else None
            if cached is None or current is None:
                return ApiResult(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            wanted = current.reassign_to(current.origin if target is None else target)
            if wanted == current and current.is_being_reassigned:
                return ApiResult(ErrorCode.NONE)  # the same reassignment is already under way
            written = self._step(topic, partition, cached, current, wanted)
            if written is None:
                self._require_controller()
            if written:
                return ApiResult(ErrorCode.NONE)
        return ApiResult(
            ErrorCode.REQUEST_TIMED_OUT, f"The state of {topic}-{partition} kept changing"
        )

    def _advance(self, topic: str, partition: int) -> None:
        """Completes a moving partition whose target replicas are all in the ISR."""
        for _ in range(WRITE_ATTEMPTS):
            cached = self.cache.topics.get(topic)
            current = assignment_of(cached, partition) if cached is not None else None
            state = self.cache.states.get((topic, partition))
            if cached is None or current is None or not current.is_being_reassigned:
                return
            if state is None or not self._complete(current, state.isr):
                return
            if self._step(topic, partition, cached, current, current) is not False:
                return

    def maybe_complete(self) -> None:
        """After each batch of events: completes the reassignments whose target replicas have
        all joined the ISR."""
        if not self.controller.is_controller:
            return
        for topic, cached in list(self.cache.topics.items()):
            a = cached.assignment
            if a.adding_replicas or a.removing_replicas:
                for p in sorted(set(a.adding_replicas) | set(a.removing_replicas)):
                    self._advance(topic, p)

    @staticmethod
    def _complete(assignment: ReplicaAssignment, isr: Sequence[int]) -> bool:
        """Kafka's ``isReassignmentComplete``: nothing moving, or the target inside the ISR."""
        return not assignment.is_being_reassigned or set(assignment.target) <= set(isr)

    def _step(
        self,
        topic: str,
        partition: int,
        cached: CachedTopic,
        current: ReplicaAssignment,
        wanted: ReplicaAssignment,
    ) -> bool | None:
        """Writes the next state of a reassignment from ``current`` towards ``wanted`` (phase U
        and A1, or phase B when ``wanted``'s target is in the ISR): True when written (or
        nothing to write), False when nothing could be (a race, or no leader for the target
        yet), None when not the controller."""
        state = self.cache.states.get((topic, partition))
        live = self.controller.live_replicas_of(
            topic, partition, self.controller.live_brokers(), self.controller.offline_replicas()
        )
        ineligible = self.controller.ineligible_brokers()
        leader = state.leader if state is not None else NO_LEADER
        isr: tuple[int, ...] = state.isr if state is not None else ()
        complete = (
            self._complete(wanted, isr) if state is not None else not wanted.is_being_reassigned
        )
        if complete:
            final = ReplicaAssignment(wanted.target)
            new_isr = tuple(r for r in isr if r in final.replicas)
            if state is not None and (
                leader not in final.replicas or leader not in live or leader in ineligible
            ):
                moved = reassign_leader(final.replicas, isr, live, ineligible)
                if moved is None:
                    log.info(
                        "%s-%d: reassignment to %s waits for a live in-sync leader among them",
                        topic, partition, list(final.replicas),
                    )  # fmt: skip
                    return False
                leader = moved
        else:
            final = wanted
            # replicas dropped by a replaced or cancelled reassignment leave the ISR now
            new_isr = tuple(r for r in isr if r in final.replicas) or isr
            if leader != NO_LEADER and leader not in final.replicas:
                leader = reassign_leader(final.replicas, new_isr, live, ineligible) or NO_LEADER
        extra: list[Op] = []
        if final != current:
            extra.append(
                Op.set(
                    zd.topic_path(topic),
                    topic_data_with(cached, partition, final),
                    cached.zk_version,
                )
            )
        changes: dict[int, tuple[int, tuple[int, ...]]] = {}
        if state is not None and (extra or leader != state.leader or new_isr != state.isr):
            changes[partition] = (leader, new_isr)
        if extra or changes:
            written = self.controller.update_partition_states(
                topic,
                changes,
                extra_ops=extra,
                why=(
                    f"reassignment to {list(final.replicas)} complete"
                    if complete
                    else f"reassigning to {list(wanted.target)} (adding {list(wanted.adding)}, "
                    f"removing {list(wanted.removing)})"
                ),
            )
            if not written:
                return written
            if extra:
                self.cache.load_topic(topic)
        if complete:
            log.info(
                "%s-%d: reassignment complete, replicas %s", topic, partition, list(final.replicas)
            )
            self._remove_from_znode(
                lambda tp, replicas: tp == (topic, partition) and tuple(replicas) == final.replicas
            )
        return True

    # -- /admin/reassign_partitions (legacy) ---------------------------------------------------

    def process_znode(self) -> set[TopicPartition]:
        """Starts the reassignments ``/admin/reassign_partitions`` names (re-arming its watch);
        entries that cannot start are removed from it. Returns the partitions it names."""
        path = zd.REASSIGN_PARTITIONS_PATH
        got = self.zk.get(path, self._watch_znode)
        if got is None:
            self.zk.exists(path, self._watch_znode)
            return set()
        if not self.controller.is_controller:
            return set()
        try:
            wanted = zd.decode_reassign_partitions(got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring %s: %s", path, e)
            return set()
        failed: set[TopicPartition] = set()
        live = self.controller.live_brokers() - self.controller.ineligible_brokers()
        for (topic, p), target in sorted(wanted.items()):
            cached = self.cache.topics.get(topic)
            current = assignment_of(cached, p) if cached is not None else None
            problem = (
                (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
                if current is None
                else validate_target(target, current, live)
            )
            if problem is None:
                result = self.start(topic, p, target)
                problem = (
                    None if result.error == ErrorCode.NONE else (result.error, result.message or "")
                )
            if problem is not None:
                log.warning(
                    "reassignment of %s-%d in %s failed: %s",
                    topic, p, path, problem[1] or problem[0].name,
                )  # fmt: skip
                failed.add((topic, p))
        if failed:
            self._remove_from_znode(lambda tp, _replicas: tp in failed)
        return set(wanted)

    def _remove_from_znode(self, remove: Any) -> None:
        """Drops the entries ``remove(tp, replicas)`` picks from ``/admin/reassign_partitions``,
        deleting it when none remain (Kafka's ``maybeRemoveFromZkReassignment``)."""
        path = zd.REASSIGN_PARTITIONS_PATH
        got = self.zk.get(path)
        if got is None:
            return
        try:
            entries = zd.decode_reassign_partitions(got[0])
        except zd.ZkDataError:
            entries = {}
        kept = {tp: r for tp, r in entries.items() if not remove(tp, r)}
        if entries and len(kept) == len(entries):
            return
        if kept:
            op = Op.set(path, zd.encode_reassign_partitions(kept), got[1].version)
        else:
            op = Op.delete(path, got[1].version)
        results = self.controller.multi([op])
        if results is not None and not kept:
            self.zk.exists(path, self._watch_znode)
