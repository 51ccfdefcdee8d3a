"""Conversion between legacy message sets (magic 0/1) and record batches (magic 2).

* Up: Produce v0-2 carries message sets; the log stores magic 2. :func:`legacy_to_batch` turns a
  producer's message set into one batch with relative offsets (0..n-1, the broker assigns the
  base), keeping the codec (or using the topic's) and the v1 timestamps (v0 has none: -1).
* Down: Fetch v0-3 consumers read magic 0/1 only. :func:`batches_to_legacy` converts a log slice
  the way Kafka's RecordsUtil.downConvert does: control batches are dropped, headers are
  dropped, offsets are kept, a compressed batch becomes one wrapper message with the same codec
  (old consumers need wrappers with correct offsets), an uncompressed batch becomes one message
  per record starting at the fetch offset, and entries already at or below the target magic are
  copied as they are. zstd cannot be expressed below magic 2 (UnsupportedCompression, which Kafka
  answers with UNSUPPORTED_COMPRESSION_TYPE).
"""

from __future__ import annotations

from protocol.errors import InvalidRecord
from protocol.records import compression as _compression
from protocol.records.batch import Buffer
from protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from protocol.records.legacy import MAGIC_V1, build_message_set, expand_message, iter_messages
from protocol.records.memory import iter_any_batches
from protocol.records.record import CREATE_TIME, LOG_APPEND_TIME, build_batch


def legacy_to_batch(
    buf: Buffer,
    *,
    compression: int | None = None,
    compression_level: int | None = None,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """A producer's v0/v1 message set as one magic-2 batch with offsets 0..n-1.

    ``compression`` None keeps the source codec (the last compressed wrapper's, as Kafka's
    LogValidator picks it). ``max_decompressed_bytes`` bounds all wrappers together, since
    every record is held until the batch is built. Raises CorruptRecord, InvalidRecord (no
    messages) or the compression errors.
    """
    source_codec = _compression.NONE
    records = []
    budget = max_decompressed_bytes
    for _, message in iter_messages(buf, verify_crc=verify_crc):
        batch = expand_message(message, max_decompressed_bytes=max(budget, 0))
        if batch.compression:
            source_codec = batch.compression
            for record in batch.records:
                budget -= 34 + len(record.key or b"") + len(record.value or b"")
        records.extend(batch.records)
    if not records:
        raise InvalidRecord("no messages in the message set")
    return build_batch(
        records,
        compression=source_codec if compression is None else compression,
        compression_level=compression_level,
    )


def batches_to_legacy(
    buf: Buffer,
    magic: int,
    *,
    fetch_offset: int = 0,
    compression_level: int | None = None,
    verify_crc: bool = False,
    allow_partial: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """A log slice (any formats) down-converted to a magic ``magic`` (0 or 1) message set.

    Records of an uncompressed batch below ``fetch_offset`` are dropped (librdkafka relies on
    it); a trailing partial entry is ignored unless ``allow_partial`` is False. The log was
    checked on append, so CRCs are not verified again unless asked.
    """
    parts: list[bytes] = []
    view = memoryview(buf)
    pos = 0
    for batch in iter_any_batches(
        buf,
        verify_crc=verify_crc,
        allow_partial=allow_partial,
        max_decompressed_bytes=max_decompressed_bytes,
    ):
        size = batch.size
        start = pos
        pos += size
        if batch.is_control:
            continue
        if batch.magic <= magic:
            parts.append(bytes(view[start:pos]))
            continue
        codec = batch.compression
        records = batch.records
        if not codec:
            records = [r for r in records if r.offset >= fetch_offset]
        if not records:
            continue
        log_append = magic == MAGIC_V1 and batch.timestamp_type == LOG_APPEND_TIME
        parts.append(
            build_message_set(
                records,
                magic=magic,
                compression=codec,
                compression_level=compression_level,
                timestamp_type=LOG_APPEND_TIME if log_append else CREATE_TIME,
                log_append_time=batch.max_timestamp if log_append else -1,
                keep_offsets=True,
            )
        )
    return b"".join(parts)
