"""The record check on the produce path: the compiled checker and the pure-Python one give the
same answer on every input (valid batches, each kind of broken record, random bytes and
truncations), and both accept what real clients write and refuse what no consumer can read."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records import batch as rb
from protocol.records import check
from protocol.records.record import RecordBatchBuilder
from tests.unit.storage.util import make_batch

compiled = pytest.mark.skipif(not check.ACCELERATED, reason="built without a C compiler")

INT64_MIN, INT64_MAX = check.INT64_MIN, check.INT64_MAX


def section(batch: bytes | bytearray) -> bytes:
    return bytes(batch[rb.HEADER_SIZE :])


def both(data: bytes, count: int, require_key: bool = False, lo: int = INT64_MIN,
         hi: int = INT64_MAX) -> tuple[int, int, str] | None:  # fmt: skip
    py = check.check_records_py(data, count, require_key, lo, hi)
    if check.ACCELERATED:
        from protocol import _record_check

        assert _record_check.check_records(data, count, require_key, lo, hi) == py
    # collecting every keyless or out-of-range record agrees with the first failure: the same
    # structure failure, or the same first record named (unless a later record is broken)
    found: list[tuple[int, int, int]] = []
    collected = check.check_records_py(data, count, require_key, lo, hi, found)
    if py is None or py[0] == check.STRUCTURE:
        assert (collected, found) == (py, [])
    elif collected is None:
        assert found[0][:2] == py[:2]
    else:
        assert collected[0] == check.STRUCTURE and collected[1] >= py[1]
    return py


def zigzag(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record(body: bytes) -> bytes:
    return zigzag(len(body)) + body


def fields(offset: int, key: int | bytes | None = b"k", value: bytes | None = b"v",
           headers: list[tuple[int, int]] | None = None, ts: int = 0) -> bytes:  # fmt: skip
    out = b"\x00" + zigzag(ts) + zigzag(offset)
    if isinstance(key, int):
        out += zigzag(key)
    else:
        out += zigzag(-1) if key is None else zigzag(len(key)) + key
    out += zigzag(-1) if value is None else zigzag(len(value)) + value
    hs = headers or []
    out += zigzag(len(hs))
    for klen, vlen in hs:
        out += zigzag(klen) + b"h" * max(klen, 0) + zigzag(vlen) + b"x" * max(vlen, 0)
    return out


def test_what_clients_write_is_accepted() -> None:
    for codec in (0,):
        batch = make_batch(50, compression=codec, keys=[b"k%d" % i for i in range(50)])
        assert both(section(batch), 50) is None
    builder = RecordBatchBuilder()
    for i in range(20):
        builder.append(b"v" * i, key=None, timestamp=1000 + i, headers=[("h", b"x"), ("e", None)])
    assert both(section(builder.build()), 20) is None


@pytest.mark.parametrize(
    ("data", "count", "kind"),
    [
        (record(fields(0, headers=[(1, 1)])[:-4] + zigzag(2**31 - 1)), 1, check.STRUCTURE),
        (record(fields(0) + b"") + record(fields(1)), 3, check.STRUCTURE),  # fewer than said
        (record(fields(0, key=2**30)), 1, check.STRUCTURE),  # key length with no bytes
        (zigzag(2**31 - 1) + fields(0), 1, check.STRUCTURE),  # record length
        (record(fields(0)) + b"\x00\x01", 1, check.STRUCTURE),  # trailing bytes
        (record(fields(5)), 1, check.STRUCTURE),  # offset delta not its position
        (record(fields(0, headers=[(-5, 0)])), 1, check.STRUCTURE),  # header key length
        (record(fields(0) + b"x"), 1, check.STRUCTURE),  # longer than its contents
        (b"\xff" * 12, 1, check.STRUCTURE),  # a varint that never ends
        (record(fields(0)), -5, check.STRUCTURE),
        (record(fields(0)), 2**31 - 1, check.STRUCTURE),
    ],
)
def test_broken_records_are_found(data: bytes, count: int, kind: int) -> None:
    failure = both(data, count)
    assert failure is not None and failure[0] == kind


def test_header_count_of_minus_five_and_two_to_the_31() -> None:
    for n in (-5, 2**31 - 1):
        body = b"\x00" + zigzag(0) + zigzag(0) + zigzag(1) + b"k" + zigzag(1) + b"v" + zigzag(n)
        failure = both(record(body), 1)
        assert failure is not None and failure[0] == check.STRUCTURE


def test_missing_keys_on_compacted_topics_and_timestamps() -> None:
    data = record(fields(0)) + record(fields(1, key=None)) + record(fields(2, ts=50))
    assert both(data, 3) is None
    assert both(data, 3, require_key=True) == (
        check.MISSING_KEY, 1, "Compacted topic cannot accept message without key"
    )  # fmt: skip
    assert both(data, 3, lo=0, hi=49) == (check.TIMESTAMP, 2, "Timestamp out of range")


def test_every_keyless_record_and_timestamp_is_collected() -> None:
    """The slow path behind a refused batch names every record Kafka names: one error per
    record, the missing key before the timestamp."""
    data = (
        record(fields(0, key=None, ts=50))
        + record(fields(1, ts=50))
        + record(fields(2))
        + record(fields(3, key=None))
    )
    found: list[tuple[int, int, int]] = []
    assert check.check_records_py(data, 4, True, 0, 49, found) is None
    assert found == [
        (check.MISSING_KEY, 0, 50),
        (check.TIMESTAMP, 1, 50),
        (check.MISSING_KEY, 3, 0),
    ]
    broken_later = data + b"\x00"
    assert check.check_records_py(broken_later, 4, True, 0, 49, []) == (
        check.STRUCTURE, 4, "bytes left after the batch's last record"
    )  # fmt: skip


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.integers(min_value=-2, max_value=40), st.booleans())
def test_random_bytes_get_the_same_answer(data: bytes, count: int, require_key: bool) -> None:
    both(data, count, require_key)


@settings(max_examples=300)
@given(st.data())
def test_mutated_valid_sections_get_the_same_answer(data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=1, max_value=8))
    keys = [data.draw(st.one_of(st.none(), st.binary(max_size=5))) for _ in range(n)]
    batch = make_batch(n, keys=keys)
    raw = bytearray(section(batch))
    for _ in range(data.draw(st.integers(min_value=0, max_value=3))):
        i = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[i] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    both(bytes(raw[:cut]), n, data.draw(st.booleans()))


@compiled
def test_reference_counts_and_bad_arguments() -> None:
    from protocol import _record_check

    data = section(make_batch(3))
    before = sys.getrefcount(data)
    for _ in range(200):
        assert _record_check.check_records(data, 3, False, INT64_MIN, INT64_MAX) is None
        _record_check.check_records(data, 9, True, 0, 0)
    assert sys.getrefcount(data) == before
    with pytest.raises(TypeError):
        _record_check.check_records(data, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _record_check.check_records("text", 3, False, 0, 0)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        _record_check.check_records(data, 2**80, False, 0, 0)


def test_the_environment_switch_selects_the_python_checker() -> None:
    env = dict(os.environ, ODRADEK_NO_EXTENSIONS="1")
    out = subprocess.run(
        [sys.executable, "-c", "from protocol.records import check; print(check.ACCELERATED)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "False"


def test_crc_is_checked_before_records() -> None:
    batch = bytearray(make_batch(2))
    struct.pack_into(">I", batch, rb.CRC_AT, 0)
    with pytest.raises(Exception, match="CRC"):
        rb.validate_batches(batch)
