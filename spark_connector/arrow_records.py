"""Record batches straight into pyarrow: the connector's hot path.

A Fetch response's records blob holds magic-2 batches (Kafka's format since 0.11; see
:mod:`protocol.records.batch` and :mod:`protocol.records.record`). Decoding them record by record
into Python objects and then into Arrow costs several microseconds per record. Here the work per
record in Python is one small loop that finds where each record starts (records are
length-prefixed, so their starts depend on each other); everything else is done on whole columns
with numpy and Arrow kernels:

1. :func:`scan_batches` walks the batch headers only: it checks CRCs, skips control batches,
   aborted transactions (read_committed) and batches outside the wanted offsets, and says where
   the next fetch should start. It is cheap, so the next Fetch can be sent before decoding.
2. :func:`decode_batches` joins the kept batches' record sections (decompressing the compressed
   ones) into one buffer, finds the record starts (all records the same size is checked first
   and verified, with a Python loop otherwise), then decodes every record's varints with vectorised
   numpy gathers, checks every length against its record's bounds, and builds the ``key`` and
   ``value`` columns with one Arrow ``take`` each over views into that buffer.

Headers (rare, and only with ``includeHeaders``) and legacy magic 0/1 message sets are decoded
per record with :mod:`protocol.records`. Corrupt input raises
:class:`~protocol.errors.CorruptRecord` (or another :class:`~protocol.errors.RemoteProtocolError`),
never an IndexError.

The Arrow schema is exactly what Spark derives from the Kafka source's schema (see
:data:`ARROW_SCHEMA`): Spark refuses batches whose schema differs in any way.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from protocol.errors import CorruptRecord
from protocol.primitives import read_varint
from protocol.records import compression as _compression
from protocol.records.batch import (
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_AT,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    batch_size_at,
    check_crc,
    read_header,
)
from protocol.records.control import ControlRecordType, control_type_of
from protocol.records.legacy import expand_message, read_message
from protocol.records.record import RecordBatch, decode_records, records_section

# --- schema --------------------------------------------------------------------------------------

HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_STRUCT))

_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
#: The Arrow form of ``key binary, value binary, topic string, partition int, offset long,
#: timestamp timestamp, timestampType int`` as Spark converts it (all nullable).
ARROW_SCHEMA = pa.schema(_BASE_FIELDS)
#: ... plus ``headers array<struct<key:string,value:binary>>``.
ARROW_SCHEMA_WITH_HEADERS = pa.schema([*_BASE_FIELDS, pa.field("headers", HEADERS_TYPE)])

_PAD = bytes(16)  # lets a varint gather run past the last record without an index check
_INT32_MAX = 0x7FFFFFFF


# --- step 1: batch headers -----------------------------------------------------------------------


@dataclass
class BatchRef:
    """A batch to decode: where it is, and its header (None for a legacy magic 0/1 entry)."""

    position: int
    size: int
    last_offset: int
    magic: int = MAGIC_V2
    header: BatchHeader | None = None


@dataclass
class TransactionFilter:
    """Drops records of aborted transactions (``read_committed``), as Kafka's consumer does: the
    Fetch response lists (producer id, first offset) of the aborted transactions in the range
    it returns; a transactional batch is skipped while its producer has an aborted transaction
    open, and the producer's ABORT marker closes it. Lives for one partition's read."""

    pending: list[tuple[int, int]] = field(default_factory=list)  # sorted by first offset
    aborted_producers: set[int] = field(default_factory=set)

    def add(self, aborted: Sequence[tuple[int, int]]) -> None:
        if aborted:
            self.pending = sorted({*self.pending, *aborted}, key=lambda a: (a[1], a[0]))

    def skip_data_batch(self, producer_id: int, last_offset: int) -> bool:
        while self.pending and self.pending[0][1] <= last_offset:
            self.aborted_producers.add(self.pending.pop(0)[0])
        return producer_id in self.aborted_producers

    def control_batch(self, producer_id: int, control_type: int) -> None:
        if control_type == ControlRecordType.ABORT:
            self.aborted_producers.discard(producer_id)


@dataclass
class Scan:
    batches: list[BatchRef]
    #: where the next fetch should start: after the last complete batch seen
    next_offset: int
    #: complete batches seen (kept or not)
    complete_batches: int
    #: the blob ends with a batch cut short (the broker's size limit)
    truncated: bool


def scan_batches(
    buf: memoryview,
    from_offset: int,
    until_offset: int,
    *,
    check_crcs: bool = True,
    transactions: TransactionFilter | None = None,
    max_decompressed_bytes: int = _compression.DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Scan:
    """The batches of ``buf`` that hold offsets in [from_offset, until_offset).
    ``max_decompressed_bytes`` bounds the control batches decoded here (read_committed)."""
    kept: list[BatchRef] = []
    pos = 0
    end = len(buf)
    next_offset = from_offset
    complete = 0
    truncated = False
    while pos < end:
        if end - pos < HEADER_SIZE and (
            end - pos < MAGIC_AT + 1 or buf[pos + MAGIC_AT] == MAGIC_V2
        ):
            truncated = True
            break
        magic = buf[pos + MAGIC_AT]
        if magic != MAGIC_V2:
            # A legacy entry: a compressed wrapper's offset is its last inner one; where its
            # inner offsets start is unknown until it is decompressed.
            size = batch_size_at(buf, pos)
            if size < LOG_OVERHEAD or pos + size > end:
                truncated = True
                break
            last_offset = int.from_bytes(buf[pos : pos + 8], "big", signed=True)
            complete += 1
            if last_offset >= from_offset:
                kept.append(BatchRef(pos, size, last_offset, magic))
            pos += size
            next_offset = max(next_offset, last_offset + 1)
            continue
        header = read_header(buf, pos)
        (
            base_offset,
            batch_length,
            _,
            _,
            _,
            attributes,
            last_delta,
            _,
            _,
            producer_id,
            _,
            _,
            count,
        ) = header
        size = batch_length + LOG_OVERHEAD
        if pos + size > end:
            truncated = True
            break
        if check_crcs:
            check_crc(buf, pos, header)
        if count < 0 or last_delta < 0:
            raise CorruptRecord(f"record batch at offset {base_offset}: {count} records")
        complete += 1
        last_offset = base_offset + last_delta
        if last_offset + 1 > next_offset:
            next_offset = last_offset + 1
        at = pos
        pos += size
        if attributes & CONTROL_MASK:
            if transactions is not None and attributes & TRANSACTIONAL_MASK:
                control_type = _control_type(buf, at, header, max_decompressed_bytes)
                if control_type is not None:
                    transactions.control_batch(producer_id, control_type)
            continue
        if (
            transactions is not None
            and attributes & TRANSACTIONAL_MASK
            and transactions.skip_data_batch(producer_id, last_offset)
        ):
            continue
        if count == 0 or last_offset < from_offset or base_offset >= until_offset:
            continue
        kept.append(BatchRef(at, size, last_offset, MAGIC_V2, header))
    return Scan(kept, next_offset, complete, truncated)


def _control_type(
    buf: memoryview, pos: int, header: BatchHeader, max_decompressed_bytes: int
) -> int | None:
    if header.record_count < 1:
        return None  # checked before anything is decompressed
    records = decode_records(buf, pos, header, max_decompressed_bytes=max_decompressed_bytes)
    return control_type_of(RecordBatch(header, records))


# --- step 2: records into columns ----------------------------------------------------------------


def _varints(arr: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints (up to 10 bytes) at every position: (values int64, sizes int64)."""
    b = arr[pos]
    if not (b & 0x80).any():
        u = b.astype(np.int64)
        return (u >> 1) ^ -(u & 1), np.ones(len(pos), np.int64)
    u64 = (b & 0x7F).astype(np.uint64)
    sizes = np.ones(len(pos), np.int64)
    idx = np.flatnonzero(b & 0x80)
    shift = 7
    while len(idx):
        if shift > 63:
            raise CorruptRecord("varint longer than 10 bytes")
        bb = arr[pos[idx] + sizes[idx]]
        u64[idx] |= (bb & 0x7F).astype(np.uint64) << np.uint64(shift)
        sizes[idx] += 1
        idx = idx[(bb & 0x80) != 0]
        shift += 7
    values = (u64 >> np.uint64(1)).astype(np.int64) ^ -(u64 & np.uint64(1)).astype(np.int64)
    return values, sizes


def _record_starts_loop(data: bytes, count: int, end: int) -> np.ndarray:
    """Where each of ``count`` records starts, following the length prefixes one by one."""
    starts = array("q", bytes(8 * count))
    pos = 0
    try:
        for i in range(count):
            starts[i] = pos
            b = data[pos]
            if b < 0x80:
                pos += (b >> 1) + 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    pos += (((b & 0x7F) | (c << 7)) >> 1) + 2
                else:
                    d = data[pos + 2]
                    if d < 0x80:
                        pos += (((b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)) >> 1) + 3
                    else:
                        length, pos = read_varint(data, pos)
                        if length < 0:
                            raise CorruptRecord(f"record length {length}")
                        pos += length
            if pos > end:
                raise CorruptRecord(f"record {i} runs past the end of its batch")
    except IndexError:
        raise CorruptRecord("record runs past the end of its batch") from None
    return np.frombuffer(starts, np.int64)


@dataclass
class Columns:
    """Decoded records of one partition, before they become a pyarrow RecordBatch."""

    count: int
    key: pa.Array
    value: pa.Array
    offset: np.ndarray
    timestamp_ms: np.ndarray
    timestamp_type: np.ndarray
    headers: pa.Array | None


def _binary_column(data_buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """``data[start:start+length]`` per record (null where length is -1), copied into one
    contiguous Arrow binary array by a single ``take`` over interleaved views."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    valid = lengths >= 0
    ends = starts + np.where(valid, lengths, 0)
    large = data_buffer.size > _INT32_MAX
    bounds = np.empty(2 * n, np.int64 if large else np.int32)
    bounds[0::2] = starts
    bounds[1::2] = ends
    # Element 2i is record i's bytes, element 2i+1 whatever lies between it and the next.
    views = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        2 * n - 1,
        [None, pa.py_buffer(bounds), data_buffer],
    )
    taken = views.take(pa.array(np.arange(0, 2 * n - 1, 2, dtype=np.int32)))
    if large:
        taken = taken.cast(pa.binary())
    if valid.all():
        return taken
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [bitmap, taken.buffers()[1], taken.buffers()[2]],
        null_count=int(n - np.count_nonzero(valid)),
    )


def decode_batches(
    buf: memoryview,
    refs: Sequence[BatchRef],
    from_offset: int,
    until_offset: int,
    *,
    include_headers: bool = False,
    max_decompressed_bytes: int = _compression.DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Columns:
    """The records of ``refs`` (batches of ``buf``) with offsets in [from_offset, until_offset).
    ``max_decompressed_bytes`` bounds every compressed batch and legacy wrapper, on every path."""
    batch_headers = [ref.header for ref in refs if ref.header is not None]
    if len(batch_headers) != len(refs):
        return _decode_slow(
            buf, refs, from_offset, until_offset, include_headers, max_decompressed_bytes
        )
    sections: list[Any] = [
        records_section(buf, ref.position, header, max_decompressed_bytes=max_decompressed_bytes)
        for ref, header in zip(refs, batch_headers, strict=True)
    ]
    n_batches = len(batch_headers)
    counts = np.fromiter((h.record_count for h in batch_headers), np.int64, n_batches)
    total = int(counts.sum())
    section_lens = np.fromiter((len(s) for s in sections), np.int64, len(sections))
    data_len = int(section_lens.sum())
    if total == 0:
        return _empty_columns(include_headers)
    if total * 6 > data_len:
        raise CorruptRecord(f"{total} records do not fit in {data_len} bytes")
    sections.append(_PAD)
    data = b"".join(sections)
    arr = np.frombuffer(data, np.uint8)

    # Record starts: first guess "all records the same size" (common: fixed-format events), and
    # verify it like any other guess below; else follow the length prefixes.
    starts: np.ndarray | None = None
    if data_len % total == 0:
        starts = np.arange(0, data_len, data_len // total, dtype=np.int64)
        lengths, length_sizes = _varints(arr, starts)
        bodies = starts + length_sizes
        ends = bodies + lengths
        if not (ends[:-1] == starts[1:]).all() or ends[-1] != data_len or (lengths < 6).any():
            starts = None
    if starts is None:
        starts = _record_starts_loop(data, total, data_len)
        lengths, length_sizes = _varints(arr, starts)
        bodies = starts + length_sizes
        ends = bodies + lengths
        if (lengths < 6).any():
            raise CorruptRecord(f"record length {int(lengths.min())} is below the minimum")
        if not (ends[:-1] == starts[1:]).all() or ends[-1] != data_len:
            raise CorruptRecord("record lengths do not add up to their batches' sizes")
    if n_batches > 1:
        # Each batch's records must end where its section ends, or a wrong recordCount would
        # shift records (and their offsets and timestamps) into the neighbouring batch.
        first_of_next = np.cumsum(counts)[:-1]
        if not (np.append(starts, data_len)[first_of_next] == np.cumsum(section_lens)[:-1]).all():
            raise CorruptRecord("a batch's record count does not match its records")

    ts_delta, n = _varints(arr, bodies + 1)
    pos = bodies + 1 + n
    offset_delta, n = _varints(arr, pos)
    pos += n
    key_length, n = _varints(arr, pos)
    pos += n
    key_start = pos
    pos = pos + np.maximum(key_length, 0)
    if (pos > ends).any():
        raise CorruptRecord("a record's key runs past its end")
    value_length, n = _varints(arr, pos)
    pos += n
    value_start = pos
    pos = pos + np.maximum(value_length, 0)
    if (pos >= ends).any():
        raise CorruptRecord("a record's value runs past its end")
    header_count, n = _varints(arr, pos)
    pos += n
    if (key_length < -1).any() or (value_length < -1).any() or (header_count < 0).any():
        raise CorruptRecord("negative key, value or header count")
    no_headers = header_count == 0
    if not (pos[no_headers] == ends[no_headers]).all() or (pos > ends).any():
        raise CorruptRecord("a record's fields do not add up to its length")

    base_offsets = np.fromiter((h.base_offset for h in batch_headers), np.int64, n_batches)
    offsets = np.repeat(base_offsets, counts) + offset_delta
    if len(offsets) > 1 and not (offsets[1:] > offsets[:-1]).all():
        raise CorruptRecord("record offsets do not increase")
    log_append = np.fromiter(
        (bool(h.attributes & TIMESTAMP_TYPE_MASK) for h in batch_headers), np.bool_, n_batches
    )
    base_ts = np.fromiter((h.base_timestamp for h in batch_headers), np.int64, n_batches)
    max_ts = np.fromiter((h.max_timestamp for h in batch_headers), np.int64, n_batches)
    if log_append.any():
        rec_append = np.repeat(log_append, counts)
        timestamps = np.where(
            rec_append, np.repeat(max_ts, counts), np.repeat(base_ts, counts) + ts_delta
        )
        ts_type = rec_append.astype(np.int32)
    else:
        timestamps = np.repeat(base_ts, counts) + ts_delta
        ts_type = np.zeros(total, np.int32)

    lo = int(np.searchsorted(offsets, from_offset, "left"))
    hi = int(np.searchsorted(offsets, until_offset, "left"))
    if lo > 0 or hi < total:
        sl = slice(lo, hi)
        offsets, timestamps, ts_type = offsets[sl], timestamps[sl], ts_type[sl]
        key_start, key_length = key_start[sl], key_length[sl]
        value_start, value_length = value_start[sl], value_length[sl]
        header_count, pos, ends = header_count[sl], pos[sl], ends[sl]
    count = hi - lo
    data_buffer = pa.py_buffer(data)
    headers = None
    if include_headers:
        headers = _headers_column(data, header_count, pos, ends)
    return Columns(
        count,
        _binary_column(data_buffer, key_start, key_length),
        _binary_column(data_buffer, value_start, value_length),
        offsets,
        timestamps,
        ts_type,
        headers,
    )


def _headers_column(
    data: bytes, header_count: np.ndarray, pos: np.ndarray, ends: np.ndarray
) -> pa.Array:
    n = len(header_count)
    with_headers = np.flatnonzero(header_count)
    if len(with_headers) == 0:
        return pa.nulls(n, HEADERS_TYPE)
    list_offsets = np.zeros(n + 1, np.int32)
    keys: list[str] = []
    values: list[bytes | None] = []
    for i in with_headers.tolist():
        p = int(pos[i])
        end = int(ends[i])
        try:
            for _ in range(int(header_count[i])):
                m, p = read_varint(data, p)
                if m < 0 or p + m > end:
                    raise CorruptRecord(f"header key length {m}")
                keys.append(str(data[p : p + m], "utf-8"))
                p += m
                m, p = read_varint(data, p)
                if m == -1:
                    values.append(None)
                elif m < 0 or p + m > end:
                    raise CorruptRecord(f"header value length {m}")
                else:
                    values.append(data[p : p + m])
                    p += m
        except UnicodeDecodeError:
            raise CorruptRecord("record header key is not UTF-8") from None
        if p != end:
            raise CorruptRecord("a record's headers do not add up to its length")
        list_offsets[i + 1] = header_count[i]
    np.cumsum(list_offsets, out=list_offsets)
    return _headers_from_lists(list_offsets, keys, values, header_count > 0)


def _headers_from_lists(
    list_offsets: np.ndarray, keys: list[str], values: list[bytes | None], present: np.ndarray
) -> pa.Array:
    struct = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())], fields=list(HEADER_STRUCT)
    )
    return pa.ListArray.from_arrays(
        pa.array(list_offsets, pa.int32()),
        struct,
        type=HEADERS_TYPE,
        mask=pa.array(~present),
    )


def _empty_columns(include_headers: bool) -> Columns:
    empty = np.empty(0, np.int64)
    return Columns(
        0,
        pa.array([], pa.binary()),
        pa.array([], pa.binary()),
        empty,
        empty,
        np.empty(0, np.int32),
        pa.nulls(0, HEADERS_TYPE) if include_headers else None,
    )


def _decode_slow(
    buf: memoryview,
    refs: Sequence[BatchRef],
    from_offset: int,
    until_offset: int,
    include_headers: bool,
    max_decompressed_bytes: int,
) -> Columns:
    """Any mix of legacy (magic 0/1) entries and batches, record by record."""
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    offsets: list[int] = []
    timestamps: list[int] = []
    types: list[int] = []
    header_lists: list[list[tuple[str, bytes | None]]] = []
    for ref in refs:
        if ref.header is not None:
            records = decode_records(
                buf, ref.position, ref.header, max_decompressed_bytes=max_decompressed_bytes
            )
            ts_type = ref.header.timestamp_type
        else:
            entry = expand_message(
                read_message(buf, ref.position), max_decompressed_bytes=max_decompressed_bytes
            )
            records = entry.records
            ts_type = entry.timestamp_type
        for r in records:
            if from_offset <= r.offset < until_offset:
                keys.append(r.key)
                values.append(r.value)
                offsets.append(r.offset)
                timestamps.append(r.timestamp)
                types.append(ts_type)
                header_lists.append(r.headers)
    n = len(offsets)
    headers = None
    if include_headers:
        list_offsets = np.zeros(n + 1, np.int32)
        np.cumsum([len(h) for h in header_lists], out=list_offsets[1:])
        headers = _headers_from_lists(
            list_offsets,
            [k for h in header_lists for k, _ in h],
            [v for h in header_lists for _, v in h],
            np.array([bool(h) for h in header_lists], np.bool_),
        )
    return Columns(
        n,
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        np.array(offsets, np.int64),
        np.array(timestamps, np.int64),
        np.array(types, np.int32),
        headers,
    )


# --- step 3: the RecordBatch ---------------------------------------------------------------------


def _constant_string(text: str, n: int) -> pa.Array:
    encoded = text.encode()
    if len(encoded) * n > _INT32_MAX:
        return pa.array([text] * n, pa.string())
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(encoded))
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)]
    )


def to_record_batch(columns: Columns, topic: str, partition: int) -> pa.RecordBatch:
    n = columns.count
    arrays = [
        columns.key,
        columns.value,
        _constant_string(topic, n),
        pa.array(np.full(n, partition, np.int32)),
        pa.array(columns.offset),
        pa.array(columns.timestamp_ms * 1000, pa.timestamp("us", tz="UTC")),
        pa.array(columns.timestamp_type),
    ]
    if columns.headers is not None:
        arrays.append(columns.headers)
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA_WITH_HEADERS)
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
