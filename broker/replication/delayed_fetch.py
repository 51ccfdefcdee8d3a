"""A fetch waiting for ``min_bytes`` (Kafka's ``DelayedFetch``).

It completes when the partitions it reads have together gained enough readable bytes since it
began waiting, when one of them changes leadership or leader epoch or goes offline with its log
dir (the fetch then answers with that partition's error), or at ``max_wait_ms``. A consumer's
fetch counts bytes below the high watermark (woken by appends on a single replica, by
high-watermark moves on a replicated leader), a follower's bytes below the log end (woken by
appends): through the fetch purgatory, keyed by topic-partition, never polled by a timer.
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
        follower: bool = False,
        counted_from: Sequence[int] | None = None,
    ) -> None:
        """``counted_from``: each partition's byte counter before the fetch first read it
        (taken before the read, so bytes that arrive between the read and this wait still
        count); default: the counters now."""
        super().__init__(loop, timeout_ms)
        self.needed = max(needed, 1)
        self.follower = follower
        if counted_from is None:
            counted_from = [p.bytes_appended if follower else p.bytes_visible for p in partitions]
        #: each partition with what it looked like when the wait began
        self._watched = [
            (p, start, p.is_leader, p.leader_epoch)
            for p, start in zip(partitions, counted_from, strict=True)
        ]

    def nothing_arrived(self) -> bool:
        """Whether nothing a fetch could see changed while it waited: no byte readable, no
        leadership or leader-epoch change (then a read before the wait that found nothing still
        stands, and reading every partition again can be skipped)."""
        follower = self.follower
        for part, start, was_leader, epoch in self._watched:
            if part.is_leader != was_leader or part.leader_epoch != epoch or part.offline:
                return False
            if (part.bytes_appended if follower else part.bytes_visible) != start:
                return False
        return True

    def try_complete(self) -> bool:
        got = 0
        follower = self.follower
        for part, start, was_leader, epoch in self._watched:
            if part.is_leader != was_leader or part.leader_epoch != epoch or part.offline:
                return self.force_complete()
            got += (part.bytes_appended if follower else part.bytes_visible) - start
        if got >= self.needed:
            return self.force_complete()
        return False
