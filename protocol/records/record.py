"""Records inside magic-2 batches: decode them all, and build batches (Kafka's "Record" format).

A record, after the batch header (see :mod:`protocol.records.batch`)::

    length          varint   bytes after this field
    attributes      int8     unused, written as 0
    timestampDelta  varlong  from the batch's baseTimestamp
    offsetDelta     varint   from the batch's baseOffset
    keyLength       varint   -1 = null
    key             bytes
    valueLength     varint   -1 = null
    value           bytes
    headerCount     varint
    headers         [headerKeyLength varint, headerKey UTF-8, headerValueLength varint (-1 =
                    null), headerValue]

Varints are zigzag-encoded (protobuf's sint32/sint64). When the batch is compressed, everything
after the 61-byte header is one compressed stream of these records.

Decoding is the hot path of the Spark connector and of compaction: one pass over a ``bytes``
object with the one-byte varint case inlined, one tuple per record, and errors caught once around
the loop. Bad input raises :class:`CorruptRecord` (or the compression errors), never anything
else.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, NamedTuple

from crc32c import crc32c

from protocol.errors import CorruptRecord, LocalProtocolError
from protocol.primitives import varlong_bytes
from protocol.records import compression as _compression
from protocol.records.batch import (
    ATTRIBUTES_AT,
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_AT,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Buffer,
    batch_size_at,
    check_crc,
    read_header,
)
from protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES

Header = tuple[str, bytes | None]


CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1
#: Legacy v0 messages have no timestamp; in v1 and v2 it is -1 too.
NO_TIMESTAMP_TYPE: Final = -1


class Record(NamedTuple):
    """One record, with its absolute offset and its effective timestamp (a LogAppendTime batch's
    records all carry the batch's maxTimestamp)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    #: the record's own attributes byte (unused by Kafka so far)
    attributes: int = 0


_new_record = tuple.__new__


class RecordBatch(NamedTuple):
    """A decoded magic-2 batch: its header and all its records."""

    header: BatchHeader
    records: list[Record]

    @property
    def magic(self) -> int:
        return MAGIC_V2

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        return self.header.next_offset

    @property
    def compression(self) -> int:
        return self.header.compression

    @property
    def timestamp_type(self) -> int:
        return self.header.timestamp_type

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def size(self) -> int:
        return self.header.size


# --- varints (slow paths; the one-byte case is inlined in the decoder) ------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint of at most 5 bytes at ``pos``: (value, next position)."""
    result = 0
    for shift in range(0, 35, 7):
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
    raise CorruptRecord("varint longer than 5 bytes")


def _varlong(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint of at most 10 bytes at ``pos``: (value, next position)."""
    result = 0
    for shift in range(0, 70, 7):
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
    raise CorruptRecord("varlong longer than 10 bytes")


# --- decoding --------------------------------------------------------------------------------


def decode_records_data(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
) -> list[Record]:
    """The ``count`` records that make up all of ``data`` (a batch's records section, already
    decompressed). With ``log_append_time`` every record gets that timestamp."""
    end = len(data)
    if count < 0 or count * 7 > end:  # a record takes at least 7 bytes
        raise CorruptRecord(f"record count {count} does not fit in {end} bytes")
    records: list[Record] = []
    append = records.append
    new = _new_record
    record_type = Record
    varint = _varint
    varlong = _varlong
    pos = 0
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    length = (b >> 1) ^ -(b & 1)
                    pos += 2
                else:
                    length, pos = varint(data, pos)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecord(f"record length {length} at {pos} overruns the batch")
            attributes = data[pos]
            b = data[pos + 1]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                c = data[pos + 2]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    timestamp_delta = (b >> 1) ^ -(b & 1)
                    pos += 3
                else:
                    timestamp_delta, pos = varlong(data, pos + 1)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    offset_delta = (b >> 1) ^ -(b & 1)
                    pos += 2
                else:
                    offset_delta, pos = varint(data, pos)
            # Key and value unrolled on purpose: a shared helper for them measured 10% slower.
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    n = (b >> 1) ^ -(b & 1)
                    pos += 2
                else:
                    n, pos = varint(data, pos)
            if n >= 0:
                key: bytes | None = data[pos : pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise CorruptRecord(f"key length {n}")
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    n = (b >> 1) ^ -(b & 1)
                    pos += 2
                else:
                    n, pos = varint(data, pos)
            if n >= 0:
                value: bytes | None = data[pos : pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise CorruptRecord(f"value length {n}")
            b = data[pos]
            pos += 1
            headers: list[Header] = []
            if b:
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                else:
                    n, pos = varint(data, pos - 1)
                if n < 0 or n > record_end - pos:
                    raise CorruptRecord(f"header count {n}")
                for _ in range(n):
                    b = data[pos]
                    if b < 0x80:
                        m = (b >> 1) ^ -(b & 1)
                        pos += 1
                    else:
                        c = data[pos + 1]
                        if c < 0x80:
                            b = (b & 0x7F) | (c << 7)
                            m = (b >> 1) ^ -(b & 1)
                            pos += 2
                        else:
                            m, pos = varint(data, pos)
                    if m < 0 or pos + m > record_end:
                        raise CorruptRecord(f"header key length {m}")
                    header_key = str(data[pos : pos + m], "utf-8")
                    pos += m
                    b = data[pos]
                    if b < 0x80:
                        m = (b >> 1) ^ -(b & 1)
                        pos += 1
                    else:
                        c = data[pos + 1]
                        if c < 0x80:
                            b = (b & 0x7F) | (c << 7)
                            m = (b >> 1) ^ -(b & 1)
                            pos += 2
                        else:
                            m, pos = varint(data, pos)
                    if m >= 0:
                        header_value: bytes | None = data[pos : pos + m]
                        pos += m
                    elif m == -1:
                        header_value = None
                    else:
                        raise CorruptRecord(f"header value length {m}")
                    headers.append((header_key, header_value))
            if pos != record_end:
                raise CorruptRecord(f"record ends at {pos}, its length says {record_end}")
            append(
                new(
                    record_type,
                    (
                        base_offset + offset_delta,
                        base_timestamp + timestamp_delta
                        if log_append_time is None
                        else log_append_time,
                        key,
                        value,
                        headers,
                        attributes,
                    ),
                )
            )
    except IndexError:
        raise CorruptRecord("record runs past the end of the batch") from None
    except UnicodeDecodeError:
        raise CorruptRecord("record header key is not UTF-8") from None
    if pos != end:
        raise CorruptRecord(f"{end - pos} bytes left after the last of {count} records")
    return records


def records_section(
    buf: Buffer,
    pos: int,
    header: BatchHeader,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes | memoryview:
    """The records section of the batch at ``pos``: a view into ``buf`` when uncompressed (no
    copy), else the decompressed bytes."""
    start = pos + HEADER_SIZE
    end = pos + header.size
    if end > len(buf):
        raise CorruptRecord(f"record batch at {pos} claims {header.size} bytes, {len(buf) - pos}")
    codec = header.attributes & COMPRESSION_MASK
    if codec == 0:
        return memoryview(buf)[start:end]
    return _compression.decompress(
        codec, memoryview(buf)[start:end], magic=MAGIC_V2, max_bytes=max_decompressed_bytes
    )


def records_data(
    buf: Buffer,
    pos: int,
    header: BatchHeader,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """The records section of the batch at ``pos``, decompressed, as bytes."""
    section = records_section(buf, pos, header, max_decompressed_bytes=max_decompressed_bytes)
    return section if isinstance(section, bytes) else bytes(section)


def decode_records(
    buf: Buffer,
    pos: int,
    header: BatchHeader,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[Record]:
    """All records of the batch at ``pos`` whose ``header`` was read already (CRC not checked
    here)."""
    data = records_data(buf, pos, header, max_decompressed_bytes=max_decompressed_bytes)
    return decode_records_data(
        data,
        header.record_count,
        header.base_offset,
        header.base_timestamp,
        header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None,
    )


def decode_batch(
    buf: Buffer,
    pos: int = 0,
    *,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> RecordBatch:
    """The magic-2 batch at ``pos``: header and records."""
    header = read_header(buf, pos)
    if pos + header.size > len(buf):
        raise CorruptRecord(
            f"record batch at position {pos} claims {header.size} bytes, {len(buf) - pos} remain"
        )
    if verify_crc:
        check_crc(buf, pos, header)
    return RecordBatch(
        header, decode_records(buf, pos, header, max_decompressed_bytes=max_decompressed_bytes)
    )


def iter_record_batches(
    buf: Buffer,
    *,
    verify_crc: bool = True,
    allow_partial: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[RecordBatch]:
    """Every magic-2 batch in ``buf``, decoded. ``allow_partial`` ignores a batch cut short at
    the end (a Fetch response may end with one)."""
    pos = 0
    end = len(buf)
    while pos < end:
        if allow_partial:
            size = batch_size_at(buf, pos)
            if size < 0 or pos + size > end or end - pos < MAGIC_AT + 1:
                return
        batch = decode_batch(
            buf, pos, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes
        )
        yield batch
        pos += batch.header.size


# --- building --------------------------------------------------------------------------------

_PACK_HEADER = HEADER.pack
_UINT32 = struct.Struct(">I")


class RecordBatchBuilder:
    """Builds one magic-2 batch, record by record; :meth:`build` compresses and signs it.

    Offsets are absolute (``base_offset`` + delta); by default each record takes the next one.
    The batch's baseTimestamp is the first record's timestamp (or ``delete_horizon_ms``, which
    sets the delete-horizon flag); maxTimestamp is the largest, or ``log_append_time`` for a
    LogAppendTime batch. Not thread-safe.
    """

    def __init__(
        self,
        *,
        compression: int = _compression.NONE,
        compression_level: int | None = None,
        timestamp_type: int = CREATE_TIME,
        log_append_time: int = NO_TIMESTAMP,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        transactional: bool = False,
        control: bool = False,
        delete_horizon_ms: int | None = None,
    ) -> None:
        _compression.check_codec(compression, MAGIC_V2)
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise LocalProtocolError(f"timestamp type {timestamp_type}")
        self.compression = compression
        self.compression_level = compression_level
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.transactional = transactional
        self.control = control
        self.delete_horizon_ms = delete_horizon_ms
        self.base_timestamp: int | None = delete_horizon_ms
        self.max_timestamp = NO_TIMESTAMP
        self.record_count = 0
        self.last_offset_delta = -1
        self._parts: list[bytes] = []
        self._size = 0

    @property
    def attributes(self) -> int:
        attributes = self.compression
        if self.timestamp_type == LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.control:
            attributes |= CONTROL_MASK
        if self.delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_MASK
        return attributes

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    def size_in_bytes(self) -> int:
        """Bytes the batch would take uncompressed."""
        return HEADER_SIZE + self._size

    def __len__(self) -> int:
        return self.record_count

    def append(
        self,
        value: bytes | None,
        *,
        key: bytes | None = None,
        timestamp: int = NO_TIMESTAMP,
        headers: Sequence[Header] = (),
        offset: int | None = None,
        attributes: int = 0,
    ) -> int:
        """Adds a record; returns its offset."""
        if offset is None:
            offset_delta = self.last_offset_delta + 1
        else:
            offset_delta = offset - self.base_offset
            if offset_delta <= self.last_offset_delta:
                raise LocalProtocolError(
                    f"offset {offset} does not follow {self.base_offset + self.last_offset_delta}"
                )
        if offset_delta > 0x7FFFFFFF:
            raise LocalProtocolError(f"offset delta {offset_delta} does not fit in an int32")
        base_timestamp = self.base_timestamp
        if base_timestamp is None:
            base_timestamp = timestamp
        timestamp_delta = timestamp - base_timestamp
        if not -0x8000000000000000 <= timestamp_delta <= 0x7FFFFFFFFFFFFFFF:
            raise LocalProtocolError(f"timestamp {timestamp} is too far from {base_timestamp}")
        vb = varlong_bytes
        parts = [
            bytes((attributes,)),
            vb(timestamp_delta),
            vb(offset_delta),
        ]
        if key is None:
            parts.append(b"\x01")
        else:
            parts.append(vb(len(key)))
            parts.append(key)
        if value is None:
            parts.append(b"\x01")
        else:
            parts.append(vb(len(value)))
            parts.append(value)
        parts.append(vb(len(headers)))
        for header_key, header_value in headers:
            encoded = header_key.encode()
            parts.append(vb(len(encoded)))
            parts.append(encoded)
            if header_value is None:
                parts.append(b"\x01")
            else:
                parts.append(vb(len(header_value)))
                parts.append(header_value)
        body = b"".join(parts)
        length = vb(len(body))
        self._parts.append(length)
        self._parts.append(body)
        self._size += len(length) + len(body)
        self.base_timestamp = base_timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.record_count += 1
        self.last_offset_delta = offset_delta
        return self.base_offset + offset_delta

    def build(self, *, last_offset_delta: int | None = None) -> bytes:
        """The whole batch. ``last_offset_delta`` keeps a compacted batch's original last offset
        (it may not be below the last record's delta); an empty batch needs it."""
        if last_offset_delta is None:
            last_offset_delta = self.last_offset_delta
            if last_offset_delta < 0:
                raise LocalProtocolError("an empty batch needs its last_offset_delta")
        elif last_offset_delta < self.last_offset_delta:
            raise LocalProtocolError(
                f"last offset delta {last_offset_delta} is below {self.last_offset_delta}"
            )
        records = b"".join(self._parts)
        if self.compression:
            records = _compression.compress(
                self.compression, records, magic=MAGIC_V2, level=self.compression_level
            )
        max_timestamp = (
            self.log_append_time if self.timestamp_type == LOG_APPEND_TIME else self.max_timestamp
        )
        base_timestamp = self.base_timestamp
        header = bytearray(
            _PACK_HEADER(
                self.base_offset,
                HEADER_SIZE - LOG_OVERHEAD + len(records),
                self.partition_leader_epoch,
                MAGIC_V2,
                0,
                self.attributes,
                last_offset_delta,
                NO_TIMESTAMP if base_timestamp is None else base_timestamp,
                max_timestamp,
                self.producer_id,
                self.producer_epoch,
                self.base_sequence,
                self.record_count,
            )
        )
        crc = crc32c(records, crc32c(memoryview(header)[ATTRIBUTES_AT:]))
        _UINT32.pack_into(header, 17, crc)
        return bytes(header) + records


class SimpleRecord(NamedTuple):
    """What :func:`build_batch` takes: a value and, optionally, key, timestamp and headers."""

    value: bytes | None
    key: bytes | None = None
    timestamp: int = NO_TIMESTAMP
    headers: Sequence[Header] = ()


def build_batch(
    records: Iterable[SimpleRecord | Record],
    *,
    compression: int = _compression.NONE,
    compression_level: int | None = None,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    keep_offsets: bool = False,
) -> bytes:
    """One batch of ``records``. With ``keep_offsets``, :class:`Record` offsets are kept (gaps and
    all); otherwise records take consecutive offsets from ``base_offset``."""
    builder = RecordBatchBuilder(
        compression=compression,
        compression_level=compression_level,
        timestamp_type=timestamp_type,
        log_append_time=log_append_time,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        transactional=transactional,
    )
    append = builder.append
    for record in records:
        if isinstance(record, Record):
            append(
                record.value,
                key=record.key,
                timestamp=record.timestamp,
                headers=record.headers,
                offset=record.offset if keep_offsets else None,
                attributes=record.attributes,
            )
        else:
            append(record.value, key=record.key, timestamp=record.timestamp, headers=record.headers)
    return builder.build()


def build_empty_batch(
    *,
    base_offset: int,
    last_offset_delta: int,
    partition_leader_epoch: int,
    timestamp_type: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    control: bool,
) -> bytes:
    """A batch header without records (Kafka's ``DefaultRecordBatch.writeEmptyHeader``, what
    its cleaner keeps of a batch whose records all went): uncompressed, no base timestamp, the
    original max timestamp, offsets, producer fields and flags, no delete horizon."""
    attributes = 0
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    header = bytearray(
        _PACK_HEADER(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD,
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            NO_TIMESTAMP,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            0,
        )
    )
    _UINT32.pack_into(header, 17, crc32c(memoryview(header)[ATTRIBUTES_AT:]))
    return bytes(header)
