"""Partition reassignment state (KIP-455), as Kafka's controller keeps it (``ReplicaAssignment``).

While a partition moves, its replica set (RS) is the target replicas (TRS) followed by the
original replicas (ORS) not in the target; ``adding`` (AR = TRS - ORS) are the replicas being
added and ``removing`` (RR = ORS - TRS) those being removed. So the original set is RS - AR and
the target RS - RR. In ZooKeeper mode the three lists are the topic znode's ``partitions``,
``adding_replicas`` and ``removing_replicas``.

Pure values; the controller writes them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from protocol.error_codes import ErrorCode


def _without(values: Sequence[int], removed: Collection[int]) -> tuple[int, ...]:
    return tuple(v for v in values if v not in removed)


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas, and while it is reassigned, those being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        """The replicas before the reassignment (ORS = RS - AR)."""
        return _without(self.replicas, self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas after it (TRS = RS - RR)."""
        return _without(self.replicas, self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment while moving from this one's original replicas to ``target``
        (Kafka's ``reassignTo``): RS = TRS + ORS (in that order, without repeats)."""
        origin = self.origin
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(full, _without(full, origin), _without(full, target))


def validate_target(
    target: Sequence[int],
    current: ReplicaAssignment,
    live: Collection[int],
    *,
    allow_replication_factor_change: bool = True,
) -> tuple[ErrorCode, str] | None:
    """Kafka's checks of a reassignment's target replicas (``validateReplicas``): the error and
    its message, or None when ``target`` may be used. Replicas being added must be live. Without
    ``allow_replication_factor_change`` (KIP-860) the target must have as many replicas as the
    partition has, or is moving to (Kafka's ``validatePartitionReplicationFactorUnchanged``)."""
    if not target:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(target)) != len(target):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}",
        )
    if any(r < 0 for r in target):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Invalid broker id in replica list: {list(target)}",
        )
    adding = current.reassign_to(target).adding
    if not set(adding) <= set(live):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}",
        )
    if not allow_replication_factor_change and len(current.target) != len(target):
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(current.target)} to {len(target)}",
        )
    return None
