"""An idempotent, at-least-once Kafka producer for the sink (and for anything that wants one).

Records are appended per partition into magic-2 batches of up to ``kafka.batch.size`` bytes
(protocol.records' RecordBatchBuilder). When full, or on :meth:`Producer.flush`, batches go out
in one Produce request per leader, at most one unacknowledged batch per partition, so sequence
numbers stay in order through retries. With idempotence (the default with ``acks=all``) the
producer gets an id and epoch with InitProducerId and stamps each batch with them and the
partition's next sequence number when the batch is first sent; a retry (after a timeout, a
dropped connection, NOT_LEADER_OR_FOLLOWER...) resends the same stamped bytes, so the broker
drops a duplicate whose first copy it had written but whose answer was lost. If the broker lost
our producer state (UNKNOWN_PRODUCER_ID, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH) a
new id is fetched and the unacknowledged batches are stamped again: at least once, never lost.

Without a partition a record goes where Kafka's Java producer would put it: murmur2 of the key
modulo the partition count, or a sticky random partition (changed when a batch fills) for a
null key. A topic that does not exist is an error; the producer never creates topics.

Imports no pyspark: examples/pageviews/produce.py uses it on its own.
"""

from __future__ import annotations

import logging
import os
import random
import struct
import time
from collections import deque
from dataclasses import dataclass, field

from protocol.error_codes import ErrorCode
from protocol.partitioner import default_partition
from protocol.records.batch import (
    BASE_SEQUENCE_AT,
    CRC_AT,
    PRODUCER_EPOCH_AT,
    PRODUCER_ID_AT,
    crc_of,
)
from protocol.records.record import RecordBatchBuilder
from spark_connector.client import (
    BrokerUnavailable,
    KafkaClient,
    KafkaClientError,
    KafkaErrorResponse,
    TopicNotFound,
    TopicPartition,
    _Retry,
    is_retriable,
    shared_client,
)
from spark_connector.options import SinkOptions

log = logging.getLogger(__name__)

_PRODUCER_STATE_LOST = frozenset(
    {
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_EPOCH,
    }
)


# --- the producer ---------------------------------------------------------------------------------


@dataclass
class _Batch:
    tp: TopicPartition
    data: bytes
    count: int
    #: (producer id, epoch, base sequence) it was sent with; kept for retries
    stamp: tuple[int, int, int] | None = None


@dataclass
class _PartitionQueue:
    builder: RecordBatchBuilder | None = None
    ready: deque[_Batch] = field(default_factory=deque)


#: producerId int64, producerEpoch int16, baseSequence int32: adjacent, inside the CRC
_STAMP = struct.Struct(">qhi")
assert PRODUCER_EPOCH_AT == PRODUCER_ID_AT + 8 and BASE_SEQUENCE_AT == PRODUCER_EPOCH_AT + 2


def stamp_batch(batch: bytes, producer_id: int, epoch: int, base_sequence: int) -> bytes:
    """``batch`` with its producer id, epoch and base sequence set and its CRC recomputed."""
    out = bytearray(batch)
    _STAMP.pack_into(out, PRODUCER_ID_AT, producer_id, epoch, base_sequence)
    struct.pack_into(">I", out, CRC_AT, crc_of(out, 0, len(out)))
    return bytes(out)


class Producer:
    """An idempotent, at-least-once producer for one worker process (not thread-safe).

    Records are appended per partition into batches of up to ``kafka.batch.size`` bytes; full
    batches are sent at once, the rest by :meth:`flush`. At most one batch per partition is
    unacknowledged at a time, so sequence numbers stay in order through retries.
    """

    def __init__(self, options: SinkOptions, client: KafkaClient) -> None:
        self.options = options
        self.client = client
        self.producer_id = -1
        self.epoch = -1
        self.idempotent = options.idempotence
        self.sequences: dict[TopicPartition, int] = {}
        self.queues: dict[TopicPartition, _PartitionQueue] = {}
        self.partition_counts: dict[str, int] = {}
        self.sticky: dict[str, int] = {}
        self.ready_bytes = 0
        self.sent_records = 0

    # -- producer id ----------------------------------------------------------------------------

    def _ensure_producer_id(self) -> None:
        if not self.idempotent or self.producer_id >= 0:
            return
        got = self.client.init_producer_id()
        if got is None:
            if self.options.idempotence_required:
                raise KafkaClientError(
                    "kafka.enable.idempotence is true but the broker does not offer InitProducerId"
                )
            log.warning("the broker does not offer InitProducerId: producing without idempotence")
            self.idempotent = False
            return
        self.producer_id, self.epoch = got
        self.sequences.clear()
        log.info("idempotent producer id %d epoch %d", self.producer_id, self.epoch)

    def _reset_producer_id(self, why: str) -> None:
        log.warning("producer state lost (%s): getting a new producer id", why)
        self.producer_id = -1
        for queue in self.queues.values():
            for batch in queue.ready:
                batch.stamp = None
        self._ensure_producer_id()

    # -- topics ---------------------------------------------------------------------------------

    def partitions_of(self, topic: str) -> int:
        count = self.partition_counts.get(topic)
        if count is None:

            def attempt() -> int:
                found = self.client.partitions_for([topic])
                if topic not in found:
                    raise TopicNotFound([topic])
                if not found[topic]:  # being created: no partitions yet
                    raise _Retry(None)
                return len(found[topic])

            count = self.partition_counts[topic] = self.client.retrying(
                f"partitions of {topic}", attempt
            )
        return count

    # -- appending ------------------------------------------------------------------------------

    def append(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | tuple[()],
        timestamp_ms: int,
    ) -> None:
        count = self.partitions_of(topic)
        if partition is None:
            if key is not None:
                partition = default_partition(key, count)
            else:
                partition = self.sticky.get(topic)
                if partition is None:
                    partition = self.sticky[topic] = random.randrange(count)
        elif not 0 <= partition < count:
            raise KafkaClientError(f"partition {partition} of topic {topic!r} does not exist")
        tp = (topic, partition)
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = _PartitionQueue()
        builder = queue.builder
        if builder is not None:
            # A batch takes records while they fit in batch.size (a bigger record goes alone),
            # so batches stay under the broker's message.max.bytes when batch.size does.
            size = 24 + (len(key) if key else 0) + (len(value) if value else 0)
            for header_key, header_value in headers:
                size += 10 + len(header_key) + (len(header_value) if header_value else 0)
            if builder.size_in_bytes() + size > self.options.batch_size:
                self._seal(tp, queue)
                builder = None
                if key is None and partition == self.sticky.get(topic):
                    del self.sticky[topic]  # the next null-key batch goes elsewhere
                if self.ready_bytes >= self.options.max_request_size:
                    self._send_ready(wait_all=False)
        if builder is None:
            builder = queue.builder = RecordBatchBuilder(compression=self.options.compression)
        builder.append(value, key=key, timestamp=timestamp_ms, headers=headers)

    def _seal(self, tp: TopicPartition, queue: _PartitionQueue) -> None:
        builder = queue.builder
        if builder is None or not len(builder):
            return
        data = builder.build()
        queue.ready.append(_Batch(tp, data, len(builder)))
        queue.builder = None
        self.ready_bytes += len(data)

    def flush(self) -> None:
        """Sends everything appended and waits until all of it is acknowledged."""
        for tp, queue in self.queues.items():
            self._seal(tp, queue)
        self._send_ready(wait_all=True)
        self.sticky.clear()

    # -- sending --------------------------------------------------------------------------------

    def _stamp(self, batch: _Batch) -> bytes:
        if not self.idempotent:
            return batch.data
        if batch.stamp is None or batch.stamp[0] != self.producer_id:
            sequence = self.sequences.get(batch.tp, 0)
            self.sequences[batch.tp] = (sequence + batch.count) & 0x7FFFFFFF
            batch.stamp = (self.producer_id, self.epoch, sequence)
        pid, epoch, sequence = batch.stamp
        return stamp_batch(batch.data, pid, epoch, sequence)

    def _send_ready(self, *, wait_all: bool) -> None:
        """Sends the oldest ready batch of every partition, round after round, until nothing
        is ready (``wait_all``) or the ready bytes are back under the request size."""
        deadline = time.monotonic() + self.options.delivery_timeout_ms / 1000
        backoff = self.client.backoff()
        while True:
            heads = [q.ready[0] for q in self.queues.values() if q.ready]
            if not heads:
                return
            if not wait_all and self.ready_bytes < self.options.max_request_size:
                return
            self._ensure_producer_id()
            failed = self._send_round(heads)
            if failed:
                if time.monotonic() > deadline:
                    raise KafkaClientError(
                        f"records not acknowledged within kafka.delivery.timeout.ms "
                        f"({self.options.delivery_timeout_ms} ms): {failed}"
                    )
                backoff.sleep()
                try:
                    self.client.refresh_metadata({b.tp[0] for b in heads})
                except KafkaClientError as e:
                    log.debug("metadata refresh failed: %s", e)
            else:
                backoff.reset()

    def _send_round(self, heads: list[_Batch]) -> str | None:
        """One request per leader with the given batches; returns why some must be retried."""
        client = self.client
        by_leader: dict[int, list[_Batch]] = {}
        problems: list[str] = []
        try:
            client.ensure_metadata({b.tp[0] for b in heads})
        except KafkaClientError as e:
            return f"metadata: {e}"
        for batch in heads:
            try:
                leader = client.leader_for(*batch.tp)
            except Exception as e:  # noqa: BLE001 - _Retry for an unknown leader
                problems.append(f"{batch.tp[0]}-{batch.tp[1]}: {e}")
                continue
            by_leader.setdefault(leader, []).append(batch)
        in_flight = []
        for leader, batches in by_leader.items():
            payload = {b.tp: self._stamp(b) for b in batches}
            try:
                conn, cid, expect = client.send_produce(
                    leader,
                    payload,
                    acks=self.options.acks,
                    timeout_ms=self.options.request_timeout_ms,
                )
            except BrokerUnavailable as e:
                problems.append(f"broker {leader}: {e}")
                continue
            in_flight.append((conn, cid, expect, batches))
        for conn, cid, expect, batches in in_flight:
            if not expect:
                for batch in batches:
                    self._acknowledged(batch)
                continue
            try:
                results = client.receive_produce(conn, cid)
            except BrokerUnavailable as e:
                problems.append(f"broker {conn.node_id}: {e}")
                continue
            for batch in batches:
                result = results.get(batch.tp)
                code = ErrorCode.UNKNOWN_SERVER_ERROR if result is None else result.error_code
                if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    self._acknowledged(batch)
                elif code in _PRODUCER_STATE_LOST:
                    if batch.stamp is not None and batch.stamp[0] == self.producer_id:
                        self._reset_producer_id(ErrorCode.of(code).name)
                    problems.append(f"{batch.tp[0]}-{batch.tp[1]}: {ErrorCode.of(code).name}")
                elif is_retriable(code) and code != ErrorCode.CORRUPT_MESSAGE:
                    problems.append(f"{batch.tp[0]}-{batch.tp[1]}: {ErrorCode.of(code).name}")
                else:
                    detail = getattr(result, "error_message", None)
                    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
                        detail = (
                            f"a batch of {len(batch.data)} bytes is too large for the broker; "
                            "lower kafka.batch.size (or raise the topic's max.message.bytes)"
                        )
                    raise KafkaErrorResponse(
                        code, f"Produce to {batch.tp[0]}-{batch.tp[1]}", detail
                    )
        return "; ".join(problems) or None

    def _acknowledged(self, batch: _Batch) -> None:
        queue = self.queues[batch.tp]
        if queue.ready and queue.ready[0] is batch:
            queue.ready.popleft()
            self.ready_bytes -= len(batch.data)
            self.sent_records += batch.count


_PRODUCERS: dict[SinkOptions, tuple[int, Producer]] = {}


def shared_producer(options: SinkOptions) -> Producer:
    """One producer per sink configuration per worker process (a new one after a fork)."""
    pid = os.getpid()
    entry = _PRODUCERS.get(options)
    if entry is None or entry[0] != pid:
        entry = (pid, Producer(options, shared_client(options.client)))
        _PRODUCERS[options] = entry
    return entry[1]
