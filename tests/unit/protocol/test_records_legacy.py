"""Legacy message sets (magic 0 and 1): ours against kafka-python's and aiokafka's."""

from __future__ import annotations

import struct
import zlib

import pytest
from aiokafka.record import legacy_records as aio_legacy
from aiokafka.record import memory_records as aio_memory
from kafka.record import legacy_records as kp_legacy
from kafka.record import memory_records as kp_memory

from protocol.errors import CorruptRecord, UnsupportedCompression
from protocol.records import compression as c
from protocol.records.legacy import (
    LegacyBatch,
    build_message_set,
    decode_message_set,
    encode_message,
    iter_legacy_batches,
    iter_messages,
    read_message,
)
from protocol.records.memory import iter_any_batches, iter_records
from protocol.records.record import LOG_APPEND_TIME, Record, SimpleRecord, build_batch

LEGACY_CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4]
T0 = 1_700_000_000_000
SAMPLE = [
    SimpleRecord(b"value", key=b"key", timestamp=T0),
    SimpleRecord(None, key=b"tombstone", timestamp=T0 + 3),
    SimpleRecord(b"", key=None, timestamp=T0 - 10),
    SimpleRecord(b"v" * 50_000, key=b"k", timestamp=T0 + 1),
]


def expected(magic, base=0, records=SAMPLE):
    return [(base + i, r.timestamp if magic else -1, r.key, r.value) for i, r in enumerate(records)]


def ours(records):
    return [(r.offset, r.timestamp, r.key, r.value) for r in records]


def test_legacy_message_sizes_and_crc():
    """A v0 message key="key" value="value" takes 34 bytes with CRC 592888119; with
    a null key 31 bytes; in v1 42 bytes."""
    v0 = encode_message(0, b"key", b"value", magic=0)
    assert len(v0) == 34 and read_message(v0).crc == 592888119
    assert len(encode_message(0, None, b"value", magic=0)) == 31
    assert len(encode_message(0, b"key", b"value", magic=1, timestamp=T0)) == 42


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_round_trip(magic, codec):
    raw = build_message_set(SAMPLE, magic=magic, compression=codec, base_offset=500)
    assert ours(decode_message_set(raw)) == expected(magic, 500)
    entries = [m for _, m in iter_messages(raw)]
    if codec:
        (wrapper,) = entries
        assert wrapper.offset == 503 and wrapper.key is None and wrapper.compression == codec
        assert wrapper.timestamp == (T0 + 3 if magic else -1)
        assert wrapper.timestamp_type == (0 if magic else -1)
    else:
        assert [m.offset for m in entries] == [500, 501, 502, 503]
    (batch,) = list(iter_legacy_batches(raw)) if codec else list(iter_legacy_batches(raw))[:1]
    assert isinstance(batch, LegacyBatch) and batch.magic == magic and not batch.is_control


def test_inner_offsets_relative_in_v1_absolute_in_v0():
    records = [Record(100, T0, None, b"a", []), Record(103, T0, None, b"b", [])]
    for magic, inner_offsets in ((0, [100, 103]), (1, [0, 3])):
        raw = build_message_set(records, magic=magic, compression=c.GZIP, keep_offsets=True)
        (_, wrapper) = next(iter_messages(raw))
        assert wrapper.offset == 103
        inner = c.decompress(c.GZIP, wrapper.value)
        assert [m.offset for _, m in iter_messages(inner)] == inner_offsets
        assert [r.offset for r in decode_message_set(raw)] == [100, 103]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_log_append_time(codec):
    raw = build_message_set(
        SAMPLE, magic=1, compression=codec, timestamp_type=LOG_APPEND_TIME, log_append_time=T0 + 9
    )
    assert [r.timestamp for r in decode_message_set(raw)] == [T0 + 9] * len(SAMPLE)
    assert {b.timestamp_type for b in iter_legacy_batches(raw)} == {1}
    for record in kp_memory_records(raw):
        assert (record.timestamp, record.timestamp_type) == (T0 + 9, 1)


def kp_memory_records(raw):
    records = kp_memory.MemoryRecords(raw)
    out = []
    while records.has_next():
        out.extend(records.next_batch())
    return out


def aio_memory_records(raw):
    records = aio_memory.MemoryRecords(raw)
    out = []
    while records.has_next():
        out.extend(records.next_batch())
    return out


def theirs_can(client, magic, codec):
    # kafka-python needs the xxhash package for magic-0 lz4, and aiokafka refuses it.
    return not (magic == 0 and codec == c.LZ4)


@pytest.mark.parametrize("reader", [kp_memory_records, aio_memory_records])
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_theirs_read_ours(reader, magic, codec):
    if not theirs_can(reader, magic, codec):
        pytest.skip("the client cannot read magic-0 lz4")
    raw = build_message_set(SAMPLE, magic=magic, compression=codec, base_offset=40)
    got = [(r.offset, r.timestamp, r.key, r.value) for r in reader(raw)]
    assert got == [(o, t if magic else None, k, v) for o, t, k, v in expected(magic, 40)]


def kp_build(magic, codec):
    return kp_legacy.LegacyRecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 30
    )


def aio_build(magic, codec):
    return aio_legacy.LegacyRecordBatchBuilder(magic, codec, 1 << 30)


def aio_py_build(magic, codec):
    return aio_legacy._LegacyRecordBatchBuilderPy(magic, codec, 1 << 30)


@pytest.mark.parametrize("builder", [kp_build, aio_build, aio_py_build])
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_we_read_theirs(builder, magic, codec):
    if not theirs_can(builder, magic, codec):
        pytest.skip("the client cannot write magic-0 lz4")
    b = builder(magic, codec)
    for i, r in enumerate(SAMPLE):
        b.append(i, r.timestamp if magic else None, r.key, r.value)
    raw = bytes(b.build())
    # Producers leave a v1 wrapper at offset 0; its inner offsets 0..n-1 are then kept.
    assert ours(decode_message_set(raw)) == expected(magic)
    assert ours(iter_records(raw)) == expected(magic)


def test_mixed_formats_in_one_buffer():
    buf = (
        build_message_set(SAMPLE[:2], magic=0, base_offset=0)
        + build_message_set(SAMPLE[2:], magic=1, compression=c.SNAPPY, base_offset=2)
        + build_batch(SAMPLE[:1], base_offset=4)
    )
    assert [b.magic for b in iter_any_batches(buf)] == [0, 0, 1, 2]
    assert [r.offset for r in iter_records(buf)] == [0, 1, 2, 3, 4]
    assert [r.offset for r in iter_records(buf[:-3], allow_partial=True)] == [0, 1, 2, 3]
    with pytest.raises(CorruptRecord):
        list(iter_records(buf[:-3]))


def test_partial_tail():
    raw = build_message_set(SAMPLE, magic=1)
    for cut in (1, 10, 30):
        records = decode_message_set(raw[:-cut], allow_partial=True)
        assert [r.offset for r in records] == [0, 1, 2]
        with pytest.raises(CorruptRecord):
            decode_message_set(raw[:-cut])


# --- bad input ---------------------------------------------------------------------------------


def resign(entry: bytearray) -> bytearray:
    struct.pack_into(">I", entry, 12, zlib.crc32(entry[16:]))
    return entry


def wrapper_of(inner: bytes, *, magic=1, codec=c.GZIP, offset=0) -> bytes:
    return encode_message(
        offset, None, c.compress(codec, inner, magic=magic), magic=magic, attributes=codec
    )


def test_bad_entries_are_corrupt():
    good = bytearray(encode_message(0, b"key", b"value", magic=1, timestamp=T0))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    bad_magic = resign(bytearray(good))
    bad_magic[16] = 3
    bad_magic = resign(bad_magic)
    key_overrun = bytearray(good)
    struct.pack_into(">i", key_overrun, 26, 100)
    key_overrun = resign(key_overrun)
    negative_key = bytearray(good)
    struct.pack_into(">i", negative_key, 26, -2)
    negative_key = resign(negative_key)
    trailing = bytearray(good) + b"\x00"
    struct.pack_into(">i", trailing, 8, len(trailing) - 12)
    trailing = resign(trailing)
    tiny = bytearray(good)
    struct.pack_into(">i", tiny, 8, 10)
    cases = [
        bad_crc,
        bad_magic,
        key_overrun,
        negative_key,
        trailing,
        tiny,
        good[:-1],
        good[:20],
        wrapper_of(bytes(encode_message(0, None, b"x", magic=0))),  # inner magic differs
        wrapper_of(bytes(wrapper_of(encode_message(0, None, b"x", magic=1)))),  # nested
        wrapper_of(b""),  # no inner messages
        encode_message(0, None, None, magic=1, attributes=c.GZIP),  # null wrapper value
        encode_message(0, None, b"not gzip", magic=1, attributes=c.GZIP),
    ]
    for case in cases:
        with pytest.raises(CorruptRecord):
            decode_message_set(bytes(case))
    with pytest.raises(UnsupportedCompression):
        decode_message_set(encode_message(0, None, b"x", magic=1, attributes=c.ZSTD))
    with pytest.raises(UnsupportedCompression):
        decode_message_set(encode_message(0, None, b"x", magic=0, attributes=6))


def test_crc_can_be_skipped():
    raw = bytearray(build_message_set(SAMPLE[:1], magic=0))
    raw[-1] ^= 1
    assert decode_message_set(bytes(raw), verify_crc=False)[0].value == b"valud"
