"""A KIP-848 consumer group survives the death of its coordinator: three ZooKeeper-mode brokers,
``__consumer_offsets`` with three replicas; the broker leading the group's partition is
SIGKILLed while confluent-kafka ``group.protocol=consumer`` members consume; the new leader
loads the group from its replica of the partition and the members go on with their member ids,
epochs and partitions (nobody is fenced, no partition gets two owners, nothing is lost)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.integration.test_replication import (  # noqa: F401 - fixtures
    BROKERS,
    bootstrap,
    cluster,
    create_topic,
    find_coordinator,
    kill,
    start_brokers,
    wait_full_isr,
    zk,
)
from tests.support import group_log
from tests.support.cluster import ProcessCluster
from tests.support.group_log import Worker, start_worker
from tests.support.raw_client import call, connect
from tests.support.waiting import wait_for

pytestmark = pytest.mark.zookeeper

SETTINGS = {
    # Kafka's default session: a member's client may take up to reconnect.backoff.max.ms
    # (10 s in librdkafka) to reach the new coordinator, and must not be fenced meanwhile
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "5000",
}


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(10)


def describe_on(processes: ProcessCluster, boot: str, group: str) -> Any:
    """ConsumerGroupDescribe of ``group`` asked of its coordinator (None while unreachable)."""
    try:
        coordinator = find_coordinator(boot, group)
        with connect(processes.brokers[coordinator].bootstrap) as sock:
            request = ConsumerGroupDescribeRequest(
                group_ids=[group], include_authorized_operations=False
            )
            (described,) = call(sock, request, 1).groups
    except (OSError, AssertionError):
        return None
    return described


def test_group_survives_a_coordinator_move(
    cluster: ProcessCluster,  # noqa: F811 - the fixture
    tmp_path: Path,
    workers: list[Worker],
) -> None:
    boot = start_brokers(cluster, **SETTINGS)
    topic, group, count = "moving", "kip848-moving", 30_000
    create_topic(boot, topic, 6)
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 20})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=i % 6)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    for i in range(3):
        workers.append(start_worker(tmp_path, f"w{i}", boot, group, topic, rate=250))

    def stable() -> Any:
        d = describe_on(cluster, boot, group)
        ok = d is not None and d.error_code == 0 and d.group_state == "Stable"
        return d if ok and len(d.members) == 3 else None

    before = wait_for(stable, "a stable group of 3", timeout=90)
    coordinator = find_coordinator(boot, group)
    wait_full_isr(cluster, "__consumer_offsets", 3)
    time.sleep(3)
    moved_at = time.time()
    kill(cluster, coordinator)
    alive = tuple(b for b in BROKERS if b != coordinator)
    boot_alive = bootstrap(cluster, alive)

    def stable_after() -> Any:
        d = describe_on(cluster, boot_alive, group)
        ok = d is not None and d.error_code == 0 and d.group_state == "Stable"
        return d if ok and len(d.members) == 3 else None

    after = wait_for(stable_after, "the group on its new coordinator", timeout=90)
    assert find_coordinator(boot_alive, group) != coordinator
    # the same members, not fenced and rejoined: the group was loaded from the replica
    assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
    assert after.group_epoch == before.group_epoch

    def all_processed() -> bool:
        seen: set[int] = set()
        for w in workers:
            for line in w.log_path.read_text().splitlines():
                parts = line.split(" ")
                if len(parts) == 5 and parts[1] == "rec":
                    seen.add(int(parts[4]))
        if len(seen) >= count:
            return True
        time.sleep(1)
        return False

    wait_for(all_processed, f"all {count} records processed", timeout=300)
    for w in workers:
        w.stop()
    parsed = group_log.parse(workers)
    assert {v for *_, v in parsed.records} == set(range(count))
    assert group_log.overlaps(parsed) == []
    assert group_log.bad_resumptions(parsed) == []
    lost = [o for o in parsed.ownerships if o.end > moved_at and o.end < moved_at + 30]
    print(
        f"\ncoordinator {coordinator} SIGKILLed; the group of 3 went on under broker "
        f"{find_coordinator(boot_alive, group)}; ownerships ended in the 30 s after: {len(lost)}"
    )
