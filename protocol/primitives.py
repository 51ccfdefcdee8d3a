"""Kafka's primitive types: fixed-width integers, varints, UUIDs, strings, bytes.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; writers append to a ``bytearray``.
They raise :class:`~protocol.errors.MalformedMessage` on bad or truncated input. The compiled codecs
(:mod:`protocol.codegen`) inline the common cases and call these for the rest.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from protocol.errors import MalformedMessage

Buffer = bytes | bytearray | memoryview

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")

#: Kafka's null UUID (all zero bits), the default of every uuid field.
ZERO_UUID: Final = uuid.UUID(int=0)

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


# --- varints ---------------------------------------------------------------------------------


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (32 bits), as used for compact lengths and tags."""
    result = 0
    shift = 0
    for i in range(_MAX_VARINT_BYTES):
        try:
            b = buf[pos + i]
        except IndexError:
            raise MalformedMessage("truncated unsigned varint") from None
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > 0xFFFFFFFF:
                raise MalformedMessage("unsigned varint out of range")
            return result, pos + i + 1
        shift += 7
    raise MalformedMessage("unsigned varint longer than 5 bytes")


def read_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 10 bytes (64 bits)."""
    result = 0
    shift = 0
    for i in range(_MAX_VARLONG_BYTES):
        try:
            b = buf[pos + i]
        except IndexError:
            raise MalformedMessage("truncated varlong") from None
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > 0xFFFFFFFFFFFFFFFF:
                raise MalformedMessage("varlong out of range")
            return result, pos + i + 1
        shift += 7
    raise MalformedMessage("varlong longer than 10 bytes")


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint."""
    n, pos = read_uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint."""
    n, pos = read_uvarlong(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def _uvarint_bytes(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


#: Encodings of the small unsigned varints, precomputed: most lengths and counts are small
#: (one byte below 128, two below 16384; built directly, as the loop above costs every
#: process tens of milliseconds at import).
_UVARINT_CACHE: Final = tuple(bytes((n,)) for n in range(0x80)) + tuple(
    bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(0x80, 1 << 14)
)


def uvarint_bytes(n: int) -> bytes:
    """The unsigned varint encoding of ``n`` (0 <= n < 2**64)."""
    if n < 16384:
        if n < 0:
            raise ValueError(f"unsigned varint cannot be negative: {n}")
        return _UVARINT_CACHE[n]
    if n < 2097152:  # record blob lengths mostly land here or below
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    if n < 268435456:
        return bytes(
            ((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, ((n >> 14) & 0x7F) | 0x80, n >> 21)
        )
    return _uvarint_bytes(n)


def write_uvarint(out: bytearray, n: int) -> None:
    if n < 0x80:
        if n < 0:
            raise ValueError(f"unsigned varint cannot be negative: {n}")
        out.append(n)
    else:
        out += uvarint_bytes(n)


def zigzag32(n: int) -> int:
    return ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF


def zigzag64(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF


def varint_bytes(n: int) -> bytes:
    """The zigzag varint encoding of a signed 32-bit ``n``."""
    return uvarint_bytes(zigzag32(n))


_SMALL_VARLONG: Final = 1 << 13
#: Zigzag encodings of -8192..8191: a record's lengths, deltas and counts mostly land here.
_VARLONG_CACHE: Final = tuple(
    _UVARINT_CACHE[zigzag64(n)] for n in range(-_SMALL_VARLONG, _SMALL_VARLONG)
)


def varlong_bytes(n: int) -> bytes:
    """The zigzag varint encoding of a signed 64-bit ``n`` (the record builder's hot path:
    small values come from a table)."""
    if -_SMALL_VARLONG <= n < _SMALL_VARLONG:
        return _VARLONG_CACHE[n + _SMALL_VARLONG]
    return uvarint_bytes(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_varint(out: bytearray, n: int) -> None:
    out += uvarint_bytes(zigzag32(n))


def write_varlong(out: bytearray, n: int) -> None:
    out += varlong_bytes(n)


def varint_size(n: int) -> int:
    """Bytes taken by the zigzag varint encoding of a signed ``n``."""
    z = zigzag64(n)
    size = 1
    while z > 0x7F:
        z >>= 7
        size += 1
    return size


# --- UUIDs -----------------------------------------------------------------------------------

_new_object = object.__new__
_set = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def uuid_from_bytes(raw: Buffer) -> uuid.UUID:
    """A :class:`uuid.UUID` from 16 big-endian bytes, without ``UUID.__init__``'s overhead."""
    n = int.from_bytes(raw, "big")
    if n == 0:
        return ZERO_UUID
    u = _new_object(uuid.UUID)
    _set(u, "int", n)
    _set(u, "is_safe", _SAFE_UNKNOWN)
    return u


def uuid_to_bytes(u: uuid.UUID | None) -> bytes:
    if u is None:
        return bytes(16)
    return u.int.to_bytes(16, "big")


# --- strings and bytes (used by the reference codec and for rare cases) ----------------------


def _check_len(buf: Buffer, pos: int, n: int) -> int:
    end = pos + n
    if end > len(buf):
        raise MalformedMessage(f"length {n} at position {pos} runs past the end ({len(buf)})")
    return end


def read_string(buf: Buffer, pos: int, *, compact: bool, nullable: bool) -> tuple[str | None, int]:
    """A STRING (int16 length) or COMPACT_STRING."""
    raw, pos = read_bytes_view(buf, pos, compact=compact, nullable=nullable, int32=False)
    if raw is None:
        return None, pos
    try:
        return str(raw, "utf-8"), pos
    except UnicodeDecodeError as e:
        raise MalformedMessage(f"string is not valid UTF-8: {e}") from None


def read_bytes(buf: Buffer, pos: int, *, compact: bool, nullable: bool) -> tuple[bytes | None, int]:
    """A BYTES (int32 length) or COMPACT_BYTES value, copied."""
    view, pos = read_bytes_view(buf, pos, compact=compact, nullable=nullable, int32=True)
    return (None if view is None else bytes(view)), pos


def read_bytes_view(
    buf: Buffer, pos: int, *, compact: bool, nullable: bool, int32: bool = True
) -> tuple[memoryview | None, int]:
    """A length-prefixed byte string as a view into ``buf`` (int32 or int16 prefix, or compact)."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    elif int32:
        if pos + 4 > len(buf):
            raise MalformedMessage("truncated length")
        (n,) = INT32.unpack_from(buf, pos)
        pos += 4
    else:
        if pos + 2 > len(buf):
            raise MalformedMessage("truncated length")
        (n,) = INT16.unpack_from(buf, pos)
        pos += 2
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise MalformedMessage(f"invalid length {n} at position {pos}")
    end = _check_len(buf, pos, n)
    return memoryview(buf)[pos:end], end


def write_string(out: bytearray, s: str | None, *, compact: bool) -> None:
    write_bytes(out, None if s is None else s.encode(), compact=compact, int32=False)


def write_bytes(out: bytearray, b: Buffer | None, *, compact: bool, int32: bool = True) -> None:
    if b is None:
        if compact:
            out.append(0)
        elif int32:
            out += b"\xff\xff\xff\xff"
        else:
            out += b"\xff\xff"
        return
    n = len(b)
    if compact:
        write_uvarint(out, n + 1)
    elif int32:
        out += INT32.pack(n)
    else:
        out += INT16.pack(n)
    out += b
