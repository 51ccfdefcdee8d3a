"""Writing ISR changes, and finding followers that fell behind (Kafka's ``AlterPartitionManager``
and the replica manager's ``isr-expiration`` task).

A leader's :class:`~broker.replication.partition.Partition` proposes a new ISR (a follower caught
up, or followers fell behind) while it handles a fetch or a periodic check; the proposal must be
written to the metadata store — in ZooKeeper mode a conditional write of the partition's state
znode at its version, announced under ``/isr_change_notification``, as Kafka's leaders did before
AlterPartition (:meth:`~coordination.metadata.store.MetadataStore.alter_partition`). That write
blocks on ZooKeeper, so it never runs on a network thread: :class:`IsrManager` owns one thread
that writes the proposals in order and tells the partition the outcome.

* Written: the partition takes the new ISR and partition epoch (its high watermark may move).
* Refused as stale (the controller changed the state first: a new leader, a dead replica): the
  partition drops the proposal; the metadata store's next view brings the state that won.
* The store unavailable (ZooKeeper down): retried with a back-off while the partition still
  leads at the same epoch.

Every ``replica.lag.time.max.ms / 2`` the thread also asks each partition this broker leads to
check its followers (:meth:`~broker.replication.partition.Partition.maybe_shrink_isr`).

Thread-safety: :meth:`IsrManager.submit` may be called from any thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordination.errors import InvalidUpdateVersion, KafkaApiError, UnknownTopic
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import LeaderAndIsr

if TYPE_CHECKING:
    from broker.replication.partition import Partition

log = logging.getLogger(__name__)

#: How long a proposal waits before it is tried again when the store is unavailable.
RETRY_BACKOFF_S = 0.5


@dataclass(slots=True)
class _Proposal:
    partition: Partition
    change: LeaderAndIsr
    partition_epoch: int
    attempts: int = 0


class IsrManager:
    """See the module docstring. ``partitions()`` lists the partitions to check for lagging
    followers."""

    def __init__(
        self,
        metadata: MetadataStore,
        *,
        replica_lag_time_max_ms: int,
        partitions: Callable[[], Iterable[Partition]],
    ) -> None:
        self.metadata = metadata
        self.check_interval_s = max(replica_lag_time_max_ms / 2000, 0.05)
        self._partitions = partitions
        self._queue: queue.Queue[_Proposal | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopped = False
        #: counters for the metrics (Kafka's IsrShrinksPerSec / IsrExpandsPerSec / failed)
        self.shrinks = 0
        self.expands = 0
        self.failures = 0

    def startup(self) -> None:
        self._thread = threading.Thread(target=self._run, name="isr-manager", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self._stopped = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(10)

    def submit(self, partition: Partition, change: LeaderAndIsr, *, partition_epoch: int) -> None:
        """Queues a proposal; the partition hears back through ``isr_change_written`` or
        ``isr_change_failed``."""
        self._queue.put(_Proposal(partition, change, partition_epoch))

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        next_check = time.monotonic() + self.check_interval_s
        while not self._stopped:
            timeout = max(next_check - time.monotonic(), 0)
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = None
            else:
                if item is None:
                    return
            if item is not None:
                self._write(item)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + self.check_interval_s
                self._check_followers()

    def _check_followers(self) -> None:
        for partition in list(self._partitions()):
            try:
                partition.maybe_shrink_isr()
            except Exception:
                log.exception("checking the followers of %s failed", partition)

    def _write(self, proposal: _Proposal) -> None:
        part = proposal.partition
        change = proposal.change
        if not part.is_leader or part.leader_epoch != change.leader_epoch:
            part.isr_change_failed(change, "no longer the leader at that epoch")
            return
        if part.offline:
            # its log dir failed: the controller decides its ISR now (a leader that cannot
            # serve its followers must not shrink the ISR to itself)
            part.isr_change_failed(change, "the partition's log dir is offline")
            return
        old = part.isr
        try:
            state = self.metadata.alter_partition(
                part.topic, part.index, change, partition_epoch=proposal.partition_epoch
            )
        except (InvalidUpdateVersion, UnknownTopic) as e:
            self.failures += 1
            part.isr_change_failed(change, str(e))
            return
        except KafkaApiError as e:
            self.failures += 1
            proposal.attempts += 1
            log.warning("%s: writing ISR %s failed (%s), retrying", part, list(change.isr), e)
            threading.Timer(RETRY_BACKOFF_S, self._queue.put, args=(proposal,)).start()
            return
        except Exception as e:
            self.failures += 1
            log.exception("%s: writing ISR %s failed", part, list(change.isr))
            part.isr_change_failed(change, repr(e))
            return
        if len(state.isr) > len(old):
            self.expands += 1
        elif len(state.isr) < len(old):
            self.shrinks += 1
        part.isr_change_written(state)
