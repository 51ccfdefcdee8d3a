"""coordination.metadata.election: Kafka's controller rules for leaders and ISRs."""

from __future__ import annotations

from coordination.metadata.election import (
    NO_LEADER,
    AdminElection,
    ElectionType,
    admin_election,
    controlled_shutdown_leader,
    initial_leader_and_isr,
    leader_and_isr_after_change,
    preferred_replica_leader,
)
from protocol.error_codes import ErrorCode


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


def test_shutting_down_brokers_are_not_elected() -> None:
    # offline election skips a broker in controlled shutdown
    assert leader_and_isr_after_change(1, [1, 2, 3], [1, 2, 3], {2, 3}, ineligible={2}) == (
        3,
        (2, 3),
    )
    # nor is a new partition given to it
    assert initial_leader_and_isr([2, 1, 3], {1, 2, 3}, {2}) == (1, (1, 3))


def test_isr_members_no_longer_assigned_leave_the_isr() -> None:
    assert leader_and_isr_after_change(1, [1, 2, 3], [1, 2], {1, 2, 3}) == (1, (1, 2))


def test_controlled_shutdown_leader() -> None:
    assert controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == 2
    assert controlled_shutdown_leader([1, 2, 3], [1, 3], {1, 2, 3}, {1}) == 3
    assert controlled_shutdown_leader([1, 2], [1], {1, 2}, {1}) is None


def test_preferred_replica_leader() -> None:
    assert preferred_replica_leader([2, 1], [1, 2], {1, 2}) == 2
    assert preferred_replica_leader([2, 1], [1], {1, 2}) is None
    assert preferred_replica_leader([2, 1], [1, 2], {1}) is None
    assert preferred_replica_leader([2, 1], [1, 2], {1, 2}, {2}) is None


def test_admin_preferred_election() -> None:
    assert admin_election(ElectionType.PREFERRED, 2, [1, 2], [2, 1], {1, 2}) == AdminElection(
        ErrorCode.ELECTION_NOT_NEEDED
    )
    assert admin_election(ElectionType.PREFERRED, 1, [1, 2], [2, 1], {1, 2}) == AdminElection(
        ErrorCode.NONE, (2, (1, 2))
    )
    assert admin_election(ElectionType.PREFERRED, 1, [1], [2, 1], {1, 2}) == AdminElection(
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    )


def test_admin_unclean_election() -> None:
    assert admin_election(ElectionType.UNCLEAN, 1, [1], [1, 2], {1, 2}) == AdminElection(
        ErrorCode.ELECTION_NOT_NEEDED
    )
    # the in-sync replica first, else any live one
    assert admin_election(ElectionType.UNCLEAN, NO_LEADER, [1], [1, 2], {2}) == AdminElection(
        ErrorCode.NONE, (2, (2,))
    )
    assert admin_election(ElectionType.UNCLEAN, NO_LEADER, [3, 1], [1, 2, 3], {2, 3}) == (
        AdminElection(ErrorCode.NONE, (3, (3,)))
    )
    assert admin_election(ElectionType.UNCLEAN, NO_LEADER, [1], [1, 2], set()) == AdminElection(
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    )
