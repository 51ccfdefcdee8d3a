"""Session fixtures that run Apache Kafka beside Odradek (issue 15); wired in tests/conftest.py.

- ``reference_zookeeper``: one real ZooKeeper (tests/support/zookeeper.py) for the session; each
  broker below takes its own chroot on it.
- ``kafka_reference``: Kafka 3.9 (``KAFKA_ZK_VERSION``) in ZooKeeper mode, -Xmx512m.
- ``kafka_kraft``: the newest Kafka 4.x (``KAFKA_KRAFT_VERSION``), a KRaft single node.
- ``odradek_zk``: Odradek in ZooKeeper mode, configured like ``kafka_reference`` (same partition
  defaults, no initial rebalance delay), so the two answer the same requests side by side; its
  metrics endpoint is on (a free port), so it advertises client telemetry (KIP-714).
- ``java_scenarios``: tests/reference/java/ClientScenarios.java compiled against each client
  release's jars (javac, once per session), with java/v4/ (4.0 client API) for 4.x releases.

Shared for the session (tests use unique topic and group names), so the suite pays for each JVM
start once. A fixture whose Kafka cannot run here skips with the reason
(:func:`tests.support.kafka_reference.reference_missing`), or fails with it under CI
(:func:`tests.support.kafka_reference.skip_or_fail`).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_reference import (
    REFERENCE_DIR,
    KafkaBroker,
    classpath,
    free_port,
    kraft_version,
    require_reference,
    skip_or_fail,
    zk_version,
)
from tests.support.zookeeper import ZooKeeperServer, zookeeper_missing

#: Broker settings both sides share in the side-by-side tests (Kafka's defaults otherwise).
SHARED_BROKER_SETTINGS = {
    "num.partitions": "1",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="session")
def reference_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    missing = zookeeper_missing()
    if missing:
        skip_or_fail(missing)
    server = ZooKeeperServer(tmp_path_factory.mktemp("reference-zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kafka_reference(
    reference_zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBroker]:
    """Apache Kafka 3.9 in ZooKeeper mode (its own chroot), stopped at the end of the session."""
    require_reference(zk_version())
    broker = KafkaBroker(
        tmp_path_factory.mktemp("kafka-reference"),
        zk_version(),
        zookeeper_connect=reference_zookeeper.chroot_connect("kafka"),
        overrides=dict(SHARED_BROKER_SETTINGS),
    )
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """The newest Apache Kafka 4.x, a KRaft broker+controller single node."""
    require_reference(kraft_version())
    broker = KafkaBroker(
        tmp_path_factory.mktemp("kafka-kraft"),
        kraft_version(),
        overrides=dict(SHARED_BROKER_SETTINGS),
    )
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def odradek_zk(
    reference_zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """Odradek in ZooKeeper mode beside ``kafka_reference``, configured the same way."""
    home = tmp_path_factory.mktemp("odradek-zk")
    proc = BrokerProcess(
        home / "data",
        {
            "broker.id": "0",
            "zookeeper.connect": reference_zookeeper.chroot_connect("odradek"),
            # the metrics endpoint on: client telemetry (KIP-714) is advertised, so the corpus
            # covers it and the Java clients push their metrics as they would in production
            "metrics.port": str(free_port()),
            **SHARED_BROKER_SETTINGS,
        },
        log_path=home / "broker.log",
    )
    proc.start()
    yield proc
    proc.stop()


JAVA_SOURCES = REFERENCE_DIR / "java"


def _java_sources(version: str) -> list[Path]:
    """java/*.java for every client release; java/v4/*.java (4.0 API) for 4.x clients only."""
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    if int(version.split(".")[0]) >= 4:
        sources += sorted((JAVA_SOURCES / "v4").glob("*.java"))
    return sources


@pytest.fixture(scope="session")
def java_scenarios(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ClientScenarios compiled once per client release: {version: classes directory}."""
    if shutil.which("javac") is None:
        skip_or_fail("javac is missing: run scripts/install-system-deps.sh (or `make test`)")
    out: dict[str, Path] = {}
    for version in (zk_version(), kraft_version()):
        require_reference(version)
        classes = tmp_path_factory.mktemp(f"java-{version}")
        subprocess.run(
            [
                "javac",
                "-nowarn",
                "-d",
                str(classes),
                "-cp",
                classpath(version),
                *(str(p) for p in _java_sources(version)),
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        out[version] = classes
    return out
