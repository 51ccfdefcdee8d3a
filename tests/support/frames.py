"""The bodies of request and response frames our codecs write, checked to decode back to the
same values: for tests that compare them with bytes written field by field from Kafka's
protocol guide or generated classes."""

from __future__ import annotations

import struct

from protocol.headers import decode_request, decode_response, encode_request, encode_response
from protocol.messages import SCHEMAS


def request_body(key: int, version: int, body: object, *, flexible: bool = True) -> bytes:
    """The body of a request frame, after its header (client id "c"): v2, with no tagged
    fields, for a flexible version; v1 otherwise."""
    frame = encode_request(body, version, 42, client_id="c")
    header = struct.pack(">hhih", key, version, 42, 1) + b"c" + (b"\x00" if flexible else b"")
    assert frame[4 : 4 + len(header)] == header
    decoded_header, decoded = decode_request(frame[4:])
    assert (decoded_header.api_key, decoded_header.api_version) == (key, version)
    assert decoded == body
    return frame[4 + len(header) :]


def response_body(key: int, version: int, body: object, header: bytes) -> bytes:
    """The body of a response frame (correlation id 9), after ``header``."""
    frame = b"".join(bytes(p) for p in encode_response(SCHEMAS[key], version, 9, body))
    assert frame[4 : 4 + len(header)] == header
    assert decode_response(key, version, frame[4:]) == (9, body)
    return frame[4 + len(header) :]
