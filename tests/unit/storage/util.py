"""Helpers for storage tests: batches built with kafka-python, parsed back with kafka-python and
aiokafka (the acceptance oracles)."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords


def make_batch(
    count: int = 1,
    *,
    timestamp: int = 1_000,
    value_size: int = 10,
    keys: Sequence[bytes | None] | None = None,
    values: Sequence[bytes | None] | None = None,
    timestamps: Sequence[int] | None = None,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytearray:
    """A magic-2 batch of ``count`` records (offsets 0..count-1) built by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=int(transactional),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i in range(count):
        key = keys[i] if keys is not None else b"k%d" % i
        value = values[i] if values is not None else b"v" * value_size
        ts = timestamps[i] if timestamps is not None else timestamp + i
        builder.append(i, timestamp=ts, key=key, value=value, headers=[])
    return bytearray(builder.build())


def parse_kafka_python(data: bytes) -> list[tuple[int, list[int], list[int]]]:
    """(base offset, record offsets, record timestamps) of every batch, by kafka-python."""
    out = []
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        recs = list(batch)
        out.append((batch.base_offset, [r.offset for r in recs], [r.timestamp for r in recs]))
    return out


def parse_aiokafka(data: bytes) -> list[tuple[int, list[int], list[int]]]:
    """The same with aiokafka's record parser."""
    out = []
    records = AioMemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        recs = list(batch)
        out.append((batch.base_offset, [r.offset for r in recs], [r.timestamp for r in recs]))
    return out


def record_values(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, by kafka-python."""
    out = []
    records = MemoryRecords(bytes(data))
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, r.key, r.value))
    return out


class FakeClock:
    """A settable millisecond clock."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms
