"""Client quotas (issue 18, KIP-13/KIP-219) with real clients: a producer limited to 1 MB/s is held
near that rate over 30 s and sees ``throttle_time_ms``, while an unlimited producer on the same
broker keeps its speed; a consumer over its ``consumer_byte_rate`` is throttled too. Quotas are
set with AlterClientQuotas and read back with DescribeClientQuotas (the Python clients have no
quota admin API: the requests are made with our protocol codecs, which the property tests hold
to Kafka's own schemas).

The rates are measured and printed; the asserts are loose (a busy 2-core machine), the figures
are in the test output."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from protocol.error_codes import ErrorCode
from protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    QuotaAlteration,
    QuotaAlterationOp,
    QuotaEntityComponent,
)
from protocol.messages.describe_client_quotas import (
    MATCH_EXACT,
    DescribeClientQuotasRequest,
    QuotaFilterComponent,
)
from tests.support.raw_client import call, connect

QUOTA = 1024 * 1024  # bytes per second
MEASURE_S = 30.0
WARMUP_S = 11.0
VALUE = b"q" * 1000


def set_quota(bootstrap: str, entity: list[tuple[str, str | None]], key: str, value: float) -> None:
    sock = connect(bootstrap)
    request = AlterClientQuotasRequest(
        entries=[
            QuotaAlteration(
                entity=[QuotaEntityComponent(entity_type=t, entity_name=n) for t, n in entity],
                ops=[QuotaAlterationOp(key=key, value=value, remove=False)],
            )
        ],
        validate_only=False,
    )
    answer = call(sock, request, 1)
    sock.close()
    assert [e.error_code for e in answer.entries] == [ErrorCode.NONE], answer


class MeteredProducer:
    """Produces as fast as the client lets it; records acknowledged bytes over time and the
    throttle times librdkafka reports (its ``throttle`` statistics)."""

    def __init__(self, bootstrap: str, topic: str, client_id: str) -> None:
        self.acked: list[tuple[float, int]] = []
        self.throttle_max = 0
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": client_id,
                "linger.ms": 5,
                "queue.buffering.max.kbytes": 4096,
                "statistics.interval.ms": 1000,
                "stats_cb": self._stats,
            }
        )
        self.topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _stats(self, text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            self.throttle_max = max(self.throttle_max, int(b.get("throttle", {}).get("max", 0)))

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.append((time.monotonic(), len(msg.value())))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, VALUE, callback=self._delivered)
            except BufferError:
                self.producer.poll(0.01)
                continue
            self.producer.poll(0)

    def start(self) -> MeteredProducer:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(60)

    def rate(self, start: float, end: float) -> float:
        return sum(n for t, n in self.acked if start <= t < end) / (end - start)


@pytest.fixture
def quota_broker(fresh_broker):
    return fresh_broker(**{"num.network.threads": "2"})


def test_a_producer_over_its_quota_is_throttled_and_others_are_not(quota_broker, topic_name):
    bootstrap = quota_broker.bootstrap
    set_quota(bootstrap, [("client-id", "throttled")], "producer_byte_rate", QUOTA)
    sock = connect(bootstrap)
    described = call(
        sock,
        DescribeClientQuotasRequest(
            components=[
                QuotaFilterComponent(
                    entity_type="client-id", match_type=MATCH_EXACT, match="throttled"
                )
            ],
            strict=False,
        ),
        1,
    )
    sock.close()
    assert [
        (e.entity[0].entity_name, e.values[0].key, e.values[0].value) for e in described.entries
    ] == [("throttled", "producer_byte_rate", QUOTA)]

    throttled = MeteredProducer(bootstrap, topic_name, "throttled").start()
    t0 = throttled.started
    # Kafka's rates are measured over quota.window.num (11) windows of 1 s, at least 10 s: a
    # client starting flat out gets about 10 s worth at once, then the quota; measured from the
    # start and after that first window
    time.sleep(WARMUP_S + MEASURE_S - 5)
    free = MeteredProducer(bootstrap, topic_name + "-free", "free").start()
    time.sleep(5)
    end = time.monotonic()
    throttled.stop()
    free.stop()
    from_start = throttled.rate(t0, t0 + MEASURE_S)
    steady = throttled.rate(t0 + WARMUP_S, end)
    free_rate = free.rate(free.started, end)
    per_second = [round(throttled.rate(t0 + i, t0 + i + 1) / 1e6, 2) for i in range(int(end - t0))]
    print(
        f"\nquota {QUOTA / 1e6:.2f} MB/s; throttled producer: {from_start / 1e6:.2f} MB/s over "
        f"its first {MEASURE_S:.0f} s ({from_start / QUOTA:.0%} of the quota), "
        f"{steady / 1e6:.2f} MB/s over the {end - t0 - WARMUP_S:.0f} s after the first "
        f"{WARMUP_S:.0f} s ({steady / QUOTA:.0%}), max throttle_time_ms {throttled.throttle_max}; "
        f"per second (MB): {per_second}; an unlimited producer meanwhile: "
        f"{free_rate / 1e6:.2f} MB/s, max throttle_time_ms {free.throttle_max}"
    )
    assert throttled.throttle_max > 0
    assert 0.5 * QUOTA <= steady <= 1.5 * QUOTA
    assert from_start <= 2.0 * QUOTA
    assert free.throttle_max == 0
    assert free_rate > 2 * QUOTA


def test_a_consumer_over_its_quota_is_throttled(quota_broker, topic_name):
    bootstrap = quota_broker.bootstrap
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for _ in range(3000):
        producer.produce(topic_name, VALUE)
    assert producer.flush(30) == 0
    set_quota(bootstrap, [("client-id", "slow-reader")], "consumer_byte_rate", 200_000)
    throttle = [0]

    def stats(text: str) -> None:
        for b in json.loads(text).get("brokers", {}).values():
            throttle[0] = max(throttle[0], int(b.get("throttle", {}).get("max", 0)))

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": topic_name,
            "client.id": "slow-reader",
            "statistics.interval.ms": 500,
            "stats_cb": stats,
            "fetch.max.bytes": 1_000_000,
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (throttle[0] and got):
        msgs = consumer.consume(500, 0.5)
        got += sum(1 for m in msgs if not m.error())
    consumer.close()
    print(f"\nslow reader: {got} records, max throttle_time_ms {throttle[0]}")
    assert got > 0 and throttle[0] > 0
