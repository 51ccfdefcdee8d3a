"""The record-level view storage needs, over :mod:`protocol.records.record`.

The append and read paths never decode records; three things do: ListOffsets by timestamp (the
first record with a timestamp >= T, and the record with the largest timestamp), compaction
(keys, tombstones, rebuilding batches) and ``dump-log --records``. They go through this module,
which turns the codec's peer-fault exceptions into :class:`CorruptLogData` (a segment that fails
to decode is our problem, not a client's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from protocol.errors import ProtocolError
from protocol.records import batch as rb
from protocol.records import record as rr
from storage.errors import StorageError

Record = rr.Record


class CorruptLogData(StorageError):
    """A stored batch whose records cannot be decoded (CORRUPT_MESSAGE)."""

    error_code = 2


def decode(batch: rb.Buffer, pos: int = 0) -> rr.RecordBatch:
    """The batch at ``pos`` with all its records (decompressed); no CRC check."""
    try:
        return rr.decode_batch(batch, pos, verify_crc=False)
    except ProtocolError as e:
        raise CorruptLogData(str(e)) from e


def offsets_and_timestamps(batch: rb.Buffer) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of every record of one batch; a LogAppendTime batch's records all
    carry its maxTimestamp."""
    for record in decode(batch).records:
        yield record.offset, record.timestamp


def rebuild(
    header: rb.BatchHeader,
    records: Sequence[Record],
    *,
    delete_horizon_ms: int | None,
) -> bytes:
    """A batch like ``header``'s, holding only ``records`` (compaction): same base offset,
    last offset delta, producer id/epoch/base sequence, leader epoch, flags and codec, so the
    first/last offsets and sequences survive (Kafka's record batch format); empty if
    ``records`` is."""
    log_append = header.timestamp_type == 1
    try:
        builder = rr.RecordBatchBuilder(
            compression=header.compression,
            timestamp_type=rr.LOG_APPEND_TIME if log_append else rr.CREATE_TIME,
            log_append_time=header.max_timestamp if log_append else rb.NO_TIMESTAMP,
            base_offset=header.base_offset,
            partition_leader_epoch=header.partition_leader_epoch,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            transactional=header.is_transactional,
            control=header.is_control,
            delete_horizon_ms=delete_horizon_ms,
        )
        for record in records:
            builder.append(
                record.value,
                key=record.key,
                timestamp=record.timestamp,
                headers=record.headers,
                offset=record.offset,
                attributes=record.attributes,
            )
        return builder.build(last_offset_delta=header.last_offset_delta)
    except ProtocolError as e:
        raise CorruptLogData(f"cannot rebuild batch at offset {header.base_offset}: {e}") from e


def delete_horizon_ms(header: rb.BatchHeader) -> int | None:
    """The batch's delete horizon (KIP-534: baseTimestamp when the flag is set), or None."""
    if header.attributes & rb.DELETE_HORIZON_MASK:
        return header.base_timestamp
    return None


def empty(header: rb.BatchHeader) -> bytes:
    """What compaction keeps of a batch whose records all went when the batch must stay (its
    producer's last, or the last of a cleaning round): Kafka's empty batch header, with the
    original offsets, producer fields, max timestamp and flags."""
    return rr.build_empty_batch(
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        partition_leader_epoch=header.partition_leader_epoch,
        timestamp_type=header.timestamp_type,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        transactional=header.is_transactional,
        control=header.is_control,
    )
