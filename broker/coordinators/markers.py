"""Transaction markers (Kafka's ``TransactionMarkerChannelManager`` and the leader side of
``WriteTxnMarkers``).

When a transaction is decided, its coordinator has every partition of it end the transaction
with a commit or abort control batch. :class:`TransactionMarkerChannel` is the coordinator's
:class:`~coordination.txn.shard.MarkerSender`: it finds each partition's leader in the
metadata view; partitions this broker leads get their marker appended here
(:func:`write_markers_locally`), the others are sent in one ``WriteTxnMarkers`` request per
leader (broker to broker with :mod:`protocol.client`, on the main event loop). Partitions that
fail with a retriable error (a leader moving, a broker unreachable) are tried again after
:data:`RETRY_BACKOFF_S` with the leader found anew; a partition whose topic was deleted counts as
done; INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED (a newer producer or coordinator
wrote a marker meanwhile) ends the job without completing it, as in Kafka.

:func:`write_markers_locally` is also the WriteTxnMarkers handler's work; a marker written to a
``__consumer_offsets`` partition completes the producer's transactional offset commits there
(Kafka's ``onTransactionCompleted``).

Thread-safety: :meth:`TransactionMarkerChannel.send_markers` may be called from any thread (it
appends the local markers there: appends are thread-safe); the rest runs on the main loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from broker.interbroker import AsyncInterBrokerLinks
from broker.replication.errors import error_of
from broker.replication.replica_manager import ReplicaManager
from broker.security.inter_broker import InterBrokerSecurity
from coordination.errors import KafkaApiError
from coordination.group.coordinator import GroupCoordinator
from coordination.metadata.store import MetadataStore
from coordination.metadata.view import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from storage.errors import StorageError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

#: wait before retrying partitions whose marker failed
RETRY_BACKOFF_S = 0.1
#: how long a broker-to-broker request may take before the connection is dropped
REQUEST_TIMEOUT_S = 30.0
#: errors that end a marker job without completing the transaction
_ABANDON = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


def write_markers_locally(
    replica_manager: ReplicaManager,
    groups: GroupCoordinator | None,
    *,
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    coordinator_epoch: int,
    partitions: Iterable[TopicPartition],
    now_ms: int,
) -> dict[TopicPartition, ErrorCode]:
    """Appends the marker to each partition this broker leads; one error code per partition."""
    results: dict[TopicPartition, ErrorCode] = {}
    for tp in partitions:
        part = replica_manager.get_partition(*tp)
        if part is None:
            results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        try:
            part.append_txn_marker(
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                committed=committed,
                coordinator_epoch=coordinator_epoch,
                now_ms=now_ms,
            )
        except (KafkaApiError, StorageError) as e:
            code, message = error_of(e)
            log.log(
                logging.INFO if code in _ABANDON else logging.WARNING,
                "writing the %s marker of producer %d to %s-%d failed: %s",
                "commit" if committed else "abort",
                producer_id,
                tp[0],
                tp[1],
                message,
            )
            results[tp] = code
            continue
        results[tp] = ErrorCode.NONE
        if tp[0] == OFFSETS_TOPIC and groups is not None:
            groups.complete_transaction(tp[1], producer_id, committed)
    return results


@dataclass(slots=True)
class _Job:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    pending: set[TopicPartition]
    done: Callable[[], None]
    in_flight: set[TopicPartition] = field(default_factory=set)
    finished: bool = False


class TransactionMarkerChannel:
    """coordination's MarkerSender for this broker. See the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        broker_id: int,
        metadata: MetadataStore,
        replica_manager: ReplicaManager,
        listener: str | None,
        clock: Callable[[], int],
        security: InterBrokerSecurity | None = None,
    ) -> None:
        self.security = security
        self.loop = loop
        self.broker_id = broker_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.listener = listener
        self.clock = clock
        #: set once the group coordinator exists (markers to __consumer_offsets complete it)
        self.groups: GroupCoordinator | None = None
        self._links = AsyncInterBrokerLinks(
            lambda: metadata.view,
            listener=listener,
            client_id=f"broker-{broker_id}-txn-markers",
            apis={ApiKey.WRITE_TXN_MARKERS: (1, 1)},
            security=security,
            timeout_s=REQUEST_TIMEOUT_S,
        )
        self._stopped = False
        self._tasks: set[asyncio.Task[None]] = set()

    def send_markers(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        job = _Job(
            transactional_id,
            producer_id,
            producer_epoch,
            committed,
            coordinator_epoch,
            set(partitions),
            done,
        )
        # partitions this broker leads get their markers at once, on the caller's thread (so a
        # client's next transaction seldom finds this one still completing); the rest, and
        # retries, on the main loop
        if not self._write_local(job, self._local_partitions(job)):
            return
        self._finish_if_done(job)
        if job.finished:
            return
        try:
            self.loop.call_soon_threadsafe(self._attempt, job)
        except RuntimeError:
            pass  # the main loop is closed: the broker is stopping

    def shutdown(self) -> None:
        self._stopped = True
        self._links.close()

    # -- on the main loop ------------------------------------------------------------------------

    def _finish_if_done(self, job: _Job) -> None:
        if not job.pending and not job.in_flight and not job.finished:
            job.finished = True
            job.done()

    def _apply(self, job: _Job, results: dict[TopicPartition, ErrorCode]) -> bool:
        """Takes one round's results; False when the job was abandoned."""
        topics = self.metadata.view.topics
        for tp, code in results.items():
            job.in_flight.discard(tp)
            if code == ErrorCode.NONE or tp[0] not in topics:
                job.pending.discard(tp)
            elif code in _ABANDON:
                log.info(
                    "giving up the markers of transaction %s (producer %d): %s",
                    job.transactional_id,
                    job.producer_id,
                    code.name,
                )
                job.finished = True
                return False
        return True

    def _local_partitions(self, job: _Job) -> list[TopicPartition]:
        view = self.metadata.view
        out = []
        for tp in job.pending:
            state = view.partition(*tp)
            if state is not None and state.leader == self.broker_id:
                out.append(tp)
        return out

    def _write_local(self, job: _Job, partitions: list[TopicPartition]) -> bool:
        """Appends the markers of ``partitions`` here; False when the job was abandoned."""
        if not partitions:
            return True
        results = write_markers_locally(
            self.replica_manager,
            self.groups,
            producer_id=job.producer_id,
            producer_epoch=job.producer_epoch,
            committed=job.committed,
            coordinator_epoch=job.coordinator_epoch,
            partitions=partitions,
            now_ms=self.clock(),
        )
        return self._apply(job, results)

    def _attempt(self, job: _Job) -> None:
        if self._stopped or job.finished:
            return
        view = self.metadata.view
        local: list[TopicPartition] = []
        remote: dict[int, list[TopicPartition]] = {}
        for tp in list(job.pending - job.in_flight):
            topic = view.topics.get(tp[0])
            if topic is None or tp[1] >= len(topic.partitions):
                job.pending.discard(tp)  # deleted: nothing to end there
                continue
            leader = topic.partitions[tp[1]].leader
            if leader == self.broker_id:
                local.append(tp)
            elif leader >= 0 and leader in view.brokers:
                remote.setdefault(leader, []).append(tp)
        if not self._write_local(job, local):
            return
        for broker, tps in remote.items():
            job.in_flight.update(tps)
            task = self.loop.create_task(self._send_remote(job, broker, tps))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._finish_if_done(job)
        if job.pending and not job.finished and len(job.in_flight) < len(job.pending):
            self.loop.call_later(RETRY_BACKOFF_S, self._attempt, job)

    async def _send_remote(self, job: _Job, broker: int, tps: list[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        request = WriteTxnMarkersRequest(
            markers=[
                WritableTxnMarker(
                    producer_id=job.producer_id,
                    producer_epoch=job.producer_epoch,
                    transaction_result=job.committed,
                    topics=[
                        WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                        for t, ps in by_topic.items()
                    ],
                    coordinator_epoch=job.coordinator_epoch,
                )
            ]
        )
        results = dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        try:
            link = self._links.get(broker)
            if link is not None:
                answer = await link.request(request)
                for marker in answer.markers:
                    for t in marker.topics:
                        for p in t.partitions:
                            if (t.name, p.partition_index) in results:
                                results[(t.name, p.partition_index)] = ErrorCode.of(p.error_code)
        except (TimeoutError, OSError, ProtocolError, ConnectionError) as e:
            log.warning("sending transaction markers to broker %d failed: %s", broker, e)
        if not self._apply(job, results):
            return
        self._finish_if_done(job)
        if job.pending and not job.finished:
            self.loop.call_later(RETRY_BACKOFF_S, self._attempt, job)
