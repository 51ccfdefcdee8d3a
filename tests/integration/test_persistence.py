"""Data survives a clean restart, and the log directory is Kafka's own layout."""

from __future__ import annotations

import signal

from confluent_kafka import Producer

from tests.integration.test_clients import consume_confluent
from tests.support.kafka_clients import create_topic


def test_data_survives_sigterm_and_restart(fresh_broker):
    proc = fresh_broker(**{"log.segment.bytes": "20000"})
    create_topic(proc.bootstrap, "keep", 2, **{"retention.ms": "-1"})
    producer = Producer(
        {"bootstrap.servers": proc.bootstrap, "linger.ms": 5, "batch.num.messages": 100}
    )
    for i in range(5000):
        producer.produce("keep", key=str(i).encode(), value=b"payload-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    assert proc.stop(signal.SIGTERM) == 0
    assert "stopped cleanly" in proc.log()
    data = proc.data_dir
    assert (data / ".kafka_cleanshutdown").exists()
    assert (data / "meta.properties").exists()
    segments = sorted(p.name for p in (data / "keep-0").glob("*.log"))
    assert len(segments) > 1 and all(len(n) == len("00000000000000000000.log") for n in segments)

    proc.start()
    got = consume_confluent(proc.bootstrap, "keep", 2, 5000)
    assert sorted(int(m.key()) for m in got) == list(range(5000))
    # the topic's config survived too
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    (cfg,) = admin.describe_configs([ConfigResource("topic", "keep")]).values()
    assert cfg.result(10)["retention.ms"].value == "-1"
