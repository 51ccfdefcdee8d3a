"""Hostile or unlucky peers against a real broker process: each gets a clear answer or a closed
connection, memory stays bounded, and a well-behaved client is served throughout."""

from __future__ import annotations

import os
import struct
import time
import uuid
from pathlib import Path

import pytest

from protocol.error_codes import ErrorCode
from protocol.headers import encode_request
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_clients import create_topic
from tests.support.raw_client import call, connect, is_closed, read_frame


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def served(bootstrap: str) -> bool:
    """A well-behaved client's ApiVersions is answered."""
    with connect(bootstrap) as sock:
        return call(sock, ApiVersionsRequest(), 0).error_code == ErrorCode.NONE


def test_size_prefixes_alone_pin_no_frames_and_time_out(fresh_broker):
    """Finding 2 (four bytes pinned 100 MB) and finding 7 (a trickling client is never closed)."""
    broker = fresh_broker(**{"request.receive.timeout.ms": "1500"})
    before = rss_bytes(broker.pid)
    socks = []
    for _ in range(40):
        s = connect(broker.bootstrap)
        s.sendall(struct.pack(">i", 100 * 1024 * 1024 - 1) + b"\x00")
        socks.append(s)
    trickler = connect(broker.bootstrap)
    trickler.sendall(struct.pack(">i", 64))
    time.sleep(0.5)
    grown = rss_bytes(broker.pid) - before
    assert grown < 64 * 1024 * 1024, f"40 size prefixes grew the broker by {grown} bytes"
    assert served(broker.bootstrap)
    for _ in range(3):  # one byte per 0.5 s: activity, but the request never completes
        trickler.sendall(b"\x00")
        time.sleep(0.5)
    assert all(is_closed(s, timeout=10) for s in [*socks, trickler])
    assert "request.receive.timeout.ms" in broker.log()
    assert served(broker.bootstrap)


def test_metadata_by_topic_id_is_answered_in_order_at_every_version(broker):
    """Finding 3: Metadata v10/v11 naming a topic by id failed to encode and went unanswered."""
    with connect(broker.bootstrap) as sock:
        for version in (10, 11, 12, 13):
            request = MetadataRequest(
                topics=[MetadataRequestTopic(topic_id=uuid.uuid4(), name=None)],
                allow_auto_topic_creation=False,
            )
            response = call(sock, request, version, correlation_id=version)
            assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        assert call(sock, ApiVersionsRequest(), 0, correlation_id=99).error_code == 0


def fetch_v3(topic: str) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 30,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def test_unread_pipelined_fetches_hold_bounded_memory(broker, topic_name):
    """Finding 6: a connection that never reads its responses, sending Fetch v3 (responses
    built in memory), pinned 1.8 GB: backpressure must engage per request."""
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for i in range(2000):
        producer.produce(topic_name, value=os.urandom(500), key=str(i))
    assert producer.flush(30) == 0
    before = rss_bytes(broker.pid)
    hog = connect(broker.bootstrap)
    request = fetch_v3(topic_name)
    hog.settimeout(0.2)
    sent = 0
    deadline = time.monotonic() + 20
    while sent < 1000 and time.monotonic() < deadline:
        try:
            hog.sendall(encode_request(request, 3, sent))
            sent += 1
        except (TimeoutError, BlockingIOError):
            break  # the broker stopped reading: that is the point
    time.sleep(1)
    grown = rss_bytes(broker.pid) - before
    # each response is ~1 MB: handling them all at once grew the broker by hundreds of MB
    assert grown < 64 * 1024 * 1024, f"{sent} unread fetches grew the broker by {grown} bytes"
    assert served(broker.bootstrap)
    # once the client reads, every request it sent is answered, in order
    hog.settimeout(30)
    for correlation_id in range(sent):
        assert read_frame(hog)[:4] == struct.pack(">i", correlation_id)
    hog.close()


def test_out_of_file_descriptors_the_acceptor_backs_off(tmp_path):
    """Finding 5: out of descriptors, the acceptor spun at 100% CPU logging every millisecond."""
    proc = BrokerProcess(tmp_path / "data", wrapper=["prlimit", "--nofile=96"])
    proc.start()
    try:
        socks = []
        for _ in range(120):
            try:
                socks.append(connect(proc.bootstrap, timeout=2))
            except OSError:
                break
        cpu_before = cpu_seconds(proc.pid)
        time.sleep(3)
        spent = cpu_seconds(proc.pid) - cpu_before
        assert spent < 1.0, f"the broker burned {spent:.2f} s of CPU in 3 s while out of fds"
        warnings = proc.log().count("pausing accepts")
        assert 1 <= warnings <= 3, f"{warnings} accept warnings in a few seconds"
        for s in socks:
            s.close()
        deadline = time.monotonic() + 15
        while True:
            try:
                if served(proc.bootstrap):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the broker did not accept again"
            time.sleep(0.2)
    finally:
        proc.stop()


def test_connection_limits_refuse_cleanly(fresh_broker):
    broker = fresh_broker(**{"max.connections.per.ip": "5"})
    held = [connect(broker.bootstrap) for _ in range(5)]
    for s in held:
        assert call(s, ApiVersionsRequest(), 0).error_code == 0
    extra = connect(broker.bootstrap)
    assert is_closed(extra, timeout=10)
    held.pop().close()
    deadline = time.monotonic() + 10
    while True:
        try:
            if served(broker.bootstrap):
                break
        except OSError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert "max.connections.per.ip reached" in broker.log()


def test_at_max_connections_the_next_client_waits_until_one_closes(fresh_broker):
    broker = fresh_broker(**{"max.connections": "3"})
    held = [connect(broker.bootstrap) for _ in range(3)]
    for s in held:
        call(s, ApiVersionsRequest(), 0)
    waiting = connect(broker.bootstrap)  # completes in the kernel's backlog, not accepted
    waiting.sendall(encode_request(ApiVersionsRequest(), 0, 5))
    waiting.settimeout(1.0)
    with pytest.raises(TimeoutError):
        read_frame(waiting)
    held.pop().close()
    waiting.settimeout(10)
    assert read_frame(waiting)[:4] == struct.pack(">i", 5)
