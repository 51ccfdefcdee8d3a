"""Transactions with real clients against the real daemon (issue 17): confluent-kafka's
transactional producer and read_committed consumers, exactly-once consume-transform-produce with
SIGKILLs of the loop and of the broker, fencing of zombies, timeout aborts, recovery after a
restart; aiokafka's and kafka-python's transactional producers; the admin APIs through
kafka-python."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.list_offsets import (
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from tests.integration.broker_process import BrokerProcess
from tests.integration.test_idempotence import RawClient
from tests.support.eos import start_copy_loop
from tests.support.kafka_clients import consume_from_start, create_topic
from tests.support.waiting import wait_for

#: small coordinator topics keep start-up and loading quick on 2 cores
TXN_BROKER = {
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    # the compaction test waits for the cleaner
    "log.cleaner.backoff.ms": "200",
}


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory):
    proc = BrokerProcess(tmp_path_factory.mktemp("txn") / "data", TXN_BROKER)
    proc.start()
    yield proc
    proc.stop()


def producer(bootstrap: str, txn_id: str, **extra: object) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **extra})
    p.init_transactions(60)
    return p


def read(bootstrap: str, topics: list[tuple[str, int]], isolation: str, expected: int):
    out = []
    for topic, partitions in topics:
        out += consume_from_start(
            bootstrap,
            topic,
            partitions,
            expected,
            timeout=15,
            client={"isolation.level": isolation, "enable.partition.eof": False},
        )
    return out


def test_commit_and_abort_across_three_topics(txn_broker: BrokerProcess) -> None:
    bs = txn_broker.bootstrap
    topics = [f"txn-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    for t in topics:
        create_topic(bs, t, 4)
    p = producer(bs, f"three-{uuid.uuid4().hex[:6]}")
    committed: dict[tuple[str, int], list[bytes]] = defaultdict(list)
    everything: dict[tuple[str, int], list[bytes]] = defaultdict(list)
    n = 0
    for txn in range(6):
        commit = txn % 2 == 0
        p.begin_transaction()
        for t in topics:
            for part in range(4):
                for _ in range(5):
                    value = b"%s-%d-%d" % (b"c" if commit else b"a", txn, n)
                    n += 1
                    p.produce(t, value=value, partition=part)
                    everything[(t, part)].append(value)
                    if commit:
                        committed[(t, part)].append(value)
        if commit:
            p.commit_transaction(30)
        else:
            p.flush(30)
            p.abort_transaction(30)
    total_committed = sum(len(v) for v in committed.values())
    got = read(bs, [(t, 4) for t in topics], "read_committed", total_committed // 3)
    by_partition: dict[tuple[str, int], list[bytes]] = defaultdict(list)
    for m in got:
        by_partition[(m.topic(), m.partition())].append(m.value())
    assert by_partition == committed  # exactly the committed records, in order, nothing else
    got = read(bs, [(t, 4) for t in topics], "read_uncommitted", n // 3)
    by_partition = defaultdict(list)
    for m in got:
        by_partition[(m.topic(), m.partition())].append(m.value())
    assert by_partition == everything  # every data record, no control record


def test_older_instance_is_fenced_and_its_transaction_aborted(txn_broker: BrokerProcess) -> None:
    bs = txn_broker.bootstrap
    topic = f"fence-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    txn_id = f"zombie-{uuid.uuid4().hex[:6]}"
    old = producer(bs, txn_id)
    old.begin_transaction()
    old.produce(topic, value=b"zombie")
    old.flush(30)
    new = producer(bs, txn_id)  # fences the old one and aborts its open transaction
    new.begin_transaction()
    new.produce(topic, value=b"new")
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        old.produce(topic, value=b"zombie-2")
        old.commit_transaction(30)
    assert e.value.args[0].code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )
    values = [m.value() for m in read(bs, [(topic, 1)], "read_committed", 1)]
    assert values == [b"new"]
    assert sorted(m.value() for m in read(bs, [(topic, 1)], "read_uncommitted", 2)) == [
        b"new",
        b"zombie",
    ]


def test_transaction_open_past_its_timeout_is_aborted(txn_broker: BrokerProcess) -> None:
    bs = txn_broker.bootstrap
    topic = f"timeout-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    slow = producer(bs, f"slow-{uuid.uuid4().hex[:6]}", **{"transaction.timeout.ms": 2000})
    slow.begin_transaction()
    slow.produce(topic, value=b"late")
    slow.flush(30)
    time.sleep(4)  # the coordinator aborts it (checked every 500 ms here)
    other = producer(bs, f"other-{uuid.uuid4().hex[:6]}")
    other.begin_transaction()
    other.produce(topic, value=b"on-time")
    other.commit_transaction(30)
    # the LSO passed the aborted transaction: the committed record is readable, the late not
    assert [m.value() for m in read(bs, [(topic, 1)], "read_committed", 1)] == [b"on-time"]
    with pytest.raises(KafkaException):
        slow.commit_transaction(10)


def _read_to_end(bootstrap: str, topic: str, isolation: str) -> list[tuple[bytes, bytes, int]]:
    """(key, value, offset) of every record partition 0 hands a consumer, up to its end (the
    last stable offset for read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-end-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(msg.error())
            out.append((msg.key(), msg.value(), msg.offset()))
    finally:
        consumer.close()
    raise AssertionError(f"{topic}: no end of partition within 30 s ({len(out)} records read)")


def _control_batches(partition_dir: Path) -> list[tuple[int, int]]:
    """(base offset, record count) of the control batches in a partition's segment files."""
    from protocol.records.batch import iter_batches

    out = []
    for segment in sorted(partition_dir.glob("*.log")):
        try:
            data = segment.read_bytes()
        except FileNotFoundError:
            continue  # swapped out by the cleaner meanwhile
        for _, header in iter_batches(data, verify_crc=False):
            if header.is_control:
                out.append((header.base_offset, header.record_count))
    return out


def test_read_committed_on_a_compacted_topic_before_and_after_cleaning(
    txn_broker: BrokerProcess,
) -> None:
    """Kafka's cleaner with transactions: aborted records go (and never hide an older committed
    value of their key), markers stay while their transaction has data below them, an abort
    marker without data left goes after delete.retention.ms; read_committed consumers read the
    same committed values before and after."""
    bs = txn_broker.bootstrap
    topic = f"compacted-{uuid.uuid4().hex[:6]}"
    create_topic(
        bs,
        topic,
        1,
        **{
            "cleanup.policy": "compact",
            "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "1000",
            # no cleaning until the test has read the topic as written
            "min.compaction.lag.ms": "3600000",
        },
    )
    p = producer(bs, f"compact-{uuid.uuid4().hex[:6]}")
    plan = [  # (keys, value prefix, commit)
        (range(10), b"c1", True),
        (range(10), b"a2", False),  # aborted writes of every key
        (range(5), b"c3", True),
        (range(5, 10), b"a4", False),
    ]
    committed: list[tuple[bytes, bytes]] = []
    for keys, prefix, commit in plan:
        p.begin_transaction()
        for k in keys:
            key, value = b"k%d" % k, b"%s-%d" % (prefix, k)
            p.produce(topic, key=key, value=value, partition=0)
            if commit:
                committed.append((key, value))
        if commit:
            p.commit_transaction(30)
        else:
            p.flush(30)
            p.abort_transaction(30)
    # plain records roll the transactions out of the active segment
    filler = Producer({"bootstrap.servers": bs})
    for i in range(3):
        filler.produce(topic, key=b"filler", value=b"%d" % i + b"x" * 600, partition=0)
        filler.flush(30)

    def data(records: list[tuple[bytes, bytes, int]]) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v, _ in records if k != b"filler"]

    assert data(_read_to_end(bs, topic, "read_committed")) == committed
    assert len(data(_read_to_end(bs, topic, "read_uncommitted"))) == 30
    partition_dir = txn_broker.data_dir / f"{topic}-0"
    assert [n for _, n in _control_batches(partition_dir)] == [1, 1, 1, 1]

    admin = AdminClient({"bootstrap.servers": bs})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    resource.add_incremental_config(
        ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    txn_broker.wait_for_log(f"cleaned {topic}-0")

    # the latest committed value of each key, in log order: k5..k9 of the first transaction
    # (the aborted k5..k9 of the last one did not hide them), k0..k4 of the third
    latest = [(b"k%d" % k, b"c1-%d" % k) for k in range(5, 10)] + [
        (b"k%d" % k, b"c3-%d" % k) for k in range(5)
    ]
    assert data(_read_to_end(bs, topic, "read_committed")) == latest
    # the aborted records are gone from the log itself
    assert data(_read_to_end(bs, topic, "read_uncommitted")) == latest

    # the second abort's marker stays while its (emptied) batch is the producer's last; the
    # first abort's goes once a pass found no batch of its transaction (stamping its delete
    # horizon) and a later one came after the horizon. As in Kafka, passes need new dirty
    # segments: plain records keep coming meanwhile
    def first_abort_marker_gone() -> bool:
        controls = _control_batches(partition_dir)
        return len(controls) == 3 and all(n == 1 for _, n in controls)

    deadline = time.monotonic() + 60
    while not first_abort_marker_gone() and time.monotonic() < deadline:
        filler.produce(topic, key=b"filler", value=b"x" * 600, partition=0)
        filler.flush(30)
        time.sleep(0.5)
    assert first_abort_marker_gone(), _control_batches(partition_dir)
    assert data(_read_to_end(bs, topic, "read_committed")) == latest
    assert data(_read_to_end(bs, topic, "read_uncommitted")) == latest


def _committed_values(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    return [m.value() for m in read(bootstrap, [(topic, partitions)], "read_committed", expected)]


def _end_offsets(bootstrap: str, topic: str) -> tuple[int, int]:
    """(last stable offset, log end offset) of partition 0: ListOffsets latest with
    READ_COMMITTED and with READ_UNCOMMITTED."""
    client = RawClient(bootstrap)
    try:
        out = []
        for isolation in (1, 0):
            r = client.request(
                ListOffsetsRequest(
                    replica_id=-1,
                    isolation_level=isolation,
                    topics=[
                        ListOffsetsTopic(
                            name=topic,
                            partitions=[
                                ListOffsetsPartition(partition_index=0, timestamp=LATEST_TIMESTAMP)
                            ],
                        )
                    ],
                ),
                7,
            )
            (p,) = r.topics[0].partitions
            assert p.error_code == ErrorCode.NONE, ErrorCode(p.error_code)
            out.append(p.offset)
    finally:
        client.sock.close()
    return out[0], out[1]


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_restart_recovers_lso_and_open_transaction(tmp_path: Path, outcome: str) -> None:
    """A transaction left open across a SIGTERM and a SIGKILL restart still holds the LSO
    (recovered with the ``.txnindex``), and the same producer then commits or aborts it: the
    LSO reaches the log end and read_committed sees it (commit) or none of it (abort)."""
    proc = BrokerProcess(tmp_path / "data", TXN_BROKER)
    proc.start()
    try:
        bs = proc.bootstrap
        topic = f"restart-{uuid.uuid4().hex[:6]}"
        create_topic(bs, topic, 1)
        p = producer(bs, "restart-txn")
        p.begin_transaction()
        p.produce(topic, value=b"aborted")
        p.flush(30)
        p.abort_transaction(30)
        p.begin_transaction()
        p.produce(topic, value=b"open")
        p.flush(30)
        port = proc.port
        for sig in (signal.SIGTERM, signal.SIGKILL):
            proc.stop(sig)
            proc.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
            proc.start()
            # the open transaction still holds the LSO, at its first record (offset 2: the
            # aborted record and its marker come first)
            assert _committed_values(bs, topic, 1, 1) == []
            assert _end_offsets(bs, topic) == (2, 3)
            assert (tmp_path / "data" / f"{topic}-0" / "00000000000000000000.txnindex").exists()
        # the same producer ends it after the restarts
        if outcome == "commit":
            p.commit_transaction(60)
            assert _committed_values(bs, topic, 1, 1) == [b"open"]
        else:
            p.abort_transaction(60)
        # the marker (offset 3) is written a moment after EndTxn is answered
        wait_for(lambda: _end_offsets(bs, topic) == (4, 4), "the LSO at the log end")
        seen = [v for _, v, _ in _read_to_end(bs, topic, "read_committed")]
        assert seen == ([b"open"] if outcome == "commit" else [])
        assert [v for _, v, _ in _read_to_end(bs, topic, "read_uncommitted")] == [
            b"aborted",
            b"open",
        ]
        p.begin_transaction()
        p.produce(topic, value=b"last")
        p.commit_transaction(60)
        expected = [b"open", b"last"] if outcome == "commit" else [b"last"]
        assert _committed_values(bs, topic, 1, len(expected)) == expected
    finally:
        proc.stop()


def test_transactional_and_regular_offset_commits_in_log_order(tmp_path: Path) -> None:
    """A transactional offset commit applies at its commit marker only if its record is later
    in __consumer_offsets than the regular commit of the same partition (Kafka's
    OffsetMetadataManager), live and after the broker loads the partition again."""
    proc = BrokerProcess(tmp_path / "data", TXN_BROKER)
    proc.start()
    try:
        bs = proc.bootstrap
        topic = f"order-{uuid.uuid4().hex[:6]}"
        create_topic(bs, topic, 2)
        group = f"order-{uuid.uuid4().hex[:6]}"
        consumer = Consumer(
            {"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False}
        )
        p = producer(bs, f"order-{uuid.uuid4().hex[:6]}")
        # partition 1: regular commit, then the transactional one
        consumer.commit(offsets=[TopicPartition(topic, 1, 9)], asynchronous=False)
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        p.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 5)],
            consumer.consumer_group_metadata(),
            30,
        )
        # partition 0: the transactional commit, then a regular one before the marker
        consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
        p.commit_transaction(30)
        expected = {0: 9, 1: 5}

        def offsets() -> dict[int, int] | None:
            c = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": group})
            try:
                got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 10)
            except KafkaException:
                return None  # the markers are still being written (UNSTABLE_OFFSET_COMMIT)
            finally:
                c.close()
            return {tp.partition: tp.offset for tp in got}

        wait_for(lambda: offsets() == expected, f"offsets {expected}")
        consumer.close()
        proc.restart()  # the coordinator loads the records again, with their offsets
        wait_for(lambda: offsets() == expected, f"offsets {expected} after a restart")
    finally:
        proc.stop()


def advertised(client: RawClient, api: ApiKey) -> range:
    """The versions of ``api`` the broker advertises in its ApiVersions answer."""
    r = client.request(
        ApiVersionsRequest(client_software_name="odradek-test", client_software_version="1"), 3
    )
    (key,) = [k for k in r.api_keys if k.api_key == api]
    return range(key.min_version, key.max_version + 1)


def offset_fetch(
    client: RawClient,
    version: int,
    group: str,
    topic: str,
    partitions: list[int],
    *,
    require_stable: bool,
) -> tuple[ErrorCode, dict[int, tuple[int, ErrorCode]]]:
    """The group-level error and {partition: (committed offset, partition error)} of one raw
    OffsetFetch (v8+: the batched-groups form, one group; v10+ names the topic by id)."""
    if version >= 8:
        topic_id = None
        if version >= 10:
            metadata = client.request(
                MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 12
            )
            topic_id = metadata.topics[0].topic_id
        r = client.request(
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id=group,
                        topics=[
                            OffsetFetchRequestTopics(
                                name=topic, topic_id=topic_id, partition_indexes=partitions
                            )
                        ],
                    )
                ],
                require_stable=require_stable,
            ),
            version,
        )
        (g,) = r.groups
        code, topics = ErrorCode(g.error_code), g.topics
    else:
        r = client.request(
            OffsetFetchRequest(
                group_id=group,
                topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
                require_stable=require_stable,
            ),
            version,
        )
        code, topics = ErrorCode(r.error_code), r.topics
    return code, {
        p.partition_index: (p.committed_offset, ErrorCode(p.error_code))
        for t in topics
        for p in t.partitions
    }


def test_require_stable_offset_fetch_while_a_transactional_commit_is_pending(
    txn_broker: BrokerProcess,
) -> None:
    """OffsetFetch with ``require_stable`` (v7+, KIP-447) answers UNSTABLE_OFFSET_COMMIT for a
    partition whose offset a TxnOffsetCommit left pending (confluent-kafka's
    send_offsets_to_transaction, before EndTxn), at every such version the broker advertises;
    once the transaction commits it answers the new offset, once it aborts the previous one.
    Without ``require_stable``, and for a partition with nothing pending, the last committed
    offset is answered meanwhile."""
    bs = txn_broker.bootstrap
    topic, group = f"stable-{uuid.uuid4().hex[:6]}", f"stable-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 2)
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    consumer.commit(
        offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)], asynchronous=False
    )
    client = RawClient(bs)
    versions = [v for v in advertised(client, ApiKey.OFFSET_FETCH) if v >= 7]
    assert 7 in versions and 8 in versions, versions  # the single-group and the batched form
    p = producer(bs, f"stable-{uuid.uuid4().hex[:6]}")
    E = ErrorCode

    def fetch(version: int, *, require_stable: bool = True) -> dict[int, tuple[int, ErrorCode]]:
        code, got = offset_fetch(
            client, version, group, topic, [0, 1], require_stable=require_stable
        )
        assert code == E.NONE, (version, code)
        return got

    previous = 3
    try:
        for offset, commit in ((7, True), (11, False)):
            p.begin_transaction()
            p.produce(topic, value=b"x", partition=1)
            p.send_offsets_to_transaction(
                [TopicPartition(topic, 0, offset)], consumer.consumer_group_metadata(), 30
            )
            # the TxnOffsetCommit is answered: its offset is pending until EndTxn
            for v in versions:
                assert fetch(v) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT), 1: (4, E.NONE)}, v
                assert fetch(v, require_stable=False) == {0: (previous, E.NONE), 1: (4, E.NONE)}
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
            now = offset if commit else previous
            # EndTxn is answered once the outcome is logged; the marker reaches
            # __consumer_offsets a moment later
            wait_for(
                lambda v=versions[0], now=now: fetch(v) == {0: (now, E.NONE), 1: (4, E.NONE)},
                f"offset {now} after the {'commit' if commit else 'abort'}",
            )
            for v in versions:
                assert fetch(v) == {0: (now, E.NONE), 1: (4, E.NONE)}, v
            previous = now
    finally:
        client.sock.close()
        consumer.close()


# -- exactly-once consume-transform-produce --------------------------------------------------------

EOS_RECORDS = int(os.environ.get("ODRADEK_EOS_RECORDS", "100000"))
KILLS = 10


def _fill_input(bootstrap: str, topic: str, total: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for i in range(total):
        p.produce(topic, key=b"%d" % i, value=b"%d" % i, partition=i % 4)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def _loop(bootstrap: str, source: str, sink: str, log: Path) -> subprocess.Popen[Any]:
    """The copy loop (group ``eos``, transactional id ``eos-copy``)."""
    return start_copy_loop(
        bootstrap, source, sink, group="eos", transactional_id="eos-copy", total=EOS_RECORDS,
        log=log,
    )  # fmt: skip


def _check_exactly_once(bootstrap: str, sink: str) -> None:
    got = read(bootstrap, [(sink, 4)], "read_committed", EOS_RECORDS)
    values = [m.value() for m in got]
    assert len(values) == EOS_RECORDS, f"{len(values)} records, {len(set(values))} distinct"
    assert set(values) == {b"copy-%d" % i for i in range(EOS_RECORDS)}


def _copied(bootstrap: str, source: str) -> int | None:
    """How many input records the loop has copied: the sum of its group's committed offsets
    on the input (committed in the same transactions as the output records, so also how many
    copies read_committed sees in the output); None while the broker cannot say (its
    coordinator loading after a restart)."""
    try:
        client = RawClient(bootstrap)
    except OSError:
        return None
    try:
        code, got = offset_fetch(client, 7, "eos", source, [0, 1, 2, 3], require_stable=False)
    except (OSError, AssertionError):
        return None
    finally:
        client.sock.close()
    if code != ErrorCode.NONE or any(error != ErrorCode.NONE for _, error in got.values()):
        return None
    return sum(max(offset, 0) for offset, _ in got.values())


@pytest.mark.timeout(900)  # the test's own deadline is 600 s
@pytest.mark.parametrize("victim", ["loop", "broker"])
def test_exactly_once_copy_survives_sigkills(tmp_path: Path, victim: str) -> None:
    """The consume-transform-produce loop (tests/clients/eos/copy_loop.py) copies EOS_RECORDS
    records while it (or the broker) is SIGKILLed KILLS times and restarted; the kills land
    spread over the copy (each at a random point of its own stretch of the input, after the
    copy advanced since the previous kill, before it is done), and the output read with
    read_committed holds every input record once."""
    proc = BrokerProcess(tmp_path / "data", TXN_BROKER)
    proc.start()
    loop: subprocess.Popen | None = None
    try:
        bs = proc.bootstrap
        port = proc.port
        source, sink = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}"
        create_topic(bs, source, 4)
        create_topic(bs, sink, 4)
        _fill_input(bs, source, EOS_RECORDS)
        rng = random.Random(17)
        kills = 0
        #: records copied, and whether the loop was running, when each kill landed
        progress: list[int] = []
        running: list[bool] = []
        deadline = time.monotonic() + 600
        loop_log = tmp_path / "copy_loop.log"
        loop = _loop(bs, source, sink, loop_log)

        def reached(target: int) -> bool:
            nonlocal loop
            assert loop is not None
            if loop.poll() not in (None, 0):
                loop = _loop(bs, source, sink, loop_log)  # a client error: again
            copied = _copied(bs, source)
            return copied is not None and copied >= target

        while time.monotonic() < deadline:
            if kills < KILLS:
                # kill i once a random point of the i-th of KILLS + 1 stretches of the copy is
                # passed (and the copy advanced since the last kill: a restarted loop or broker
                # first finds its coordinators and rejoins the group), a moment later
                stretch = EOS_RECORDS / (KILLS + 1)
                target = max(
                    int(stretch * (kills + rng.uniform(0.1, 0.6))),
                    (progress[-1] + 1) if progress else 1,
                )
                wait_for(
                    lambda target=target: reached(target),
                    f"{target} records copied (kill {kills + 1})",
                    timeout=max(deadline - time.monotonic(), 1),
                )
                time.sleep(rng.uniform(0.0, 0.3))
                copied = _copied(bs, source)
                assert copied is not None
                progress.append(copied)
                running.append(loop.poll() is None)
                if victim == "loop":
                    loop.kill()
                    loop.wait()
                else:
                    # the loop keeps running through the broker's crash and restart
                    proc.kill()
                    proc.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
                    proc.start()
                kills += 1
                if loop.poll() is not None:
                    loop = _loop(bs, source, sink, loop_log)
                continue
            code = loop.wait(timeout=max(deadline - time.monotonic(), 1))
            if code == 0:
                break
            loop = _loop(bs, source, sink, loop_log)  # a client error: start again
        assert kills == KILLS
        print(f"records copied at the {victim} kills: {progress}")
        # whether a loop was running at each kill: one that met a client error just before
        # (after a broker restart, TxnOffsetCommit can answer UNKNOWN_MEMBER_ID to a member
        # whose group lost it) exited and was started again, as a crashed one is; the kills
        # still land within the copy (below)
        print(f"the loop was running at the kills: {running}")
        assert all(0 < c < EOS_RECORDS for c in progress), f"kills outside the copy: {progress}"
        assert progress == sorted(set(progress)), progress  # the copy advanced between kills
        _check_exactly_once(bs, sink)
    finally:
        if loop is not None and loop.poll() is None:
            loop.kill()
            loop.wait()
        proc.stop()


# -- other clients ---------------------------------------------------------------------------------


def test_kafka_python_transactional_producer_and_admin(txn_broker: BrokerProcess) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient

    bs = txn_broker.bootstrap
    topic = f"kp-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 2)
    txn_id = f"kp-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=txn_id)
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, b"kp-commit", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.send(topic, b"kp-abort", partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, b"kp-open", partition=1)
    p.flush()
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        described = admin.describe_transactions([txn_id])[txn_id]
        assert str(getattr(described, "state", described)).lower().endswith("ongoing")
        listed = admin.list_transactions(state_filters=["Ongoing"])
        assert txn_id in str(listed)
        producers = admin.describe_producers([TopicPartition(topic, 1)])
        (active,) = producers[TopicPartition(topic, 1)].active_producers
        assert active.current_transaction_start_offset == 0  # its open transaction's start
    finally:
        admin.close()
    p.commit_transaction()
    p.close()
    got = sorted(m.value() for m in read(bs, [(topic, 2)], "read_committed", 2))
    assert got == [b"kp-commit", b"kp-open"]


def test_aiokafka_transactional_producer(txn_broker: BrokerProcess) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    bs = txn_broker.bootstrap
    topic = f"aio-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"aio-{uuid.uuid4().hex[:6]}")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait(topic, b"aio-commit")
            await p.begin_transaction()
            await p.send_and_wait(topic, b"aio-abort")
            await p.abort_transaction()
            async with p.transaction():
                await p.send_and_wait(topic, b"aio-commit-2")
        finally:
            await p.stop()

    asyncio.run(run())
    assert _committed_values(bs, topic, 1, 2) == [b"aio-commit", b"aio-commit-2"]


def test_kafkajs_transactions(txn_broker: BrokerProcess) -> None:
    from tests.clients import runners

    missing = runners.kafkajs_missing()
    if missing:
        pytest.skip(missing)
    bs = txn_broker.bootstrap
    topic = f"js-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    out = runners.kafkajs(
        "transactions", brokers=[bs], topic=topic, transactionalId=f"js-{uuid.uuid4().hex[:6]}"
    )
    assert out["outcomes"] == ["commit", "abort", "commit"]
    got = _committed_values(bs, topic, 1, 6)
    assert got == [b"commit-0-%d" % j for j in range(3)] + [b"commit-2-%d" % j for j in range(3)]


def test_verification_is_turned_off_and_on_at_runtime(tmp_path: Path) -> None:
    """``transaction.partition.verification.enable`` is a dynamic broker config, as in Kafka
    (its ProducerStateManagerConfig): set to false with ``odradek config set``, the next
    transactional batch for a partition the transaction never added is appended unverified (the
    hanging transaction KIP-890 prevents); deleted again, such a batch is refused at once."""
    from protocol.messages.init_producer_id import InitProducerIdRequest
    from tests.integration.test_transactions_cluster import _produce, _txn_batch
    from tests.support.cli import as_json, odradek

    proc = BrokerProcess(tmp_path / "data", TXN_BROKER).start()
    try:
        b = proc.bootstrap
        create_topic(b, "verified", 3)
        # the broker coordinates every id (it is alone): it verifies locally
        Producer({"bootstrap.servers": b, "transactional.id": "probe"}).init_transactions(60)
        client = RawClient(b)

        def first_batch(txn_id: str, partition: int) -> tuple[ErrorCode, str | None]:
            init = client.request(
                InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000), 4
            )
            assert init.error_code == ErrorCode.NONE
            batch = _txn_batch(init.producer_id, init.producer_epoch, 0, b"never added")
            result: tuple[ErrorCode, str | None] = _produce(
                client, txn_id, "verified", partition, batch, 9
            )
            return result

        def source() -> tuple[str, str]:
            [entry] = as_json("config", "describe", "--broker", "0",
                              "transaction.partition.verification.enable", "-b", b)  # fmt: skip
            return entry["value"], entry["source"]

        assert source() == ("true", "DEFAULT_CONFIG")
        assert first_batch("one", 0) == (
            ErrorCode.INVALID_TXN_STATE,
            "Partition was not added to the transaction",
        )
        odradek("config", "set", "--broker", "0",
                "transaction.partition.verification.enable=false", "-b", b)  # fmt: skip
        assert source() == ("false", "DYNAMIC_BROKER_CONFIG")
        assert first_batch("two", 1) == (ErrorCode.NONE, None)
        odradek("config", "delete", "--broker", "0",
                "transaction.partition.verification.enable", "-b", b)  # fmt: skip
        assert source() == ("true", "DEFAULT_CONFIG")
        assert first_batch("three", 2)[0] == ErrorCode.INVALID_TXN_STATE
        client.sock.close()
    finally:
        proc.stop()
