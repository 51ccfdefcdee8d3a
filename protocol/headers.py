"""Request and response headers, and whole-frame helpers built on them.

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id as an
int16-length nullable string. v2 adds tagged fields, but client_id stays an int16-length string.
Header v0 (no client_id) is used by one request only: ControlledShutdown v0.
Response header v0: correlation_id; v1 adds tagged fields. ApiVersions responses always use v0.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from protocol.api_keys import ApiKey
from protocol.errors import MalformedMessage, UnsupportedVersion
from protocol.messages import SCHEMAS, ApiSchema
from protocol.primitives import Buffer, read_uvarint

_FIXED = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_FIXED_V0 = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_CORRELATION = struct.Struct(">i")
#: the one API whose v0 request has header v0 (no client id)
_HEADER_V0_API = int(ApiKey.CONTROLLED_SHUTDOWN)
_SIZE_CORRELATION = struct.Struct(">ii")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedMessage("tagged field runs past the end of the header")
    return pos


def decode_request_header(frame: Buffer) -> tuple[RequestHeader, int]:
    """The header of a request frame (without its size prefix) and where the body starts.

    Works for API keys and versions we do not know (their header is read as v1), so the caller
    can answer them with UNSUPPORTED_VERSION.
    """
    if len(frame) < 10:
        raise MalformedMessage(f"request of {len(frame)} bytes is too short for a header")
    api_key, api_version, correlation_id, n = _FIXED.unpack_from(frame, 0)
    if api_key == _HEADER_V0_API and api_version == 0:
        # ControlledShutdown v0: header v0, no client id (its body is 4 bytes, so the frame
        # is long enough for the unpack above)
        return RequestHeader(api_key, api_version, correlation_id, None), 8
    pos = 10
    if n < 0:
        if n != -1:
            raise MalformedMessage(f"invalid client_id length {n}")
        client_id = None
    else:
        end = pos + n
        if end > len(frame):
            raise MalformedMessage("client_id runs past the end of the request")
        try:
            client_id = str(frame[pos:end], "utf-8")
        except UnicodeDecodeError:
            raise MalformedMessage("client_id is not UTF-8") from None
        pos = end
    schema = SCHEMAS.get(api_key)
    if schema is not None and api_version >= 0:
        flexible = (
            schema.is_flexible(api_version)
            if api_version <= schema.valid_versions.hi
            else schema.is_flexible(schema.valid_versions.hi)
        )
        if flexible:
            pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def encode_request_header(header: RequestHeader, header_version: int) -> bytes:
    if header_version == 0:
        return _FIXED_V0.pack(header.api_key, header.api_version, header.correlation_id)
    client = None if header.client_id is None else header.client_id.encode()
    out = bytearray(
        _FIXED.pack(
            header.api_key,
            header.api_version,
            header.correlation_id,
            -1 if client is None else len(client),
        )
    )
    if client is not None:
        out += client
    if header_version >= 2:
        out.append(0)
    return bytes(out)


def decode_response_header(frame: Buffer, header_version: int) -> tuple[int, int]:
    """(correlation_id, body position) of a response frame without its size prefix."""
    if len(frame) < 4:
        raise MalformedMessage("response too short for a header")
    (correlation_id,) = _CORRELATION.unpack_from(frame, 0)
    pos = 4
    if header_version >= 1:
        pos = skip_tagged_fields(frame, pos)
    return correlation_id, pos


# --- whole frames ----------------------------------------------------------------------------


def frame_size(parts: list[Any]) -> int:
    return sum(len(p) for p in parts)


def encode_response(schema: ApiSchema, version: int, correlation_id: int, body: Any) -> list[Any]:
    """A response frame as a list of buffers: size and header first, then the body's pieces."""
    parts: list[Any] = [b""]
    schema.response_encoder(version)(body, parts)
    parts[0] = _response_head(schema, version, correlation_id, frame_size(parts))
    return parts


def frame_response(
    schema: ApiSchema, version: int, correlation_id: int, body_parts: list[Any]
) -> list[Any]:
    """An already-encoded response body, framed: size and header first, then the body's pieces."""
    return [
        _response_head(schema, version, correlation_id, frame_size(body_parts)),
        *body_parts,
    ]


def _response_head(schema: ApiSchema, version: int, correlation_id: int, body_size: int) -> bytes:
    if schema.response_header_version(version) == 0:
        return _SIZE_CORRELATION.pack(body_size + 4, correlation_id)
    return _SIZE_CORRELATION.pack(body_size + 5, correlation_id) + b"\x00"


def encode_request(
    body: Any, version: int, correlation_id: int, client_id: str | None = "odradek"
) -> bytes:
    """A whole request frame (with size prefix) as bytes: for clients and tests."""
    schema = SCHEMAS[body.api_key]
    schema.check_version(version)
    header = encode_request_header(
        RequestHeader(body.api_key, version, correlation_id, client_id),
        schema.request_header_version(version),
    )
    parts: list[Any] = []
    schema.request_encoder(version)(body, parts)
    payload = header + b"".join(bytes(p) if not isinstance(p, bytes) else p for p in parts)
    return struct.pack(">i", len(payload)) + payload


def decode_request(frame: Buffer) -> tuple[RequestHeader, Any]:
    """Header and body of a request frame (no size prefix). Raises UnsupportedVersion."""
    header, pos = decode_request_header(frame)
    schema = SCHEMAS.get(header.api_key)
    if schema is None:
        raise UnsupportedVersion(header.api_key, header.api_version)
    schema.check_version(header.api_version)
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    body, _ = schema.request_decoder(header.api_version)(view, pos)
    return header, body


def decode_response(api_key: int, version: int, frame: Buffer) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame without its size prefix."""
    schema = SCHEMAS[api_key]
    correlation_id, pos = decode_response_header(frame, schema.response_header_version(version))
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    body, _ = schema.response_decoder(version)(view, pos)
    return correlation_id, body
