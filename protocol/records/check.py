"""Checking every record of a produced batch, as Kafka's ``LogValidator`` does, before anything
is appended: a batch whose CRC is right can still hold records no consumer can read (a header
count of 2^31-1, a key length past the end, fewer records than the header says), and one such
batch would make its partition unreadable behind it.

:func:`check_records` walks one batch's records section (decompressed) without building
anything and returns None, or ``(kind, record index, message)`` for the first record that fails:

* :data:`STRUCTURE`: varint lengths within the record and the batch, the record's length equal
  to what it holds, offset deltas equal to the records' positions (0..count-1), header counts and
  lengths sane, no bytes after the last record (Kafka: INVALID_RECORD);
* :data:`MISSING_KEY`: a record without a key when ``require_key`` (a compacted topic; Kafka:
  INVALID_RECORD with a record error);
* :data:`TIMESTAMP`: a record whose timestamp delta lies outside ``[ts_lo, ts_hi]`` (Kafka:
  INVALID_TIMESTAMP with a record error).

It is the compiled ``protocol/_record_check.c`` when that was built (``pip install`` does where a
C compiler is available), else :func:`check_records_py`; both give the same answers (the tests
hold them to each other), ``ODRADEK_NO_EXTENSIONS=1`` selects the Python one, and
:data:`ACCELERATED` says which runs. This is on the produce path: the Python walk costs about a
microsecond per record, the compiled one a few nanoseconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from protocol.records.batch import Buffer

STRUCTURE: Final = 1
MISSING_KEY: Final = 2
TIMESTAMP: Final = 3

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

Failure = tuple[int, int, str]


def _varint(data: Buffer, end: int, pos: int, max_bytes: int) -> tuple[int, int] | None:
    result = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            return None
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    return None


def check_records_py(
    data: Buffer,
    count: int,
    require_key: bool,
    ts_lo: int,
    ts_hi: int,
    collect: list[tuple[int, int, int]] | None = None,
) -> Failure | None:
    """The pure-Python checker; see the module docstring. With ``collect``, a record without a
    key or with a timestamp out of range does not end the walk: ``(kind, record index,
    timestamp delta)`` is appended for every such record (one per record, the key first, as
    Kafka's LogValidator names them) and only a :data:`STRUCTURE` failure is returned."""
    end = len(data)
    if count < 0 or count > end // 6:
        return STRUCTURE, 0, "the record count does not fit in the batch"
    pos = 0
    varint = _varint
    for index in range(count):
        got = varint(data, end, pos, 5)
        if got is None:
            return STRUCTURE, index, "a broken record length"
        length, pos = got
        if length < 6 or length > end - pos:
            return STRUCTURE, index, "a record length that does not fit in the batch"
        record_end = pos + length
        pos += 1  # attributes
        got = varint(data, record_end, pos, 10)
        if got is None:
            return STRUCTURE, index, "a broken timestamp delta"
        timestamp_delta, pos = got
        got = varint(data, record_end, pos, 5)
        if got is None:
            return STRUCTURE, index, "a broken offset delta"
        if got[0] != index:
            return (
                STRUCTURE,
                index,
                "an offset delta that is not the record's position in the batch",
            )
        pos = got[1]
        got = varint(data, record_end, pos, 5)
        if got is None or got[0] < -1 or got[0] > record_end - got[1]:
            return STRUCTURE, index, "a key length that does not fit in the record"
        n, pos = got
        keyless = n == -1 and require_key
        if keyless and collect is None:
            return MISSING_KEY, index, "Compacted topic cannot accept message without key"
        if n > 0:
            pos += n
        got = varint(data, record_end, pos, 5)
        if got is None or got[0] < -1 or got[0] > record_end - got[1]:
            return STRUCTURE, index, "a value length that does not fit in the record"
        n, pos = got
        if n > 0:
            pos += n
        got = varint(data, record_end, pos, 5)
        if got is None or got[0] < 0 or got[0] > record_end - got[1]:
            return STRUCTURE, index, "a header count that does not fit in the record"
        headers, pos = got
        for _ in range(headers):
            got = varint(data, record_end, pos, 5)
            if got is None or got[0] < 0 or got[0] > record_end - got[1]:
                return STRUCTURE, index, "a header key length that does not fit in the record"
            n, pos = got
            pos += n
            got = varint(data, record_end, pos, 5)
            if got is None or got[0] < -1 or got[0] > record_end - got[1]:
                return STRUCTURE, index, "a header value length that does not fit in the record"
            n, pos = got
            if n > 0:
                pos += n
        if pos != record_end:
            return STRUCTURE, index, "a record whose length does not match its contents"
        if keyless:
            assert collect is not None
            collect.append((MISSING_KEY, index, timestamp_delta))
        elif timestamp_delta < ts_lo or timestamp_delta > ts_hi:
            if collect is None:
                return TIMESTAMP, index, "Timestamp out of range"
            collect.append((TIMESTAMP, index, timestamp_delta))
    if pos != end:
        return STRUCTURE, count, "bytes left after the batch's last record"
    return None


check_records: Callable[[Buffer, int, bool, int, int], Failure | None] = check_records_py
ACCELERATED = False
if not os.environ.get("ODRADEK_NO_EXTENSIONS"):
    try:
        from protocol import _record_check
    except ImportError:  # built without a C compiler: the Python checker stands in
        pass
    else:
        check_records = _record_check.check_records
        ACCELERATED = True
