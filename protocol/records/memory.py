"""A buffer of record batches in any format (Kafka's MemoryRecords): magic 2 batches and legacy
magic 0/1 entries may follow each other, as in a log written by several Kafka versions.

Every entry keeps its magic byte at position 16, so the format is decided entry by entry.
"""

from __future__ import annotations

from collections.abc import Iterator

from protocol.errors import CorruptRecord
from protocol.records.batch import MAGIC_AT, MAGIC_V2, Buffer, batch_size_at
from protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from protocol.records.legacy import LegacyBatch, expand_message, read_message
from protocol.records.record import Record, RecordBatch, decode_batch


def iter_any_batches(
    buf: Buffer,
    *,
    verify_crc: bool = True,
    allow_partial: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[RecordBatch | LegacyBatch]:
    """Every batch (magic 2) or legacy entry (magic 0/1) in ``buf``, decoded. Both kinds have
    ``records``, ``magic``, ``base_offset``, ``last_offset``, ``compression``,
    ``timestamp_type``, ``max_timestamp``, ``is_control`` and ``size``. ``allow_partial``
    ignores an entry cut short at the end (Fetch responses may end with one)."""
    pos = 0
    end = len(buf)
    while pos < end:
        size = batch_size_at(buf, pos)
        if size < 0 or pos + size > end or end - pos <= MAGIC_AT:
            if allow_partial:
                return
            raise CorruptRecord(f"entry at position {pos} is cut short at {end - pos} bytes")
        magic = buf[pos + MAGIC_AT]
        batch: RecordBatch | LegacyBatch
        if magic == MAGIC_V2:
            batch = decode_batch(
                buf, pos, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes
            )
        else:
            message = read_message(buf, pos, verify_crc=verify_crc)
            batch = expand_message(message, max_decompressed_bytes=max_decompressed_bytes)
        yield batch
        pos += batch.size


def iter_records(
    buf: Buffer,
    *,
    verify_crc: bool = True,
    allow_partial: bool = False,
    skip_control: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[Record]:
    """Every record in ``buf``, any format, in order; control batches skipped by default."""
    for batch in iter_any_batches(
        buf,
        verify_crc=verify_crc,
        allow_partial=allow_partial,
        max_decompressed_bytes=max_decompressed_bytes,
    ):
        if skip_control and batch.is_control:
            continue
        yield from batch.records
