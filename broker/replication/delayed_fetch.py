"""A fetch waiting for ``min_bytes`` (Kafka's ``DelayedFetch``).

It completes when the partitions it reads have together gained enough readable bytes since it
began waiting, when one of them changes leadership or leader epoch (the fetch then answers with
that partition's error), or at ``max_wait_ms``. Appends (and, with replication, high-watermark
moves) wake it through the fetch purgatory, keyed by topic-partition: fetches are woken by data,
not polled by a timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from broker.purgatory import DelayedOperation
from broker.replication.partition import Partition


class DelayedFetch(DelayedOperation):
    """Waits until ``needed`` more bytes are readable across ``partitions``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        timeout_ms: int,
        needed: int,
        partitions: Sequence[Partition],
    ) -> None:
        super().__init__(loop, timeout_ms)
        self.needed = max(needed, 1)
        #: each partition with what it looked like when the wait began
        self._watched = [(p, p.bytes_visible, p.is_leader, p.leader_epoch) for p in partitions]

    def try_complete(self) -> bool:
        got = 0
        for part, start, was_leader, epoch in self._watched:
            if part.is_leader != was_leader or part.leader_epoch != epoch:
                return self.force_complete()
            got += part.bytes_visible - start
        if got >= self.needed:
            return self.force_complete()
        return False
