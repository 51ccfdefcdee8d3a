"""Rebalance time of a 10-member group: KIP-848 (``group.protocol=consumer``) against the classic
protocol (librdkafka's default eager range assignment, and cooperative-sticky), in one run, on
Odradek and on Apache Kafka, with the same clients (confluent-kafka consumers polling on their
own threads).

Two changes, each repeated ``ROUNDS`` times, for each protocol:

* **join**: 9 members own the 60 partitions; a 10th subscribes;
* **leave**: 10 members; one closes (it leaves the group cleanly).

Measured from the change (a leave: from the moment the leaver's ``close()`` returns, whose own
time is printed too) until every partition is owned again and every member owns some
("settled"), from the members' own assignment callbacks, polled every 5 ms; and how many of the
partitions that stayed with a member that was there before and after the change stopped being
owned meanwhile ("stopped": a stop-the-world rebalance stops them all, KIP-848 none) with the
longest such stop. Members heartbeat every 500 ms in both protocols (KIP-848:
``group.consumer.heartbeat.interval.ms``, which the broker tells members; classic:
``heartbeat.interval.ms``), since a member learns of a rebalance at its next heartbeat.

Brokers (``--brokers kafka,odradek``; default both when Kafka's jars are present, else
Odradek alone with a "not run" line): Odradek standalone and Apache Kafka (the newest 4.x,
KRaft, kafka-server-start's JVM options; bench/targets.py), both up for the whole run, each
protocol run against Kafka then Odradek, with the same broker settings (``GROUP_SETTINGS``:
``group.consumer.heartbeat.interval.ms`` and ``group.consumer.min.heartbeat.interval.ms`` at
500 ms, no initial rebalance delay, 10 offsets partitions).

Run: ``python -m bench bench_rebalance [--brokers kafka,odradek]``. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.targets import choose_brokers, kafka_kraft
from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaBroker, kraft_version

COMMAND = "python -m bench bench_rebalance"
MEMBERS = 10
PARTITIONS = 60
ROUNDS = 3
HEARTBEAT_MS = 500
#: The same on Odradek and on Kafka: KIP-848 members heartbeat every HEARTBEAT_MS (the broker
#: tells them its group.consumer.heartbeat.interval.ms, which may not be below the minimum,
#: 5 s by default on Kafka); no initial rebalance delay for classic groups.
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "offsets.topic.num.partitions": "10",
}

PROTOCOLS: dict[str, dict[str, Any]] = {
    "KIP-848 (consumer, uniform)": {"group.protocol": "consumer"},
    "classic, eager (range)": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "range",
        "heartbeat.interval.ms": HEARTBEAT_MS,
        "session.timeout.ms": 6000,
    },
    "classic, cooperative-sticky": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "cooperative-sticky",
        "heartbeat.interval.ms": HEARTBEAT_MS,
        "session.timeout.ms": 6000,
    },
}


class Ownership:
    """Who owns each partition, from the members' callbacks; when each stopped being owned."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[int, str | None] = dict.fromkeys(range(PARTITIONS))
        #: partition -> (owner before, time it stopped being owned)
        self.stopped: dict[int, tuple[str, float]] = {}
        #: partition -> longest time it was not owned while its owner stayed
        self.stops: dict[int, float] = {}

    def assign(self, member: str, partitions: list[int]) -> None:
        now = time.perf_counter()
        with self.lock:
            for p in partitions:
                self.owner[p] = member
                gone = self.stopped.pop(p, None)
                if gone is not None and gone[0] == member:
                    self.stops[p] = max(self.stops.get(p, 0.0), now - gone[1])

    def revoke(self, member: str, partitions: list[int]) -> None:
        now = time.perf_counter()
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == member:
                    self.owner[p] = None
                    self.stopped[p] = (member, now)

    def settled(self, members: list[str]) -> bool:
        with self.lock:
            owners = list(self.owner.values())
        return None not in owners and set(owners) == set(members)

    def reset_stops(self) -> None:
        with self.lock:
            self.stopped.clear()
            self.stops.clear()


class Member:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        config: dict[str, Any],
        own: Ownership,
    ) -> None:
        self.name = name
        self.own = own
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                **config,
            }
        )
        self.consumer.subscribe(
            [topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _assigned(self, consumer: Consumer, tps: list[TopicPartition]) -> None:
        self.own.assign(self.name, [tp.partition for tp in tps])

    def _revoked(self, consumer: Consumer, tps: list[TopicPartition]) -> None:
        self.own.revoke(self.name, [tp.partition for tp in tps])

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.consumer.close()


def _wait(predicate: Callable[[], bool], timeout: float = 120.0) -> float:
    start = time.perf_counter()
    while not predicate():
        if time.perf_counter() - start > timeout:
            raise RuntimeError("the group did not settle")
        time.sleep(0.005)
    return time.perf_counter() - start


def run_protocol(bootstrap: str, label: str, config: dict[str, Any], index: int) -> dict[str, Any]:
    topic, group = f"rebalance-{index}", f"rebalance-{index}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    own = Ownership()
    members = [Member(bootstrap, group, topic, f"m{i}", config, own) for i in range(MEMBERS - 1)]
    names = [m.name for m in members]
    results: dict[str, Any] = {
        "join": [],
        "leave": [],
        "join_stops": [],
        "leave_stops": [],
        "close": [],
    }
    try:
        _wait(lambda: own.settled(names))
        for r in range(ROUNDS):
            time.sleep(1)
            own.reset_stops()
            before = dict(own.owner)
            joiner = Member(bootstrap, group, topic, f"joiner{r}", config, own)
            names.append(joiner.name)
            results["join"].append(_wait(lambda: own.settled(names)))
            results["join_stops"].append(_kept_stops(own, before, joiner.name))
            time.sleep(1)
            own.reset_stops()
            before = dict(own.owner)
            leaving = members.pop(0)
            names.remove(leaving.name)
            closing = time.perf_counter()
            leaving.close()
            results["close"].append(time.perf_counter() - closing)
            results["leave"].append(_wait(lambda: own.settled(names)))
            results["leave_stops"].append(_kept_stops(own, before, leaving.name))
            members.append(joiner)
    finally:
        for m in members:
            m.close()
    return results


def _kept_stops(own: Ownership, before: dict[int, str | None], subject: str) -> tuple[int, float]:
    """(partitions that stayed with their member but stopped meanwhile, longest stop)."""
    with own.lock:
        kept = [
            p for p, o in before.items() if o is not None and o != subject and own.owner[p] == o
        ]
        stopped = [own.stops[p] for p in kept if p in own.stops]
        return len(stopped), max(stopped, default=0.0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--brokers",
        help="comma-separated: kafka, odradek (default: both when Kafka's jars are present)",
    )
    if argv is None:
        argv = sys.argv[1:]
    args = ap.parse_args(argv)
    names, not_run = choose_brokers(args.brokers)
    print(f"command: {COMMAND} {' '.join(argv)}".rstrip())
    if not_run:
        print(not_run)
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-rebalance-"))
    brokers: dict[str, BrokerProcess | KafkaBroker] = {}
    for name in names:
        if name == "kafka":
            brokers[name] = kafka_kraft(tmp / "kafka", dict(GROUP_SETTINGS))
        else:
            (tmp / "odradek").mkdir(parents=True)
            brokers[name] = BrokerProcess(tmp / "odradek" / "data", dict(GROUP_SETTINGS))
    try:
        for broker in brokers.values():
            broker.start(timeout=300)
        if "kafka" in brokers:
            print(f"Kafka {kraft_version()} (KRaft), kafka-server-start's JVM options")
        print(
            f"{MEMBERS} members, {PARTITIONS} partitions, heartbeats every {HEARTBEAT_MS} ms, "
            f"{ROUNDS} rounds; settled = every partition owned and every member owning some; "
            f"broker settings: {GROUP_SETTINGS}"
        )
        print(
            "| protocol | broker | join: settled (median, max) | join: kept partitions stopped "
            "(count, longest) | leave: settled (median, max) | leave: kept partitions stopped "
            "| leave: the leaver's close() (median, max) |"
        )
        print("|---|---|---|---|---|---|---|")
        for index, (label, config) in enumerate(PROTOCOLS.items()):
            for name, broker in brokers.items():
                r = run_protocol(broker.bootstrap, label, config, index)
                print(
                    f"| {label} | {name} | {_ms(r['join'])} | {_stops(r['join_stops'])} "
                    f"| {_ms(r['leave'])} | {_stops(r['leave_stops'])} | {_ms(r['close'])} |",
                    flush=True,
                )
        print(f"load average after: {os.getloadavg()}")
    finally:
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.0f} ms, {max(xs) * 1000:.0f} ms"


def _stops(xs: list[tuple[int, float]]) -> str:
    n = max(x[0] for x in xs)
    longest = max(x[1] for x in xs)
    return f"{n}, {longest * 1000:.0f} ms"


if __name__ == "__main__":
    main()
