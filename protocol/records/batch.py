"""Record batch (magic 2) headers: inspect, validate and rewrite without decoding records.

On-disk and on-wire layout (the "Record Batch" of Kafka's message-format documentation),
big-endian, 61 bytes before the records::

    0  baseOffset            int64
    8  batchLength           int32   bytes after this field (size - 12)
    12 partitionLeaderEpoch  int32   outside the CRC: the broker rewrites it freely
    16 magic                 int8    2
    17 crc                   uint32  CRC-32C of bytes 21..end
    21 attributes            int16   bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordCount           int32
    61 records...

Legacy message sets (magic 0 and 1) also keep their magic byte at position 16 of an entry
(offset int64, size int32, crc uint32, magic), so :func:`peek_magic` tells the formats apart.

This module is the broker's hot path for Produce: :func:`validate_batches` checks sizes, magic and
the CRC of every batch in a produce blob by reading only headers; :func:`set_base_offset` and
:func:`set_partition_leader_epoch` rewrite fields in place, outside the CRC.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

from crc32c import crc32c

from protocol.errors import CorruptRecord, InvalidRecord

Buffer = bytes | bytearray | memoryview

HEADER: Final = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE: Final = HEADER.size  # 61
#: bytes before batchLength counts: baseOffset + batchLength
LOG_OVERHEAD: Final = 12

BASE_OFFSET_AT: Final = 0
LENGTH_AT: Final = 8
PARTITION_LEADER_EPOCH_AT: Final = 12
MAGIC_AT: Final = 16
CRC_AT: Final = 17
ATTRIBUTES_AT: Final = 21
LAST_OFFSET_DELTA_AT: Final = 23
BASE_TIMESTAMP_AT: Final = 27
MAX_TIMESTAMP_AT: Final = 35
PRODUCER_ID_AT: Final = 43
PRODUCER_EPOCH_AT: Final = 51
BASE_SEQUENCE_AT: Final = 53
RECORD_COUNT_AT: Final = 57

MAGIC_V2: Final = 2

COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08
TRANSACTIONAL_MASK: Final = 0x10
CONTROL_MASK: Final = 0x20
DELETE_HORIZON_MASK: Final = 0x40

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1
NO_TIMESTAMP: Final = -1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_SIZE = struct.Struct(">i")


class BatchHeader(NamedTuple):
    """The 61-byte header of a magic-2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def peek_magic(buf: Buffer, pos: int = 0) -> int:
    """The magic byte of the batch or legacy message at ``pos`` (both keep it at byte 16)."""
    if len(buf) - pos < MAGIC_AT + 1:
        raise CorruptRecord(f"{len(buf) - pos} bytes are too few for a record batch")
    return buf[pos + MAGIC_AT]


_new_header = tuple.__new__
_unpack_header = HEADER.unpack_from


def read_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The header of the magic-2 batch at ``pos``; no CRC check. Raises CorruptRecord."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecord(f"{len(buf) - pos} bytes are too few for a record batch header")
    header: BatchHeader = _new_header(BatchHeader, _unpack_header(buf, pos))
    if header.magic != MAGIC_V2:
        raise CorruptRecord(f"record batch magic {header.magic} at position {pos}, expected 2")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecord(f"record batch length {header.batch_length} is below the header size")
    return header


def crc_of(buf: Buffer, pos: int, size: int) -> int:
    """The CRC-32C a batch of ``size`` bytes at ``pos`` should carry (attributes..end)."""
    view = memoryview(buf)[pos + ATTRIBUTES_AT : pos + size]
    value: int = crc32c(view)
    return value


def check_crc(buf: Buffer, pos: int, header: BatchHeader) -> None:
    """Raises CorruptRecord unless the batch at ``pos`` carries the CRC-32C of its bytes."""
    actual = crc32c(memoryview(buf)[pos + ATTRIBUTES_AT : pos + header.batch_length + LOG_OVERHEAD])
    if actual != header.crc:
        raise CorruptRecord(
            f"record batch at position {pos} has CRC {header.crc:#010x}, computed {actual:#010x}"
        )


def iter_batches(buf: Buffer, *, verify_crc: bool = True) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of every batch in ``buf``, which must hold whole magic-2 batches only.

    Raises CorruptRecord at the first batch that is cut short, has another magic, or fails its
    CRC (when ``verify_crc``).
    """
    pos = 0
    end = len(buf)
    while pos < end:
        header = read_header(buf, pos)
        if pos + header.size > end:
            raise CorruptRecord(
                f"record batch at position {pos} claims {header.size} bytes, {end - pos} remain"
            )
        if verify_crc:
            check_crc(buf, pos, header)
        yield pos, header
        pos += header.size


def validate_batches(buf: Buffer) -> list[BatchHeader]:
    """Checks a producer's records blob the way Kafka's LogValidator does before any record is
    decoded: whole batches, magic 2, CRC-32C, sane counts, no control batches. Returns headers."""
    headers = []
    for pos, header in iter_batches(buf, verify_crc=True):
        if header.record_count <= 0 or header.last_offset_delta + 1 != header.record_count:
            raise InvalidRecord(
                f"batch at position {pos}: {header.record_count} records but last offset delta "
                f"{header.last_offset_delta}"
            )
        if header.is_control:
            raise InvalidRecord("producers may not write control batches")
        if header.has_producer_id and header.base_sequence < 0 and not header.is_control:
            raise InvalidRecord("a batch with a producer id needs a base sequence >= 0")
        headers.append(header)
    if not headers:
        raise InvalidRecord("no record batches in the request")
    return headers


def validate_replicated_batches(buf: Buffer) -> list[BatchHeader]:
    """Checks a leader's batches fetched by a follower the way Kafka's follower append does:
    whole magic-2 batches with their CRC-32C. Nothing a producer may not write is refused here:
    a leader's log holds transaction markers (control batches), coordinators' batches without
    sequences and the empty batches compaction keeps. Returns the headers."""
    return [header for _, header in iter_batches(buf, verify_crc=True)]


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assigns offsets to a batch in place (baseOffset is outside the CRC)."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_AT, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Stamps the leader epoch in place (outside the CRC)."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_AT, epoch)


def set_max_timestamp_and_type(
    buf: bytearray | memoryview, pos: int, header: BatchHeader, timestamp: int, log_append: bool
) -> None:
    """Rewrites maxTimestamp (and the timestamp-type bit) and recomputes the CRC: used for
    ``message.timestamp.type=LogAppendTime``."""
    attributes = header.attributes | TIMESTAMP_TYPE_MASK if log_append else header.attributes
    struct.pack_into(">h", buf, pos + ATTRIBUTES_AT, attributes)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_AT, timestamp)
    _UINT32.pack_into(buf, pos + CRC_AT, crc_of(buf, pos, header.size))


def batch_size_at(buf: Buffer, pos: int) -> int:
    """Size of the entry at ``pos`` (batch or legacy message) from its length field, or -1 if
    fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return -1
    length: int = _SIZE.unpack_from(buf, pos + LENGTH_AT)[0]
    return length + LOG_OVERHEAD
