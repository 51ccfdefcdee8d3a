"""A produce with ``acks=all`` waiting for its partitions' ISRs (Kafka's ``DelayedProduce``).

Each partition's batches were appended to the leader; the produce completes when, for every
partition, the high watermark has reached the end of what was appended (every ISR member has it)
— then the answer is NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
``min.insync.replicas`` meanwhile — or leadership moved (NOT_LEADER_OR_FOLLOWER), or the
partition's log dir went offline (KAFKA_STORAGE_ERROR), or
``timeout_ms`` passes (REQUEST_TIMED_OUT for the partitions still waiting). It is woken through
the produce purgatory, keyed by topic-partition, by followers' fetches moving the high watermark
and by ISR and leadership changes: never polled.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from broker.purgatory import DelayedOperation
from broker.replication.partition import Partition
from protocol.error_codes import ErrorCode


@dataclass(slots=True)
class ProducePartitionStatus:
    """One partition of the produce: what it waits for, and its answer once known."""

    partition: Partition
    #: the offset the high watermark must reach (the appended batches' last offset + 1)
    required_offset: int
    #: the leader epoch at which the leader that appended them took the leadership
    leader_epoch: int
    error: ErrorCode | None = None


class DelayedProduce(DelayedOperation):
    """Waits until every partition in ``statuses`` has an answer."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        timeout_ms: int,
        statuses: list[ProducePartitionStatus],
    ) -> None:
        super().__init__(loop, timeout_ms)
        self.statuses = statuses

    def try_complete(self) -> bool:
        done = True
        for status in self.statuses:
            if status.error is None:
                status.error = status.partition.check_enough_replicas_reach_offset(
                    status.required_offset, status.leader_epoch
                )
                if status.error is None:
                    done = False
        if done:
            return self.force_complete()
        return False

    def result(self) -> list[ErrorCode]:
        """Each partition's answer (REQUEST_TIMED_OUT where none came before the deadline)."""
        return [ErrorCode.REQUEST_TIMED_OUT if s.error is None else s.error for s in self.statuses]
