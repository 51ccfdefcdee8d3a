"""Protocol codec benchmark, side by side with kio (Rust-backed decode) in the same run.

    python -m bench bench_protocol

* decode: a ProduceRequest v9 carrying one 16 KiB record batch (µs per decode);
* encode: a FetchResponse v12 with 10 partitions of 16 KiB records (µs per encode; ours produces
  a list of buffers, record blobs not copied; kio writes one contiguous buffer), with the
  broker's path (protocol.fast_fetch from plain tuples: its compiled encoder when built, and its
  pure-Python encoder, which runs without a C compiler) and with the generated codec;
* validate: record batch header + CRC-32C check of 1 MiB batches (GB/s; kio has no equivalent).

Timings are the best of several repeats (least disturbed by other load on this shared machine).
"""

from __future__ import annotations

import io
import sys
import timeit
from typing import Any

from protocol import fast_fetch
from protocol.messages import SCHEMAS
from protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records.batch import validate_batches
from protocol.records.record import RecordBatchBuilder


def best_us(fn: Any, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def batch_of(size: int) -> bytes:
    builder = RecordBatchBuilder()
    value = bytes(range(256)) * 4
    while builder.size_in_bytes() + len(value) + 32 < size:
        builder.append(value, key=b"key", timestamp=1_700_000_000_000)
    return builder.build()


def main() -> None:
    print("command: python -m bench bench_protocol")
    try:
        from kio.index import load_request_schema, load_response_schema
        from kio.serial import entity_reader, entity_writer
    except ImportError:  # pragma: no cover - kio is a dev dependency
        load_request_schema = None  # type: ignore[assignment]

    batch16k = batch_of(16 * 1024)
    produce = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            TopicProduceData(
                name="bench-topic", partition_data=[PartitionProduceData(index=0, records=batch16k)]
            )
        ],
    )
    produce_schema = SCHEMAS[0]
    parts: list[Any] = []
    produce_schema.request_encoder(9)(produce, parts)
    produce_wire = b"".join(bytes(p) for p in parts)
    produce_view = memoryview(produce_wire)
    decode = produce_schema.request_decoder(9)
    ours_decode = best_us(lambda: decode(produce_view, 0), 20000)

    fetch = FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            FetchableTopicResponse(
                topic="bench-topic",
                partitions=[
                    PartitionData(
                        partition_index=i,
                        error_code=0,
                        high_watermark=1000 + i,
                        last_stable_offset=1000 + i,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=batch16k,
                    )
                    for i in range(10)
                ],
            )
        ],
    )
    fetch_schema = SCHEMAS[1]
    encode = fetch_schema.response_encoder(12)
    ours_encode = best_us(lambda: encode(fetch, []), 20000)
    tuples = [
        ("bench-topic", [(i, 0, 1000 + i, 1000 + i, 0, None, -1, batch16k) for i in range(10)])
    ]
    fast_encode = best_us(lambda: fast_fetch.encode(12, 0, 0, 0, tuples), 20000)
    py_encode = best_us(lambda: fast_fetch.encode_py(12, 0, 0, 0, tuples), 20000)
    fetch_parts: list[Any] = []
    encode(fetch, fetch_parts)
    fetch_wire = b"".join(bytes(p) for p in fetch_parts)

    batch1m = batch_of(1024 * 1024)
    validate_us = best_us(lambda: validate_batches(batch1m), 300)
    gbps = len(batch1m) / (validate_us / 1e6) / 1e9

    kio_decode = kio_encode = None
    if load_request_schema is not None:
        kio_produce = load_request_schema(0, 9)
        reader = entity_reader(kio_produce)
        kio_decode = best_us(lambda: reader(produce_wire, 0), 20000)
        kio_fetch = load_response_schema(1, 12)
        entity, _ = entity_reader(kio_fetch)(fetch_wire, 0)
        writer = entity_writer(kio_fetch)

        def kio_write() -> None:
            writer(io.BytesIO(), entity)

        kio_encode = best_us(kio_write, 5000)

    def fmt(v: float | None, unit: str = "µs") -> str:
        return "n/a" if v is None else f"{v:.2f} {unit}"

    print(f"{'operation':<58}{'odradek':>14}{'kio 0.6':>14}{'target':>12}")
    print(
        f"{'ProduceRequest v9 decode (16 KiB batch)':<58}{fmt(ours_decode):>14}"
        f"{fmt(kio_decode):>14}{'<= 2 µs':>12}"
    )
    compiled = fmt(fast_encode) if fast_fetch.ACCELERATED else "not in use"
    print(
        f"{'FetchResponse v12 encode, 10 x 16 KiB (broker: compiled)':<58}"
        f"{compiled:>14}{fmt(kio_encode):>14}{'<= 2 µs':>12}"
    )
    print(
        f"{'FetchResponse v12 encode, 10 x 16 KiB (pure Python)':<58}"
        f"{fmt(py_encode):>14}{fmt(kio_encode):>14}{'':>12}"
    )
    print(
        f"{'FetchResponse v12 encode, 10 x 16 KiB (generated codec)':<58}"
        f"{fmt(ours_encode):>14}{fmt(kio_encode):>14}{'':>12}"
    )
    print(
        f"{'batch validate, header + CRC-32C, 1 MiB batches':<58}{gbps:>11.1f} GB/s"
        f"{'n/a':>14}{'>= 10 GB/s':>12}"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
