"""A deleted topic's offsets go from every group (Kafka's ``GroupCoordinator.onPartitionsDeleted``):
committed and pending transactional ones, as tombstones in ``__consumer_offsets``, when the
metadata shows the topic gone or created again under its name (a new topic id)."""

from __future__ import annotations

import uuid

from coordination.group.config import partition_for
from coordination.group.coordinator import GroupCoordinator, deleted_partitions
from coordination.group.metadata import OffsetAndMetadata
from coordination.metadata.view import ClusterView, TopicMetadata
from protocol.error_codes import ErrorCode
from tests.unit.coordination.test_consumer_groups import topic
from tests.unit.coordination.test_group_coordinator import CONFIG, Harness
from tests.unit.coordination.test_txn_offsets import PID, txn_commit

E = ErrorCode


def view(*topics: TopicMetadata) -> ClusterView:
    return ClusterView(
        cluster_id="c", controller_id=0, brokers={}, topics={t.name: t for t in topics}
    )


def commit(h: Harness, group: str, offsets: dict[tuple[str, int], int]) -> None:
    got = h.commit_offsets(
        group_id=group,
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={tp: OffsetAndMetadata(o, -1, "", h.sched.now) for tp, o in offsets.items()},
    )
    assert got == dict.fromkeys(offsets, E.NONE)


def offsets(gc: GroupCoordinator, group: str) -> dict[tuple[str, int], int]:
    err, got = gc.fetch_offsets(group_id=group, partitions=None)
    assert err == E.NONE
    return {tp: o.offset for tp, o in got.items() if isinstance(o, OffsetAndMetadata)}


def reloaded(h: Harness) -> GroupCoordinator:
    """A coordinator that loads what ``h`` wrote."""
    gc = GroupCoordinator(CONFIG, h.sched, h.log, clock=h.sched.clock)
    gc.startup()
    for p in range(CONFIG.num_partitions):
        assert gc.complete_loading(p, gc.begin_loading(p), list(h.log.partitions.get(p, [])))
    return gc


def test_deleted_partitions_are_those_of_topics_gone_or_created_again() -> None:
    t, u, w = topic("t", 2), topic("u", 1), topic("w", 1)
    assert deleted_partitions(view(t, u, w), view(u, w)) == [("t", 0), ("t", 1)]
    # created again under its name: a new id
    assert deleted_partitions(view(t, u), view(topic("t", 1), u)) == [("t", 0), ("t", 1)]
    # grown, unchanged, or new: nothing deleted
    grown = topic("u", 3, u.topic_id)
    assert deleted_partitions(view(t, u), view(t, grown, w)) == []


def test_a_deleted_topics_offsets_go_from_every_group() -> None:
    h = Harness()
    commit(h, "a", {("t", 0): 3, ("t", 1): 4, ("u", 0): 5})
    commit(h, "b", {("t", 0): 6})
    t, u = topic("t", 2), topic("u", 1)
    h.gc.on_metadata_change(view(t, u), view(u))
    assert offsets(h.gc, "a") == {("u", 0): 5}
    assert offsets(h.gc, "b") == {}
    # as tombstones: loading the partitions again finds the same
    again = reloaded(h)
    assert offsets(again, "a") == {("u", 0): 5}
    assert offsets(again, "b") == {}
    # the groups stay (an empty one goes at the next cleanup, as in Kafka's coordinator)
    _, listed = h.gc.list_groups()
    assert {g.group_id for g in listed} >= {"a"}


def test_a_topic_created_again_starts_with_no_offsets() -> None:
    h = Harness()
    commit(h, "a", {("t", 0): 3})
    before = topic("t", 1)
    h.gc.on_metadata_change(view(before), view(topic("t", 1)))
    assert offsets(h.gc, "a") == {}
    # a topic that only grew keeps them
    commit(h, "a", {("t", 0): 8})
    after = view(topic("t", 1, uuid.UUID(int=1)))
    h.gc.on_metadata_change(after, view(topic("t", 4, uuid.UUID(int=1))))
    assert offsets(h.gc, "a") == {("t", 0): 8}


def test_a_deleted_topics_pending_transactional_offsets_go() -> None:
    h = Harness()
    commit(h, "eos", {("u", 0): 2})
    txn_commit(h, 5, group="eos", tp=("t", 0))
    u = topic("u", 1)
    h.gc.on_metadata_change(view(topic("t", 1), u), view(u))
    # the transaction commits after the deletion: nothing of the deleted topic applies
    h.gc.complete_transaction(partition_for("eos", CONFIG.num_partitions), PID, True)
    assert offsets(h.gc, "eos") == {("u", 0): 2}
    assert offsets(reloaded(h), "eos") == {("u", 0): 2}
