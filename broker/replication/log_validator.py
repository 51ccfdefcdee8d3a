"""Produce-side validation of record batches (Kafka's LogValidator), before anything is appended.

The fast path reads only batch headers: whole batches, magic 2, CRC-32C, record counts, no control
batches from clients, timestamps within the topic's bounds. Records are decoded only when the
topic demands it: a legacy message set (Produce v0-2) is converted to magic 2, and a topic
``compression.type`` other than ``producer`` that differs from the batch's codec recompresses.
The log itself checks ``max.message.bytes`` and applies ``message.timestamp.type=LogAppendTime``
when it appends (storage.log.PartitionLog.append).
"""

from __future__ import annotations

from dataclasses import dataclass

from coordination.errors import KafkaApiError
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.records import batch as rb
from protocol.records import convert
from protocol.records.record import RecordBatchBuilder, iter_record_batches

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ZSTD = CODECS["zstd"]
#: KIP-110: zstd needs Produce v7+ and Fetch v10+
ZSTD_MIN_PRODUCE_VERSION = 7
ZSTD_MIN_FETCH_VERSION = 10


class RecordError(KafkaApiError):
    """A per-partition produce failure."""


@dataclass(frozen=True)
class TopicRules:
    """What a topic's configs ask of produced batches (parsed once per config change)."""

    compression_type: str = "producer"
    log_append_time: bool = False
    timestamp_before_max_ms: int = 2**63 - 1
    timestamp_after_max_ms: int = 3600000


def validate(
    records: memoryview | bytes | None, *, api_version: int, rules: TopicRules, now_ms: int
) -> bytearray | memoryview:
    """The batches to append (offsets still to be assigned by the log), or RecordError."""
    if records is None or len(records) == 0:
        raise RecordError("Produce request carries no records", ErrorCode.INVALID_RECORD)
    buffer: bytearray | memoryview = (
        records if isinstance(records, memoryview) else memoryview(bytearray(records))
    )
    try:
        magic = rb.peek_magic(buffer, 0)
        if magic < rb.MAGIC_V2:
            if api_version >= 3:
                raise RecordError(
                    f"Produce v{api_version} needs magic 2 record batches, got magic {magic}",
                    ErrorCode.INVALID_RECORD,
                )
            buffer = bytearray(convert.legacy_to_batch(buffer))
        elif magic != rb.MAGIC_V2:
            raise RecordError(f"unknown record magic {magic}", ErrorCode.CORRUPT_MESSAGE)
        headers = rb.validate_batches(buffer)
    except RemoteProtocolError as e:
        raise RecordError(str(e), ErrorCode.of(e.error_code)) from None

    for h in headers:
        if h.compression == ZSTD and api_version < ZSTD_MIN_PRODUCE_VERSION:
            # Kafka's rule (KIP-110): a client that may send zstd uses Produce v7+
            raise RecordError(
                f"zstd-compressed batches need Produce v{ZSTD_MIN_PRODUCE_VERSION} or later",
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            )
        if not rules.log_append_time and h.timestamp_type == 0:
            _check_timestamp(h.max_timestamp, now_ms, rules)
            _check_timestamp(h.base_timestamp, now_ms, rules)

    wanted = rules.compression_type
    if wanted != "producer" and any(h.compression != CODECS[wanted] for h in headers):
        buffer = _recompress(buffer, CODECS[wanted])

    return buffer


def _check_timestamp(ts: int, now_ms: int, rules: TopicRules) -> None:
    if ts < 0:
        return
    if now_ms - ts > rules.timestamp_before_max_ms or ts - now_ms > rules.timestamp_after_max_ms:
        raise RecordError(
            f"Timestamp {ts} of message is out of range. The timestamp should be within "
            f"[{now_ms - rules.timestamp_before_max_ms}, {now_ms + rules.timestamp_after_max_ms}]",
            ErrorCode.INVALID_TIMESTAMP,
        )


def _recompress(buffer: bytearray | memoryview, codec: int) -> bytearray:
    """Rewrites every batch with the topic's codec, keeping producer ids, epochs, sequences,
    timestamps and offset deltas (Kafka's LogValidator does the same)."""
    out = bytearray()
    try:
        for batch in iter_record_batches(buffer, verify_crc=False):
            h = batch.header
            builder = RecordBatchBuilder(
                compression=codec,
                timestamp_type=h.timestamp_type,
                base_offset=h.base_offset,
                producer_id=h.producer_id,
                producer_epoch=h.producer_epoch,
                base_sequence=h.base_sequence,
                transactional=h.is_transactional,
            )
            for r in batch.records:
                builder.append(
                    r.value, key=r.key, timestamp=r.timestamp, headers=r.headers, offset=r.offset
                )
            out += builder.build()
    except RemoteProtocolError as e:
        raise RecordError(str(e), ErrorCode.of(e.error_code)) from None
    return out
