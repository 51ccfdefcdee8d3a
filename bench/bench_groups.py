"""Consumer-group benchmarks against the real daemon:

* rebalance: a group of 9 confluent-kafka consumers is stable; a 10th joins. Measured: from the
  10th member's ``subscribe`` until DescribeGroups shows the group Stable with 10 members that
  all own partitions (polled every 10 ms). The members heartbeat every 500 ms (they learn of a
  rebalance from a heartbeat), so the figure includes up to one heartbeat interval. Repeated;
  the 10th member leaves between rounds.
* commits: one client commits one partition's offset synchronously in a loop (confluent-kafka
  ``commit(asynchronous=False)``), and the same with raw OffsetCommit v8 requests, one at a time
  on one connection (the broker's own cost). Commits per second.

Run: ``python -m bench bench_groups`` (or ``make bench``). Figures are printed, never asserted.
"""

from __future__ import annotations

import shutil
import socket
import statistics
import struct
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.headers import decode_response, encode_request
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.integration.broker_process import BrokerProcess

COMMAND = "python -m bench bench_groups"
MEMBERS = 10
TOPIC_PARTITIONS = 20
ROUNDS = 5
COMMIT_SECONDS = 5.0


class Member:
    """A confluent-kafka consumer polling on its own thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.consumer.close()


def _stable(admin: AdminClient, group: str, n: int) -> bool:
    (future,) = admin.describe_consumer_groups([group]).values()
    try:
        desc = future.result(5)
    except KafkaException:  # not there yet
        return False
    return (
        desc.state.name == "STABLE"
        and len(desc.members) == n
        and all(m.assignment.topic_partitions for m in desc.members)
    )


def _wait_stable(admin: AdminClient, group: str, n: int, timeout: float = 120.0) -> float:
    start = time.perf_counter()
    while not _stable(admin, group, n):
        if time.perf_counter() - start > timeout:
            raise RuntimeError(f"group {group} did not stabilise with {n} members")
        time.sleep(0.01)
    return time.perf_counter() - start


def bench_rebalance(bootstrap: str) -> list[float]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, group = "bench-groups", "bench-rebalance"
    admin.create_topics([NewTopic(topic, TOPIC_PARTITIONS, 1)])[topic].result(30)
    members = [Member(bootstrap, group, topic, f"m{i}") for i in range(MEMBERS - 1)]
    _wait_stable(admin, group, MEMBERS - 1)
    times = []
    try:
        for r in range(ROUNDS):
            start = time.perf_counter()
            joiner = Member(bootstrap, group, topic, f"joiner{r}")
            while not _stable(admin, group, MEMBERS):
                time.sleep(0.01)
            times.append(time.perf_counter() - start)
            joiner.close()
            _wait_stable(admin, group, MEMBERS - 1)
    finally:
        for m in members:
            m.close()
    return times


def bench_commits_confluent(bootstrap: str) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-commits"})
    tp = [TopicPartition("bench-groups", 0, 0)]
    consumer.commit(offsets=tp, asynchronous=False)  # coordinator found, connection up
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < COMMIT_SECONDS:
        consumer.commit(offsets=[TopicPartition("bench-groups", 0, n)], asynchronous=False)
        n += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def bench_commits_raw(bootstrap: str) -> float:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(cid: int, offset: int) -> None:
        body = OffsetCommitRequest(
            group_id="bench-commits",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name="bench-groups",
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=offset, committed_metadata=""
                        )
                    ],
                )
            ],
        )
        sock.sendall(encode_request(body, 8, cid))
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        _, response = decode_response(body.api_key, 8, _exactly(sock, size))
        assert response.topics[0].partitions[0].error_code == 0

    call(0, 0)
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < COMMIT_SECONDS:
        n += 1
        call(n, n)
    elapsed = time.perf_counter() - start
    sock.close()
    return n / elapsed


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-groups-"))
    broker = BrokerProcess(tmp / "data", {"group.initial.rebalance.delay.ms": "0"})
    broker.start()
    try:
        times = bench_rebalance(broker.bootstrap)
        print(
            f"rebalance: {MEMBERS}-member group stable after a member joins: median "
            f"{statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms over {len(times)} joins "
            f"(confluent-kafka, heartbeat.interval.ms=500, {TOPIC_PARTITIONS} partitions, "
            "range assignor)"
        )
        rate = bench_commits_confluent(broker.bootstrap)
        print(f"commits: one confluent-kafka client, synchronous, one partition: {rate:.0f}/s")
        rate = bench_commits_raw(broker.bootstrap)
        print(f"commits: raw OffsetCommit v8, one at a time on one connection: {rate:.0f}/s")
        print(f"command: {COMMAND}")
    finally:
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
