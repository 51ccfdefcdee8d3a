"""The idempotent producer: real clients with idempotence on, and raw Produce requests that retry
a batch (the original offset comes back, nothing is appended twice), skip a sequence
(OUT_OF_ORDER_SEQUENCE_NUMBER) or use a fenced epoch (INVALID_PRODUCER_EPOCH), also across a
broker restart."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections import defaultdict

from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaProducer

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.headers import decode_response, encode_request
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records.record import SimpleRecord, build_batch
from tests.support.kafka_clients import create_topic
from tests.support.raw_client import api_versions


def read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-check",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or (msg.error() and msg.error().code() == KafkaError._PARTITION_EOF):
                continue
            assert not msg.error(), msg.error()
            got.append(msg)
        # nothing beyond what was expected
        end = time.monotonic() + 1
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg)
    finally:
        consumer.close()
    return got


def in_order_per_partition(messages: list) -> dict[int, list[int]]:
    by_partition: dict[int, list[int]] = defaultdict(list)
    for m in messages:
        by_partition[m.partition()].append(int(m.value()))
    return by_partition


def test_confluent_idempotent_producer(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 3)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
        }
    )
    for i in range(3000):
        producer.produce(topic_name, value=str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    got = read_all(broker.bootstrap, topic_name, 3, 3000)
    assert len(got) == 3000
    for p, values in in_order_per_partition(got).items():
        assert values == list(range(p, 3000, 3))


def test_kafka_python_3_defaults_are_idempotent(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    assert producer.config["enable_idempotence"]
    futures = [producer.send(topic_name, str(i).encode(), partition=i % 2) for i in range(1000)]
    producer.flush(30)
    offsets = sorted((f.get(10).partition, f.get(10).offset) for f in futures)
    producer.close()
    assert offsets == sorted((p, o) for p in range(2) for o in range(500))
    got = read_all(broker.bootstrap, topic_name, 2, 1000)
    for p, values in in_order_per_partition(got).items():
        assert values == list(range(p, 1000, 2))


def test_aiokafka_idempotent_producer(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 1)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            for i in range(200):
                await producer.send(topic_name, str(i).encode(), partition=0)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())
    assert [int(m.value()) for m in read_all(broker.bootstrap, topic_name, 1, 200)] == list(
        range(200)
    )


class RawClient:
    """Requests written with our own protocol codecs over a plain socket."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def request(self, body, version: int):
        self.correlation_id += 1
        self.sock.sendall(encode_request(body, version, self.correlation_id, "raw-test"))
        size = struct.unpack(">i", self._exactly(4))[0]
        cid, response = decode_response(body.api_key, version, self._exactly(size))
        assert cid == self.correlation_id
        return response

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf

    def init_producer_id(self) -> tuple[int, int]:
        r = self.request(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4
        )
        assert r.error_code == ErrorCode.NONE
        return r.producer_id, r.producer_epoch

    def produce(self, topic: str, batch: bytes) -> tuple[int, int]:
        r = self.request(
            ProduceRequest(
                transactional_id=None,
                acks=-1,
                timeout_ms=10000,
                topic_data=[
                    TopicProduceData(
                        name=topic, partition_data=[PartitionProduceData(index=0, records=batch)]
                    )
                ],
            ),
            9,
        )
        p = r.responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    def close(self) -> None:
        self.sock.close()


def idempotent_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return build_batch(
        [SimpleRecord(v, timestamp=int(time.time() * 1000)) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-wm"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_raw_retry_gets_original_offset_gaps_and_old_epochs_are_rejected(fresh_broker):
    broker = fresh_broker()
    topic = "dedup"
    create_topic(broker.bootstrap, topic, 1)
    client = RawClient(broker.bootstrap)
    pid, epoch = client.init_producer_id()
    assert epoch == 0
    first = idempotent_batch(pid, 0, 0, [b"a", b"b", b"c"])
    assert client.produce(topic, first) == (ErrorCode.NONE, 0)
    assert client.produce(topic, idempotent_batch(pid, 0, 3, [b"d"])) == (ErrorCode.NONE, 3)
    # the same batch again (a retry): the original offset, nothing appended
    assert client.produce(topic, first) == (ErrorCode.NONE, 0)
    assert end_offset(broker.bootstrap, topic) == 4
    # a gap in sequences
    code, _ = client.produce(topic, idempotent_batch(pid, 0, 9, [b"x"]))
    assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # a bumped epoch starts again at 0 and fences the old one
    assert client.produce(topic, idempotent_batch(pid, 1, 0, [b"e"])) == (ErrorCode.NONE, 4)
    code, _ = client.produce(topic, idempotent_batch(pid, 0, 4, [b"y"]))
    assert code == ErrorCode.INVALID_PRODUCER_EPOCH
    # a new InitProducerId gives a new producer id
    pid2, _ = client.init_producer_id()
    assert pid2 != pid
    client.close()
    assert end_offset(broker.bootstrap, topic) == 5

    last = idempotent_batch(pid, 1, 1, [b"f", b"g"])
    client = RawClient(broker.bootstrap)
    assert client.produce(topic, last) == (ErrorCode.NONE, 5)
    client.close()
    for stop in (broker.restart, lambda: (broker.kill(), broker.start())):
        stop()  # clean (snapshot) and unclean (rebuilt from the log) restarts
        client = RawClient(broker.bootstrap)
        assert client.produce(topic, last) == (ErrorCode.NONE, 5)
        code, _ = client.produce(topic, idempotent_batch(pid, 1, 7, [b"z"]))
        assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # producer ids are never handed out twice, restarts included
        assert client.init_producer_id()[0] not in (pid, pid2)
        client.close()
    assert end_offset(broker.bootstrap, topic) == 7
    assert list((broker.data_dir / f"{topic}-0").glob("*.snapshot"))


def test_transaction_apis_are_advertised(broker):
    """The transaction APIs (issue 17) with the versions served, and the transaction.version
    feature finalized at 2; a transactional InitProducerId
    sent without FindCoordinator is answered by the coordinator's rules (NOT_COORDINATOR before
    ``__transaction_state`` exists here)."""
    client = RawClient(broker.bootstrap)
    r = client.request(
        InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=60000), 4
    )
    versions = client.request(api_versions(), 3)
    client.close()
    assert r.error_code in (
        ErrorCode.NONE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    )
    advertised = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert advertised[ApiKey.INIT_PRODUCER_ID] == (0, 5)
    assert advertised[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)
    assert advertised[ApiKey.ADD_OFFSETS_TO_TXN] == (0, 4)
    assert advertised[ApiKey.END_TXN] == (0, 5)
    assert advertised[ApiKey.WRITE_TXN_MARKERS] == (0, 2)
    assert advertised[ApiKey.TXN_OFFSET_COMMIT] == (0, 6)
    assert advertised[ApiKey.DESCRIBE_PRODUCERS] == (0, 0)
    assert advertised[ApiKey.DESCRIBE_TRANSACTIONS] == (0, 0)
    assert advertised[ApiKey.LIST_TRANSACTIONS] == (0, 2)
    # KIP-890 part 2: transaction version 2 finalized, as Kafka 4 does for a new cluster
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in versions.finalized_features
    ] == [("transaction.version", 2, 2)]
