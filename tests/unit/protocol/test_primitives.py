import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import primitives as p
from protocol.errors import MalformedMessage


@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(n):
    raw = p.uvarint_bytes(n)
    assert p.read_uvarint(raw, 0) == (n, len(raw))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(n):
    raw = p.varint_bytes(n)
    assert p.read_varint(raw, 0) == (n, len(raw))
    assert p.varint_size(n) == len(raw)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    raw = p.varlong_bytes(n)
    assert p.read_varlong(raw, 0) == (n, len(raw))


def test_varlong_table_edges():
    # varlong_bytes serves -8192..8191 from a table; the values around its edges must agree
    # with the plain encoding.
    for n in (-8193, -8192, -8191, -1, 0, 1, 8190, 8191, 8192, 2**63 - 1, -(2**63)):
        assert p.varlong_bytes(n) == p.uvarint_bytes(p.zigzag64(n))


def test_known_varint_encodings():
    # zigzag: 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3, 300 -> 600 = 0xd8 0x04
    assert p.varint_bytes(0) == b"\x00"
    assert p.varint_bytes(-1) == b"\x01"
    assert p.varint_bytes(1) == b"\x02"
    assert p.varint_bytes(300) == b"\xd8\x04"
    assert p.uvarint_bytes(16385) == b"\x81\x80\x01"


@pytest.mark.parametrize(
    "raw", [b"", b"\x80", b"\xff\xff\xff\xff\xff\x01", b"\xff\xff\xff\xff\x7f"]
)
def test_bad_uvarints_are_malformed(raw):
    with pytest.raises(MalformedMessage):
        p.read_uvarint(raw, 0)


def test_uuid_bytes_round_trip():
    u = uuid.uuid4()
    assert p.uuid_from_bytes(p.uuid_to_bytes(u)) == u
    assert p.uuid_from_bytes(bytes(16)) is p.ZERO_UUID
    assert str(p.uuid_from_bytes(u.bytes)) == str(u)
    assert hash(p.uuid_from_bytes(u.bytes)) == hash(u)


def test_strings_and_bytes():
    out = bytearray()
    p.write_string(out, "héllo", compact=False)
    p.write_string(out, None, compact=True)
    p.write_bytes(out, b"xy", compact=True)
    p.write_bytes(out, None, compact=False)
    pos = 0
    s, pos = p.read_string(out, pos, compact=False, nullable=False)
    assert s == "héllo"
    s, pos = p.read_string(out, pos, compact=True, nullable=True)
    assert s is None
    b, pos = p.read_bytes(out, pos, compact=True, nullable=False)
    assert b == b"xy"
    b, pos = p.read_bytes(out, pos, compact=False, nullable=True)
    assert b is None and pos == len(out)


def test_null_where_not_nullable_is_malformed():
    with pytest.raises(MalformedMessage):
        p.read_string(b"\xff\xff", 0, compact=False, nullable=False)
    with pytest.raises(MalformedMessage):
        p.read_string(b"\x00\x05ab", 0, compact=False, nullable=False)
