"""coordination.metadata.reassignment: KIP-455's replica sets while a partition moves."""

from __future__ import annotations

from coordination.metadata.reassignment import ReplicaAssignment, validate_target
from protocol.error_codes import ErrorCode


def test_growing_the_replication_factor() -> None:
    moving = ReplicaAssignment((1,)).reassign_to([1, 2, 3])
    assert moving == ReplicaAssignment((1, 2, 3), (2, 3), ())
    assert moving.origin == (1,)
    assert moving.target == (1, 2, 3)
    assert moving.is_being_reassigned


def test_moving_one_replica_lists_the_target_first() -> None:
    moving = ReplicaAssignment((1, 2, 3)).reassign_to([1, 2, 4])
    assert moving == ReplicaAssignment((1, 2, 4, 3), (4,), (3,))
    assert moving.origin == (1, 2, 3)
    assert moving.target == (1, 2, 4)


def test_a_new_target_replaces_an_ongoing_one_from_the_same_origin() -> None:
    moving = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 6])
    assert moving == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    replaced = moving.reassign_to([1, 2, 7])
    assert replaced == ReplicaAssignment((1, 2, 7, 3), (7,), (3,))
    # cancelling: back to the original replicas
    assert replaced.reassign_to(replaced.origin) == ReplicaAssignment((1, 2, 3))


def test_a_reorder_moves_nothing() -> None:
    assert not ReplicaAssignment((1, 2, 3)).reassign_to([3, 1, 2]).is_being_reassigned


def test_validate_target() -> None:
    current = ReplicaAssignment((1, 2))
    assert validate_target([1, 3], current, {1, 2, 3}) is None
    for bad in ([], [1, 1], [1, -2]):
        problem = validate_target(bad, current, {1, 2, 3})
        assert problem is not None and problem[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    # replicas being added must be live; the existing ones need not be
    problem = validate_target([1, 3], current, {1, 2})
    assert problem is not None and "not alive" in problem[1]
    assert validate_target([2, 1], current, {1}) is None


def test_validate_target_without_replication_factor_change() -> None:
    """KIP-860: the target must keep the replication factor the partition has, or is moving
    to while reassigned (Kafka's validatePartitionReplicationFactorUnchanged)."""
    live = {1, 2, 3, 4}
    current = ReplicaAssignment((1, 2))
    assert validate_target([3, 4], current, live, allow_replication_factor_change=False) is None
    assert validate_target([1, 2, 3], current, live, allow_replication_factor_change=True) is None
    assert validate_target([1, 2, 3], current, live, allow_replication_factor_change=False) == (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "The replication factor is changed from 2 to 3",
    )
    # moving from (1, 2) to (3, 4, 1): the factor is the target's, 3
    moving = current.reassign_to([3, 4, 1])
    assert validate_target([2, 3, 4], moving, live, allow_replication_factor_change=False) is None
    problem = validate_target([2], moving, live, allow_replication_factor_change=False)
    assert problem is not None and problem[0] == ErrorCode.INVALID_REPLICATION_FACTOR
    # the replicas are checked first
    problem = validate_target([1, 1, 3], current, live, allow_replication_factor_change=False)
    assert problem is not None and problem[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
