"""Fetches are served with sendfile straight from segment files (zero copy)."""

from __future__ import annotations

import urllib.request

from confluent_kafka import Producer

from tests.integration.test_clients import consume_confluent
from tests.support.kafka_clients import create_topic
from tests.support.ports import free_port


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            name = name.split("{", 1)[0]  # summed over labels (network processors)
            values[name] = values.get(name, 0.0) + float(value)
    return values


def test_consumer_bytes_go_through_sendfile(fresh_broker):
    port = free_port()
    proc = fresh_broker(**{"metrics.port": str(port)})
    create_topic(proc.bootstrap, "bulk", 4)
    producer = Producer(
        {
            "bootstrap.servers": proc.bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "none",
        }
    )
    payload = bytes(range(256)) * 40  # ~10 KiB
    count = 4000  # ~40 MB
    for i in range(count):
        producer.produce("bulk", value=payload, partition=i % 4)
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    before = scrape(port)
    got = consume_confluent(proc.bootstrap, "bulk", 4, count, timeout=120)
    assert len(got) == count
    after = scrape(port)
    out = "kafka_server_socket_server_metrics_outgoing_byte_total"
    sent = after[out] - before[out]
    zero_copy = after["odradek_sendfile_bytes_total"] - before["odradek_sendfile_bytes_total"]
    assert sent > 40_000_000
    assert zero_copy / sent >= 0.9, (zero_copy, sent)
