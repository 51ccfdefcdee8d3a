"""Hostile or unlucky peers against a real broker process: each gets a clear answer or a closed
connection, memory stays bounded, and a well-behaved client is served throughout."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

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
    broker.wait_for_log("request.receive.timeout.ms")
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


def test_metadata_by_topic_id_with_an_empty_name_answers_the_topic(broker, topic_name):
    """Kafka's Java client asks for topics by id with the name left at its default, "" (the 4.x
    consumer resolving a regex subscription's assignment): a non-zero id names the topic, as in
    Kafka's KafkaApis, rather than the empty name."""
    create_topic(broker.bootstrap, topic_name, 2)
    with connect(broker.bootstrap) as sock:
        by_name = MetadataRequest(
            topics=[MetadataRequestTopic(name=topic_name)], allow_auto_topic_creation=False
        )
        topic_id = call(sock, by_name, 12).topics[0].topic_id
        for version in (12, 13):
            request = MetadataRequest(
                topics=[MetadataRequestTopic(topic_id=topic_id, name="")],
                allow_auto_topic_creation=False,
            )
            (topic,) = call(sock, request, version, correlation_id=version).topics
            assert (topic.error_code, topic.name, topic.topic_id) == (0, topic_name, topic_id)
            assert len(topic.partitions) == 2


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
        # generous: on a loaded machine the broker first drains the dead connections queued in
        # its backlog meanwhile, each served() attempt may wait out its own 10 s timeout
        deadline = time.monotonic() + 60
        while True:
            try:
                if served(proc.bootstrap):
                    break
            except OSError:
                pass
            state = "" if time.monotonic() < deadline else broker_state(proc)
            assert not state, f"the broker did not accept again:\n{state}"
            time.sleep(0.2)
    finally:
        proc.stop()


def broker_state(proc: BrokerProcess) -> str:
    """What a stuck broker shows: its log without tracebacks' frames, its descriptors by kind,
    and its threads' stacks (py-spy, a dev dependency, when it can attach)."""
    lines = [line for line in proc.log().splitlines() if not line.startswith(("  ", "Traceback"))]
    kinds: dict[str, int] = {}
    try:
        for fd in os.listdir(f"/proc/{proc.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
            except OSError:
                continue
            kind = target.split(":", 1)[0] if ":" in target else "file"
            kinds[kind] = kinds.get(kind, 0) + 1
    except OSError as e:
        kinds = {f"unreadable: {e}": 0}
    try:
        stacks = subprocess.run(
            [str(Path(sys.executable).with_name("py-spy")), "dump", "--pid", str(proc.pid)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        dump = (stacks.stdout or stacks.stderr)[-6000:]
    except (OSError, subprocess.TimeoutExpired) as e:
        dump = f"(no stacks: {e})"
    return "\n".join([*lines[-40:], f"descriptors: {kinds}", dump])


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
    broker.wait_for_log("max.connections.per.ip reached")


def test_connection_limit_overrides_per_address_and_host_name(fresh_broker):
    """``max.connections.per.ip.overrides``: an address's override (given as an address, or as
    a host name for the addresses it resolves to) replaces ``max.connections.per.ip`` for that
    address only. Clients come from three loopback addresses (Linux routes all of 127/8 to
    ``lo``): 127.0.0.1 (``localhost``, 4 allowed), 127.0.0.3 (1 allowed) and 127.0.0.2 (no
    override: the default 2)."""
    broker = fresh_broker(
        **{
            "max.connections.per.ip": "2",
            "max.connections.per.ip.overrides": "localhost:4,127.0.0.3:1",
        }
    )
    host, port = broker.bootstrap.split(":")

    def from_address(source: str) -> socket.socket:
        return socket.create_connection((host, int(port)), timeout=10, source_address=(source, 0))

    held = []
    for source, limit in (("127.0.0.1", 4), ("127.0.0.2", 2), ("127.0.0.3", 1)):
        for _ in range(limit):
            sock = from_address(source)
            assert call(sock, ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            held.append(sock)
        extra = from_address(source)
        assert is_closed(extra, timeout=10), f"connection {limit + 1} from {source} was kept"
        broker.wait_for_log(f"refused a connection from {source} on PLAINTEXT")
    # the refusals closed only the extra connections
    for sock in held:
        assert call(sock, ApiVersionsRequest(), 0, 2).error_code == ErrorCode.NONE
        sock.close()


def test_an_override_naming_an_unknown_host_stops_the_start_up(tmp_path):
    proc = BrokerProcess(
        tmp_path / "data", {"max.connections.per.ip.overrides": "no-such-host.invalid:5"}
    )
    with pytest.raises(RuntimeError, match="did not start") as failed:
        proc.start(timeout=30)
    proc.stop()
    assert "max.connections.per.ip.overrides: host 'no-such-host.invalid' does not resolve" in (
        str(failed.value)
    )
    assert "Traceback" not in str(failed.value)


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


def _produce(sock: socket.socket, topic: str, batch: bytes, cid: int) -> object:
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

    request = ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    return call(sock, request, 9, correlation_id=cid).responses[0].partition_responses[0]


def _with_records(records: bytes, count: int) -> bytes:
    """A batch header for ``records`` (a records section), with a valid CRC."""
    from protocol.records import batch as rb
    from protocol.records.record import RecordBatchBuilder

    builder = RecordBatchBuilder()
    for i in range(count):
        builder.append(b"v", key=b"k", timestamp=int(time.time() * 1000) + i)
    good = bytearray(builder.build())
    out = bytearray(good[: rb.HEADER_SIZE]) + records
    struct.pack_into(">i", out, rb.LENGTH_AT, len(out) - rb.LOG_OVERHEAD)
    struct.pack_into(">I", out, rb.CRC_AT, rb.crc_of(out, 0, len(out)))
    return bytes(out)


def _zz(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _rec(body: bytes) -> bytes:
    return _zz(len(body)) + body


def _body(offset: int, *, key_len: int | None = None, headers: int = 0) -> bytes:
    key = _zz(key_len) if key_len is not None else _zz(1) + b"k"
    return b"\x00" + _zz(0) + _zz(offset) + key + _zz(1) + b"v" + _zz(headers)


BROKEN = {
    "header count 2^31-1": _rec(_body(0, headers=2**31 - 1)),
    "header count -5": _rec(_body(0, headers=-5)),
    "key length 2^30 without bytes": _rec(_body(0, key_len=2**30)),
    "record length 2^31-1": _zz(2**31 - 1) + _body(0),
    "fewer records than the header says": _rec(_body(0)),
    "random bytes": bytes(range(7, 200, 3)),
}


def test_broken_records_with_a_valid_crc_are_refused_and_harm_nothing(broker, topic_name):
    """Finding 4: such batches were acknowledged, and no consumer could read past them."""
    from confluent_kafka import Producer

    from tests.support.kafka_clients import consume_from_start

    create_topic(broker.bootstrap, topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic_name, value=b"before")
    assert producer.flush(15) == 0
    with connect(broker.bootstrap) as sock:
        for i, (what, records) in enumerate(BROKEN.items()):
            count = 2 if what == "fewer records than the header says" else 1
            answer = _produce(sock, topic_name, _with_records(records, count), i + 1)
            assert answer.error_code == ErrorCode.INVALID_RECORD, what
            # Kafka 3.9 answers these with no message and the log start offset (checked side by
            # side in tests/reference)
            assert answer.base_offset == -1 and answer.error_message is None, what
            assert answer.log_start_offset == 0, what
    producer.produce(topic_name, value=b"after")
    assert producer.flush(15) == 0
    got = consume_from_start(broker.bootstrap, topic_name, 1, 2)
    assert [m.value() for m in got] == [b"before", b"after"]
    assert [m.offset() for m in got] == [0, 1]  # nothing of the broken batches was appended


def test_a_compacted_topic_refuses_records_without_a_key(broker, topic_name):
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, topic_name, 1, **{"cleanup.policy": "compact"})
    with connect(broker.bootstrap) as sock:
        answer = _produce(sock, topic_name, _with_records(_rec(_body(0, key_len=-1)), 1), 1)
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, "without key" in e.batch_index_error_message)
            for e in answer.record_errors] == [(0, True)]  # fmt: skip
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    errors: list = []
    producer.produce(topic_name, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None and errors[0].code() == 87  # INVALID_RECORD


def _create_topics(sock: socket.socket, name: str, partitions: int, *, validate_only: bool,
                   cid: int) -> Any:  # fmt: skip
    from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest

    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)],
        timeout_ms=30000,
        validate_only=validate_only,
    )
    return call(sock, request, 7, correlation_id=cid).topics[0]


def _create_partitions(sock: socket.socket, name: str, count: int, cid: int) -> Any:
    from protocol.messages.create_partitions import (
        CreatePartitionsRequest,
        CreatePartitionsTopic,
    )

    request = CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)],
        timeout_ms=30000,
        validate_only=False,
    )
    return call(sock, request, 3, correlation_id=cid).results[0]


def test_partition_counts_are_refused_before_anything_is_materialised(fresh_broker, topic_name):
    """Finding 1: CreateTopics (even validate_only) or CreatePartitions for 2^24 partitions
    made the broker build every assignment (3.7 GB, then the kernel killed it)."""
    broker = fresh_broker(**{"max.broker.partitions": "50"})
    before = rss_bytes(broker.pid)
    with connect(broker.bootstrap, timeout=60) as sock:
        for cid, validate_only in enumerate((True, False), 1):
            result = _create_topics(sock, topic_name, 2**24, validate_only=validate_only, cid=cid)
            assert result.error_code == ErrorCode.POLICY_VIOLATION, validate_only
            assert "excessively large" in result.error_message
        assert _create_topics(sock, topic_name, 4, validate_only=False, cid=3).error_code == 0
        grow = _create_partitions(sock, topic_name, 2**24, cid=4)
        assert grow.error_code == ErrorCode.POLICY_VIOLATION
        # within max.partitions.per.request, but beyond max.broker.partitions (50 per broker)
        grow = _create_partitions(sock, topic_name, 60, cid=5)
        assert grow.error_code == ErrorCode.POLICY_VIOLATION
        assert "max.broker.partitions" in grow.error_message
        other = _create_topics(sock, topic_name + "-2", 47, validate_only=True, cid=6)
        assert other.error_code == ErrorCode.POLICY_VIOLATION
        assert _create_partitions(sock, topic_name, 50, cid=7).error_code == 0
    grown = rss_bytes(broker.pid) - before
    assert grown < 64 * 1024 * 1024, f"refused requests grew the broker by {grown} bytes"
    assert served(broker.bootstrap)


def test_clients_cannot_delete_or_grow_internal_topics(fresh_broker, topic_name):
    """Finding 7: any client could delete __consumer_offsets, and every group's offsets with
    it (also after a restart)."""
    from confluent_kafka import Consumer, TopicPartition

    from protocol.messages.delete_topics import DeleteTopicsRequest

    broker = fresh_broker()
    create_topic(broker.bootstrap, topic_name, 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name})
    consumer.commit(offsets=[TopicPartition(topic_name, 0, 7)], asynchronous=False)
    with connect(broker.bootstrap) as sock:
        for version, cid in ((1, 1), (5, 2)):
            deleted = call(
                sock, DeleteTopicsRequest(topic_names=["__consumer_offsets"], timeout_ms=5000),
                version, correlation_id=cid,
            ).responses[0]  # fmt: skip
            assert deleted.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        grow = _create_partitions(sock, "__consumer_offsets", 100, cid=3)
        assert grow.error_code == ErrorCode.INVALID_PARTITIONS
    broker.restart()
    consumer.close()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name})
    try:
        committed = consumer.committed([TopicPartition(topic_name, 0)], timeout=30)
        assert committed[0].offset == 7
    finally:
        consumer.close()


def test_under_a_1_gib_address_space_the_broker_survives_abuse(tmp_path, topic_name):
    """The acceptance of the hardening issue: under ``prlimit --as=1GiB`` the broker survives
    100 connections each sending a maximal size prefix, 1,000 pipelined unread Fetch v3
    requests on one connection and a CreateTopics for 2^24 partitions, and a well-behaved client
    is answered throughout."""
    from confluent_kafka import Producer

    proc = BrokerProcess(tmp_path / "data", wrapper=["prlimit", f"--as={1 << 30}"])
    proc.start()
    try:
        create_topic(proc.bootstrap, topic_name, 1)
        producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 20})
        for i in range(2000):
            producer.produce(topic_name, value=os.urandom(500), key=str(i))
        assert producer.flush(30) == 0
        prefixes = []
        for _ in range(100):
            s = connect(proc.bootstrap)
            s.sendall(struct.pack(">i", 100 * 1024 * 1024 - 1) + b"\x00\x01")
            prefixes.append(s)
        assert served(proc.bootstrap)
        hog = connect(proc.bootstrap)
        hog.settimeout(0.2)
        request = fetch_v3(topic_name)
        for sent in range(1000):
            try:
                hog.sendall(encode_request(request, 3, sent))
            except (TimeoutError, BlockingIOError):
                break
        assert served(proc.bootstrap)
        with connect(proc.bootstrap, timeout=60) as sock:
            result = _create_topics(sock, topic_name + "-huge", 2**24, validate_only=False, cid=1)
            assert result.error_code == ErrorCode.POLICY_VIOLATION
        assert served(proc.bootstrap)
        for s in [*prefixes, hog]:
            s.close()
        assert served(proc.bootstrap)
        assert proc.proc is not None and proc.proc.poll() is None, "the broker died"
        assert "Traceback" not in proc.log()
    finally:
        proc.stop()
