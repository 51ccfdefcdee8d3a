"""Magic-2 records: our builder and decoder, against kafka-python's and aiokafka's (both its C
and pure-Python implementations), every codec each supports."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record import control_record as aio_control
from aiokafka.record import default_records as aio_default
from aiokafka.record import memory_records as aio_memory
from kafka.record import default_records as kp_default
from kafka.record import memory_records as kp_memory

from protocol.errors import CorruptRecord, InvalidRecord, LocalProtocolError
from protocol.primitives import varlong_bytes
from protocol.records import batch as rb
from protocol.records import compression as c
from protocol.records.control import (
    ControlRecordType,
    build_control_batch,
    control_type_of,
    parse_control_key,
    parse_end_txn_marker,
)
from protocol.records.record import (
    LOG_APPEND_TIME,
    Record,
    RecordBatchBuilder,
    SimpleRecord,
    _varint,
    _varlong,
    build_batch,
    decode_batch,
    decode_records_data,
    iter_record_batches,
)

CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]
T0 = 1_700_000_000_000

SAMPLE = [
    SimpleRecord(b"value", key=b"key", timestamp=T0, headers=[("h1", b"a"), ("h2", None)]),
    SimpleRecord(None, key=None, timestamp=T0 + 5),  # tombstone without key
    SimpleRecord(b"", key=b"", timestamp=T0 - 70_000),  # empty, earlier timestamp
    SimpleRecord(b"v" * 20_000, key=b"k" * 300, timestamp=T0 + 2**40, headers=[("ключ", b"")]),
    SimpleRecord(b"x", timestamp=T0, headers=[(f"n{i}", bytes([i])) for i in range(200)]),
]


def as_tuples(records):
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


def expected(base_offset=0, records=SAMPLE):
    return [
        (base_offset + i, r.timestamp, r.key, r.value, list(r.headers))
        for i, r in enumerate(records)
    ]


# --- our own round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec):
    raw = build_batch(
        SAMPLE,
        compression=codec,
        base_offset=1000,
        partition_leader_epoch=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=11,
        transactional=True,
    )
    batch = decode_batch(raw)
    assert as_tuples(batch.records) == expected(1000)
    h = batch.header
    assert (h.base_offset, h.partition_leader_epoch, h.producer_id, h.producer_epoch) == (
        1000,
        7,
        42,
        3,
    )
    assert h.base_sequence == 11 and h.last_sequence == 15 and h.is_transactional
    assert h.compression == codec and not h.is_control
    assert h.record_count == 5 and h.last_offset_delta == 4
    assert h.base_timestamp == T0 and h.max_timestamp == T0 + 2**40
    assert rb.validate_batches(raw) == [h]
    assert batch.size == len(raw) and batch.next_offset == 1005


@pytest.mark.parametrize("codec", CODECS)
def test_log_append_time_overrides_record_timestamps(codec):
    raw = build_batch(
        SAMPLE[:2], compression=codec, timestamp_type=LOG_APPEND_TIME, log_append_time=T0 + 99
    )
    batch = decode_batch(raw)
    assert batch.timestamp_type == 1 and batch.max_timestamp == T0 + 99
    assert [r.timestamp for r in batch.records] == [T0 + 99, T0 + 99]


def test_gaps_kept_and_empty_compacted_batch():
    records = [Record(10, T0, b"k", b"a", []), Record(13, T0 + 1, b"k", b"b", [])]
    raw = build_batch(records, base_offset=10, keep_offsets=True)
    batch = decode_batch(raw)
    assert [r.offset for r in batch.records] == [10, 13]
    assert batch.header.last_offset_delta == 3
    builder = RecordBatchBuilder(base_offset=10, producer_id=1, producer_epoch=0, base_sequence=5)
    with pytest.raises(LocalProtocolError):
        builder.build()
    empty = decode_batch(builder.build(last_offset_delta=3))
    assert empty.records == [] and empty.header.next_offset == 14
    assert empty.header.base_timestamp == -1 and empty.header.max_timestamp == -1


def test_builder_rejects_misuse():
    builder = RecordBatchBuilder(base_offset=5)
    builder.append(b"a", offset=6)
    with pytest.raises(LocalProtocolError):
        builder.append(b"b", offset=6)
    with pytest.raises(LocalProtocolError):
        builder.build(last_offset_delta=0)
    with pytest.raises(LocalProtocolError):
        RecordBatchBuilder(timestamp_type=2)
    with pytest.raises(LocalProtocolError):
        builder.append(b"c", timestamp=2**63 - 1)  # the delta from -1 does not fit


def test_delete_horizon():
    builder = RecordBatchBuilder(delete_horizon_ms=T0 - 1000)
    builder.append(b"a", key=b"k", timestamp=T0)
    batch = decode_batch(builder.build())
    assert batch.header.attributes & rb.DELETE_HORIZON_MASK
    assert batch.header.base_timestamp == T0 - 1000 and batch.records[0].timestamp == T0


def test_builder_sizes_and_counts():
    builder = RecordBatchBuilder()
    assert builder.size_in_bytes() == rb.HEADER_SIZE and len(builder) == 0
    assert builder.append(b"abc", timestamp=T0) == 0
    assert builder.append(b"abc", timestamp=T0) == 1
    assert len(builder) == 2 and builder.next_offset == 2
    assert len(builder.build()) == builder.size_in_bytes()


def test_varint_encoding_edges():
    from kafka.record.util import decode_varint, encode_varint

    for n in (0, -1, 1, 63, -64, 64, 8191, -8192, 8192, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)):
        data = varlong_bytes(n)
        assert _varlong(data, 0) == (n, len(data))
        if -(2**31) <= n < 2**31:
            assert _varint(data, 0) == (n, len(data))
            theirs = bytearray()
            encode_varint(n, theirs.append)
            assert bytes(theirs) == data and decode_varint(data, 0) == (n, len(data))


def test_large_varints_in_records():
    records = [
        SimpleRecord(b"v" * 300_000, key=b"k" * 70_000, timestamp=-(2**61)),
        SimpleRecord(b"w", timestamp=2**61),
    ]
    batch = decode_batch(build_batch(records, base_offset=2**40))
    assert as_tuples(batch.records) == expected(2**40, records)


def test_iter_batches_and_partial_tail():
    one = build_batch(SAMPLE[:2])
    two = build_batch(SAMPLE[2:3], base_offset=2)
    buf = one + two
    assert [b.base_offset for b in iter_record_batches(buf)] == [0, 2]
    for cut in (1, 30, len(two) - 1):
        partial = buf[: len(buf) - cut]
        assert [b.base_offset for b in iter_record_batches(partial, allow_partial=True)] == [0]
        with pytest.raises(CorruptRecord):
            list(iter_record_batches(partial))


def test_decoder_rejects_bad_record_sections():
    good = b"".join(
        varlong_bytes(len(body)) + body
        for body in [b"\x00\x00\x00\x02k\x02v\x00", b"\x00\x02\x02\x01\x01\x00"]
    )
    assert len(decode_records_data(good, 2, 0, 0)) == 2
    for data, count in [
        (good, 3),  # too few records
        (good, -1),
        (good + b"\x00", 2),  # trailing byte
        (good[:-1], 2),  # cut
        (b"\x0c\x00\x00\x00\x03k\x02v\x00", 1),  # key length runs over the value length
        (b"\x0c\x00\x00\x00\x05kk\x02v\x00", 1),  # record length too short
        (b"\x02\x00", 1),  # length below the minimum
        (b"\x0c\x00\x00\x00\x03k\x02v\x00", 1),
        (b"\x10\x00\x00\x00\x01\x01\x02\x02\xff\xfe\x01", 1),  # header key not UTF-8
        (b"\x0c\x00\x00\x00\x05\x01\x01\x00", 1),  # key length -3
        (b"\x0e\x00\xff\xff\xff\xff\xff\x00\x01\x01\x00", 1),  # varint longer than 5 bytes
    ]:
        with pytest.raises(CorruptRecord):
            decode_records_data(data, count, 0, 0)


def test_crc_and_structure_checks():
    raw = bytearray(build_batch(SAMPLE[:2], compression=c.LZ4))
    raw[-1] ^= 1
    with pytest.raises(CorruptRecord):
        decode_batch(raw)
    # with the CRC fixed, the damaged lz4 stream itself is caught
    struct.pack_into(">I", raw, rb.CRC_AT, rb.crc_of(raw, 0, len(raw)))
    with pytest.raises(CorruptRecord):
        decode_batch(raw)


# --- control batches --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_control_batch(kind):
    raw = build_control_batch(
        kind, producer_id=77, producer_epoch=4, coordinator_epoch=12, timestamp=T0, base_offset=50
    )
    batch = decode_batch(raw)
    h = batch.header
    assert h.is_control and h.is_transactional and h.producer_id == 77 and h.producer_epoch == 4
    assert h.base_sequence == -1 and h.record_count == 1 and h.base_offset == 50
    assert control_type_of(batch) == kind
    marker = parse_end_txn_marker(batch.records[0])
    assert marker.control_type == kind and marker.coordinator_epoch == 12
    assert marker.committed == (kind == ControlRecordType.COMMIT)
    with pytest.raises(InvalidRecord):  # producers may not write them
        rb.validate_batches(raw)
    # theirs
    kp_batch = kp_default.DefaultRecordBatch(raw)
    assert kp_batch.is_control_batch and kp_batch.validate_crc()
    (kp_record,) = list(kp_batch)
    assert kp_record.type == kind
    aio_batch = aio_default.DefaultRecordBatch(raw)
    assert aio_batch.is_control_batch and aio_batch.validate_crc()
    (aio_record,) = list(aio_batch)
    assert aio_control.ControlRecord.parse(aio_record.key) == aio_control.ControlRecord(0, kind)


def test_control_parsing_errors_and_newer_versions():
    with pytest.raises(CorruptRecord):
        parse_control_key(b"\x00")
    with pytest.raises(CorruptRecord):
        parse_control_key(None)
    with pytest.raises(CorruptRecord):
        parse_control_key(b"\xff\xff\x00\x01")
    assert parse_control_key(b"\x00\x01\x00\x01extra") == (1, 1)
    record = Record(0, 0, b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x01", [])
    with pytest.raises(CorruptRecord):  # a leader change is not a transaction marker
        parse_end_txn_marker(record)
    record = Record(0, 0, b"\x00\x00\x00\x01", b"\x00\x00", [])
    with pytest.raises(CorruptRecord):
        parse_end_txn_marker(record)
    record = Record(0, 0, b"\x00\x00\x00\x00", b"\x00\x01\x00\x00\x00\x09more", [])
    assert parse_end_txn_marker(record).coordinator_epoch == 9


# --- against kafka-python and aiokafka ---------------------------------------------------------

READERS = {
    "kafka-python": kp_default.DefaultRecordBatch,
    "aiokafka-c": aio_default.DefaultRecordBatch,
    "aiokafka-py": aio_default._DefaultRecordBatchPy,
}
BUILDERS = {
    "kafka-python": lambda codec, pid, epoch, seq, txn: kp_default.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=txn,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 30,
    ),
    "aiokafka-c": lambda codec, pid, epoch, seq, txn: aio_default.DefaultRecordBatchBuilder(
        2, codec, txn, pid, epoch, seq, 1 << 30
    ),
    "aiokafka-py": lambda codec, pid, epoch, seq, txn: aio_default._DefaultRecordBatchBuilderPy(
        2, codec, txn, pid, epoch, seq, 1 << 30
    ),
}


@pytest.mark.parametrize("client", list(READERS))
@pytest.mark.parametrize("codec", CODECS)
def test_theirs_read_ours(client, codec):
    raw = build_batch(
        SAMPLE, compression=codec, base_offset=300, producer_id=9, producer_epoch=1, base_sequence=0
    )
    batch = READERS[client](raw)
    assert batch.validate_crc()
    assert batch.base_offset == 300 and batch.compression_type == codec
    assert batch.producer_id == 9 and batch.base_sequence == 0
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == expected(300)
    assert all(r.timestamp_type == 0 for r in READERS[client](raw))


@pytest.mark.parametrize("client", list(READERS))
def test_theirs_read_our_log_append_time(client):
    raw = build_batch(SAMPLE[:3], timestamp_type=LOG_APPEND_TIME, log_append_time=T0 + 7)
    records = list(READERS[client](raw))
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(T0 + 7, 1)] * 3


@pytest.mark.parametrize("client", list(BUILDERS))
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("transactional", [False, True])
def test_we_read_theirs(client, codec, transactional):
    builder = BUILDERS[client](codec, 1234, 5, 100, transactional)
    for i, r in enumerate(SAMPLE):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    raw = bytes(builder.build())
    assert rb.validate_batches(raw)[0].record_count == len(SAMPLE)
    batch = decode_batch(raw)
    assert as_tuples(batch.records) == expected(0)
    h = batch.header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (1234, 5, 100)
    assert h.is_transactional == transactional and h.compression == codec


@pytest.mark.parametrize("codec", CODECS)
def test_memory_records_of_several_batches(codec):
    kp = kp_memory.MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
    for r in SAMPLE:
        kp.append(r.timestamp, r.key, r.value, list(r.headers))
    kp.close()
    first = bytes(kp.buffer())
    buf = first + build_batch(SAMPLE[:2], compression=codec, base_offset=len(SAMPLE))
    batches = list(iter_record_batches(buf))
    assert [len(b.records) for b in batches] == [len(SAMPLE), 2]
    # and both client readers walk the same buffer
    for records in (kp_memory.MemoryRecords(buf), aio_memory.MemoryRecords(buf)):
        offsets = []
        while records.has_next():
            offsets += [r.offset for r in records.next_batch()]
        assert offsets == list(range(len(SAMPLE) + 2))
