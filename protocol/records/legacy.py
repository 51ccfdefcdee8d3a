"""Legacy message sets, magic 0 and 1: parse and build.

The layout is the "Old Message Format" of Kafka's message-format documentation.

A message set is a run of entries with no count in front::

    offset      int64
    messageSize int32    bytes after this field
    crc         uint32   CRC32 (zlib's, not CRC-32C) of magic..end of value
    magic       int8     0 or 1
    attributes  int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4); bit 3 (v1) LogAppendTime
    timestamp   int64    v1 only
    key         int32 length (-1 = null) + bytes
    value       int32 length (-1 = null) + bytes

Compression wraps a whole inner message set into one wrapper message: its value is the compressed
inner set, its key is null, and its offset is the offset of the last inner message. Inner offsets
are absolute in magic 0 (the broker re-numbers them on append) and relative in magic 1 (0..n-1;
absolute = wrapper offset - last inner offset + inner offset, unless that shift is negative, as in
a producer's wrapper at offset 0: then, as in Kafka's reader, inner offsets are kept as they are).
A v1 wrapper's timestamp is the largest inner timestamp (CreateTime) or the broker's append time
(LogAppendTime, which then overrides every inner timestamp); inner messages always carry the
CreateTime bit.

Bad input raises :class:`CorruptRecord` (or the compression errors), never anything else.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from protocol.errors import CorruptRecord, LocalProtocolError
from protocol.records import compression as _compression
from protocol.records.batch import LOG_OVERHEAD, NO_TIMESTAMP, Buffer, batch_size_at
from protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from protocol.records.record import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP_TYPE,
    Record,
    SimpleRecord,
)

MAGIC_V0: Final = 0
MAGIC_V1: Final = 1

CODEC_MASK: Final = 0x07
TIMESTAMP_TYPE_MASK: Final = 0x08

#: crc, magic, attributes, key length, value length
MESSAGE_OVERHEAD_V0: Final = 14
#: ... and the timestamp
MESSAGE_OVERHEAD_V1: Final = 22

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAGIC_AT: Final = 16


class LegacyMessage(NamedTuple):
    """One entry of a message set as it stands: a plain message or a compressed wrapper."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    crc: int
    #: bytes the entry takes, log overhead (offset + size) included
    size: int

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """-1 for magic 0 (no timestamps), else 0 = CreateTime, 1 = LogAppendTime."""
        if self.magic == MAGIC_V0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME


class LegacyBatch(NamedTuple):
    """One entry expanded: a plain message's single record, or a wrapper's inner records, with
    absolute offsets and effective timestamps. Mirrors :class:`~protocol.records.record.
    RecordBatch` so callers can treat both formats alike."""

    message: LegacyMessage
    records: list[Record]

    @property
    def magic(self) -> int:
        return self.message.magic

    @property
    def base_offset(self) -> int:
        return self.records[0].offset if self.records else self.message.offset

    @property
    def last_offset(self) -> int:
        return self.message.offset

    @property
    def next_offset(self) -> int:
        return self.message.offset + 1

    @property
    def compression(self) -> int:
        return self.message.compression

    @property
    def timestamp_type(self) -> int:
        return self.message.timestamp_type

    @property
    def max_timestamp(self) -> int:
        return self.message.timestamp

    @property
    def is_control(self) -> bool:
        return False

    @property
    def is_transactional(self) -> bool:
        return False

    @property
    def producer_id(self) -> int:
        return -1

    @property
    def size(self) -> int:
        return self.message.size


# --- parsing ---------------------------------------------------------------------------------


def _read_bytes(buf: Buffer, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise CorruptRecord(f"message {what} length is cut short")
    (n,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise CorruptRecord(f"message {what} length {n}")
        return None, pos
    if pos + n > end:
        raise CorruptRecord(f"message {what} of {n} bytes overruns the message")
    return bytes(buf[pos : pos + n]), pos + n


def message_crc(buf: Buffer, pos: int, size: int) -> int:
    """The CRC32 an entry of ``size`` bytes at ``pos`` should carry (magic..end)."""
    return zlib.crc32(memoryview(buf)[pos + _MAGIC_AT : pos + size])


def read_message(buf: Buffer, pos: int = 0, *, verify_crc: bool = True) -> LegacyMessage:
    """The entry at ``pos``. Raises CorruptRecord if it is cut short, malformed or fails its CRC."""
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD + MESSAGE_OVERHEAD_V0:
        raise CorruptRecord(f"{remaining} bytes are too few for a message")
    offset, message_size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
    size = message_size + LOG_OVERHEAD
    if magic == MAGIC_V0:
        overhead = MESSAGE_OVERHEAD_V0
        timestamp = NO_TIMESTAMP
        at = pos + _MAGIC_AT + 2
    elif magic == MAGIC_V1:
        overhead = MESSAGE_OVERHEAD_V1
        if remaining < LOG_OVERHEAD + MESSAGE_OVERHEAD_V1:
            raise CorruptRecord(f"{remaining} bytes are too few for a v1 message")
        (timestamp,) = _INT64.unpack_from(buf, pos + _MAGIC_AT + 2)
        at = pos + _MAGIC_AT + 10
    else:
        raise CorruptRecord(f"message magic {magic} at position {pos}, expected 0 or 1")
    if message_size < overhead:
        raise CorruptRecord(f"message size {message_size} is below the v{magic} minimum")
    end = pos + size
    if end > len(buf):
        raise CorruptRecord(f"message at position {pos} claims {size} bytes, {remaining} remain")
    if verify_crc:
        actual = message_crc(buf, pos, size)
        if actual != crc:
            raise CorruptRecord(
                f"message at position {pos} has CRC {crc:#010x}, computed {actual:#010x}"
            )
    key, at = _read_bytes(buf, at, end, "key")
    value, at = _read_bytes(buf, at, end, "value")
    if at != end:
        raise CorruptRecord(f"{end - at} bytes left after the value of the message at {pos}")
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, crc, size)


def iter_messages(
    buf: Buffer, *, verify_crc: bool = True, allow_partial: bool = False
) -> Iterator[tuple[int, LegacyMessage]]:
    """(position, message) of every entry in ``buf``, wrappers left compressed.
    ``allow_partial`` ignores an entry cut short at the end (a Fetch response may end with one)."""
    pos = 0
    end = len(buf)
    while pos < end:
        if allow_partial and (end - pos < LOG_OVERHEAD or pos + batch_size_at(buf, pos) > end):
            return  # cut short by the end of buf
        message = read_message(buf, pos, verify_crc=verify_crc)
        yield pos, message
        pos += message.size


def expand_message(
    message: LegacyMessage, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> LegacyBatch:
    """A message's records: itself, or a wrapper's inner messages with absolute offsets."""
    codec = message.compression
    if codec == _compression.NONE:
        record = Record(message.offset, message.timestamp, message.key, message.value, [], 0)
        return LegacyBatch(message, [record])
    if message.value is None:
        raise CorruptRecord(f"compressed message at offset {message.offset} has a null value")
    inner_bytes = _compression.decompress(
        codec, message.value, magic=message.magic, max_bytes=max_decompressed_bytes
    )
    inner = [m for _, m in iter_messages(inner_bytes, verify_crc=True)]
    if not inner:
        raise CorruptRecord(f"compressed message at offset {message.offset} has no messages")
    log_append = message.magic == MAGIC_V1 and bool(message.attributes & TIMESTAMP_TYPE_MASK)
    # Kafka's deep iterator applies the v1 shift only when it is not negative: producers leave
    # the wrapper at offset 0, and their inner offsets 0..n-1 are then taken as they are.
    shift = message.offset - inner[-1].offset if message.magic == MAGIC_V1 else 0
    if shift < 0:
        shift = 0
    records = []
    for m in inner:
        if m.magic != message.magic:
            raise CorruptRecord(f"inner message magic {m.magic} in a v{message.magic} wrapper")
        if m.attributes & CODEC_MASK:
            raise CorruptRecord("compressed messages may not be nested")
        timestamp = message.timestamp if log_append else m.timestamp
        records.append(Record(m.offset + shift, timestamp, m.key, m.value, [], 0))
    return LegacyBatch(message, records)


def iter_legacy_batches(
    buf: Buffer,
    *,
    verify_crc: bool = True,
    allow_partial: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[LegacyBatch]:
    """Every entry of a message set, expanded."""
    for _, message in iter_messages(buf, verify_crc=verify_crc, allow_partial=allow_partial):
        yield expand_message(message, max_decompressed_bytes=max_decompressed_bytes)


def decode_message_set(
    buf: Buffer,
    *,
    verify_crc: bool = True,
    allow_partial: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[Record]:
    """Every record of a message set, wrappers expanded, in order."""
    records: list[Record] = []
    for batch in iter_legacy_batches(
        buf,
        verify_crc=verify_crc,
        allow_partial=allow_partial,
        max_decompressed_bytes=max_decompressed_bytes,
    ):
        records.extend(batch.records)
    return records


# --- building --------------------------------------------------------------------------------


def encode_message(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    magic: int,
    attributes: int = 0,
    timestamp: int = NO_TIMESTAMP,
) -> bytes:
    """One entry (offset, size, crc, message)."""
    if magic == MAGIC_V0:
        body = struct.pack(">bb", MAGIC_V0, attributes)
    elif magic == MAGIC_V1:
        body = struct.pack(">bbq", MAGIC_V1, attributes, timestamp)
    else:
        raise LocalProtocolError(f"legacy messages have magic 0 or 1, not {magic}")
    parts = [body]
    for field in (key, value):
        if field is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_INT32.pack(len(field)))
            parts.append(field)
    message = b"".join(parts)
    crc = zlib.crc32(message)
    return struct.pack(">qiI", offset, len(message) + 4, crc) + message


def build_message_set(
    records: Iterable[Record | SimpleRecord],
    *,
    magic: int,
    compression: int = _compression.NONE,
    compression_level: int | None = None,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    base_offset: int = 0,
    keep_offsets: bool = False,
) -> bytes:
    """A message set of ``records`` (headers are dropped: legacy messages have none).

    Uncompressed: one entry per record. Compressed: one wrapper holding them all, inner offsets
    absolute in v0 and relative in v1, the wrapper carrying the last offset. Offsets are the
    records' own with ``keep_offsets`` (for :class:`Record`), else ``base_offset`` onwards.
    ``timestamp_type`` LogAppendTime (v1) stamps ``log_append_time`` on the messages (or on the
    wrapper). Magic 0 drops timestamps.
    """
    _compression.check_codec(compression, magic)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise LocalProtocolError(f"legacy messages have magic 0 or 1, not {magic}")
    log_append = magic == MAGIC_V1 and timestamp_type == LOG_APPEND_TIME
    ts_bit = TIMESTAMP_TYPE_MASK if log_append else 0
    entries: list[tuple[int, int, bytes | None, bytes | None]] = []
    next_offset = base_offset
    for record in records:
        offset = record.offset if keep_offsets and isinstance(record, Record) else next_offset
        next_offset = offset + 1
        timestamp = record.timestamp if magic == MAGIC_V1 else NO_TIMESTAMP
        entries.append((offset, timestamp, record.key, record.value))
    if compression == _compression.NONE:
        return b"".join(
            encode_message(
                offset,
                key,
                value,
                magic=magic,
                attributes=ts_bit,
                timestamp=log_append_time if log_append else timestamp,
            )
            for offset, timestamp, key, value in entries
        )
    if not entries:
        return b""
    first_offset = entries[0][0]
    inner = b"".join(
        encode_message(
            offset - first_offset if magic == MAGIC_V1 else offset,
            key,
            value,
            magic=magic,
            timestamp=timestamp,
        )
        for offset, timestamp, key, value in entries
    )
    compressed = _compression.compress(compression, inner, magic=magic, level=compression_level)
    if magic == MAGIC_V0:
        wrapper_timestamp = NO_TIMESTAMP
    elif log_append:
        wrapper_timestamp = log_append_time
    else:
        wrapper_timestamp = max(timestamp for _, timestamp, _, _ in entries)
    return encode_message(
        entries[-1][0],
        None,
        compressed,
        magic=magic,
        attributes=compression | ts_bit,
        timestamp=wrapper_timestamp,
    )
