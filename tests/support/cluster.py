"""A cluster of real ``odradek serve`` processes on one real ZooKeeper, for integration tests:
each broker in its own directory with its own log, started, stopped, killed and restarted by
id; and small helpers reading the cluster's metadata through a real client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
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
