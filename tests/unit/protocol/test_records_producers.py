"""Batches written by real producers, captured by tests/support/capture_broker.py, parse with our
reader: confluent-kafka (librdkafka 2.x), kcat (Debian's librdkafka), kafka-python's and
aiokafka's producers; every codec each writes; magic 2, and magic 0/1 when the broker looks old.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from protocol.records import batch as rb
from protocol.records import compression as c
from protocol.records.convert import legacy_to_batch
from protocol.records.legacy import iter_messages
from protocol.records.memory import iter_any_batches
from protocol.records.record import decode_batch
from tests.support.capture_broker import (
    MODERN_VERSIONS,
    V0_VERSIONS,
    V1_VERSIONS,
    CaptureBroker,
    CapturedBatch,
)

T0 = 1_700_000_000_000
TOPIC = "captured"
CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]

#: (key, value, headers, timestamp): nulls, empties, a non-ASCII header key, a large value.
MESSAGES = [
    (b"key-0", b"value-0", [("h1", b"a"), ("h2", None)], T0),
    (None, b"no key", [], T0 + 1),
    (b"tombstone", None, [("ключ", b"\x00\xff")], T0 + 2),
    (b"", b"", [], T0 - 5),
    (b"big", b"0123456789abcdef" * 6000, [("h", b"x" * 300)], T0 + 3),
] + [(b"k%d" % i, b"v%d" % i * 20, [("i", b"%d" % i)], T0 + 10 + i) for i in range(50)]


def captured_records(batches: list[CapturedBatch]):
    """Every record of every captured request, in order, and the batches they came in."""
    records = []
    decoded = []
    for captured in batches:
        assert captured.topic == TOPIC and captured.partition == 0
        for batch in iter_any_batches(captured.records):
            decoded.append(batch)
            records.extend(batch.records)
    return records, decoded


def wait_all(broker: CaptureBroker, count: int = len(MESSAGES)) -> list[CapturedBatch]:
    def done(batches):
        return sum(len(b.records) for b in captured_records(batches)[1]) >= count

    batches = broker.wait_for(done)
    assert not broker.errors
    return batches


def check_v2(batches, codec: int, *, with_headers=True, messages=MESSAGES, may_skip=False):
    records, decoded = captured_records(batches)
    for captured in batches:
        headers = rb.validate_batches(captured.records)  # what the broker checks on Produce
        assert all(h.magic == 2 for h in headers)
    codecs = {b.compression for b in decoded}
    if may_skip:  # the client leaves a batch uncompressed when compression would not shrink it
        assert codec in codecs and codecs <= {codec, c.NONE}
    else:
        assert codecs == {codec}
    for batch in decoded:  # producers number records 0..n-1 in each batch
        assert [r.offset for r in batch.records] == list(range(len(batch.records)))
    got = [(r.key, r.value, r.headers if with_headers else [], r.timestamp) for r in records]
    assert got == [(k, v, h if with_headers else [], t) for k, v, h, t in messages]


def check_legacy(batches, magic: int, codec: int, *, messages=MESSAGES):
    records, decoded = captured_records(batches)
    assert {b.magic for b in decoded} == {magic}
    assert {b.compression for b in decoded} == {codec}
    got = [(r.key, r.value, r.timestamp) for r in records]
    assert got == [(k, v, t if magic else -1) for k, v, _, t in messages]
    for captured in batches:  # and the broker's conversion to magic 2 keeps them
        converted = decode_batch(legacy_to_batch(captured.records))
        assert converted.compression == codec
        assert [r.offset for r in converted.records] == list(range(len(converted.records)))


# --- confluent-kafka ----------------------------------------------------------------------------


def produce_confluent(broker: CaptureBroker, compression: str, *, headers=True):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "compression.type": compression,
            "linger.ms": 50,
            "enable.idempotence": False,
            "message.max.bytes": 10_000_000,
        }
    )
    for key, value, message_headers, timestamp in MESSAGES:
        producer.produce(
            TOPIC,
            value=value,
            key=key,
            headers=message_headers if headers else None,
            timestamp=timestamp,
            partition=0,
        )
    assert producer.flush(60) == 0
    return wait_all(broker)


@pytest.mark.parametrize("compression", CODEC_NAMES)
def test_confluent_kafka_v2(compression):
    with CaptureBroker(versions=dict(MODERN_VERSIONS)) as broker:
        batches = produce_confluent(broker, compression)
    assert {b.api_version for b in batches} >= {9}
    check_v2(batches, c.CompressionType.from_name(compression))


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize(("magic", "versions"), [(1, V1_VERSIONS), (0, V0_VERSIONS)])
def test_confluent_kafka_legacy(compression, magic, versions):
    with CaptureBroker(versions=dict(versions)) as broker:
        batches = produce_confluent(broker, compression, headers=False)
    check_legacy(batches, magic, c.CompressionType.from_name(compression))


def test_librdkafka_writes_the_broken_lz4_checksum_for_magic_0_only():
    for magic, versions in ((0, V0_VERSIONS), (1, V1_VERSIONS)):
        with CaptureBroker(versions=dict(versions)) as broker:
            batches = produce_confluent(broker, "lz4", headers=False)
        frames = [m.value for b in batches for _, m in iter_messages(b.records)]
        assert frames
        for frame in frames:
            correct, broken = c.lz4_header_checksums(frame)
            assert frame[6] == (broken if magic == 0 else correct)
            # our writer produces the same frame descriptor for that magic
            assert c.compress(c.LZ4, b"x" * 1000, magic=magic)[:7] == frame[:7]


# --- kcat -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", CODEC_NAMES)
def test_kcat(compression):
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    lines = [(b"k1", b"v1"), (b"", b"v2"), (b"k3", b"x" * 5000)]
    with CaptureBroker(versions=dict(MODERN_VERSIONS)) as broker:
        subprocess.run(
            [
                *("kcat", "-P", "-b", broker.bootstrap, "-t", TOPIC, "-p", "0"),
                *("-z", compression, "-K", ":", "-H", "h1=v1", "-H", "h2="),
            ],
            input=b"".join(k + b":" + v + b"\n" for k, v in lines),
            check=True,
            timeout=120,
            capture_output=True,
        )
        batches = wait_all(broker, len(lines))
    records, decoded = captured_records(batches)
    wanted = c.CompressionType.from_name(compression)
    codecs = {b.compression for b in decoded}
    # librdkafka sends a batch uncompressed when compressing would not shrink it
    # (rd_kafka_msgset_writer_compress): a batch of one short line, when kcat's lines leave in
    # batches of their own on a loaded machine; the 5,000-byte line always compresses
    assert wanted in codecs and codecs <= {wanted, c.CompressionType.NONE}
    assert [(r.key, r.value, r.headers) for r in records] == [
        (k, v, [("h1", b"v1"), ("h2", b"")]) for k, v in lines
    ]


# --- kafka-python and aiokafka producers ------------------------------------------------------


@pytest.mark.parametrize("compression", CODEC_NAMES)
def test_kafka_python_producer(compression):
    from kafka import KafkaProducer

    # kafka-python refuses null header values
    messages = [(k, v, [(hk, hv or b"") for hk, hv in h], t) for k, v, h, t in MESSAGES]
    with CaptureBroker(versions=dict(MODERN_VERSIONS)) as broker:
        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            compression_type=None if compression == "none" else compression,
            enable_idempotence=False,
            linger_ms=50,
            max_request_size=10_000_000,
        )
        for key, value, headers, timestamp in messages:
            producer.send(TOPIC, value=value, key=key, headers=headers, timestamp_ms=timestamp)
        producer.flush(60)
        producer.close(5)
        batches = wait_all(broker)
    check_v2(batches, c.CompressionType.from_name(compression), messages=messages, may_skip=True)


@pytest.mark.parametrize("compression", CODEC_NAMES)
def test_aiokafka_producer(compression):
    from aiokafka import AIOKafkaProducer

    async def produce(broker):
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap,
            compression_type=None if compression == "none" else compression,
            linger_ms=50,
            max_request_size=10_000_000,
        )
        await producer.start()
        try:
            for key, value, headers, timestamp in MESSAGES:
                await producer.send(
                    TOPIC, value=value, key=key, headers=headers, timestamp_ms=timestamp
                )
            await producer.flush()
        finally:
            await producer.stop()

    with CaptureBroker(versions=dict(MODERN_VERSIONS)) as broker:
        asyncio.run(produce(broker))
        batches = wait_all(broker)
    check_v2(batches, c.CompressionType.from_name(compression))
