"""A coordinator's log on this broker's partitions of its internal topic: appends (Kafka's
``CoordinatorPartitionWriter``) and the reads that load a partition.

:class:`PartitionCoordinatorLog` is the one place the coordinators touch partitions: it builds a
record batch of the coordinator's records, appends it to the partition this broker leads, and
calls back once the batch is committed: once the partition's high watermark passes it (every ISR
member has it; at once on a single replica), or with an error if this broker stops leading the
partition first. As Kafka's coordinators write with acks=all, a partition whose ISR is below
``min.insync.replicas`` refuses the write (NOT_ENOUGH_REPLICAS).

Thread-safety: any thread (appends rely on the partition's own thread-safety).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence

from broker.replication.errors import error_of
from broker.replication.replica_manager import ReplicaManager
from coordination.errors import KafkaApiError
from coordination.runtime.runtime import (
    AppendedCallback,
    LoadedRecord,
    OffsetRecord,
    Record,
    TransactionalRecord,
    TransactionMarker,
    WriteCallback,
)
from protocol.error_codes import ErrorCode
from protocol.errors import CorruptRecord, RemoteProtocolError
from protocol.records.control import parse_end_txn_marker
from protocol.records.record import RecordBatchBuilder, iter_record_batches
from storage.errors import StorageError
from storage.log import PartitionLog

log = logging.getLogger(__name__)

#: How much of a partition the loader reads at a time.
LOAD_CHUNK_BYTES = 4 * 1024 * 1024


class PartitionCoordinatorLog:
    """coordination's CoordinatorLog on the partitions of ``topic`` this broker leads."""

    def __init__(self, replica_manager: ReplicaManager, topic: str, *, compression: int) -> None:
        self.replica_manager = replica_manager
        self.topic = topic
        self.compression = compression

    def append(
        self,
        partition: int,
        records: Sequence[Record],
        callback: WriteCallback,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        on_appended: AppendedCallback | None = None,
    ) -> None:
        part = self.replica_manager.get_partition(self.topic, partition)
        if part is None:
            callback(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
        now = time.time_ns() // 1_000_000
        if producer_id >= 0:
            # a TxnOffsetCommit: the producer's transactional batch, without a sequence (the
            # producer state checks only its epoch, as Kafka does for coordinator writes)
            builder = RecordBatchBuilder(
                compression=self.compression,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                transactional=True,
            )
        else:
            builder = RecordBatchBuilder(compression=self.compression)
        for key, value in records:
            builder.append(value, key=key, timestamp=now)
        if part.replicated and part.in_sync_replicas < part.min_insync_replicas:
            # Kafka's coordinators append with acks=all: refused below min.insync.replicas
            callback(ErrorCode.NOT_ENOUGH_REPLICAS)
            return
        try:
            info = part.append_batches_to_leader(bytearray(builder.build()), now_ms=now)
        except (StorageError, KafkaApiError) as e:
            code, message = error_of(e)
            log.warning("%s-%d: coordinator write failed: %s", self.topic, partition, message)
            callback(code)
            return
        if on_appended is not None:
            on_appended(info.first_offset)
        # committed once every ISR member has it (at once on a single replica)
        part.when_committed(info.last_offset + 1, callback)

    def local_log(self, partition: int) -> PartitionLog | None:
        part = self.replica_manager.get_partition(self.topic, partition)
        return part.log if part is not None else None

    def read_for_load(self, partition: int) -> list[LoadedRecord]:
        return read_for_load(
            f"{self.topic}-{partition}", functools.partial(self.local_log, partition)
        )


def read_partition(plog: PartitionLog) -> Iterator[LoadedRecord]:
    """Every record of a coordinator's partition up to its log end (keyless records skipped),
    with its offset (OffsetRecord); a transactional batch's records as TransactionalRecord, a
    transaction marker as TransactionMarker. The log end, not the high watermark, as Kafka's
    loaders read: a new leader's high watermark may not yet cover writes its ISR acknowledged
    under the previous leader, and the new leader's log is the partition's from now on."""
    offset = plog.log_start_offset
    end = plog.log_end_offset
    while offset < end:
        region = plog.read(offset, LOAD_CHUNK_BYTES, max_offset=end)
        if region is None:
            return
        data = region.read()
        advanced = False
        for batch in iter_record_batches(data):
            header = batch.header
            if header.is_control:
                if header.next_offset > offset and header.is_transactional and batch.records:
                    try:
                        marker = parse_end_txn_marker(batch.records[0])
                    except CorruptRecord:
                        pass
                    else:
                        yield TransactionMarker(header.producer_id, marker.committed)
                offset = max(offset, header.next_offset)
                continue
            transactional = header.is_transactional
            for record in batch.records:
                if record.offset >= offset and record.key is not None:
                    if transactional:
                        yield TransactionalRecord(
                            header.producer_id, record.key, record.value, record.offset
                        )
                    else:
                        yield OffsetRecord(record.key, record.value, record.offset)
            if batch.header.next_offset > offset:
                offset = batch.header.next_offset
                advanced = True
        if not advanced:
            return


def read_for_load(name: str, get_log: Callable[[], PartitionLog | None]) -> list[LoadedRecord]:
    """The records of a coordinator's partition to load (``get_log()``: its log, or None). A
    failed read is tried once more; if that fails too, the records read before the failure are
    returned, so the partition is loaded from those rather than answering
    COORDINATOR_LOAD_IN_PROGRESS until leadership moves."""
    records: list[LoadedRecord] = []
    failure = ""
    for attempt in (1, 2):
        records = []
        try:
            plog = get_log()
            if plog is not None:
                for record in read_partition(plog):
                    records.append(record)
            return records
        except (StorageError, RemoteProtocolError, OSError) as e:
            failure = f"{type(e).__name__}: {e}"
        except Exception as e:  # a bug: keep its traceback
            log.exception("reading %s failed", name)
            failure = f"{type(e).__name__}: {e}"
        if attempt == 1:
            log.warning("reading %s failed (%s), retrying", name, failure)
    log.error(
        "reading %s failed again (%s): loading from the %d records read before the failure",
        name,
        failure,
        len(records),
    )
    return records
