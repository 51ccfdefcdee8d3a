"""coordination.metadata.election: Kafka's controller rules for leaders and ISRs."""

from __future__ import annotations

from coordination.metadata.election import (
    NO_LEADER,
    initial_leader_and_isr,
    leader_and_isr_after_change,
)


def test_new_partition() -> None:
    assert initial_leader_and_isr([2, 1, 3], {1, 2, 3}) == (2, (2, 1, 3))
    assert initial_leader_and_isr([2, 1, 3], {1, 3}) == (1, (1, 3))
    assert initial_leader_and_isr([2], {1}) is None


def test_nothing_changes_while_leader_and_isr_live() -> None:
    assert leader_and_isr_after_change(1, [1, 2], [1, 2], {1, 2, 3}) is None


def test_dead_follower_leaves_isr() -> None:
    assert leader_and_isr_after_change(1, [1, 2], [1, 2], {1}) == (1, (1,))


def test_dead_leader_replaced_by_first_live_isr_replica_in_assignment_order() -> None:
    assert leader_and_isr_after_change(1, [3, 1, 2], [1, 2, 3], {2, 3}) == (2, (3, 2))


def test_no_live_isr_replica_means_no_leader_and_last_isr_kept() -> None:
    assert leader_and_isr_after_change(1, [1, 2], [1, 2, 3], {3}) == (NO_LEADER, (1,))
    assert leader_and_isr_after_change(1, [1], [1], set()) == (NO_LEADER, (1,))
    # already leaderless: no rewrite
    assert leader_and_isr_after_change(NO_LEADER, [1], [1], set()) is None


def test_returning_isr_member_is_elected() -> None:
    assert leader_and_isr_after_change(NO_LEADER, [1], [1, 2], {1, 2}) == (1, (1,))


def test_unclean_election() -> None:
    assert leader_and_isr_after_change(1, [1], [1, 2], {2}) == (NO_LEADER, (1,))
    assert leader_and_isr_after_change(1, [1], [1, 2], {2}, unclean=True) == (2, (2,))
