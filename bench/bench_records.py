"""Record formats: batch validation throughput, and record decode/build cost per record.

Prints best-of-N wall-clock figures (this machine is shared and noisy):

* validate: ``validate_batches`` (61-byte header + CRC-32C, no record decoding) on 1 MiB batches,
  in GB/s: the broker's Produce path.
* decode: ``decode_batch`` (CRC + decompression + every record) on batches of 1000 records with
  100-byte values and 8-byte keys, in µs per record: the Spark connector's and compaction's path.
  kafka-python's and aiokafka's readers of the same bytes are shown for reference.
* build: ``RecordBatchBuilder`` for the same records, in µs per record.
* produce validation: the broker's whole produce-side check (``broker.replication.
  log_validator.validate``: headers, CRC, then every record of the batch, decompressed when
  compressed) on 1 MiB of 100-byte records, against the header-and-CRC check alone (what the
  broker did before it checked records), uncompressed and lz4; with the compiled record check
  and with its pure-Python twin.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from protocol.records import compression as c
from protocol.records.batch import validate_batches
from protocol.records.record import RecordBatchBuilder, decode_batch

T0 = 1_700_000_000_000
RECORDS_PER_BATCH = 1000
VALUE_SIZE = 100


def _value(i: int) -> bytes:
    text = b'{"id": %d, "user": "user-%d", "score": %d, "tags": ["a", "b"], "pad": "' % (
        i,
        i * 7919 % 100_000,
        i * 31 % 997,
    )
    return (text + b"x" * VALUE_SIZE)[: VALUE_SIZE - 2] + b'"}'


RECORDS = [(b"key-%04d" % (i % 10_000), _value(i), T0 + i) for i in range(RECORDS_PER_BATCH)]


def build(codec: int, records: list[tuple[bytes, bytes, int]] = RECORDS) -> bytes:
    builder = RecordBatchBuilder(compression=codec)
    append = builder.append
    for key, value, timestamp in records:
        append(value, key=key, timestamp=timestamp)
    return builder.build()


def best_of(fn: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Best seconds per call over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def bench_validate() -> None:
    # ~1 MiB uncompressed batch of 100-byte records
    count = (1 << 20) // 118
    records = [(b"key-%04d" % i, _value(i), T0 + i) for i in range(count)]
    raw = build(c.NONE, records)
    seconds = best_of(lambda: validate_batches(raw), repeat=9, number=50)
    print(
        f"validate (header + CRC-32C), one {len(raw) / (1 << 20):.2f} MiB batch: "
        f"{len(raw) / seconds / 1e9:6.2f} GB/s ({seconds * 1e6:.1f} µs per batch)"
    )
    sixteen = raw * 16
    seconds = best_of(lambda: validate_batches(sixteen), repeat=5, number=5)
    print(
        f"validate, 16 x 1 MiB batches in one buffer:      {len(sixteen) / seconds / 1e9:6.2f} GB/s"
    )


def _reference_readers() -> list[tuple[str, Callable[[bytes], object]]]:
    readers: list[tuple[str, Callable[[bytes], object]]] = []
    try:
        from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch

        readers.append(("kafka-python 3 (pure Python)", lambda raw: list(KafkaPythonBatch(raw))))
    except ImportError:
        pass
    try:
        from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
        from aiokafka.record.default_records import _DefaultRecordBatchPy as AioPyBatch

        readers.append(("aiokafka (C extension)", lambda raw: list(AioBatch(raw))))
        readers.append(("aiokafka (pure Python)", lambda raw: list(AioPyBatch(raw))))
    except ImportError:
        pass
    return readers


def bench_records() -> None:
    print(
        f"\nbatches of {RECORDS_PER_BATCH} records, {VALUE_SIZE}-byte values, 8-byte keys, "
        "no headers; µs per record"
    )
    print(f"{'codec':8} {'batch bytes':>11} {'decode':>8} {'build':>8}   reference decoders")
    readers = _reference_readers()
    for codec in (c.NONE, c.LZ4, c.GZIP, c.SNAPPY, c.ZSTD):
        raw = build(codec)
        decode = best_of(lambda raw=raw: decode_batch(raw), number=20) / RECORDS_PER_BATCH
        make = best_of(lambda codec=codec: build(codec), number=5) / RECORDS_PER_BATCH
        refs = []
        for name, reader in readers:
            seconds = best_of(lambda raw=raw, reader=reader: reader(raw), repeat=3, number=3)
            refs.append(f"{name} {seconds / RECORDS_PER_BATCH * 1e6:.2f}")
        print(
            f"{c.CompressionType(codec).config_name:8} {len(raw):11d} "
            f"{decode * 1e6:8.3f} {make * 1e6:8.3f}   {'; '.join(refs)}"
        )


def bench_produce_validation() -> None:
    from broker.replication import log_validator
    from protocol.records import check

    count = (1 << 20) // 118
    records = [(b"key-%04d" % i, _value(i), T0 + i) for i in range(count)]
    rules = log_validator.TopicRules()
    now = T0 + count
    print(f"\nproduce validation, {count} records of 100 B per batch; ns per record")
    print(f"{'codec':8} {'CRC only':>9} {'+records (C)':>13} {'+records (Python)':>18}")
    compiled = check.check_records
    for codec in (c.NONE, c.LZ4):
        raw = build(codec, records)

        def full(raw: bytes = raw) -> object:
            return log_validator.validate(
                memoryview(bytearray(raw)), api_version=9, rules=rules, now_ms=now
            )

        crc = best_of(lambda raw=raw: validate_batches(bytearray(raw)), number=5) / count
        with_c = best_of(full, number=5) / count
        check.check_records = check.check_records_py
        log_validator.check.check_records = check.check_records_py
        try:
            with_py = best_of(full, repeat=3, number=1) / count
        finally:
            check.check_records = compiled
        print(
            f"{c.CompressionType(codec).config_name:8} {crc * 1e9:9.1f} {with_c * 1e9:13.1f} "
            f"{with_py * 1e9:18.1f}"
        )
    if not check.ACCELERATED:
        print("(the compiled check is not built here: both columns ran the Python one)")


def main() -> None:
    print(f"command: {sys.executable} -m bench bench_records")
    bench_validate()
    bench_records()
    bench_produce_validation()


if __name__ == "__main__":
    main()
