"""Transaction benchmarks against the real daemon (issue 17), with confluent-kafka:

* produce: the same records (100 B values, one partition) written by an idempotent producer and
  by a transactional producer committing every 1,000 records, in the same run. Records per
  second; the ratio transactional / idempotent.
* read_committed: a topic where every other transaction of 1,000 records is aborted, read from
  the start by a read_uncommitted and by a read_committed consumer (which receives the aborted
  transactions with each fetch and drops their records). Data records delivered per second by
  each (read_committed delivers half as many), and the ratio of the rates at which each walks
  the partition's offsets.

Run: ``python -m bench bench_transactions [--records N]``. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.broker_process import BrokerProcess

COMMAND = "python -m bench bench_transactions"
TXN_SIZE = 1000
VALUE = b"x" * 100


def _topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def _idempotent(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    started = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=VALUE, partition=0)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    return n / (time.perf_counter() - started)


def _transactional(
    bootstrap: str, topic: str, n: int, txn_id: str, *, abort_every_other: bool = False
) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(60)
    started = time.perf_counter()
    for t in range(n // TXN_SIZE):
        p.begin_transaction()
        for _ in range(TXN_SIZE):
            while True:
                try:
                    p.produce(topic, value=VALUE, partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        if abort_every_other and t % 2 == 1:
            p.flush(60)
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
    return n / (time.perf_counter() - started)


def _read(bootstrap: str, topic: str, isolation: str, end_offset: int) -> tuple[int, float]:
    """(data records delivered, seconds) to walk the partition up to ``end_offset``."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    while True:
        batch = c.consume(10000, 1.0)
        got += sum(1 for m in batch if not m.error())
        position = c.position([TopicPartition(topic, 0)])[0].offset
        if position >= end_offset:
            break
    elapsed = time.perf_counter() - started
    c.close()
    return got, elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=COMMAND)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args(argv or [])
    n = args.records - args.records % (2 * TXN_SIZE)
    tmp = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    broker = BrokerProcess(
        tmp / "data",
        {"transaction.state.log.num.partitions": "4", "offsets.topic.num.partitions": "4"},
    )
    broker.start()
    try:
        bs = broker.bootstrap
        for name in ("idem", "txn", "mixed"):
            _topic(bs, name)
        idem = _idempotent(bs, "idem", n)
        txn = _transactional(bs, "txn", n, "bench-txn")
        print(f"produce {n} records of 100 B, one partition:")
        print(f"  idempotent                          {idem:>10,.0f} records/s")
        print(f"  transactional, {TXN_SIZE} per transaction {txn:>10,.0f} records/s")
        print(f"  ratio                               {txn / idem:>10.2f}x")
        _transactional(bs, "mixed", n, "bench-mixed", abort_every_other=True)
        # the partition's end: n data records + one marker per transaction
        end = n + n // TXN_SIZE
        got_u, secs_u = _read(bs, "mixed", "read_uncommitted", end)
        got_c, secs_c = _read(bs, "mixed", "read_committed", end)
        print(f"read {n} records, every other transaction of {TXN_SIZE} aborted:")
        rate_u, rate_c = end / secs_u, end / secs_c
        print(f"  read_uncommitted {got_u:>7} in {secs_u:6.2f} s {rate_u:>9,.0f}/s")
        print(f"  read_committed   {got_c:>7} in {secs_c:6.2f} s {rate_c:>9,.0f}/s")
        print(f"  ratio (offsets/s) {secs_u / secs_c:>8.2f}x")
    finally:
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
