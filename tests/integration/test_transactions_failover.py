"""Transactions on a replicated ``__transaction_state`` (issue 17 after issue 16): three broker
processes on a real ZooKeeper, transaction.state.log.replication.factor=3. The broker hosting a
transactional id's coordinator is SIGKILLed in the middle of a transaction: the new leader of
that ``__transaction_state`` partition loads the ids, the producer ends its transaction there,
a transaction abandoned by its producer is aborted when it times out (no transaction hangs), and
read_committed consumers see exactly the committed records. Then an exactly-once copy loop runs
while brokers are SIGKILLed and restarted."""

from __future__ import annotations

import random
import subprocess
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from protocol.error_codes import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records.record import SimpleRecord, build_batch
from tests.integration.test_idempotence import RawClient
from tests.integration.test_replication import (  # noqa: F401 - fixtures
    BROKERS,
    bootstrap,
    cluster,
    create_topic,
    kill,
    restart,
    start_brokers,
    state,
    wait_full_isr,
    zk,
)
from tests.support.cluster import ProcessCluster
from tests.support.eos import log_tail, start_copy_loop
from tests.support.waiting import wait_for

pytestmark = pytest.mark.zookeeper

SETTINGS = {
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


def _watermarks(boot: str, topic: str, partitions: int, isolation: str) -> list[int] | None:
    consumer = Consumer(
        {"bootstrap.servers": boot, "group.id": f"{topic}-marks", "isolation.level": isolation}
    )
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
            for p in range(partitions)
        ]
    except KafkaException:
        return None
    finally:
        consumer.close()


def _no_open_transaction(boot: str, topic: str, partitions: int) -> bool:
    """Every partition's last stable offset is its high watermark (read_committed consumers
    reach the end)."""
    stable = _watermarks(boot, topic, partitions, "read_committed")
    return stable is not None and stable == _watermarks(boot, topic, partitions, "read_uncommitted")


def _read_committed(boot: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": f"{topic}-reader-{uuid.uuid4().hex[:4]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[bytes]] = defaultdict(list)
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    continue
                raise KafkaException(m.error())
            out[m.partition()].append(m.value())
    finally:
        consumer.close()
    assert len(at_end) == partitions, "read_committed did not reach every partition's end"
    return dict(out)


def _abandoned_transaction(cluster: ProcessCluster, coordinator: int, topic: str) -> None:  # noqa: F811
    """A transaction whose producer dies after writing to partition 0: raw requests, never
    ended (its coordinator must time it out)."""
    leaders = {p: state(cluster, topic, p)["leader"] for p in range(3)}
    to_coordinator = RawClient(cluster.brokers[coordinator].bootstrap)
    init = to_coordinator.request(
        InitProducerIdRequest(transactional_id="abandoned", transaction_timeout_ms=3000), 4
    )
    assert init.error_code == ErrorCode.NONE
    added = to_coordinator.request(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="abandoned",
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[0])],
        ),
        3,
    )
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    to_coordinator.close()
    to_leader = RawClient(cluster.brokers[leaders[0]].bootstrap)
    batch = build_batch(
        [SimpleRecord(b"abandoned", timestamp=int(time.time() * 1000))],
        producer_id=init.producer_id,
        producer_epoch=init.producer_epoch,
        base_sequence=0,
        transactional=True,
    )
    answer = to_leader.request(
        ProduceRequest(
            transactional_id="abandoned",
            acks=-1,
            timeout_ms=10000,
            topic_data=[
                TopicProduceData(
                    name=topic, partition_data=[PartitionProduceData(index=0, records=batch)]
                )
            ],
        ),
        9,
    )
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    to_leader.close()


def _end(producer: Producer, boot: str, txn_id: str) -> tuple[str, Producer]:
    """Commits the open transaction as an application would: retriable errors are retried, an
    abortable one aborts, a fatal one (fenced) means a new producer (init_transactions)."""
    for _ in range(10):
        try:
            producer.commit_transaction(60)
            return "committed", producer
        except KafkaException as e:
            error = e.args[0]
            if error.retriable():
                continue
            if error.txn_requires_abort():
                producer.abort_transaction(60)
                return "aborted", producer
            if error.fatal():
                fresh = Producer({"bootstrap.servers": boot, "transactional.id": txn_id})
                fresh.init_transactions(60)
                return "re-initialised", fresh
            raise
    raise AssertionError("the transaction never ended")


def test_the_coordinators_broker_killed_mid_transaction(cluster: ProcessCluster) -> None:  # noqa: F811
    boot = start_brokers(cluster, **SETTINGS)
    topic = f"failover-{uuid.uuid4().hex[:6]}"
    create_topic(boot, topic, 3)
    txn_id = "failover"
    p = Producer({"bootstrap.servers": boot, "transactional.id": txn_id})
    p.init_transactions(60)
    wait_full_isr(cluster, "__transaction_state", 1)
    wait_full_isr(cluster, topic, 3)
    coordinator = state(cluster, "__transaction_state", 0)["leader"]

    committed: dict[int, list[bytes]] = defaultdict(list)

    def transaction(name: str, commit: bool, producer: Producer) -> list[tuple[int, bytes]]:
        producer.begin_transaction()
        sent = [(i % 3, b"%s-%d" % (name.encode(), i)) for i in range(12)]
        for partition, value in sent:
            producer.produce(topic, value=value, partition=partition)
        if commit:
            producer.commit_transaction(60)
            for partition, value in sent:
                committed[partition].append(value)
        else:
            producer.flush(60)
            producer.abort_transaction(60)
        return sent

    transaction("c0", True, p)
    transaction("a1", False, p)
    transaction("c2", True, p)
    _abandoned_transaction(cluster, coordinator, topic)
    # the transaction open when the coordinator's broker dies (its partitions added, its
    # records written: the coordinator's Ongoing state is on the other replicas)
    p.begin_transaction()
    open_records = [(i % 3, b"open-%d" % i) for i in range(12)]
    for partition, value in open_records:
        p.produce(topic, value=value, partition=partition)
    assert p.flush(60) == 0
    kill(cluster, coordinator)

    alive = tuple(b for b in BROKERS if b != coordinator)
    new_coordinator = wait_for(
        lambda: (s := state(cluster, "__transaction_state", 0))["leader"] in alive and s["leader"],
        "a new coordinator",
    )
    outcome, p = _end(p, bootstrap(cluster, alive), txn_id)
    if outcome == "committed":
        for partition, value in open_records:
            committed[partition].append(value)
    # the coordinator goes on: one more transaction commits
    transaction("c4", True, p)
    # the abandoned transaction is aborted by the new coordinator once it times out; nothing
    # is left open
    alive_boot = bootstrap(cluster, alive)
    wait_for(lambda: _no_open_transaction(alive_boot, topic, 3), "no transaction left open")
    assert _read_committed(alive_boot, topic, 3) == dict(committed)
    print(f"coordinator {coordinator} killed; broker {new_coordinator} took over; {outcome}")
    logs = "".join(cluster.brokers[b].log() for b in alive)
    assert "Traceback" not in logs


# -- exactly once with RF=3 ------------------------------------------------------------------------

EOS_RECORDS = 10_000
EOS_KILLS = 3


#: seconds without a line in the copy loop's log after which it counts as hung (it logs each
#: commit, or an idle line each second; a transaction left open aborts after 30 s)
STALL_S = 60


def _wait_or_stall(loop: subprocess.Popen[Any], log: Path, deadline: float) -> int | None:
    """The loop's exit code, or None once its log has not grown for STALL_S (or the deadline
    passed)."""
    size, grew = -1, time.monotonic()
    while time.monotonic() < deadline:
        try:
            return loop.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        now = log.stat().st_size if log.exists() else 0
        if now != size:
            size, grew = now, time.monotonic()
        elif time.monotonic() - grew > STALL_S:
            return None
    return None


def _copy_loop(boot: str, source: str, sink: str, log: Path) -> subprocess.Popen[Any]:
    return start_copy_loop(
        boot, source, sink, group="eos-rf3", transactional_id="eos-rf3", total=EOS_RECORDS,
        log=log,
    )  # fmt: skip


def test_exactly_once_copy_with_three_replicas_survives_broker_kills(
    cluster: ProcessCluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The consume-transform-produce loop of test_transactions (read_committed consumer,
    send_offsets_to_transaction) copying 10k records between topics with three replicas while
    brokers are SIGKILLed and restarted, the transaction coordinator's first: the output holds
    every input record exactly once."""
    boot = start_brokers(cluster, **SETTINGS)
    source, sink = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}"
    create_topic(boot, source, 4)
    create_topic(boot, sink, 4)
    filler = Producer({"bootstrap.servers": boot, "linger.ms": 20, "enable.idempotence": True})
    for i in range(EOS_RECORDS):
        filler.produce(source, key=b"%d" % i, value=b"%d" % i, partition=i % 4)
        if i % 5000 == 0:
            filler.poll(0)
    assert filler.flush(60) == 0
    rng = random.Random(5)
    log = tmp_path / "copy_loop.log"
    loop = _copy_loop(boot, source, sink, log)
    kills = 0
    #: the log tails of loops killed for their silence (see _wait_or_stall)
    stalls: list[str] = []
    #: whether the loop was still copying when each broker died
    copying: list[bool] = []
    # below pytest's timeout, so that a stuck loop fails here, with its log
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            if kills < EOS_KILLS:
                time.sleep(rng.uniform(1.0, 2.0))
                try:
                    txn_leader = state(cluster, "__transaction_state", 0)["leader"]
                except Exception:
                    txn_leader = -1
                victim = txn_leader if kills == 0 and txn_leader in BROKERS else rng.choice(BROKERS)
                copying.append(loop.poll() is None)
                kill(cluster, victim)
                time.sleep(rng.uniform(0.5, 1.5))
                restart(cluster, victim)
                wait_for(lambda v=victim: v in cluster.registered(), f"broker {victim} back")
                kills += 1
                if loop.poll() not in (None, 0):  # a client error: start again
                    loop = _copy_loop(boot, source, sink, log)
                continue
            code = _wait_or_stall(loop, log, deadline)
            if code == 0:
                break
            if code is None:
                if time.monotonic() >= deadline:
                    break
                # librdkafka can hang in send_offsets_to_transaction past its timeout after its
                # group coordinator died (tests/clients/eos/copy_loop.py): a loop silent for
                # STALL_S is killed and started again, as a crashed one would be; exactly-once
                # must hold all the same
                stalls.append(log_tail(log))
                loop.kill()
                loop.wait()
            loop = _copy_loop(boot, source, sink, log)  # a client error or a stall: again
        if loop.poll() != 0:  # the deadline passed
            pytest.fail(f"the copy loop did not finish; its log ends:\n{log_tail(log)}")
        assert kills == EOS_KILLS
        print(f"copy loops killed after {STALL_S} s of silence: {len(stalls)}", *stalls, sep="\n")
        print(f"the loop was copying at the kills: {copying}")
        assert copying[0], "the copy ended before the first broker died"
        wait_for(lambda: _no_open_transaction(boot, sink, 4), "no transaction left open")
        values = [v for vs in _read_committed(boot, sink, 4).values() for v in vs]
        assert len(values) == EOS_RECORDS, f"{len(values)} records, {len(set(values))} distinct"
        assert set(values) == {b"copy-%d" % i for i in range(EOS_RECORDS)}
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
