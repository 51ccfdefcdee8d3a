"""Produce-side validation of record batches (Kafka's ``LogValidator``), before anything is
appended.

Every batch: whole, magic 2, CRC-32C, record count consistent with its offset range, no control
batches from clients, a base sequence with a producer id. Every record of every batch
(:func:`protocol.records.check.check_records`, compiled where a C compiler was available; a
compressed batch is decompressed for it): its structure (lengths within the record and the batch,
offset deltas, header counts), a key on every record of a compacted topic, and a timestamp within
``message.timestamp.before.max.ms`` / ``after.max.ms`` of now (CreateTime). A failure rejects the
whole partition's append with Kafka's error: INVALID_RECORD for a broken record (or a keyless one
on a compacted topic), INVALID_TIMESTAMP for a timestamp, CORRUPT_MESSAGE for a bad CRC or a
batch that cannot be decompressed; keyless records and timestamps are named one by one in
``record_errors`` (KIP-467), every such record of the batch, as Kafka names them. As in Kafka,
a Produce v3+ request carries exactly one batch per partition, and its base offset is 0.

A legacy message set (Produce v0-2) is converted to magic 2 first; a topic ``compression.type``
other than ``producer`` that differs from the batch's codec recompresses. The log itself checks
``max.message.bytes`` and applies ``message.timestamp.type=LogAppendTime`` when it appends
(storage.log.PartitionLog.append).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NoReturn

from coordination.errors import KafkaApiError
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.records import batch as rb
from protocol.records import check, convert
from protocol.records.compression import decompress
from protocol.records.record import RecordBatchBuilder, iter_record_batches

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ZSTD = CODECS["zstd"]
#: KIP-110: zstd needs Produce v7+ and Fetch v10+
ZSTD_MIN_PRODUCE_VERSION = 7
ZSTD_MIN_FETCH_VERSION = 10


class RecordError(KafkaApiError):
    """A per-partition produce failure; ``record_errors`` are (record index in its batch, message)
    for the records Kafka names one by one (KIP-467). ``before_log`` marks the checks Kafka makes
    on the request itself (ProduceRequest.validateRecords), whose answers carry no log start
    offset."""

    def __init__(
        self,
        message: str = "",
        error_code: ErrorCode | None = None,
        record_errors: list[tuple[int, str]] | None = None,
        *,
        before_log: bool = False,
    ) -> None:
        super().__init__(message, error_code)
        self.record_errors = record_errors or []
        self.before_log = before_log


@dataclass(frozen=True)
class TopicRules:
    """What a topic's configs ask of produced batches (parsed once per config change)."""

    compression_type: str = "producer"
    log_append_time: bool = False
    timestamp_before_max_ms: int = 2**63 - 1
    timestamp_after_max_ms: int = 3600000
    #: ``cleanup.policy`` includes ``compact``: every record needs a key
    compacted: bool = False


#: The smallest legacy message (Kafka's LegacyRecord.RECORD_OVERHEAD_V0): crc, magic,
#: attributes, key and value lengths.
LEGACY_MIN_ENTRY_LENGTH = 14


def validate(
    records: memoryview | bytes | None,
    *,
    api_version: int,
    rules: TopicRules,
    now_ms: int,
    partition: str = "",
) -> bytearray | memoryview:
    """The batches to append (offsets still to be assigned by the log), or RecordError.
    ``partition`` (``topic-index``) is named in the record errors of keyless records."""
    if records is None or len(records) == 0:
        raise RecordError("Produce request carries no records", ErrorCode.INVALID_RECORD)
    buffer: bytearray | memoryview = (
        records if isinstance(records, memoryview) else memoryview(bytearray(records))
    )
    if len(buffer) >= 12:
        # an entry shorter than the smallest legacy message cannot be read at all: Kafka's
        # ByteBufferLogInputStream refuses it as corrupt before looking at its magic
        (entry_length,) = struct.unpack_from(">i", buffer, 8)
        if entry_length < LEGACY_MIN_ENTRY_LENGTH:
            raise RecordError(
                f"Record size {entry_length} is below the minimum record overhead "
                f"({LEGACY_MIN_ENTRY_LENGTH})",
                ErrorCode.CORRUPT_MESSAGE,
            )
    try:
        magic = rb.peek_magic(buffer, 0)
        if magic < rb.MAGIC_V2:
            if api_version >= 3:
                raise RecordError(
                    f"Produce v{api_version} needs magic 2 record batches, got magic {magic}",
                    ErrorCode.INVALID_RECORD,
                    before_log=True,
                )
            buffer = bytearray(convert.legacy_to_batch(buffer))
        elif magic != rb.MAGIC_V2:
            raise RecordError(f"unknown record magic {magic}", ErrorCode.CORRUPT_MESSAGE)
        headers = rb.validate_batches(buffer)
    except RemoteProtocolError as e:
        raise RecordError(str(e), ErrorCode.of(e.error_code)) from None
    if magic == rb.MAGIC_V2 and len(headers) != 1:
        # Kafka's ProduceRequest.validateRecords, on the request before any log
        raise RecordError(
            f"Produce v{api_version} carries exactly one record batch per partition, "
            f"got {len(headers)}",
            ErrorCode.INVALID_RECORD,
            before_log=True,
        )

    pos = 0
    for h in headers:
        if h.compression == ZSTD and api_version < ZSTD_MIN_PRODUCE_VERSION:
            # Kafka's rule (KIP-110): a client that may send zstd uses Produce v7+
            raise RecordError(
                f"zstd-compressed batches need Produce v{ZSTD_MIN_PRODUCE_VERSION} or later",
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            )
        if magic == rb.MAGIC_V2 and h.base_offset != 0:
            # a producer's batch starts at offset 0 (Kafka's LogValidator.validateBatch); the
            # log assigns the real offsets
            raise RecordError(
                f"the base offset of a produced batch must be 0, not {h.base_offset}",
                ErrorCode.INVALID_RECORD,
            )
        _check_records(buffer, pos, h, rules, now_ms, partition)
        pos += h.size

    wanted = rules.compression_type
    if wanted != "producer" and any(h.compression != CODECS[wanted] for h in headers):
        buffer = _recompress(buffer, CODECS[wanted])

    return buffer


def _check_records(
    buffer: bytearray | memoryview,
    pos: int,
    h: rb.BatchHeader,
    rules: TopicRules,
    now_ms: int,
    partition: str,
) -> None:
    """Every record of the batch at ``pos`` (see the module docstring); RecordError if one
    fails."""
    section: bytes | memoryview = memoryview(buffer)[pos + rb.HEADER_SIZE : pos + h.size]
    if h.compression:
        try:
            section = decompress(h.compression, section)
        except RemoteProtocolError as e:
            raise RecordError(
                f"the batch cannot be decompressed: {e}", ErrorCode.CORRUPT_MESSAGE
            ) from None
    if rules.log_append_time or h.timestamp_type != 0 or h.base_timestamp < 0:
        lo, hi = check.INT64_MIN, check.INT64_MAX
    else:
        lo = max(now_ms - rules.timestamp_before_max_ms - h.base_timestamp, check.INT64_MIN)
        hi = min(now_ms + rules.timestamp_after_max_ms - h.base_timestamp, check.INT64_MAX)
    failure = check.check_records(section, h.record_count, rules.compacted, lo, hi)
    if failure is None:
        return
    kind, index, problem = failure
    if kind != check.STRUCTURE:
        # rare: walk the batch again, naming every keyless or out-of-range record (KIP-467)
        found: list[tuple[int, int, int]] = []
        failure = check.check_records_py(section, h.record_count, rules.compacted, lo, hi, found)
        if failure is None and found:
            _refuse_records(found, h, rules, now_ms, partition)
        if failure is None:  # the two checkers disagree: a bug, not the client's
            raise RecordError("the record checkers disagree", ErrorCode.UNKNOWN_SERVER_ERROR)
        kind, index, problem = failure
    raise RecordError(
        f"Found invalid record structure: {problem} (record {index} of {h.record_count})",
        ErrorCode.INVALID_RECORD,
    )


def _refuse_records(
    found: list[tuple[int, int, int]],
    h: rb.BatchHeader,
    rules: TopicRules,
    now_ms: int,
    partition: str,
) -> NoReturn:
    """RecordError naming each record of ``found`` as Kafka's LogValidator does: the batch is
    INVALID_TIMESTAMP when a timestamp is among them, else INVALID_RECORD."""
    lo, hi = now_ms - rules.timestamp_before_max_ms, now_ms + rules.timestamp_after_max_ms
    errors = []
    for kind, index, timestamp_delta in found:
        if kind == check.TIMESTAMP:
            errors.append(
                (
                    index,
                    f"Timestamp {h.base_timestamp + timestamp_delta} of message with offset "
                    f"{h.base_offset + index} is out of range. The timestamp should be within "
                    f"[{lo}, {hi}]",
                )
            )
        else:
            errors.append(
                (index, f"Compacted topic cannot accept message without key in topic partition "
                        f"{partition}")
            )  # fmt: skip
    if any(kind == check.TIMESTAMP for kind, _, _ in found):
        raise RecordError(
            "One or more records have been rejected due to invalid timestamp",
            ErrorCode.INVALID_TIMESTAMP,
            errors,
        )
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise RecordError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        ErrorCode.INVALID_RECORD,
        errors,
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
