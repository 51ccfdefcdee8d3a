"""Server-side partition assignors of KIP-848 consumer groups (``group.consumer.assignors``; a
member picks one with ``server_assignor``): Kafka's ``UniformAssignor`` ("uniform") and
``RangeAssignor`` ("range"), written from their documented behaviour.

An assignor gets the group's members (each with its subscribed topic ids and its current target
assignment), the partition counts of the subscribed topics, and whether every member subscribes
to the same topics (homogeneous); it returns every member's new target assignment. It never
sees owned partitions: the coordinator's reconciliation (revocation before reassignment) turns
target assignments into owned ones.

* **uniform** spreads all the partitions of the subscribed topics evenly over the members
  subscribed to them (counts differ by at most one where subscriptions allow) and is sticky: a
  member keeps the partitions it has up to its quota, so a change moves as few partitions as
  possible. Homogeneous groups get the quota algorithm of Kafka's
  ``UniformHomogeneousAssignmentBuilder``; heterogeneous ones a greedy fill followed by moves
  from the most to the least loaded eligible member.
* **range** gives each member, topic by topic, a contiguous range of partitions (members ordered
  by instance id, static members first, then member id), so co-partitioned topics line up. It
  is not sticky, as in Kafka.

Pure functions: no state, no clock, no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

TopicId = uuid.UUID
#: topic id -> partitions
Assignment = dict[TopicId, frozenset[int]]


class PartitionAssignorError(Exception):
    """The assignment cannot be computed (Kafka's PartitionAssignorException)."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as an assignor sees it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[TopicId]
    #: the member's current target assignment
    assignment: Mapping[TopicId, frozenset[int]]


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]
    #: partition counts of every subscribed topic that exists
    num_partitions: Mapping[TopicId, int]
    #: every member subscribes to the same topics
    homogeneous: bool


class PartitionAssignor(Protocol):
    name: str

    def assign(self, group: GroupSpec) -> dict[str, Assignment]: ...


def _topic_order(topic_id: TopicId) -> str:
    return str(topic_id)


def _freeze(assignment: dict[TopicId, set[int]]) -> Assignment:
    return {t: frozenset(p) for t, p in assignment.items() if p}


class UniformAssignor:
    """Balanced and sticky (Kafka's ``UniformAssignor``, name "uniform")."""

    name = "uniform"

    def assign(self, group: GroupSpec) -> dict[str, Assignment]:
        if not group.members:
            return {}
        if group.homogeneous:
            return self._homogeneous(group)
        return self._heterogeneous(group)

    # -- every member subscribes to the same topics ------------------------------------------

    @staticmethod
    def _homogeneous(group: GroupSpec) -> dict[str, Assignment]:
        first = next(iter(group.members.values()))
        topics = sorted(first.subscribed_topic_ids, key=_topic_order)
        for t in topics:
            if t not in group.num_partitions:
                raise PartitionAssignorError(
                    f"members are subscribed to topic {t} which is not in the topic metadata"
                )
        total = sum(group.num_partitions[t] for t in topics)
        member_ids = sorted(group.members)
        if not topics or total == 0:
            return {m: {} for m in member_ids}
        subscribed = set(topics)

        # what each member may keep: its current partitions of subscribed topics that still
        # exist; members keeping more get the extra partitions first (fewest moves)
        keepable: dict[str, list[tuple[TopicId, int]]] = {}
        for m in member_ids:
            spec = group.members[m]
            keep: list[tuple[TopicId, int]] = []
            for t in sorted(spec.assignment, key=_topic_order):
                if t in subscribed:
                    n = group.num_partitions[t]
                    keep.extend((t, p) for p in sorted(spec.assignment[t]) if p < n)
            keepable[m] = keep
        min_quota, extra = divmod(total, len(member_ids))
        by_load = sorted(member_ids, key=lambda m: (-len(keepable[m]), m))
        quota = {m: min_quota + (1 if i < extra else 0) for i, m in enumerate(by_load)}

        result: dict[str, dict[TopicId, set[int]]] = {m: {} for m in member_ids}
        taken: set[tuple[TopicId, int]] = set()
        remaining: dict[str, int] = {}
        for m in member_ids:
            room = quota[m]
            for tp in keepable[m]:
                if room == 0:
                    break
                if tp in taken:
                    continue  # cannot happen in a consistent target assignment
                taken.add(tp)
                result[m].setdefault(tp[0], set()).add(tp[1])
                room -= 1
            remaining[m] = room
        unassigned = [
            (t, p) for t in topics for p in range(group.num_partitions[t]) if (t, p) not in taken
        ]
        it = iter(unassigned)
        for m in member_ids:
            for _ in range(remaining[m]):
                nxt = next(it, None)
                if nxt is None:
                    break
                result[m].setdefault(nxt[0], set()).add(nxt[1])
        if next(it, None) is not None:
            raise PartitionAssignorError("partitions were left unassigned")
        return {m: _freeze(a) for m, a in result.items()}

    # -- members subscribe to different topics -------------------------------------------------

    @staticmethod
    def _heterogeneous(group: GroupSpec) -> dict[str, Assignment]:
        member_ids = sorted(group.members)
        subscribers: dict[TopicId, list[str]] = {}
        for m in member_ids:
            for t in group.members[m].subscribed_topic_ids:
                if t in group.num_partitions:
                    subscribers.setdefault(t, []).append(m)
        owner: dict[tuple[TopicId, int], str] = {}
        load = dict.fromkeys(member_ids, 0)
        # keep current partitions that remain valid
        for m in member_ids:
            spec = group.members[m]
            for t, parts in spec.assignment.items():
                if t not in spec.subscribed_topic_ids or t not in group.num_partitions:
                    continue
                n = group.num_partitions[t]
                for p in parts:
                    if p < n and (t, p) not in owner:
                        owner[(t, p)] = m
                        load[m] += 1
        # the rest to the least loaded eligible member, most constrained topics first
        for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), _topic_order(t))):
            eligible = subscribers[t]
            for p in range(group.num_partitions[t]):
                if (t, p) in owner:
                    continue
                m = min(eligible, key=lambda m: (load[m], m))
                owner[(t, p)] = m
                load[m] += 1
        # balance: move one partition at a time from the most loaded member to one with at
        # least two fewer, along a chain of members where each takes a partition of a topic it
        # subscribes to from the previous one, until no such chain remains
        by_member: dict[str, list[tuple[TopicId, int]]] = {m: [] for m in member_ids}
        for tp, m in sorted(owner.items(), key=lambda item: (_topic_order(item[0][0]), item[0][1])):
            by_member[m].append(tp)
        topics_of = {m: group.members[m].subscribed_topic_ids for m in member_ids}
        while _move_along_chain(member_ids, by_member, topics_of, load):
            pass
        result: dict[str, dict[TopicId, set[int]]] = {m: {} for m in member_ids}
        for m, tps in by_member.items():
            for t, p in tps:
                result[m].setdefault(t, set()).add(p)
        return {m: _freeze(a) for m, a in result.items()}


def _move_along_chain(
    member_ids: list[str],
    by_member: dict[str, list[tuple[TopicId, int]]],
    topics_of: Mapping[str, frozenset[TopicId]],
    load: dict[str, int],
) -> bool:
    """One step of the heterogeneous balancing (a breadth-first search for a chain from an
    overloaded member to an underloaded one). Returns whether a partition moved."""
    for source in sorted(member_ids, key=lambda m: (-load[m], m)):
        came_from: dict[str, tuple[str, tuple[TopicId, int]] | None] = {source: None}
        queue = [source]
        target = None
        while queue and target is None:
            x = queue.pop(0)
            for y in member_ids:
                if y in came_from:
                    continue
                tp = next((tp for tp in by_member[x] if tp[0] in topics_of[y]), None)
                if tp is None:
                    continue
                came_from[y] = (x, tp)
                if load[y] <= load[source] - 2:
                    target = y
                    break
                queue.append(y)
        if target is None:
            continue
        y = target
        while True:
            step = came_from[y]
            if step is None:
                break
            x, tp = step
            by_member[x].remove(tp)
            by_member[y].append(tp)
            y = x
        load[source] -= 1
        load[target] += 1
        return True
    return False


class RangeAssignor:
    """Contiguous ranges per topic (Kafka's server-side ``RangeAssignor``, name "range")."""

    name = "range"

    def assign(self, group: GroupSpec) -> dict[str, Assignment]:
        members = sorted(
            group.members.values(),
            key=lambda s: (
                (0, s.instance_id, s.member_id)
                if s.instance_id is not None
                else (1, "", s.member_id)
            ),
        )
        result: dict[str, dict[TopicId, set[int]]] = {s.member_id: {} for s in members}
        topics: set[TopicId] = set()
        for s in members:
            topics |= s.subscribed_topic_ids
        for t in sorted(topics, key=_topic_order):
            n = group.num_partitions.get(t)
            if n is None:
                raise PartitionAssignorError(
                    f"members are subscribed to topic {t} which does not exist"
                )
            subscribed = [s.member_id for s in members if t in s.subscribed_topic_ids]
            quota, extra = divmod(n, len(subscribed))
            start = 0
            for i, m in enumerate(subscribed):
                size = quota + (1 if i < extra else 0)
                if size:
                    result[m][t] = set(range(start, start + size))
                start += size
        return {m: _freeze(a) for m, a in result.items()}


#: the assignors this broker has, by name (``group.consumer.assignors`` picks among them)
ASSIGNORS: dict[str, PartitionAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}

#: Kafka's class names, accepted in ``group.consumer.assignors`` as well
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_named(name: str) -> PartitionAssignor:
    """The assignor for a ``group.consumer.assignors`` entry; raises KeyError."""
    return ASSIGNORS[ASSIGNOR_CLASS_NAMES.get(name.strip(), name.strip())]
