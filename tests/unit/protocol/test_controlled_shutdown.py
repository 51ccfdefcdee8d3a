"""ControlledShutdown (key 7), every version, against bytes written from the protocol guide
(no oracle knows this ZooKeeper-mode API). v0 is the one request with header v0 (no client
id)."""

from __future__ import annotations

import struct

import pytest

from protocol.headers import decode_request, decode_response, encode_request, encode_response
from protocol.messages import SCHEMAS
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)

KEY = 7


def _legacy_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_request_v0_has_header_v0() -> None:
    frame = encode_request(ControlledShutdownRequest(broker_id=3), 0, 42, client_id="ignored")
    # size, api key, version, correlation id, broker id: no client id
    assert frame == struct.pack(">ihhii", 12, KEY, 0, 42, 3)
    header, body = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (KEY, 0, 42)
    assert header.client_id is None
    assert body == ControlledShutdownRequest(broker_id=3)


@pytest.mark.parametrize(
    ("version", "body"),
    [
        (1, struct.pack(">i", 3)),
        (2, struct.pack(">iq", 3, 77)),
        # flexible: header v2 adds an empty tagged-field section; the body ends with one too
        (3, struct.pack(">iq", 3, 77) + b"\x00"),
    ],
)
def test_request_v1_to_v3(version: int, body: bytes) -> None:
    frame = encode_request(
        ControlledShutdownRequest(broker_id=3, broker_epoch=77), version, 42, client_id="b"
    )
    header = struct.pack(">hhi", KEY, version, 42) + _legacy_string("b")
    if version >= 3:
        header += b"\x00"
    assert frame[4:] == header + body
    decoded_header, decoded = decode_request(frame[4:])
    assert decoded_header.client_id == "b"
    assert decoded.broker_id == 3
    assert decoded.broker_epoch == (77 if version >= 2 else -1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_response(version: int) -> None:
    response = ControlledShutdownResponse(
        error_code=0,
        remaining_partitions=[RemainingPartition(topic_name="t", partition_index=5)],
    )
    frame = b"".join(bytes(p) for p in encode_response(SCHEMAS[KEY], version, 9, response))
    if version < 3:
        expected = (
            struct.pack(">i", 9)
            + struct.pack(">h", 0)
            + struct.pack(">i", 1)
            + _legacy_string("t")
            + struct.pack(">i", 5)
        )
    else:
        # response header v1 (tagged fields), compact array and string, tagged fields
        expected = (
            struct.pack(">i", 9)
            + b"\x00"
            + struct.pack(">h", 0)
            + b"\x02"
            + b"\x02t"
            + struct.pack(">i", 5)
            + b"\x00"
            + b"\x00"
        )
    assert frame[4:] == expected
    assert decode_response(KEY, version, frame[4:]) == (9, response)
