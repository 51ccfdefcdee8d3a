"""A consumer process for the consumer group tests: a confluent-kafka consumer (``group.protocol``
``consumer`` by default, KIP-848) that processes numbered records at a bounded rate, commits
what it processed (every ``--commit-every`` records, and before giving partitions up), and logs
everything a test needs to check the group's guarantees, one line per event:

    <time> assign <partition,...>       partitions given to this member
    <time> revoke <partition,...>       partitions it gives up (after committing them)
    <time> lost <partition,...>         partitions taken away without a revocation (fenced)
    <time> rec <partition> <offset> <value>
    <time> commit-try <partition>:<offset>,...
    <time> commit <partition>:<offset>,...   committed (the broker acknowledged)
    <time> closed

SIGTERM closes it cleanly (commit, leave the group); SIGKILL is a crash.

    python -m tests.support.group_worker --bootstrap HOST:PORT --group G --topic T --log PATH
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any, TextIO

from confluent_kafka import Consumer, KafkaException, TopicPartition


class Worker:
    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.args = args
        self.out = out
        self.stopping = False
        #: partition -> next offset to commit (last processed + 1)
        self.processed: dict[int, int] = {}
        self.committed: dict[int, int] = {}
        config: dict[str, Any] = {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.protocol": args.protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": args.name,
        }
        if args.protocol == "classic":
            config["session.timeout.ms"] = 10_000
            config["heartbeat.interval.ms"] = 1_000
            config["partition.assignment.strategy"] = "cooperative-sticky"
        if args.instance:
            config["group.instance.id"] = args.instance
        if os.environ.get("ODRADEK_WORKER_DEBUG"):
            # librdkafka's debug contexts (e.g. "cgrp,fetch"), written to the worker's stderr
            config["debug"] = os.environ["ODRADEK_WORKER_DEBUG"]
        self.consumer = Consumer(config)

    def log(self, *parts: object) -> None:
        self.out.write(f"{time.time():.6f} {' '.join(str(p) for p in parts)}\n")
        self.out.flush()

    def commit(self, partitions: set[int] | None = None) -> None:
        todo = {
            p: o
            for p, o in self.processed.items()
            if (partitions is None or p in partitions) and self.committed.get(p) != o
        }
        if not todo:
            return
        listing = ",".join(f"{p}:{o}" for p, o in sorted(todo.items()))
        self.log("commit-try", listing)
        try:
            self.consumer.commit(
                offsets=[TopicPartition(self.args.topic, p, o) for p, o in todo.items()],
                asynchronous=False,
            )
        except KafkaException as e:
            self.log("commit-failed", listing, str(e).replace("\n", " ")[:200])
            return
        self.committed.update(todo)
        self.log("commit", listing)

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.log("assign", ",".join(str(tp.partition) for tp in partitions))

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        self.commit(revoked)
        for p in revoked:
            self.processed.pop(p, None)
            self.committed.pop(p, None)
        self.log("revoke", ",".join(str(p) for p in sorted(revoked)))

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {tp.partition for tp in partitions}
        for p in lost:
            self.processed.pop(p, None)
            self.committed.pop(p, None)
        self.log("lost", ",".join(str(p) for p in sorted(lost)))

    def run(self) -> None:
        args = self.args
        self.consumer.subscribe(
            [args.topic], on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost
        )
        pause = 1.0 / args.rate if args.rate > 0 else 0.0
        since_commit = 0
        last_commit = time.monotonic()
        while not self.stopping:
            msgs = self.consumer.consume(num_messages=50, timeout=0.2)
            for m in msgs:
                if m.error():
                    self.log("error", str(m.error()).replace("\n", " ")[:200])
                    continue
                self.log("rec", m.partition(), m.offset(), m.value().decode())
                self.processed[m.partition()] = m.offset() + 1
                since_commit += 1
                if pause:
                    time.sleep(pause)
            if since_commit >= args.commit_every or time.monotonic() - last_commit > 1.0:
                self.commit()
                since_commit = 0
                last_commit = time.monotonic()
        self.commit()
        self.consumer.close()
        self.log("closed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--name", default="worker")
    parser.add_argument("--protocol", default="consumer")
    parser.add_argument("--instance", default="")
    parser.add_argument("--rate", type=float, default=0, help="records per second (0: no limit)")
    parser.add_argument("--commit-every", type=int, default=200)
    args = parser.parse_args(argv)
    with open(args.log, "a") as out:
        worker = Worker(args, out)

        def stop(signum: int, frame: object) -> None:
            worker.stopping = True

        signal.signal(signal.SIGTERM, stop)
        worker.log("start", args.name, args.protocol)
        worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
