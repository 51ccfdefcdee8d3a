"""A produce waiting a moment for a leadership this broker is about to learn of (purgatory
"topic", keyed by topic name).

In ZooKeeper mode every broker learns of a new partition leader through its own watch. When a
leader dies, the controller elects another ISR member and writes the partition's state; a client
may then read the new leader from a broker whose watch fired first and send its records to the
new leader before that broker's own watch has fired. Answering NOT_LEADER_OR_FOLLOWER then is
correct but harmful: an idempotent producer with several requests in flight gets
NOT_LEADER_OR_FOLLOWER for one and OUT_OF_ORDER_SEQUENCE_NUMBER for the next (accepted a moment
later, once the watch fired), and some clients (librdkafka) recover from that by re-sequencing
the whole producer, which can write a record twice. (Kafka's controller makes this window
narrow by sending LeaderAndIsr to the new leader before UpdateMetadata to the other brokers.)

So a produce for a partition this broker follows, from an ISR it belongs to, whose leader in
this broker's view is not a live broker (or that this broker is the preferred replica of)
waits, briefly, for the partition's state to change: it is appended if this broker then leads
the partition, and answered NOT_LEADER_OR_FOLLOWER otherwise, or when the wait ends. The
connection's next requests wait behind it, as Kafka handles one request per connection at a
time, so their order is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from broker.purgatory import DelayedOperation

TopicPartition = tuple[str, int]


class DelayedLeadership(DelayedOperation):
    """Waits until ``settled(partition, epoch)`` holds for every partition of ``epochs``
    (partition -> the leader epoch this broker had applied when the wait began)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        timeout_ms: int,
        epochs: Mapping[TopicPartition, int],
        settled: Callable[[TopicPartition, int], bool],
    ) -> None:
        super().__init__(loop, timeout_ms)
        self.epochs = dict(epochs)
        self._settled = settled

    def try_complete(self) -> bool:
        if all(self._settled(tp, epoch) for tp, epoch in self.epochs.items()):
            return self.force_complete()
        return False
