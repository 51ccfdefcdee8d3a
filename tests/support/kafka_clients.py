"""What many integration tests do with real clients: create a topic, read a topic back from the
start with confluent-kafka (assigned partitions, no group commits)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    *,
    replication: int = 1,
    timeout: float = 30.0,
    client: Mapping[str, str] | None = None,
    **config: str,
) -> None:
    """Creates ``name`` through confluent-kafka's admin client (``config``: topic configs;
    ``client``: extra admin client settings, e.g. a ``client.id``)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})
    topic = NewTopic(name, partitions, replication, config=config)
    admin.create_topics([topic])[name].result(timeout)


def consume_from_start(
    bootstrap: str,
    topic: str,
    partitions: int | Sequence[int],
    expected: int,
    *,
    timeout: float = 30.0,
    group_id: str | None = None,
    client: Mapping[str, Any] | None = None,
) -> list[Message]:
    """Reads partitions 0..``partitions``-1 of ``topic`` (or the partitions listed) from offset
    0 until ``expected`` records arrived (or ``timeout``); client errors other than
    end-of-partition raise."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id or f"{topic}-reader",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            **(client or {}),
        }
    )
    indexes = range(partitions) if isinstance(partitions, int) else partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in indexes])
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            got.append(msg)
    finally:
        consumer.close()
    return got


def consume_in_group(bootstrap: str, group: str, topic: str, count: int) -> list[tuple[int, int]]:
    """(partition, offset) of up to ``count`` records read by a member of ``group`` subscribed
    to ``topic`` from the earliest offset (a minute at most); commits them and leaves."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = consumer.poll(1)
        if m is not None and not m.error():
            got.append((m.partition(), m.offset()))
    consumer.commit(asynchronous=False)
    consumer.close()
    return got
