"""Dynamic broker configs in a cluster: two ``odradek serve`` processes on one real ZooKeeper,
changed with ``odradek config`` as an operator changes them (a subprocess). ``message.max.bytes``
set for broker 1 takes effect on broker 1 only (its partition refuses a larger batch with
MESSAGE_TOO_LARGE, as Kafka answers, while broker 2's takes it); DescribeConfigs shows each
broker's source; the cluster-wide default reaches both brokers but not over a broker's own
value; the entities are stored as Kafka stores them (``/config/brokers/<id>`` and
``/config/brokers/<default>``) and survive a restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from tests.support.cli import as_json, odradek, unique
from tests.support.cluster import ProcessCluster, bootstrap, create, restart, start_cluster
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

#: Kafka's default message.max.bytes (1 MiB + the 12-byte log overhead)
DEFAULT = "1048588"


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[ProcessCluster]:
    c = start_cluster(zookeeper, tmp_path, (1, 2))
    yield c
    c.close()


def produce(b: str, topic: str, partition: int, size: int) -> str | None:
    """Produces one record of ``size`` bytes with the CLI; the Kafka error it ended with, or
    None if it was acknowledged."""
    done = odradek(
        "topic", "produce", topic, "-p", str(partition), "-b", b, stdin="x" * size + "\n",
        check=False,
    )  # fmt: skip
    if done.returncode == 0:
        return None
    for name in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"):
        if name in done.stderr:
            return name
    raise AssertionError(f"produce failed otherwise: {done.stderr}")


def described(b: str, broker: int) -> dict[str, Any]:
    [entry] = as_json("config", "describe", "--broker", str(broker), "message.max.bytes", "-b", b)
    return {
        "value": entry["value"],
        "source": entry["source"],
        "synonyms": [(s["source"], s["value"]) for s in entry["synonyms"]],
    }


def described_text(b: str, broker: int) -> list[str]:
    out = odradek("config", "describe", "--broker", str(broker), "message.max.bytes", "-b", b)
    lines = [line.split() for line in out.stdout.splitlines() if line.strip()]
    assert lines[0] == ["NAME", "VALUE", "SOURCE", "READ-ONLY"]
    [row] = lines[1:]
    return row


def stored(cluster: ProcessCluster, entity: str) -> Any:
    data, _ = cluster.zk.get(f"/config/brokers/{entity}")
    return json.loads(data)


def test_message_max_bytes_per_broker_and_cluster_default(cluster: ProcessCluster) -> None:
    b = bootstrap(cluster)
    topic = unique("mmb")
    create(cluster, topic, [[1], [2]])  # partition 0 on broker 1, partition 1 on broker 2
    assert produce(b, topic, 0, 3000) is None and produce(b, topic, 1, 3000) is None

    # one broker: broker 1 refuses what broker 2 still takes
    set_ = odradek("config", "set", "--broker", "1", "message.max.bytes=2000", "-b", b)
    assert "Updated message.max.bytes of broker 1" in set_.stdout
    wait_for(lambda: produce(b, topic, 0, 3000) == "MESSAGE_TOO_LARGE", "broker 1 refusing")
    assert produce(b, topic, 1, 3000) is None
    assert described(b, 1) == {
        "value": "2000",
        "source": "DYNAMIC_BROKER_CONFIG",
        "synonyms": [("DYNAMIC_BROKER_CONFIG", "2000"), ("DEFAULT_CONFIG", DEFAULT)],
    }
    assert described(b, 2) == {
        "value": DEFAULT,
        "source": "DEFAULT_CONFIG",
        "synonyms": [("DEFAULT_CONFIG", DEFAULT)],
    }
    assert described_text(b, 1) == ["message.max.bytes", "2000", "DYNAMIC_BROKER_CONFIG", "false"]
    assert described_text(b, 2) == ["message.max.bytes", DEFAULT, "DEFAULT_CONFIG", "false"]
    assert stored(cluster, "1") == {"version": 1, "config": {"message.max.bytes": "2000"}}

    # a real Kafka client is told the same: MSG_SIZE_TOO_LARGE from broker 1 only
    producer = Producer({"bootstrap.servers": b, "linger.ms": 0})
    errors: dict[int, Any] = {}
    for partition in (0, 1):
        producer.produce(
            topic,
            value=b"y" * 3000,
            partition=partition,
            on_delivery=lambda err, msg: errors.__setitem__(msg.partition(), err),
        )
    assert producer.flush(30) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[1] is None

    # the cluster-wide default reaches broker 2, and not over broker 1's own value
    odradek("config", "set", "--broker-default", "message.max.bytes=2500", "-b", b)
    wait_for(lambda: produce(b, topic, 1, 3000) == "MESSAGE_TOO_LARGE", "broker 2 refusing")
    assert produce(b, topic, 1, 2200) is None
    assert produce(b, topic, 0, 2200) == "MESSAGE_TOO_LARGE"
    assert described(b, 2) == {
        "value": "2500",
        "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "synonyms": [("DYNAMIC_DEFAULT_BROKER_CONFIG", "2500"), ("DEFAULT_CONFIG", DEFAULT)],
    }
    assert described(b, 1)["synonyms"] == [
        ("DYNAMIC_BROKER_CONFIG", "2000"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "2500"),
        ("DEFAULT_CONFIG", DEFAULT),
    ]
    assert stored(cluster, "<default>") == {"version": 1, "config": {"message.max.bytes": "2500"}}
    default_rows = as_json("config", "describe", "--broker-default", "-b", b)
    assert [(r["name"], r["value"], r["source"]) for r in default_rows] == [
        ("message.max.bytes", "2500", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    ]

    # without its own value, broker 1 follows the cluster default
    odradek("config", "delete", "--broker", "1", "message.max.bytes", "-b", b)
    wait_for(lambda: produce(b, topic, 0, 2200) is None, "broker 1 at the cluster default")
    assert produce(b, topic, 0, 3000) == "MESSAGE_TOO_LARGE"
    assert described(b, 1)["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert described_text(b, 1)[:3] == [
        "message.max.bytes",
        "2500",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    ]

    # both brokers restarted: the values come back from ZooKeeper
    for broker_id in (1, 2):
        cluster.brokers[broker_id].stop()
        restart(cluster, broker_id)
    b = bootstrap(cluster)
    for broker_id in (1, 2):
        assert described(b, broker_id)["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    wait_for(
        lambda: produce(b, topic, 0, 3000) == produce(b, topic, 1, 3000) == "MESSAGE_TOO_LARGE",
        "both brokers refusing after the restart",
        timeout=60,
    )
    assert produce(b, topic, 0, 2200) is None and produce(b, topic, 1, 2200) is None
    odradek("config", "delete", "--broker-default", "message.max.bytes", "-b", b)
    wait_for(
        lambda: produce(b, topic, 0, 3000) is None and produce(b, topic, 1, 3000) is None,
        "both brokers back at the default",
    )
    assert described(b, 1)["source"] == described(b, 2)["source"] == "DEFAULT_CONFIG"
