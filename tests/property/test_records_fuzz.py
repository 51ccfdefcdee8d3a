"""Record formats under hypothesis: round trips for every format and codec, kafka-python as an
oracle, and truncated, mutated or random bytes answered only with our RemoteProtocolError
subclasses (CorruptRecord, InvalidRecord, UnsupportedCompression, DecompressionLimitExceeded)."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.record import default_records as kp_default
from kafka.record import memory_records as kp_memory

from protocol.errors import RemoteProtocolError
from protocol.records import batch as rb
from protocol.records import compression as c
from protocol.records.convert import batches_to_legacy, legacy_to_batch
from protocol.records.legacy import build_message_set, decode_message_set
from protocol.records.memory import iter_any_batches, iter_records
from protocol.records.record import (
    LOG_APPEND_TIME,
    Record,
    build_batch,
    decode_batch,
    decode_records_data,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT = 1 << 20

maybe_bytes = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=12), maybe_bytes), max_size=4)
timestamps = st.integers(min_value=-1, max_value=2**45)


@st.composite
def record_lists(draw, *, min_size=1, with_headers=True, gaps=True):
    count = draw(st.integers(min_value=min_size, max_value=12))
    offset = draw(st.integers(min_value=0, max_value=2**40))
    out = []
    for _ in range(count):
        out.append(
            Record(
                offset,
                draw(timestamps),
                draw(maybe_bytes),
                draw(maybe_bytes),
                draw(headers) if with_headers else [],
            )
        )
        offset += 1 + (draw(st.integers(min_value=0, max_value=3)) if gaps else 0)
    return out


codecs = st.sampled_from([c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD])
legacy_codecs = st.sampled_from([c.NONE, c.GZIP, c.SNAPPY, c.LZ4])


def fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def only_our_errors(fn, *args, **kwargs):
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "__next__"):
            list(result)
    except RemoteProtocolError:
        pass


# --- round trips ---------------------------------------------------------------------------------


@SETTINGS
@given(records=record_lists(), codec=codecs, log_append=st.booleans(), data=st.data())
def test_v2_round_trip_and_kafka_python_agrees(records, codec, log_append, data):
    base = records[0].offset
    append_time = data.draw(timestamps)
    raw = build_batch(
        records,
        compression=codec,
        base_offset=base,
        keep_offsets=True,
        timestamp_type=LOG_APPEND_TIME if log_append else 0,
        log_append_time=append_time,
    )
    batch = decode_batch(raw)
    want = fields(records)
    if log_append:
        want = [(o, append_time, k, v, h) for o, _, k, v, h in want]
    assert fields(batch.records) == want
    assert batch.header.last_offset == records[-1].offset
    theirs = kp_default.DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs] == want


@SETTINGS
@given(records=record_lists(with_headers=False), codec=legacy_codecs, magic=st.sampled_from([0, 1]))
def test_legacy_round_trip(records, codec, magic):
    raw = build_message_set(records, magic=magic, compression=codec, keep_offsets=True)
    want = [(r.offset, r.timestamp if magic else -1, r.key, r.value, []) for r in records]
    assert fields(decode_message_set(raw)) == want
    if codec != c.LZ4 or magic:  # kafka-python needs xxhash for magic-0 lz4
        kp = kp_memory.MemoryRecords(raw)
        got = []
        while kp.has_next():
            got += [(r.offset, r.key, r.value) for r in kp.next_batch()]
        assert got == [(o, k, v) for o, _, k, v, _ in want]


@SMALL
@given(records=record_lists(), codec=legacy_codecs, magic=st.sampled_from([0, 1]))
def test_down_and_up_conversion(records, codec, magic):
    raw = build_batch(records, compression=codec, base_offset=records[0].offset, keep_offsets=True)
    legacy = batches_to_legacy(raw, magic)
    assert [r.offset for r in iter_records(legacy)] == [r.offset for r in records]
    back = decode_batch(legacy_to_batch(legacy))
    assert [(r.key, r.value) for r in back.records] == [(r.key, r.value) for r in records]
    assert back.compression == codec


# --- bad input -----------------------------------------------------------------------------------


@st.composite
def valid_buffers(draw):
    """A buffer in some format: one or two v2 batches, or a legacy message set."""
    records = draw(record_lists(with_headers=False))
    kind = draw(st.sampled_from(["v2", "v2x2", "v0", "v1"]))
    if kind.startswith("v2"):
        codec = draw(codecs)
        raw = build_batch(records, compression=codec, base_offset=records[0].offset)
        return raw + raw if kind == "v2x2" else raw
    codec = draw(legacy_codecs)
    return build_message_set(records, magic=int(kind[1]), compression=codec)


@SETTINGS
@given(raw=valid_buffers(), data=st.data())
def test_truncation(raw, data):
    cut = data.draw(st.integers(min_value=1, max_value=len(raw)))
    prefix = raw[: len(raw) - cut]
    only_our_errors(iter_any_batches, prefix)
    only_our_errors(iter_records, prefix, allow_partial=True)
    if raw[16] == 2:
        only_our_errors(decode_batch, prefix)
        only_our_errors(rb.validate_batches, prefix)
    else:
        only_our_errors(decode_message_set, prefix)
        only_our_errors(legacy_to_batch, prefix)


@SETTINGS
@given(raw=valid_buffers(), data=st.data())
def test_mutation(raw, data):
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        mutated[at] = data.draw(st.integers(min_value=0, max_value=255))
    for verify_crc in (True, False):  # skipping the CRC lets the damage reach the parsers
        only_our_errors(
            iter_any_batches, bytes(mutated), verify_crc=verify_crc, max_decompressed_bytes=LIMIT
        )
        only_our_errors(batches_to_legacy, bytes(mutated), 1, verify_crc=verify_crc)
        only_our_errors(legacy_to_batch, bytes(mutated), verify_crc=verify_crc)


@SETTINGS
@given(raw=valid_buffers(), data=st.data())
def test_mutated_records_section_with_valid_crc(raw, data):
    """Damage the records and sign the batch again: the record decoder itself must cope."""
    assume(raw[16] == 2)
    mutated = bytearray(raw)
    at = data.draw(st.integers(min_value=rb.ATTRIBUTES_AT, max_value=len(raw) - 1))
    mutated[at] = data.draw(st.integers(min_value=0, max_value=255))
    size = rb.batch_size_at(mutated, 0)
    struct.pack_into(">I", mutated, rb.CRC_AT, rb.crc_of(mutated, 0, min(size, len(mutated))))
    only_our_errors(decode_batch, bytes(mutated), max_decompressed_bytes=LIMIT)


@SETTINGS
@given(data=st.binary(max_size=400), count=st.integers(min_value=-2, max_value=50))
def test_random_record_sections(data, count):
    only_our_errors(decode_records_data, data, count, 0, 0)


@SETTINGS
@given(data=st.binary(max_size=400))
def test_random_buffers(data):
    only_our_errors(iter_records, data)
    only_our_errors(iter_records, data, allow_partial=True, verify_crc=False)
    only_our_errors(decode_message_set, data, verify_crc=False)
    only_our_errors(batches_to_legacy, data, 0, allow_partial=False)


@SETTINGS
@given(
    codec=st.integers(min_value=-1, max_value=8),
    magic=st.sampled_from([0, 1, 2]),
    data=st.binary(max_size=200),
)
def test_random_compressed_data(codec, magic, data):
    only_our_errors(c.decompress, codec, data, magic=magic, max_bytes=LIMIT)
    for prefix in (c.XERIAL_HEADER, c.LZ4_FRAME_MAGIC, b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08"):
        only_our_errors(c.decompress, codec, prefix + data, magic=magic, max_bytes=LIMIT)
