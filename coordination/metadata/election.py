"""Partition leader election, as Kafka's controller does it (PartitionLeaderElectionAlgorithms).

Pure functions over broker ids: the controller feeds them a partition's assignment (``replicas``,
in assignment order), its current leader and ISR, the set of live (registered) brokers, and the
brokers that may not lead (``ineligible``: brokers in controlled shutdown, which Kafka's
controller counts as neither live nor eligible for leadership), and writes what they return.

- A new partition: the leader is the first live, eligible replica in assignment order; the ISR
  is every live, eligible assigned replica.
- A leader that is gone (or no leader): the first replica in assignment order that is alive,
  eligible and in the ISR (offline election); with unclean election enabled, else the first live
  eligible replica (the ISR becomes just it).
- Replicas that are gone (or no longer assigned) leave the ISR, but the ISR never becomes empty:
  with no live member left, the last leader (Kafka: the last replica removed) stays in it, so it
  is elected again when it comes back.
- Controlled shutdown: the first replica that is alive, in the ISR and not shutting down; the
  shutting-down brokers leave the ISR.
- Preferred replica: the first assigned replica, if it is alive, eligible and in the ISR.
- Reassignment: the first replica of the target set that is alive, eligible and in the ISR.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import IntEnum
from typing import NamedTuple

from protocol.error_codes import ErrorCode

NO_LEADER = -1


class ElectionType(IntEnum):
    """ElectLeaders' election types (KIP-460)."""

    PREFERRED = 0
    UNCLEAN = 1


def initial_leader_and_isr(
    replicas: Sequence[int], live: Collection[int], ineligible: Collection[int] = ()
) -> tuple[int, tuple[int, ...]] | None:
    """(leader, isr) for a partition that has no state yet, or None when no replica is alive."""
    live_replicas = tuple(r for r in replicas if r in live and r not in ineligible)
    if not live_replicas:
        return None
    return live_replicas[0], live_replicas


def offline_partition_leader(
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    *,
    unclean: bool,
    ineligible: Collection[int] = (),
) -> int | None:
    """Kafka's offlinePartitionLeaderElection: first live ISR replica in assignment order."""
    for r in replicas:
        if r in live and r in isr and r not in ineligible:
            return r
    if unclean:
        for r in replicas:
            if r in live and r not in ineligible:
                return r
    return None


def controlled_shutdown_leader(
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    """Kafka's controlledShutdownPartitionLeaderElection: the first replica in assignment order
    that is alive, in the ISR and not shutting down."""
    for r in replicas:
        if r in live and r in isr and r not in shutting_down:
            return r
    return None


def preferred_replica_leader(
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    ineligible: Collection[int] = (),
) -> int | None:
    """Kafka's preferredReplicaPartitionLeaderElection: the first assigned replica, if it is
    alive, eligible and in the ISR."""
    if not replicas:
        return None
    first = replicas[0]
    if first in live and first in isr and first not in ineligible:
        return first
    return None


def reassign_leader(
    target: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    ineligible: Collection[int] = (),
) -> int | None:
    """Kafka's reassignPartitionLeaderElection: the first target replica alive and in the ISR."""
    for r in target:
        if r in live and r in isr and r not in ineligible:
            return r
    return None


def leader_and_isr_after_change(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    live: Collection[int],
    *,
    unclean: bool = False,
    ineligible: Collection[int] = (),
) -> tuple[int, tuple[int, ...]] | None:
    """The (leader, isr) a partition should have now that ``live`` changed; None if unchanged.

    ISR members that are not assigned replicas any more (a reassignment removed them while their
    leader proposed them back) leave the ISR as dead ones do. Every change is written with the
    leader epoch bumped (Kafka's ``newLeaderAndIsr``).
    """
    isr = tuple(isr)
    live_isr = tuple(r for r in isr if r in live and r in replicas)
    if leader != NO_LEADER and leader in live:
        if live_isr == isr:
            return None
        if leader not in live_isr:
            # the leader itself is no longer assigned: another leader is needed
            new_leader = offline_partition_leader(
                replicas, live_isr, live, unclean=False, ineligible=ineligible
            )
            if new_leader is None:
                return None
            return new_leader, live_isr
        return leader, live_isr
    new_leader = offline_partition_leader(
        replicas, isr, live, unclean=unclean, ineligible=ineligible
    )
    if new_leader is not None:
        if new_leader in live_isr:
            return new_leader, live_isr
        return new_leader, (new_leader,)
    if live_isr:
        kept = live_isr
    elif len(isr) <= 1:
        kept = isr
    elif leader in isr:
        kept = (leader,)
    else:
        kept = isr[:1]
    if leader == NO_LEADER and kept == isr:
        return None
    return NO_LEADER, kept


class AdminElection(NamedTuple):
    """What an ElectLeaders request does to one partition: NONE with the new (leader, isr) to
    write, or the error Kafka answers."""

    error: ErrorCode
    change: tuple[int, tuple[int, ...]] | None = None


def admin_election(
    election_type: ElectionType,
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    live: Collection[int],
    *,
    ineligible: Collection[int] = (),
) -> AdminElection:
    """An election an admin client asked for (Kafka's ``processReplicaLeaderElection``).

    PREFERRED: not needed when the first replica leads; else it leads if it is alive, eligible
    and in the ISR (the ISR is kept), or PREFERRED_LEADER_NOT_AVAILABLE. UNCLEAN: not needed when
    the leader is alive; else the offline election with unclean election allowed (an in-sync
    replica first), or ELIGIBLE_LEADERS_NOT_AVAILABLE.
    """
    isr = tuple(isr)
    if election_type == ElectionType.PREFERRED:
        if replicas and leader == replicas[0]:
            return AdminElection(ErrorCode.ELECTION_NOT_NEEDED)
        new = preferred_replica_leader(replicas, isr, live, ineligible)
        if new is None:
            return AdminElection(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        return AdminElection(ErrorCode.NONE, (new, isr))
    if leader != NO_LEADER and leader in live and leader not in ineligible:
        return AdminElection(ErrorCode.ELECTION_NOT_NEEDED)
    new = offline_partition_leader(replicas, isr, live, unclean=True, ineligible=ineligible)
    if new is None:
        return AdminElection(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    if new in isr:
        return AdminElection(
            ErrorCode.NONE, (new, tuple(r for r in isr if r in live and r not in ineligible))
        )
    return AdminElection(ErrorCode.NONE, (new, (new,)))


def election_failure_message(topic: str, partition: int, election_type: ElectionType) -> str:
    """Kafka's message for an election that found no leader."""
    strategy = (
        "PreferredReplicaPartitionLeaderElectionStrategy"
        if election_type == ElectionType.PREFERRED
        else "OfflinePartitionLeaderElectionStrategy(true)"
    )
    return f"Failed to elect leader for partition {topic}-{partition} under strategy {strategy}"
