"""A slow, obviously-correct interpreter of the schemas: the yardstick for :mod:`protocol.codegen`.

It walks the schema rows for every value; nothing here is on a hot path. The tests check that the
compiled codecs produce the same bytes and the same values as this module for every API version.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.errors import LocalProtocolError, MalformedMessage
from protocol.primitives import (
    Buffer,
    read_bytes,
    read_bytes_view,
    read_string,
    read_uvarint,
    uuid_from_bytes,
    uuid_to_bytes,
    write_bytes,
    write_string,
    write_uvarint,
)
from protocol.schema import BYTES, RECORDS, STRING, UUID, ArrayOf, FieldType, Primitive, Struct


def decode(
    cls: type[Struct], version: int, flexible: bool, buf: Buffer, pos: int = 0
) -> tuple[Any, int]:
    try:
        return _decode_struct(cls, version, flexible, memoryview(buf), pos)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        raise MalformedMessage(f"{cls.__name__} v{version}: {e}") from None


def _decode_value(
    t: FieldType, nullable: bool, version: int, flexible: bool, buf: memoryview, pos: int
) -> tuple[Any, int]:
    if isinstance(t, Primitive):
        if t.fmt is not None:
            s = struct.Struct(">" + t.fmt)
            (value,) = s.unpack_from(buf, pos)
            if t is UUID:
                value = uuid_from_bytes(value)
            return value, pos + s.size
        if t is STRING:
            return read_string(buf, pos, compact=flexible, nullable=nullable)
        if t is BYTES:
            return read_bytes(buf, pos, compact=flexible, nullable=nullable)
        if t is RECORDS:
            return read_bytes_view(buf, pos, compact=flexible, nullable=nullable, int32=True)
    if isinstance(t, ArrayOf):
        if flexible:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            (n,) = struct.unpack_from(">i", buf, pos)
            pos += 4
        if n < 0:
            if n == -1 and nullable:
                return None, pos
            raise MalformedMessage(f"bad array length {n}")
        if n > len(buf) - pos:
            raise MalformedMessage(f"array of {n} runs past the end")
        items = []
        for _ in range(n):
            item, pos = _decode_value(t.element, False, version, flexible, buf, pos)
            items.append(item)
        return items, pos
    if isinstance(t, type) and issubclass(t, Struct):
        if nullable:
            (marker,) = struct.unpack_from(">b", buf, pos)
            pos += 1
            if marker < 0:
                return None, pos
        return _decode_struct(t, version, flexible, buf, pos)
    raise LocalProtocolError(f"unknown type {t!r}")


def _decode_struct(
    cls: type[Struct], version: int, flexible: bool, buf: memoryview, pos: int
) -> tuple[Any, int]:
    values: dict[str, Any] = {}
    tagged = {}
    for fl in cls.__fields__:
        if version not in fl.versions:
            values[fl.name] = fl.make_default()
        elif fl.is_tagged(version, flexible):
            values[fl.name] = fl.make_default()
            assert fl.tag is not None
            tagged[fl.tag] = fl
        else:
            values[fl.name], pos = _decode_value(
                fl.type, fl.is_nullable(version), version, flexible, buf, pos
            )
    if flexible:
        count, pos = read_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise MalformedMessage("tagged field runs past the end")
            known = tagged.get(tag)
            if known is not None:
                values[known.name], _ = _decode_value(
                    known.type, known.is_nullable(version), version, flexible, buf[:end], pos
                )
            pos = end
    return cls(**values), pos


def encode(obj: Struct, version: int, flexible: bool) -> bytes:
    out = bytearray()
    try:
        _encode_struct(type(obj), obj, version, flexible, out)
    except (AttributeError, TypeError, ValueError, struct.error) as e:
        raise LocalProtocolError(f"cannot encode {type(obj).__name__} v{version}: {e}") from e
    return bytes(out)


def _encode_value(
    t: FieldType, nullable: bool, value: Any, version: int, flexible: bool, out: bytearray
) -> None:
    if isinstance(t, Primitive):
        if t.fmt is not None:
            out += struct.pack(">" + t.fmt, uuid_to_bytes(value) if t is UUID else value)
            return
        if value is None and not nullable:
            raise LocalProtocolError(f"{t.name} is not nullable in version {version}")
        if t is STRING:
            write_string(out, value, compact=flexible)
        else:
            write_bytes(out, None if value is None else bytes(value), compact=flexible)
        return
    if isinstance(t, ArrayOf):
        if value is None:
            if not nullable:
                raise LocalProtocolError(f"array is not nullable in version {version}")
            out += b"\x00" if flexible else b"\xff\xff\xff\xff"
            return
        if flexible:
            write_uvarint(out, len(value) + 1)
        else:
            out += struct.pack(">i", len(value))
        for item in value:
            _encode_value(t.element, False, item, version, flexible, out)
        return
    if isinstance(t, type) and issubclass(t, Struct):
        if nullable:
            if value is None:
                out.append(255)
                return
            out.append(1)
        _encode_struct(t, value, version, flexible, out)
        return
    raise LocalProtocolError(f"unknown type {t!r}")


def _encode_struct(
    cls: type[Struct], obj: Any, version: int, flexible: bool, out: bytearray
) -> None:
    tagged = []
    for fl in cls.__fields__:
        if version not in fl.versions:
            continue
        value = getattr(obj, fl.name)
        if fl.is_tagged(version, flexible):
            if value != fl.make_default():
                tagged.append((fl, value))
            continue
        _encode_value(fl.type, fl.is_nullable(version), value, version, flexible, out)
    if flexible:
        write_uvarint(out, len(tagged))
        for fl, value in sorted(tagged, key=lambda item: item[0].tag or 0):
            tmp = bytearray()
            _encode_value(fl.type, fl.is_nullable(version), value, version, flexible, tmp)
            write_uvarint(out, fl.tag or 0)
            write_uvarint(out, len(tmp))
            out += tmp
