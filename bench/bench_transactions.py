"""Transaction benchmarks against the real daemon (issue 17), with confluent-kafka. One broker
is started for the run (standalone, ``transaction.state.log.num.partitions`` and
``offsets.topic.num.partitions`` 4); every topic has one partition; every record is a 100 B
value without a key.

* produce: ``--repeats`` runs of an idempotent producer and as many of a transactional one,
  alternating (idempotent, transactional, idempotent, ...) so that the machine's drift hits both
  alike. Each run writes ``--records`` records to a topic of its own with a producer of its own
  (``linger.ms=5``; the transactional one commits every 1,000 records). Set-up is outside the
  clock: the producer, its producer id (``init_transactions``, or the idempotent producer's
  first request) and one warm-up record, acknowledged (in a transaction of its own for the
  transactional producer). The clock runs from the first of the ``--records`` ``produce()``
  calls until every record is acknowledged: ``flush()`` returned (idempotent), the last
  ``commit_transaction()`` returned (transactional). Printed: records/s of each run, the
  median of each kind, and the ratio of the medians (transactional / idempotent; the issue's
  target is >= 0.7x); beside each, the broker's CPU (user + system, /proc) during the run: per
  million records (idempotent) and per transaction (transactional: the three requests of each,
  its state-log writes and its marker). Then, from the broker's request metrics, the time each
  transactional run's requests spent in the broker (Kafka's TotalTimeMs: from the request's
  arrival until its answer was queued), per transaction: how many AddPartitionsToTxn, Produce
  and EndTxn requests, and their mean. What a transaction took beyond that was the client's.
* coordinator: after the reads, ``--coordinator-seconds`` (default 5) of AddPartitionsToTxn
  and EndTxn (abort) cycles over one plain connection, no records: the round trip of each and
  the broker's CPU per cycle (four state-log writes and one marker), the coordinator's own
  cost without the client's.
* read: one topic written by a transactional producer, 1,000 records per transaction, every
  other transaction aborted: after the warm-up record and its marker, ``--records`` data
  records (half of them committed) and a marker per transaction, so the partition ends at
  2 + records + records / 1,000. It is read from offset 0
  to that end ``--repeats`` times with read_uncommitted and as many with read_committed,
  alternating (read_uncommitted first), each time by a new consumer (``assign``, no group
  membership). The clock runs from the first ``consume()`` call until the consumer's position
  reaches the end; ``consume()`` is asked for at most 1,000 records and waits at most 50 ms, so
  the last call adds no more than that. Printed for each read: the data records delivered
  (read_committed delivers only the committed half: it drops the aborted ones using the aborted
  transactions returned with each fetch), seconds, offsets/s (the end offset over the seconds:
  the rate at which the consumer walks the partition, aborted records and markers included) and
  delivered records/s; the median of each per isolation level; and two ratios of the medians,
  read_committed / read_uncommitted, in offsets/s and in delivered records/s (the issue's
  target, read_committed at >= 0.8x the read_uncommitted rate, is quoted in offsets/s; the
  delivered-records ratio is about half of it by construction).

With ``--kafka``, the produce comparison also runs against Apache Kafka 4.x (the newest of
tests/reference/versions.mk; `make reference-kafka` fetches it), a KRaft single node with
kafka-server-start's JVM options and the same two settings, started beside Odradek for the
run: after an unmeasured warm-up of each broker (the JVM compiles Kafka's hot paths in its first
seconds), every round runs idempotent then transactional on Odradek, then on Kafka, and the
ratio of each broker's medians is printed. That says what this machine and this client allow,
Kafka's coordinator included.

With ``--java``, the produce comparison runs again with Kafka's Java producer (the client of
that 4.x release, bench/java/TxnProduce.java, compiled for the run), against Odradek and, with
``--kafka``, against Kafka: the same runs, records and transactions, the Java producer's defaults
otherwise, one unmeasured run of each kind first (Odradek's EndTxn time per transaction is
printed from its request metrics, over the Java runs). Both brokers finalize KIP-890's transaction
version 2, so this client sends no AddPartitionsToTxn, and its EndTxn bumps the epoch: two round
trips per transaction (the batch, EndTxn) where librdkafka makes three.

Run: ``python -m bench bench_transactions [--records N] [--repeats R] [--coordinator-seconds S]
[--kafka] [--java]``. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.bench_e2e import cpu_seconds
from bench.bench_kafka import KAFKA_JVM_OPTS
from protocol.error_codes import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from tests.integration.broker_process import BrokerProcess
from tests.support.differential import Connection
from tests.support.kafka_reference import (
    KafkaBroker,
    classpath,
    kraft_version,
    reference_missing,
    tool_command,
)
from tests.support.metrics import scrape
from tests.support.ports import free_port

COMMAND = "python -m bench bench_transactions"
JAVA_SOURCE = Path(__file__).parent / "java" / "TxnProduce.java"
TXN_SIZE = 1000
VALUE = b"x" * 100
#: the most records one consume() call returns, and how long it waits for them
CONSUME_RECORDS = 1000
CONSUME_WAIT_S = 0.05


#: the requests of a transaction whose time in the broker is printed
TXN_REQUESTS = ("AddPartitionsToTxn", "Produce", "EndTxn")


def _request_times(metrics_port: int) -> dict[str, tuple[float, float]]:
    """Per request name: (count, total ms) of Kafka's TotalTimeMs, from the broker's metrics."""
    samples = scrape(metrics_port)
    out = {}
    for name in TXN_REQUESTS:
        label = f'{{request="{name}"}}'
        out[name] = (
            samples.get(f"kafka_network_requestmetrics_totaltimems_count{label}", 0.0),
            samples.get(f"kafka_network_requestmetrics_totaltimems_sum{label}", 0.0),
        )
    return out


def _times_between(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    return {
        name: (after[name][0] - before[name][0], after[name][1] - before[name][1])
        for name in TXN_REQUESTS
    }


def _in_the_broker(times: dict[str, tuple[float, float]], transactions: int) -> str:
    """ "<request> <count per transaction> x <mean> us" for each request seen."""
    return ", ".join(
        f"{name} {count / transactions:.1f} x {total / count * 1000:,.0f} us"
        for name, (count, total) in times.items()
        if count
    )


def _topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def _produce(p: Producer, topic: str) -> None:
    while True:
        try:
            p.produce(topic, value=VALUE, partition=0)
            return
        except BufferError:
            p.poll(0.01)


def _idempotent(bootstrap: str, topic: str, n: int) -> float:
    """Records/s of ``n`` records, from the first produce() until flush() returned."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    _produce(p, topic)  # warm-up: the producer id and the connection
    if p.flush(60) != 0:
        raise RuntimeError("the warm-up record was not acknowledged")
    started = time.perf_counter()
    for i in range(n):
        _produce(p, topic)
        if i % 1000 == 0:
            p.poll(0)
    if p.flush(120) != 0:
        raise RuntimeError("records left unacknowledged")
    return n / (time.perf_counter() - started)


def _transactional(
    bootstrap: str, topic: str, n: int, txn_id: str, *, abort_every_other: bool = False
) -> float:
    """Records/s of ``n`` records in transactions of TXN_SIZE, from the first produce() until
    the last transaction ended."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(60)
    p.begin_transaction()  # warm-up: one committed record
    _produce(p, topic)
    p.commit_transaction(60)
    started = time.perf_counter()
    for t in range(n // TXN_SIZE):
        p.begin_transaction()
        for _ in range(TXN_SIZE):
            _produce(p, topic)
        if abort_every_other and t % 2 == 1:
            p.flush(60)
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
    return n / (time.perf_counter() - started)


def _read(
    bootstrap: str, topic: str, isolation: str, end_offset: int, run: int
) -> tuple[int, float]:
    """(data records delivered, seconds) to walk the partition from 0 to ``end_offset``."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{isolation}-{run}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    while True:
        for m in c.consume(CONSUME_RECORDS, CONSUME_WAIT_S):
            error = m.error()
            if error is None:
                got += 1
            elif error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
        if c.position([TopicPartition(topic, 0)])[0].offset >= end_offset:
            break
    elapsed = time.perf_counter() - started
    c.close()
    return got, elapsed


def _coordinator_cycles(bootstrap: str, pid: int, topic: str, seconds: float) -> None:
    """The coordinator alone, over one plain connection: AddPartitionsToTxn of ``topic``'s
    partition 0 (an Ongoing state written) then EndTxn abort (PrepareAbort, an abort marker,
    CompleteAbort), again and again for ``seconds``; no records. Prints each request's mean
    round trip and the broker's CPU per cycle."""
    conn = Connection(bootstrap)
    txn_id = "bench-coordinator"
    try:
        while conn.call(FindCoordinatorRequest(key=txn_id, key_type=1), 3).error_code != 0:
            time.sleep(0.1)
        while True:
            init = conn.call(
                InitProducerIdRequest(
                    transactional_id=txn_id,
                    transaction_timeout_ms=60_000,
                    producer_id=-1,
                    producer_epoch=-1,
                ),
                3,
            )
            if init.error_code == 0:
                break
            time.sleep(0.1)
        add = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[0])],
        )
        end = EndTxnRequest(
            transactional_id=txn_id,
            producer_id=init.producer_id,
            producer_epoch=init.producer_epoch,
            committed=False,
        )

        def cycle() -> tuple[float, float]:
            t0 = time.perf_counter()
            while True:  # CONCURRENT_TRANSACTIONS while the last abort completes
                r = conn.call(add, 3)
                code = r.results_by_topic_v3_and_below[0].results_by_partition[0]
                if code.partition_error_code == ErrorCode.NONE:
                    break
                if code.partition_error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
                    raise RuntimeError(f"AddPartitionsToTxn: error {code.partition_error_code}")
            t1 = time.perf_counter()
            if conn.call(end, 3).error_code != 0:
                raise RuntimeError("EndTxn failed")
            return t1 - t0, time.perf_counter() - t1

        for _ in range(200):  # warm-up
            cycle()
        n, add_s, end_s = 0, 0.0, 0.0
        c0 = cpu_seconds(pid)
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            a, e = cycle()
            add_s, end_s, n = add_s + a, end_s + e, n + 1
        cpu = cpu_seconds(pid) - c0
        print(
            f"coordinator alone, {seconds:g} s of AddPartitionsToTxn + EndTxn(abort) cycles on "
            f"one connection: {n} cycles; round trips AddPartitionsToTxn {add_s / n * 1e6:,.0f} "
            f"us, EndTxn {end_s / n * 1e6:,.0f} us; broker CPU {cpu / n * 1e6:,.0f} us per cycle"
        )
    finally:
        conn.close()


def _java_produce(targets: list[tuple[str, str]], n: int, repeats: int, classes: Path) -> None:
    """The produce comparison with the Java producer of Kafka 4.x (bench/java/TxnProduce.java)."""
    version = kraft_version()
    reason = reference_missing(version)
    if reason:
        raise SystemExit(f"bench_transactions --java: {reason}")
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(classes), "-cp", classpath(version), str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    print(
        f"the same with Kafka's Java producer {version} (transaction version 2; its defaults: "
        "linger.ms 5, batch.size 16384), one unmeasured run of each kind first:"
    )
    for name, bootstrap in targets:
        proc = subprocess.run(
            tool_command(
                version,
                "TxnProduce",
                bootstrap,
                f"java-{name}",
                str(n),
                str(repeats),
                str(TXN_SIZE),
                "warm",
                extra_cp=(classes,),
            ),
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        rates: dict[str, list[float]] = {"idempotent": [], "transactional": []}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] == "RESULT":
                rates[parts[1]].append(float(parts[3]))
        if proc.returncode != 0 or not all(rates.values()):
            raise RuntimeError(f"TxnProduce failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")
        for r, (idem, txn) in enumerate(
            zip(rates["idempotent"], rates["transactional"], strict=True)
        ):
            print(f"  {r + 1:<6} {name:<8} {idem:>11,.0f} r/s {txn:>24,.0f} r/s", flush=True)
        idem_m = statistics.median(rates["idempotent"])
        txn_m = statistics.median(rates["transactional"])
        print(f"  {'median':<6} {name:<8} {idem_m:>11,.0f} r/s {txn_m:>24,.0f} r/s")
        ratio = txn_m / idem_m
        print(f"  {name}, Java: ratio of the medians, transactional / idempotent: {ratio:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=COMMAND)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each kind (alternating)")
    parser.add_argument(
        "--coordinator-seconds",
        type=float,
        default=5,
        help="how long to run the coordinator-alone cycles at the end (0: skip them)",
    )
    parser.add_argument(
        "--kafka", action="store_true", help="also run the produce comparison on Apache Kafka 4.x"
    )
    parser.add_argument(
        "--java",
        action="store_true",
        help="also run the produce comparison with Kafka's Java producer (4.x)",
    )
    args = parser.parse_args(argv or [])
    n = args.records - args.records % (2 * TXN_SIZE)
    repeats = max(args.repeats, 1)
    tmp = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    metrics_port = free_port()
    broker = BrokerProcess(
        tmp / "data",
        {
            "transaction.state.log.num.partitions": "4",
            "offsets.topic.num.partitions": "4",
            "metrics.port": str(metrics_port),
        },
    )
    kafka: KafkaBroker | None = None
    if args.kafka:
        version = kraft_version()
        reason = reference_missing(version)
        if reason:
            raise SystemExit(f"bench_transactions --kafka: {reason}")
        kafka = KafkaBroker(
            tmp / "kafka",
            version,
            overrides={
                "transaction.state.log.num.partitions": "4",
                "offsets.topic.num.partitions": "4",
            },
            jvm_opts=KAFKA_JVM_OPTS,
        )
    broker.start()
    try:
        if kafka is not None:
            kafka.start()
            print(f"Apache Kafka {kafka.version} (KRaft) on {kafka.bootstrap}")
        bs = broker.bootstrap
        for r in range(repeats):
            _topic(bs, f"idem-{r}")
            _topic(bs, f"txn-{r}")
        _topic(bs, "mixed")

        if kafka is not None:
            for b, b_bs in (("odradek", bs), ("kafka", kafka.bootstrap)):
                _topic(b_bs, f"warm-idem-{b}")
                _topic(b_bs, f"warm-txn-{b}")
                _idempotent(b_bs, f"warm-idem-{b}", n // 2)
                _transactional(b_bs, f"warm-txn-{b}", n // 2, f"bench-warm-{b}")
            for r in range(repeats):
                _topic(kafka.bootstrap, f"idem-{r}")
                _topic(kafka.bootstrap, f"txn-{r}")
        targets = [("odradek", bs, broker.pid)] + (
            [("kafka", kafka.bootstrap, kafka.pid)] if kafka is not None else []
        )
        print(
            f"produce {n} records of 100 B to one partition; {repeats} runs of each, "
            "alternating (idempotent first); the broker's CPU during each run, per million "
            "records and per transaction:"
        )
        print(
            f"  {'run':<6} {'broker':<8} {'idempotent':>15} {'CPU s/M':>8} "
            f"{f'transactional ({TXN_SIZE}/txn)':>28} {'CPU ms/txn':>10}"
        )
        idem: dict[str, list[float]] = {name: [] for name, _, _ in targets}
        txn: dict[str, list[float]] = {name: [] for name, _, _ in targets}
        idem_cpu: dict[str, list[float]] = {name: [] for name, _, _ in targets}
        txn_cpu: dict[str, list[float]] = {name: [] for name, _, _ in targets}
        broker_times: dict[str, tuple[float, float]] = dict.fromkeys(TXN_REQUESTS, (0.0, 0.0))
        for r in range(repeats):
            for name, b_bs, pid in targets:
                c0 = cpu_seconds(pid)
                idem[name].append(_idempotent(b_bs, f"idem-{r}", n))
                c1 = cpu_seconds(pid)
                if name == "odradek":
                    times0 = _request_times(metrics_port)
                txn[name].append(_transactional(b_bs, f"txn-{r}", n, f"bench-txn-{r}"))
                c2 = cpu_seconds(pid)
                if name == "odradek":
                    run_times = _times_between(times0, _request_times(metrics_port))
                    broker_times = {
                        k: (broker_times[k][0] + v[0], broker_times[k][1] + v[1])
                        for k, v in run_times.items()
                    }
                idem_cpu[name].append((c1 - c0) / (n / 1e6))
                txn_cpu[name].append((c2 - c1) / (n // TXN_SIZE) * 1000)
                print(
                    f"  {r + 1:<6} {name:<8} {idem[name][-1]:>11,.0f} r/s "
                    f"{idem_cpu[name][-1]:>8.2f} {txn[name][-1]:>24,.0f} r/s "
                    f"{txn_cpu[name][-1]:>10.2f}",
                    flush=True,
                )
        for name, _, _ in targets:
            idem_m, txn_m = statistics.median(idem[name]), statistics.median(txn[name])
            print(
                f"  {'median':<6} {name:<8} {idem_m:>11,.0f} r/s "
                f"{statistics.median(idem_cpu[name]):>8.2f} {txn_m:>24,.0f} r/s "
                f"{statistics.median(txn_cpu[name]):>10.2f}"
            )
            print(
                f"  {name}: ratio of the medians, transactional / idempotent: {txn_m / idem_m:.2f}x"
            )
        transactions = repeats * (n // TXN_SIZE + 1)  # each run's warm-up transaction too
        print(
            f"  odradek, in the broker per transaction (TotalTimeMs, mean): "
            f"{_in_the_broker(broker_times, transactions)}; a transaction took "
            f"{TXN_SIZE / statistics.median(txn['odradek']) * 1000:.2f} ms (the median run)"
        )

        if args.java:
            times0 = _request_times(metrics_port)
            _java_produce(
                [(name, b_bs) for name, b_bs, _ in targets], n, repeats, tmp / "java-classes"
            )
            # the warm-up run's and each run's warm-up transaction too; Produce requests are
            # the idempotent runs' as well, so only EndTxn is per transaction
            java_txns = (n // 2) // TXN_SIZE + 1 + repeats * (n // TXN_SIZE + 1)
            end = _times_between(times0, _request_times(metrics_port))["EndTxn"]
            print(
                "  odradek, Java: in the broker per transaction (TotalTimeMs, mean): "
                f"{_in_the_broker({'EndTxn': end}, java_txns)}"
            )

        _transactional(bs, "mixed", n, "bench-mixed", abort_every_other=True)
        # the warm-up record and its marker, n data records, one marker per transaction
        end = 2 + n + n // TXN_SIZE
        print(
            f"read a partition of {n} records in transactions of {TXN_SIZE}, every other one "
            f"aborted (end offset {end}); {repeats} reads at each isolation level, alternating "
            "(read_uncommitted first):"
        )
        print(
            f"  {'run':<4} {'isolation':<17} {'delivered':>9} {'seconds':>8} "
            f"{'offsets/s':>10} {'delivered/s':>12}"
        )
        reads: dict[str, list[tuple[int, float]]] = {"read_uncommitted": [], "read_committed": []}
        for r in range(repeats):
            for isolation in reads:
                got, secs = _read(bs, "mixed", isolation, end, r)
                reads[isolation].append((got, secs))
                print(
                    f"  {r + 1:<4} {isolation:<17} {got:>9} {secs:>8.3f} "
                    f"{end / secs:>10,.0f} {got / secs:>12,.0f}",
                    flush=True,
                )
        offsets_m: dict[str, float] = {}
        delivered_m: dict[str, float] = {}
        for isolation, runs in reads.items():
            offsets_m[isolation] = statistics.median(end / secs for _, secs in runs)
            delivered_m[isolation] = statistics.median(got / secs for got, secs in runs)
            print(
                f"  {'median':<4} {isolation:<17} {'':>9} {'':>8} "
                f"{offsets_m[isolation]:>10,.0f} {delivered_m[isolation]:>12,.0f}"
            )
        offsets_ratio = offsets_m["read_committed"] / offsets_m["read_uncommitted"]
        delivered_ratio = delivered_m["read_committed"] / delivered_m["read_uncommitted"]
        print(
            "  ratio of the medians, read_committed / read_uncommitted: "
            f"{offsets_ratio:.2f}x in offsets/s, {delivered_ratio:.2f}x in delivered records/s"
        )
        if args.coordinator_seconds > 0:
            _coordinator_cycles(bs, broker.pid, "mixed", args.coordinator_seconds)
    finally:
        broker.stop()
        if kafka is not None:
            kafka.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
