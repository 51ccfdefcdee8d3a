"""CreateTopics and CreatePartitions waiting for their partitions to be usable (Kafka's
``DelayedCreatePartitions``, purgatory "topic").

In ZooKeeper mode a new topic is written to ZooKeeper, the controller elects its leaders, and the
brokers learn of them through watches, a moment later. Kafka answers CreateTopics only once its
metadata cache knows a leader for every new partition (or ``timeout_ms`` passes: the topics that
are still not ready answer REQUEST_TIMED_OUT), so a client that produces right after creating a
topic finds it ready. Here "ready" is: this broker's view has the topic with at least the expected
partitions, each with a leader, and the partitions this broker leads are hosted as leaders by the
replica manager. The replica manager wakes the operation when the topic's metadata changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from broker.purgatory import DelayedOperation


class DelayedCreateTopics(DelayedOperation):
    """Waits until ``ready(topics)`` holds for ``topics`` (name -> partition count)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        timeout_ms: int,
        topics: Mapping[str, int],
        ready: Callable[[Mapping[str, int]], bool],
    ) -> None:
        super().__init__(loop, timeout_ms)
        self.topics = dict(topics)
        self._ready = ready

    def try_complete(self) -> bool:
        if self._ready(self.topics):
            return self.force_complete()
        return False
