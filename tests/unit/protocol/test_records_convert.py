"""Conversion: legacy message sets up to magic 2 (Produce v0-2) and magic 2 down to legacy
(Fetch v0-3), checked with kafka-python's and aiokafka's readers."""

from __future__ import annotations

import pytest
from aiokafka.record import memory_records as aio_memory
from kafka.record import legacy_records as kp_legacy
from kafka.record import memory_records as kp_memory

from protocol.errors import (
    CorruptRecord,
    DecompressionLimitExceeded,
    InvalidRecord,
    UnsupportedCompression,
)
from protocol.records import batch as rb
from protocol.records import compression as c
from protocol.records.control import ControlRecordType, build_control_batch
from protocol.records.convert import batches_to_legacy, legacy_to_batch
from protocol.records.legacy import build_message_set, iter_messages
from protocol.records.memory import iter_any_batches
from protocol.records.record import LOG_APPEND_TIME, SimpleRecord, build_batch, decode_batch

LEGACY_CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4]
T0 = 1_700_000_000_000
SAMPLE = [
    SimpleRecord(b"one", key=b"k1", timestamp=T0, headers=[("dropped", b"x")]),
    SimpleRecord(None, key=b"k2", timestamp=T0 + 2),
    SimpleRecord(b"three", key=None, timestamp=T0 + 1),
]


def read_all(reader_cls, raw):
    records = reader_cls(raw)
    out = []
    while records.has_next():
        batch = records.next_batch()
        out.extend(
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers))
            for r in batch
        )
    return out


READERS = {"kafka-python": kp_memory.MemoryRecords, "aiokafka": aio_memory.MemoryRecords}


# --- up: Produce v0-2 --------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_kafka_python_message_sets_become_one_batch(magic, codec):
    if magic == 0 and codec == c.LZ4:
        pytest.skip("kafka-python needs xxhash for magic-0 lz4")
    builder = kp_legacy.LegacyRecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 30
    )
    for i, r in enumerate(SAMPLE):
        builder.append(i, r.timestamp if magic else None, r.key, r.value)
    raw = legacy_to_batch(bytes(builder.build()))
    (header,) = rb.validate_batches(raw)
    assert header.compression == codec and header.record_count == 3 and header.base_offset == 0
    assert header.producer_id == -1 and header.timestamp_type == 0
    records = decode_batch(raw).records
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, r.key, r.value, []) for i, r in enumerate(SAMPLE)
    ]
    assert [r.timestamp for r in records] == [r.timestamp if magic else -1 for r in SAMPLE]
    assert header.max_timestamp == (T0 + 2 if magic else -1)


@pytest.mark.parametrize("magic", [0, 1])
def test_our_lz4_message_sets_and_codec_override(magic):
    raw = build_message_set(SAMPLE, magic=magic, compression=c.LZ4, base_offset=77)
    batch = decode_batch(legacy_to_batch(raw))
    assert batch.compression == c.LZ4 and [r.offset for r in batch.records] == [0, 1, 2]
    other = decode_batch(legacy_to_batch(raw, compression=c.ZSTD))
    assert other.compression == c.ZSTD and other.records == batch.records


def test_several_wrappers_and_plain_messages():
    raw = build_message_set(SAMPLE[:1], magic=1) + build_message_set(
        SAMPLE[1:], magic=1, compression=c.SNAPPY, base_offset=1
    )
    batch = decode_batch(legacy_to_batch(raw))
    assert batch.compression == c.SNAPPY
    assert [r.value for r in batch.records] == [r.value for r in SAMPLE]


def test_up_conversion_bounds_all_wrappers_together():
    wrapper = build_message_set([SimpleRecord(b"\0" * 100_000)], magic=1, compression=c.GZIP)
    assert (
        len(decode_batch(legacy_to_batch(wrapper * 5, max_decompressed_bytes=10**6)).records) == 5
    )
    with pytest.raises(DecompressionLimitExceeded):
        legacy_to_batch(wrapper * 20, max_decompressed_bytes=10**6)


def test_up_conversion_errors():
    with pytest.raises(InvalidRecord):
        legacy_to_batch(b"")
    raw = bytearray(build_message_set(SAMPLE, magic=1))
    raw[-1] ^= 1
    with pytest.raises(CorruptRecord):
        legacy_to_batch(bytes(raw))


# --- down: Fetch v0-3 --------------------------------------------------------------------------


def log_slice(codec, *, timestamp_type=0):
    """Two data batches with a commit marker between them, as a transactional log holds."""
    return (
        build_batch(
            SAMPLE,
            compression=codec,
            base_offset=100,
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
            timestamp_type=timestamp_type,
            log_append_time=T0 + 50,
        )
        + build_control_batch(
            ControlRecordType.COMMIT,
            producer_id=5,
            producer_epoch=0,
            coordinator_epoch=1,
            timestamp=T0,
            base_offset=103,
        )
        + build_batch(
            SAMPLE[:1],
            compression=codec,
            base_offset=104,
            timestamp_type=timestamp_type,
            log_append_time=T0 + 60,
        )
    )


@pytest.mark.parametrize("client", list(READERS))
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_down_conversion_read_by_old_consumers(client, magic, codec):
    if magic == 0 and codec == c.LZ4:
        pytest.skip("the clients cannot read magic-0 lz4 (xxhash missing / unsupported)")
    legacy = batches_to_legacy(log_slice(codec), magic)
    entries = [m for _, m in iter_messages(legacy)]
    assert {m.magic for m in entries} == {magic}
    if codec:
        # one wrapper per batch, at the batch's last offset, with the batch's codec
        assert [(m.offset, m.compression) for m in entries] == [(102, codec), (104, codec)]
    else:
        assert [m.offset for m in entries] == [100, 101, 102, 104]
    got = read_all(READERS[client], legacy)
    want = [
        (100 + i, r.timestamp if magic else None, 0 if magic else None, r.key, r.value, [])
        for i, r in enumerate(SAMPLE)
    ]
    want.append((104, T0 if magic else None, 0 if magic else None, b"k1", b"one", []))
    assert got == want


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_down_conversion_keeps_log_append_time(codec):
    legacy = batches_to_legacy(log_slice(codec, timestamp_type=LOG_APPEND_TIME), 1)
    got = read_all(kp_memory.MemoryRecords, legacy)
    assert [(o, t, tt) for o, t, tt, *_ in got] == [
        (100, T0 + 50, 1),
        (101, T0 + 50, 1),
        (102, T0 + 50, 1),
        (104, T0 + 60, 1),
    ]


def test_zstd_cannot_go_down():
    with pytest.raises(UnsupportedCompression):
        batches_to_legacy(log_slice(c.ZSTD), 1)


def test_fetch_offset_trims_uncompressed_batches_only():
    for codec, first in ((c.NONE, 101), (c.GZIP, 100)):
        legacy = batches_to_legacy(log_slice(codec), 1, fetch_offset=101)
        offsets = [o for o, *_ in read_all(kp_memory.MemoryRecords, legacy)]
        assert offsets[0] == first and offsets[-1] == 104


def test_partial_tail_is_dropped_and_legacy_entries_pass_through():
    log = log_slice(c.NONE)
    assert [o for o, *_ in read_all(kp_memory.MemoryRecords, batches_to_legacy(log[:-5], 1))] == [
        100,
        101,
        102,
    ]
    v0 = build_message_set(SAMPLE[:1], magic=0, base_offset=7)
    v1 = build_message_set(SAMPLE[:1], magic=1, compression=c.GZIP, base_offset=8)
    assert batches_to_legacy(v0 + v1, 1) == v0 + v1
    down = batches_to_legacy(v0 + v1, 0)
    assert down[: len(v0)] == v0
    assert [(b.magic, b.last_offset) for b in iter_any_batches(down)] == [(0, 7), (0, 8)]


def test_up_and_down_again():
    for codec in LEGACY_CODECS:
        v2 = build_batch(SAMPLE, compression=codec, base_offset=10)
        v1 = batches_to_legacy(v2, 1)
        back = decode_batch(legacy_to_batch(v1)).records
        assert [(r.timestamp, r.key, r.value) for r in back] == [
            (r.timestamp, r.key, r.value) for r in SAMPLE
        ]
