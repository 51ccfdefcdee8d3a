"""A consume-transform-produce loop with exactly-once semantics (KIP-98, KIP-447), as an
application would write it with confluent-kafka: read ``input`` with read_committed in a
consumer group, and in one transaction per batch write each record (its value prefixed) to
``output`` and commit the consumed offsets with ``send_offsets_to_transaction``.

Run by tests/integration/test_transactions.py, which SIGKILLs it (or the broker) and starts it
again. Any client error makes it exit non-zero (the harness restarts it); the next instance's
``init_transactions`` fences this one and aborts its open transaction.

Usage: copy_loop.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID TOTAL [SESSION_TIMEOUT_MS [BATCH]]

SESSION_TIMEOUT_MS (the client's default when left out or 0) bounds how long a restarted loop
waits for the group to drop the member a SIGKILL left behind before it is assigned partitions
again. BATCH (500 by default) is the most records one transaction copies.
"""

from __future__ import annotations

import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def log(line: str) -> None:
    print(f"{time.time():.3f} {line}", file=sys.stderr, flush=True)


def main() -> int:
    bootstrap, source, sink, group, txn_id, total = sys.argv[1:7]
    timeout_ms = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    batch_size = int(sys.argv[8]) if len(sys.argv) > 8 else 500
    session: dict[str, int] = {}
    if timeout_ms:
        session = {"session.timeout.ms": timeout_ms, "heartbeat.interval.ms": timeout_ms // 6}
    # No re-bootstrap (KIP-899) when no broker answers, as when the only broker restarts: after
    # librdkafka 2.16 re-bootstraps, it can keep the broker it dropped as the group coordinator
    # of a pending send_offsets_to_transaction, which then waits for it forever, past its
    # timeout (seen here: a hung loop, not a failed one). The loop reconnects to the same
    # address meanwhile.
    client: dict[str, str | int] = {
        "bootstrap.servers": bootstrap,
        "metadata.recovery.strategy": "none",
    }
    if os.environ.get("ODRADEK_WORKER_DEBUG"):
        # librdkafka's debug contexts (e.g. "eos,cgrp,fetch"), written to this process's stderr
        client["debug"] = os.environ["ODRADEK_WORKER_DEBUG"]
    consumer = Consumer(
        {
            **session,
            **client,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
        }
    )
    producer = Producer(
        {
            **client,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    consumer.subscribe([source])
    while True:
        batch = consumer.consume(batch_size, 1.0)
        records = [m for m in batch if not m.error()]
        for m in batch:
            error = m.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                print(f"consume error: {error}", file=sys.stderr)
                return 2
        if not records:
            positions = consumer.position(consumer.assignment())
            committed = consumer.committed(consumer.assignment(), 10)
            done = sum(max(p.offset, 0) for p in committed)
            if done >= int(total) and positions:
                print("done", file=sys.stderr)
                return 0
            log(f"idle: assigned {len(positions)} partitions, committed {done}")
            continue
        producer.begin_transaction()
        for m in records:
            producer.produce(sink, key=m.key(), value=b"copy-" + m.value(), partition=m.partition())
        offsets = [
            TopicPartition(tp.topic, tp.partition, tp.offset)
            for tp in consumer.position(consumer.assignment())
        ]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
        log(f"committed {len(records)} records")


if __name__ == "__main__":
    sys.exit(main())
