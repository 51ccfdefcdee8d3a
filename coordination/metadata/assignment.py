"""Where a topic's replicas go (Kafka's ``AdminUtils``), and the checks of explicit assignments."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from coordination.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
)
from coordination.metadata.view import BrokerInfo, PartitionState


def assign_replicas(
    brokers: Sequence[BrokerInfo],
    num_partitions: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    start_index: int | None = None,
    replica_shift: int | None = None,
) -> list[list[int]]:
    """Kafka's AdminUtils.assignReplicasToBrokers for partitions ``first_partition ...``.

    Leaders go round-robin over the brokers from ``start_index``; each further replica is shifted
    by ``replica_shift`` (+1 every time the leaders wrap around). When every broker has a rack
    (and there are several racks), brokers are ordered rack-alternated and a follower is skipped
    while its rack (or the broker itself) already holds a replica and another rack (broker) does
    not, so replicas land on as many racks as possible. Kafka draws both numbers at random; the
    defaults here (``first_partition``) keep the result deterministic. Partition ``i`` of the
    result is partition ``first_partition + i``.
    """
    if num_partitions < 1:
        raise InvalidPartitions("Number of partitions must be larger than 0.")
    if replication_factor < 1:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    ordered = sorted(brokers, key=lambda b: b.broker_id)
    rack_of = {b.broker_id: b.rack or "" for b in ordered}
    num_racks = len(set(rack_of.values()))
    rack_aware = all(b.rack for b in ordered) and num_racks > 1
    if rack_aware:
        ordered = _rack_alternated(ordered)
    ids = [b.broker_id for b in ordered]
    n = len(ids)
    start = (first_partition if start_index is None else start_index) % n
    shift = start if replica_shift is None else replica_shift % n
    result = []
    for i in range(num_partitions):
        p = first_partition + i
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        if not rack_aware:
            for j in range(replication_factor - 1):
                replicas.append(ids[_replica_index(first, shift, j, n)])
        else:
            racks = {rack_of[ids[first]]}
            k = 0
            while len(replicas) < replication_factor:
                broker = ids[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                if (rack not in racks or len(racks) == num_racks) and (
                    broker not in replicas or len(replicas) == n
                ):
                    replicas.append(broker)
                    racks.add(rack)
                k += 1
        result.append(replicas)
    return result


def validate_assignment(
    assignment: Sequence[Sequence[int]],
    brokers: Collection[int],
    *,
    replication_factor: int | None = None,
    partitions_added: int | None = None,
) -> list[list[int]]:
    """Kafka's checks of an explicit replica assignment (CreateTopics, CreatePartitions): one
    per added partition (``partitions_added``), none empty, no broker twice, only known
    ``brokers``, and the same number of replicas everywhere (``replication_factor`` too, when
    given: the existing partitions'). Returns the layout; raises InvalidReplicaAssignment."""
    if partitions_added is not None and len(assignment) != partitions_added:
        raise InvalidReplicaAssignment(
            f"Increasing the number of partitions by {partitions_added} but "
            f"{len(assignment)} assignments provided."
        )
    known = set(brokers)
    layout = [list(r) for r in assignment]
    for p, replicas in enumerate(layout):
        if not replicas:
            raise InvalidReplicaAssignment(f"Partition {p} has an empty replica assignment")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(
                f"Duplicate replica assignment found: {replicas} for partition {p}"
            )
        unknown = sorted(set(replicas) - known)
        if unknown:
            raise InvalidReplicaAssignment(f"Unknown broker(s) in replica assignment: {unknown}")
    sizes = {len(r) for r in layout}
    if replication_factor is not None:
        sizes.add(replication_factor)
    if len(sizes) > 1:
        raise InvalidReplicaAssignment("All partitions should have the same number of replicas")
    return layout


def new_partition_states(
    layout: Sequence[Sequence[int]], *, first_partition: int = 0
) -> tuple[PartitionState, ...]:
    """The states of new partitions ``first_partition...``: the first replica leads, every
    replica is in sync, epochs 0."""
    return tuple(
        PartitionState(first_partition + i, r[0], 0, tuple(r), tuple(r))
        for i, r in enumerate(layout)
    )


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    if n == 1:
        return first
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(brokers: Sequence[BrokerInfo]) -> list[BrokerInfo]:
    """Brokers ordered rack by rack in turn (racks sorted, brokers sorted by id within a rack)."""
    by_rack: dict[str, list[BrokerInfo]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(b.rack or "", []).append(b)
    racks = sorted(by_rack)
    out: list[BrokerInfo] = []
    while len(out) < len(brokers):
        for rack in racks:
            if by_rack[rack]:
                out.append(by_rack[rack].pop(0))
    return out
