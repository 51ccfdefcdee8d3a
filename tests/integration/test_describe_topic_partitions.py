"""DescribeTopicPartitions (KIP-966) v0 on the real broker: topics in name order, pages cut by
response_partition_limit with a cursor to continue from (inside a topic and at a topic's end),
every topic when none is named, unknown and illegal names, and bad cursors (INVALID_REQUEST for
every requested topic), as Kafka's DescribeTopicPartitionsRequestHandler answers them."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.error_codes import ErrorCode
from protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_clients import create_topic
from tests.support.raw_client import call, connect


def describe(
    sock: socket.socket, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> Any:
    return call(
        sock,
        DescribeTopicPartitionsRequest(
            topics=[TopicRequest(name=n) for n in names],
            response_partition_limit=limit,
            cursor=Cursor(topic_name=cursor[0], partition_index=cursor[1]) if cursor else None,
        ),
        0,
    )


def pages(sock: socket.socket, names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    """Every page until next_cursor is null: (topic, partition) per page."""
    out = []
    cursor = None
    while True:
        r = describe(sock, names, limit, cursor)
        out.append([(t.name, p.partition_index) for t in r.topics for p in t.partitions])
        if r.next_cursor is None:
            return out
        cursor = (r.next_cursor.topic_name, r.next_cursor.partition_index)


@pytest.fixture
def topics(broker: BrokerProcess) -> Iterator[tuple[socket.socket, list[str]]]:
    prefix = f"dtp-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"]
    for name, count in zip(names, (3, 2, 4), strict=True):
        create_topic(broker.bootstrap, name, count)
    sock = connect(broker.bootstrap)
    yield sock, names
    sock.close()


def test_one_page(topics: tuple[socket.socket, list[str]]) -> None:
    sock, names = topics
    r = describe(sock, list(reversed(names)))
    assert r.next_cursor is None
    assert [t.name for t in r.topics] == names  # name order
    a = r.topics[0]
    assert a.error_code == 0 and a.topic_id != uuid.UUID(int=0) and not a.is_internal
    assert [p.partition_index for p in a.partitions] == [0, 1, 2]
    p = a.partitions[0]
    assert p.leader_id == 0 and p.replica_nodes == [0] and p.isr_nodes == [0]
    assert p.eligible_leader_replicas == [] and p.offline_replicas == []
    assert a.topic_authorized_operations > 0


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5])
def test_pages_cover_every_partition_once(
    topics: tuple[socket.socket, list[str]], limit: int
) -> None:
    sock, names = topics
    got = pages(sock, names, limit)
    flat = [tp for page in got for tp in page]
    expected = [(n, p) for n, count in zip(names, (3, 2, 4), strict=True) for p in range(count)]
    assert flat == expected
    assert all(0 < len(page) <= limit for page in got)


def test_a_page_ending_with_a_topic_points_at_the_next(
    topics: tuple[socket.socket, list[str]],
) -> None:
    sock, names = topics
    r = describe(sock, names, limit=3)
    assert [(t.name, len(t.partitions)) for t in r.topics] == [(names[0], 3)]
    assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == (names[1], 0)
    r = describe(sock, names, limit=4, cursor=(names[1], 1))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [
        (names[1], [1]),
        (names[2], [0, 1, 2]),
    ]
    assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == (names[2], 3)


def test_all_topics_and_errors(topics: tuple[socket.socket, list[str]]) -> None:
    sock, names = topics
    everything = describe(sock, [], cursor=(names[0], 0))
    listed = [t.name for t in everything.topics]
    assert listed == sorted(listed) and set(names) <= set(listed)
    assert all(n >= names[0] for n in listed)
    r = describe(sock, [names[0], "no-such-topic-dtp", "bad/name"])
    errors = {t.name: t.error_code for t in r.topics}
    assert errors == {
        names[0]: 0,
        "no-such-topic-dtp": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "bad/name": ErrorCode.INVALID_TOPIC_EXCEPTION,
    }
    # a cursor on a topic the list does not hold, or a negative partition
    for cursor in ((names[2], 0), (names[0], -1)):
        r = describe(sock, names[:2], cursor=cursor)
        assert [(t.name, t.error_code) for t in r.topics] == [
            (n, ErrorCode.INVALID_REQUEST) for n in names[:2]
        ]


def test_kafka_python_admin_pages_through_a_big_topic(broker: BrokerProcess) -> None:
    """A real client (kafka-python's KafkaAdminClient.describe_topic_partitions) follows the
    cursor through a 250-partition topic 100 partitions at a time."""
    from kafka.admin import KafkaAdminClient

    name = f"dtp-big-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, name, 250)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        seen: list[int] = []
        cursor = None
        for _ in range(10):
            page = admin.describe_topic_partitions(
                [name], response_partition_limit=100, cursor=cursor
            )
            (topic,) = page["topics"]
            assert topic["error_code"] == 0 and topic["name"] == name
            seen += [p["partition_index"] for p in topic["partitions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(range(250))
    finally:
        admin.close()
