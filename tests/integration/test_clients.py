"""Unmodified real clients produce to and consume from the daemon: every codec, keys, null values,
headers, timestamps, many partitions, acks 0/1/all, large messages, offsets_for_times."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as ATP
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP

from tests.support.kafka_clients import consume_from_start, create_topic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def consume_confluent(
    bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 30.0
) -> list:
    return consume_from_start(bootstrap, topic, partitions, expected, timeout=timeout)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_every_codec_keys_nulls_headers_timestamps(broker, topic_name, codec):
    create_topic(broker.bootstrap, topic_name, 3)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "compression.type": codec,
            "linger.ms": 5,
            "acks": "all",
        }
    )
    sent = []
    for i in range(300):
        key = None if i % 7 == 0 else f"key-{i}".encode()
        value = None if i % 11 == 0 else (f"value-{i}-" * (i % 20)).encode()
        headers = [("h1", b"x"), ("h2", None)] if i % 3 == 0 else None
        ts = 1_700_000_000_000 + i
        producer.produce(
            topic_name, value=value, key=key, headers=headers, timestamp=ts, partition=i % 3
        )
        sent.append((i % 3, key, value, headers, ts))
    assert producer.flush(30) == 0
    got = consume_confluent(broker.bootstrap, topic_name, 3, len(sent))
    assert len(got) == len(sent)
    by_partition: dict[int, list] = {}
    for m in got:
        by_partition.setdefault(m.partition(), []).append(m)
    for p, msgs in by_partition.items():
        assert [m.offset() for m in msgs] == list(range(len(msgs)))
        expected = [s for s in sent if s[0] == p]
        for m, (_, key, value, headers, ts) in zip(msgs, expected, strict=True):
            assert m.key() == key and m.value() == value
            assert m.timestamp() == (1, ts)
            assert (m.headers() or None) == headers


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_confluent_acks(broker, topic_name, acks):
    create_topic(broker.bootstrap, topic_name)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "linger.ms": 1})
    for i in range(100):
        producer.produce(topic_name, value=b"m%d" % i)
    assert producer.flush(30) == 0
    assert len(consume_confluent(broker.bootstrap, topic_name, 1, 100)) == 100


def test_many_partitions(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 32)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(3200):
        producer.produce(topic_name, key=str(i).encode(), value=b"x")
    assert producer.flush(30) == 0
    got = consume_confluent(broker.bootstrap, topic_name, 32, 3200)
    assert len(got) == 3200
    assert len({m.partition() for m in got}) == 32


def test_ten_megabyte_message(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, **{"max.message.bytes": str(11 * 1024 * 1024)})
    big = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "message.max.bytes": 12 * 1024 * 1024}
    )
    producer.produce(topic_name, value=big)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "big",
            "fetch.message.max.bytes": 1024 * 1024,
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    deadline = time.monotonic() + 60
    msg = None
    while msg is None and time.monotonic() < deadline:
        msg = consumer.poll(1)
    consumer.close()
    assert msg is not None and not msg.error() and msg.value() == big


def test_message_too_large(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, **{"max.message.bytes": "1000"})
    errors = []
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic_name, value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_confluent_offsets_for_times(broker, topic_name):
    create_topic(broker.bootstrap, topic_name)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(10):
        producer.produce(topic_name, value=b"v", timestamp=1_000_000 + i * 1000)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "oft"})
    found = consumer.offsets_for_times([TopicPartition(topic_name, 0, 1_004_500)], 10)
    assert found[0].offset == 5
    found = consumer.offsets_for_times([TopicPartition(topic_name, 0, 2_000_000)], 10)
    assert found[0].offset == -1
    lo, hi = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), 10)
    assert (lo, hi) == (0, 10)
    consumer.close()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_produce_consume(broker, topic_name, codec):
    # kafka-python 3 defaults to idempotence; the group/idempotence tests cover that default.
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=codec,
        linger_ms=5,
        enable_idempotence=False,
    )
    futures = [
        producer.send(
            topic_name,
            key=b"k%d" % i,
            value=b"v%d" % i,
            headers=[("h", b"%d" % i)],
            timestamp_ms=1_600_000_000_000 + i,
        )
        for i in range(200)
    ]
    producer.flush(30)
    assert [f.get(10).offset for f in futures] == list(range(200))
    producer.close()
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    got = list(consumer)
    consumer.close()
    assert [(m.key, m.value, m.headers, m.timestamp) for m in got] == [
        (b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)], 1_600_000_000_000 + i) for i in range(200)
    ]


def test_kafka_python_offsets_for_times(broker, topic_name):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    for i in range(5):
        producer.send(topic_name, value=b"v", timestamp_ms=5_000 + i * 10).get(10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = KTP(topic_name, 0)
    found = consumer.offsets_for_times({tp: 5_015})
    assert found[tp].offset == 2 and found[tp].timestamp == 5_020
    assert consumer.beginning_offsets([tp])[tp] == 0 and consumer.end_offsets([tp])[tp] == 5
    consumer.close()


@pytest.mark.parametrize("api_version", [(0, 9), (0, 10)])
@pytest.mark.parametrize("codec", [None, "gzip"])
def test_kafka_python_legacy_message_formats(broker, topic_name, api_version, codec):
    create_topic(broker.bootstrap, topic_name)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        api_version=api_version,
        compression_type=codec,
        linger_ms=5,
    )
    for i in range(50):
        producer.send(topic_name, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=broker.bootstrap,
        api_version=api_version,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30000,
        group_id=None,
    )
    # up to the 50 records, or 30 s without one (5 s proved too short on a loaded machine)
    got = []
    for message in consumer:
        got.append(message)
        if len(got) == 50:
            break
    consumer.close()
    assert [(m.offset, m.key, m.value) for m in got] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(50)
    ]
    # and a modern client reads what the legacy producer wrote
    modern = consume_confluent(broker.bootstrap, topic_name, 1, 50)
    assert [m.value() for m in modern] == [b"v%d" % i for i in range(50)]


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_aiokafka_produce_consume(broker, topic_name, codec):
    async def run() -> list:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=5
        )
        await producer.start()
        try:
            for i in range(100):
                await producer.send(
                    topic_name, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"1")]
                )
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            consumer.assign([ATP(topic_name, 0)])
            await consumer.seek_to_beginning(ATP(topic_name, 0))
            got: list = []
            while len(got) < 100:
                batch = await consumer.getmany(timeout_ms=5000)
                if not batch:
                    break
                for msgs in batch.values():
                    got.extend(msgs)
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    assert [(m.key, m.value, list(m.headers)) for m in got] == [
        (b"k%d" % i, b"v%d" % i, [("h", b"1")]) for i in range(100)
    ]


@pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat not installed (make test installs it)"
)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume(broker, topic_name, codec):
    lines = "\n".join(f"key{i}:value{i}" for i in range(100)) + "\n"
    subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-P", "-t", topic_name, "-K", ":", "-z", codec, "-p", "0"],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [
            "kcat",
            "-b",
            broker.bootstrap,
            "-C",
            "-t",
            topic_name,
            "-e",
            "-o",
            "beginning",
            "-f",
            "%k=%s@%o\n",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.decode().splitlines() == [f"key{i}=value{i}@{i}" for i in range(100)]
    meta = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-L", "-t", topic_name],
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert f'topic "{topic_name}" with 1 partitions' in meta.stdout.decode()


def test_clients_cannot_write_internal_topics(broker, topic_name):
    # group coordination creates __consumer_offsets (FindCoordinator)
    create_topic(broker.bootstrap, topic_name)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name})
    consumer.subscribe([topic_name])
    deadline = time.monotonic() + 30
    while "__consumer_offsets" not in consumer.list_topics(timeout=10).topics:
        consumer.poll(0.2)
        assert time.monotonic() < deadline
    consumer.close()
    errors = []
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(
        "__consumer_offsets",
        value=b"x",
        partition=0,
        on_delivery=lambda err, msg: errors.append(err),
    )
    producer.flush(20)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_EXCEPTION


def test_zstd_needs_produce_v7_and_fetch_v10(broker, topic_name):
    """KIP-110, as Kafka enforces it: older request versions get UNSUPPORTED_COMPRESSION_TYPE."""
    import socket

    from protocol.api_keys import ApiKey
    from protocol.headers import decode_response, encode_request
    from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from protocol.records.record import RecordBatchBuilder
    from tests.support.raw_client import read_frame

    create_topic(broker.bootstrap, topic_name)
    builder = RecordBatchBuilder(compression=4)
    builder.append(b"zstd value", timestamp=int(time.time() * 1000))
    batch = builder.build()
    host, port = broker.bootstrap.split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)

    def call(api: int, body, version: int, cid: int):
        sock.sendall(encode_request(body, version, cid))
        return decode_response(api, version, read_frame(sock))[1]

    def produce(version: int, cid: int) -> int:
        req = ProduceRequest(
            acks=1,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(
                    name=topic_name, partition_data=[PartitionProduceData(index=0, records=batch)]
                )
            ],
        )
        resp = call(ApiKey.PRODUCE, req, version, cid)
        return resp.responses[0].partition_responses[0].error_code

    assert produce(6, 1) == 76  # UNSUPPORTED_COMPRESSION_TYPE
    assert produce(7, 2) == 0

    def fetch(version: int, cid: int) -> int:
        req = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            topics=[
                FetchTopic(
                    topic=topic_name,
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        )
        return call(ApiKey.FETCH, req, version, cid).responses[0].partitions[0].error_code

    assert fetch(9, 3) == 76
    assert fetch(10, 4) == 0
    sock.close()
