import struct

from protocol.api_keys import ApiKey
from protocol.headers import (
    RequestHeader,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
)
from protocol.messages import SCHEMAS
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.metadata import MetadataRequest
from tests.support.raw_client import api_versions


def test_request_header_v2_keeps_int16_client_id():
    raw = encode_request_header(RequestHeader(3, 12, 7, "client-é"), 2)
    n = len("client-é".encode())
    assert raw == struct.pack(">hhih", 3, 12, 7, n) + "client-é".encode() + b"\x00"
    header, pos = decode_request_header(raw)
    assert header == RequestHeader(3, 12, 7, "client-é") and pos == len(raw)


def test_null_client_id():
    raw = encode_request_header(RequestHeader(18, 0, 1, None), 1)
    assert decode_request_header(raw)[0].client_id is None


def test_api_versions_response_header_is_always_v0():
    schema = SCHEMAS[ApiKey.API_VERSIONS]
    parts = encode_response(schema, 3, 42, ApiVersionsResponse(error_code=0))
    frame = b"".join(bytes(p) for p in parts)
    size, correlation = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4 and correlation == 42
    # body starts right after the correlation id: error_code int16, then the compact array
    assert frame[8:10] == b"\x00\x00"
    assert decode_response(ApiKey.API_VERSIONS, 3, frame[4:])[1] == ApiVersionsResponse()


def test_flexible_response_header_has_tagged_fields():
    schema = SCHEMAS[ApiKey.METADATA]
    frame = b"".join(bytes(p) for p in encode_response(schema, 9, 5, schema.response()))
    assert frame[8] == 0  # empty tagged fields of header v1


def test_request_round_trip_through_frames():
    req = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    frame = encode_request(req, 9, 11, "me")
    header, body = decode_request(memoryview(frame)[4:])
    assert header == RequestHeader(3, 9, 11, "me")
    assert body == req


def test_unknown_api_version_header_still_parses():
    raw = encode_request_header(RequestHeader(18, 99, 3, "x"), 2)
    header, _ = decode_request_header(raw + b"junk")
    assert header.api_version == 99 and header.correlation_id == 3
    assert isinstance(api_versions(), ApiVersionsRequest)
