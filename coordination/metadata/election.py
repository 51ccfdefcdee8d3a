"""Partition leader election, as Kafka's controller does it (PartitionLeaderElectionAlgorithms).

Pure functions over broker ids: the controller feeds them a partition's assignment (``replicas``,
in assignment order), its current leader and ISR, and the set of live brokers, and writes what
they return.

- A new partition: the leader is the first live replica in assignment order; the ISR is every live
  assigned replica.
- A leader that is gone (or no leader): the first replica in assignment order that is alive and in
  the ISR; with unclean election enabled, else the first live replica (the ISR becomes just it).
- Replicas that are gone leave the ISR, but the ISR never becomes empty: with no live member left,
  the last leader (Kafka: the last replica removed) stays in it, so it is elected again when it
  comes back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

NO_LEADER = -1


def initial_leader_and_isr(
    replicas: Sequence[int], live: Collection[int]
) -> tuple[int, tuple[int, ...]] | None:
    """(leader, isr) for a partition that has no state yet, or None when no replica is alive."""
    live_replicas = tuple(r for r in replicas if r in live)
    if not live_replicas:
        return None
    return live_replicas[0], live_replicas


def offline_partition_leader(
    replicas: Sequence[int], isr: Sequence[int], live: Collection[int], *, unclean: bool
) -> int | None:
    """Kafka's offlinePartitionLeaderElection: first live ISR replica in assignment order."""
    for r in replicas:
        if r in live and r in isr:
            return r
    if unclean:
        for r in replicas:
            if r in live:
                return r
    return None


def leader_and_isr_after_change(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    live: Collection[int],
    *,
    unclean: bool = False,
) -> tuple[int, tuple[int, ...]] | None:
    """The (leader, isr) a partition should have now that ``live`` changed; None if unchanged.

    Every change is written with the leader epoch bumped (Kafka's ``newLeaderAndIsr``).
    """
    isr = tuple(isr)
    live_isr = tuple(r for r in isr if r in live)
    if leader != NO_LEADER and leader in live:
        if live_isr == isr:
            return None
        return leader, live_isr
    new_leader = offline_partition_leader(replicas, isr, live, unclean=unclean)
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
