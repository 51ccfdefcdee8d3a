"""A cluster of real ``odradek serve`` processes on one real ZooKeeper, for integration tests:
each broker in its own directory with its own log, started, stopped, killed and restarted by
id (:func:`start_cluster` starts several and waits for their registrations); and small helpers
creating topics and reading the cluster's metadata through a real client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.broker_process import BrokerProcess
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = 2000


class ProcessCluster:
    def __init__(self, zookeeper: ZooKeeperServer, tmp: Path) -> None:
        self.connect = zookeeper.chroot_connect()
        self.tmp = tmp
        self.brokers: dict[int, BrokerProcess] = {}
        self.extra: list[BrokerProcess] = []
        self._zk: KazooClient | None = None

    def process(
        self, broker_id: int, *, name: str | None = None, **overrides: str
    ) -> BrokerProcess:
        home = self.tmp / (name or f"broker-{broker_id}")
        home.mkdir(exist_ok=True)
        settings = {
            "broker.id": str(broker_id),
            "zookeeper.connect": self.connect,
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "num.partitions": "3",
            # a broker stopping last in a test's teardown leads partitions no other broker can
            # take: its controlled shutdown retries (Kafka's 3 x 5 s) are shortened
            "controlled.shutdown.retry.backoff.ms": "200",
        }
        settings.update(overrides)
        return BrokerProcess(home / "data", settings, log_path=home / "broker.log")

    def start(self, *ids: int) -> list[BrokerProcess]:
        started = []
        for broker_id in ids:
            proc = self.brokers.get(broker_id) or self.process(broker_id)
            self.brokers[broker_id] = proc
            started.append(proc.start())
        return started

    @property
    def zk(self) -> KazooClient:
        if self._zk is None:
            self._zk = KazooClient(hosts=self.connect)
            self._zk.start(timeout=10)
        return self._zk

    def registered(self) -> list[int]:
        return sorted(int(c) for c in self.zk.get_children("/brokers/ids"))

    def controller(self) -> int | None:
        if self.zk.exists("/controller") is None:
            return None
        return int(json.loads(self.zk.get("/controller")[0])["brokerid"])

    def close(self) -> None:
        for proc in [*self.brokers.values(), *self.extra]:
            if proc.proc is not None and proc.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
            proc.stop()
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()


def metadata(bootstrap: str) -> Any:
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15)


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = metadata(bootstrap)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {p.id: p.leader for p in t.partitions.values()}


def wait_leaders(bootstrap: str, topic: str, count: int) -> dict[int, int]:
    """The partitions' leaders, once this broker knows a leader for each of them."""

    def ready() -> dict[int, int] | None:
        found = leaders(bootstrap, topic)
        if len(found) == count and all(leader >= 0 for leader in found.values()):
            return found
        return None

    result: dict[int, int] = wait_for(ready, f"leaders of {topic} on {bootstrap}")
    return result


def start_cluster(
    zookeeper: ZooKeeperServer,
    tmp: Path,
    ids: Iterable[int],
    overrides: Callable[[int], dict[str, str]] | None = None,
) -> ProcessCluster:
    """Brokers ``ids`` (each with ``overrides(id)``), started one at a time so that the first
    becomes the controller, once all of them are registered. The caller closes the cluster."""
    ids = list(ids)
    c = ProcessCluster(zookeeper, tmp)
    try:
        for broker_id in ids:
            c.brokers[broker_id] = c.process(
                broker_id, **(overrides(broker_id) if overrides else {})
            )
            c.start(broker_id)
        wait_for(lambda: c.registered() == sorted(ids), f"brokers {ids} registered")
    except BaseException:
        c.close()
        raise
    return c


def bootstrap(cluster: ProcessCluster) -> str:
    """Every running broker's address (a broker's port changes when it restarts)."""
    return ",".join(p.bootstrap for p in cluster.brokers.values() if p.proc is not None)


def admin(cluster: ProcessCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap(cluster)})


def describe(
    cluster: ProcessCluster, topic: str, broker_id: int | None = None
) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr) as Metadata shows them (from ``broker_id``, or any
    running broker)."""
    servers = bootstrap(cluster) if broker_id is None else cluster.brokers[broker_id].bootstrap
    md = AdminClient({"bootstrap.servers": servers}).list_topics(topic, timeout=15)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in t.partitions.values()}


def wait_in_sync(cluster: ProcessCluster, topic: str, count: int) -> dict[int, Any]:
    """Waits until every partition has a leader and its whole replica set in the ISR, as every
    running broker's metadata shows it."""

    def ready() -> dict[int, Any] | None:
        running = [b for b, proc in cluster.brokers.items() if proc.proc is not None]
        views = [describe(cluster, topic, b) for b in running]
        found = views[0]
        if len(found) != count or any(v != found for v in views):
            return None
        for leader, replicas, isr in found.values():
            if leader < 0 or sorted(isr) != sorted(replicas):
                return None
        return found

    result: dict[int, Any] = wait_for(ready, f"{topic} fully in sync", timeout=120)
    return result


def create(cluster: ProcessCluster, topic: str, assignment: list[list[int]], **config: str) -> None:
    """Creates ``topic`` with these replicas per partition, and waits until it is in sync."""
    client = admin(cluster)  # kept alive until the answer: a dropped client fails its futures
    futures = client.create_topics(
        [NewTopic(topic, len(assignment), replica_assignment=assignment, config=config)]
    )
    futures[topic].result(30)
    wait_in_sync(cluster, topic, len(assignment))


def controller(cluster: ProcessCluster) -> int:
    found: int = wait_for(cluster.controller, "a controller")
    return found


def restart(cluster: ProcessCluster, broker_id: int) -> None:
    cluster.brokers[broker_id].start()
    wait_for(lambda: broker_id in cluster.registered(), f"broker {broker_id} registered")
