"""The Arrow decoder against protocol.records' record-by-record decoder (the oracle): every
codec, nulls, headers, LogAppendTime, ranges, control batches, aborted transactions, legacy
message sets, and corrupt input (only RemoteProtocolError escapes)."""

from __future__ import annotations

import random
import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import CorruptRecord, DecompressionLimitExceeded, RemoteProtocolError
from protocol.records.batch import CRC_AT, RECORD_COUNT_AT, crc_of
from protocol.records.control import ControlRecordType, build_control_batch, control_record_key
from protocol.records.legacy import build_message_set
from protocol.records.record import (
    LOG_APPEND_TIME,
    Record,
    RecordBatchBuilder,
    SimpleRecord,
    build_batch,
    iter_record_batches,
)
from spark_connector.arrow_records import (
    ARROW_SCHEMA,
    ARROW_SCHEMA_WITH_HEADERS,
    TransactionFilter,
    decode_batches,
    scan_batches,
    to_record_batch,
)

ALL = (0, 1 << 62)


def decode(blob: bytes, lo: int = 0, hi: int = 1 << 62, headers: bool = True, **kw):
    view = memoryview(blob)
    scan = scan_batches(view, lo, hi, **kw)
    cols = decode_batches(view, scan.batches, lo, hi, include_headers=headers)
    return scan, to_record_batch(cols, "topic-é", 7)


def rows(rb: pa.RecordBatch) -> list[tuple]:
    d = rb.drop_columns(["timestamp"]).to_pydict()
    ts = rb.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for i in range(rb.num_rows):
        hs = d["headers"][i] if "headers" in d else None
        out.append(
            (
                d["offset"][i],
                d["key"][i],
                d["value"][i],
                ts[i],
                d["timestampType"][i],
                None if hs is None else [(h["key"], h["value"]) for h in hs],
            )
        )
    return out


def oracle(blob: bytes, lo: int = 0, hi: int = 1 << 62) -> list[tuple]:
    out = []
    for batch in iter_record_batches(blob):
        if batch.is_control:
            continue
        for r in batch.records:
            if lo <= r.offset < hi:
                out.append(
                    (
                        r.offset,
                        r.key,
                        r.value,
                        r.timestamp * 1000,
                        batch.timestamp_type,
                        [tuple(h) for h in r.headers] or None,
                    )
                )
    return out


def random_records(rng: random.Random, n: int, fixed: bool) -> list[SimpleRecord]:
    out = []
    for _ in range(n):
        if fixed:
            out.append(SimpleRecord(b"v" * 40, b"key-1", 1_700_000_000_000))
            continue
        key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 1, 9, 70, 300]))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 5, 63, 64, 9000]))
        headers = (
            []
            if rng.random() < 0.6
            else [("h", b"1"), ("ключ", None), ("", rng.randbytes(rng.choice([0, 200])))]
        )
        ts = rng.choice([-1, 0, 1_700_000_000_000 + rng.randint(-(10**7), 10**7), 2**50])
        out.append(SimpleRecord(value, key, ts, headers))
    return out


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_matches_the_record_decoder(codec, seed):
    rng = random.Random(seed * 10 + codec)
    blobs = []
    offset = rng.randint(0, 10**12)
    first = offset
    for _ in range(rng.randint(1, 6)):
        recs = random_records(rng, rng.randint(1, 120), fixed=rng.random() < 0.3)
        blobs.append(build_batch(recs, base_offset=offset, compression=codec))
        offset += len(recs) + rng.randint(0, 2)
    blob = b"".join(blobs)
    for lo, hi in [ALL, (first + 3, offset - 4), (first + 1, first + 2), (offset, offset + 9)]:
        scan, rb = decode(blob, lo, hi)
        assert rb.schema == ARROW_SCHEMA_WITH_HEADERS
        assert rows(rb) == oracle(blob, lo, hi)
        assert rb.column("topic").to_pylist() == ["topic-é"] * rb.num_rows
        assert rb.column("partition").to_pylist() == [7] * rb.num_rows
    scan, _ = decode(blob)
    last = max(r[0] for r in oracle(blob))
    assert scan.next_offset == last + 1 and scan.complete_batches == len(blobs)


def test_next_offset_and_truncated_tail():
    b1 = build_batch([SimpleRecord(b"a"), SimpleRecord(b"b")], base_offset=10)
    b2 = build_batch([SimpleRecord(b"c")], base_offset=12)
    scan, rb = decode(b1 + b2[:-3])
    assert scan.truncated and scan.next_offset == 12 and scan.complete_batches == 1
    assert rb.column("value").to_pylist() == [b"a", b"b"]
    scan, rb = decode(b1 + b2, lo=11)
    assert scan.next_offset == 13 and rb.column("offset").to_pylist() == [11, 12]


def test_log_append_time_and_no_headers_schema():
    builder = RecordBatchBuilder(timestamp_type=LOG_APPEND_TIME, log_append_time=1234)
    builder.append(b"x", timestamp=5)
    builder.append(b"y", timestamp=6)
    blob = builder.build() + build_batch([SimpleRecord(b"z", timestamp=7)], base_offset=2)
    _, rb = decode(blob, headers=False)
    assert rb.schema == ARROW_SCHEMA
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [1234000, 1234000, 7000]
    assert rb.column("timestampType").to_pylist() == [1, 1, 0]


def test_schema_is_what_spark_expects():
    from pyspark.sql.pandas.types import to_arrow_schema

    from spark_connector.source import kafka_schema

    assert to_arrow_schema(kafka_schema(False), timezone="UTC") == ARROW_SCHEMA
    assert to_arrow_schema(kafka_schema(True), timezone="UTC") == ARROW_SCHEMA_WITH_HEADERS


def test_control_batches_and_aborted_transactions():
    pid_ok, pid_bad = 5, 6
    blobs = [
        build_batch([SimpleRecord(b"plain")], base_offset=0),
        build_batch(
            [SimpleRecord(b"committed")],
            base_offset=1,
            producer_id=pid_ok,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        ),
        build_batch(
            [SimpleRecord(b"aborted-1"), SimpleRecord(b"aborted-2")],
            base_offset=2,
            producer_id=pid_bad,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        ),
        build_control_batch(
            ControlRecordType.ABORT,
            producer_id=pid_bad,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=1,
            base_offset=4,
        ),
        build_control_batch(
            ControlRecordType.COMMIT,
            producer_id=pid_ok,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=1,
            base_offset=5,
        ),
        build_batch(
            [SimpleRecord(b"later")],
            base_offset=6,
            producer_id=pid_bad,
            producer_epoch=0,
            base_sequence=2,
            transactional=True,
        ),
    ]
    blob = b"".join(blobs)
    # read_uncommitted: every data record, control records never
    _, rb = decode(blob)
    assert rb.column("value").to_pylist() == [
        b"plain",
        b"committed",
        b"aborted-1",
        b"aborted-2",
        b"later",
    ]
    # read_committed: the aborted transaction's records go too
    txn = TransactionFilter()
    txn.add([(pid_bad, 2)])
    scan, rb = decode(blob, transactions=txn)
    assert rb.column("value").to_pylist() == [b"plain", b"committed", b"later"]
    assert scan.next_offset == 7


def test_legacy_message_sets():
    blob = build_message_set(
        [SimpleRecord(b"a", b"k", 1000), SimpleRecord(None, None, 2000)], magic=1, base_offset=3
    )
    _, rb = decode(blob)
    assert rb.column("offset").to_pylist() == [3, 4]
    assert rb.column("value").to_pylist() == [b"a", None]
    assert rb.column("headers").to_pylist() == [None, None]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupt_input_raises_only_protocol_errors(data):
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    recs = random_records(rng, rng.randint(1, 30), fixed=rng.random() < 0.5)
    blob = bytearray(build_batch(recs, compression=data.draw(st.sampled_from([0, 0, 3]))))
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    try:
        decode(bytes(blob[:cut]) if data.draw(st.booleans()) else bytes(blob), check_crcs=False)
    except RemoteProtocolError:
        pass


def test_corrupt_record_lengths_are_caught():
    blob = bytearray(build_batch([SimpleRecord(b"abc"), SimpleRecord(b"def")]))
    blob[61] = 0x7E  # first record's length: far too long
    with pytest.raises(CorruptRecord):
        decode(bytes(blob), check_crcs=False)
    with pytest.raises(CorruptRecord, match="CRC"):
        decode(bytes(blob))


def _with_record_count(batch: bytes, count: int) -> bytes:
    """``batch`` claiming ``count`` records, its CRC recomputed (so only the count is wrong)."""
    out = bytearray(batch)
    struct.pack_into(">i", out, RECORD_COUNT_AT, count)
    struct.pack_into(">I", out, CRC_AT, crc_of(out, 0, len(out)))
    return bytes(out)


@pytest.mark.parametrize("same_size", [True, False])
def test_record_count_off_by_batch_is_caught(same_size):
    # Two CRC-valid batches claiming 2 and 4 records that hold 3 and 3: the totals add up, and
    # with a gap in the offsets they still increase, so only the per-batch boundary gives it away.
    def value(o: int) -> bytes:
        return b"v" * (10 if same_size else o)

    first = build_batch(
        [Record(o, o, None, value(o + 1), []) for o in (0, 1, 2)], keep_offsets=True
    )
    second = build_batch(
        [Record(o, o, None, value(o), []) for o in (15, 16, 17)], base_offset=10, keep_offsets=True
    )
    blob = _with_record_count(first, 2) + _with_record_count(second, 4)
    with pytest.raises(CorruptRecord):
        list(iter_record_batches(blob))  # protocol.records refuses the same bytes
    with pytest.raises(CorruptRecord, match="record count"):
        decode(blob)


def test_one_decompression_limit_bounds_every_path():
    big = [SimpleRecord(b"z" * 50_000, timestamp=1), SimpleRecord(b"z" * 50_000, timestamp=2)]
    batch = build_batch(big, compression=4)  # zstd: about 100 kB when decompressed
    legacy = build_message_set(big, magic=1, compression=1)  # a gzip wrapper
    control = RecordBatchBuilder(
        compression=1, producer_id=9, producer_epoch=0, transactional=True, control=True
    )
    control.append(b"z" * 100_000, key=control_record_key(ControlRecordType.ABORT), timestamp=1)
    marker = control.build()
    for blob in (batch, legacy):
        view = memoryview(blob)
        scan = scan_batches(view, 0, 1 << 62)
        assert decode_batches(view, scan.batches, 0, 1 << 62).count == 2
        with pytest.raises(DecompressionLimitExceeded):
            decode_batches(view, scan.batches, 0, 1 << 62, max_decompressed_bytes=50_000)
    txn = TransactionFilter()
    assert scan_batches(memoryview(marker), 0, 1 << 62, transactions=txn).complete_batches == 1
    with pytest.raises(DecompressionLimitExceeded):
        scan_batches(
            memoryview(marker), 0, 1 << 62, transactions=txn, max_decompressed_bytes=50_000
        )
