"""Every (API, version, direction) we have a schema for: the compiled codec round-trips, matches
the reference interpreter byte for byte, survives byte-at-a-time framing, and answers garbage only
with RemoteProtocolError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from protocol import reference
from protocol.errors import RemoteProtocolError
from protocol.frames import FrameDecoder
from protocol.messages import SCHEMAS
from tests.property.strategies import struct_of
from tests.support.hypothesis_cases import given_data

CASES = [
    pytest.param(schema, cls, version, id=f"{cls.__name__}-v{version}")
    for schema in SCHEMAS.values()
    for cls in (schema.request, schema.response)
    for version in range(schema.valid_versions.lo, schema.valid_versions.hi + 1)
]

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FRAMING = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GARBAGE = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _codecs(schema, cls, version):
    if cls is schema.request:
        return schema.request_encoder(version), schema.request_decoder(version)
    return schema.response_encoder(version), schema.response_decoder(version)


# Each test builds its @given function per case: see tests/support/hypothesis_cases.py.


@pytest.mark.parametrize(("schema", "cls", "version"), CASES)
def test_round_trip_and_reference(schema, cls, version):
    flexible = schema.is_flexible(version)
    encode, decode = _codecs(schema, cls, version)

    def body(data):
        value = data.draw(struct_of(cls, version))
        parts: list = []
        encode(value, parts)
        wire = b"".join(bytes(p) for p in parts)
        assert wire == reference.encode(value, version, flexible)
        decoded, end = decode(memoryview(wire), 0)
        assert end == len(wire)
        assert decoded == value
        ref_decoded, ref_end = reference.decode(cls, version, flexible, wire)
        assert ref_end == end
        assert ref_decoded == decoded

    given_data(SETTINGS, body)


@pytest.mark.parametrize(("schema", "cls", "version"), CASES)
def test_framing_byte_at_a_time(schema, cls, version):
    encode, decode = _codecs(schema, cls, version)

    def body(data):
        value = data.draw(struct_of(cls, version))
        parts: list = []
        encode(value, parts)
        wire = b"".join(bytes(p) for p in parts)
        stream = (struct.pack(">i", len(wire)) + wire) * 2
        frames = FrameDecoder(max_frame_bytes=1 << 20)
        got = []
        for i in range(len(stream)):
            frames.feed(stream[i : i + 1])
            got.extend(bytes(fr) for fr in frames)
        assert got == [wire, wire]
        assert decode(memoryview(got[0]), 0)[0] == value

    given_data(FRAMING, body)


@pytest.mark.parametrize(("schema", "cls", "version"), CASES)
def test_garbage_raises_only_remote_protocol_errors(schema, cls, version):
    encode, decode = _codecs(schema, cls, version)

    def body(data):
        value = data.draw(struct_of(cls, version))
        parts: list = []
        encode(value, parts)
        wire = bytearray(b"".join(bytes(p) for p in parts))
        choice = data.draw(st.sampled_from(["truncate", "flip", "random"]))
        if choice == "truncate" and wire:
            wire = wire[: data.draw(st.integers(0, len(wire) - 1))]
        elif choice == "flip" and wire:
            i = data.draw(st.integers(0, len(wire) - 1))
            wire[i] = data.draw(st.integers(0, 255))
        else:
            wire = bytearray(data.draw(st.binary(max_size=64)))
        try:
            decode(memoryview(bytes(wire)), 0)
        except RemoteProtocolError:
            pass

    given_data(GARBAGE, body)
