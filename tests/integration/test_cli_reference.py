"""The same ``odradek`` commands against Odradek and against Apache Kafka (the reference of
issue 15) give the same answers, once what differs by nature (topic ids, member ids, cluster
ids, timestamps) is normalised: the command line speaks only the Kafka protocol, so a user's
scripts work against either."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.integration.broker_process import BrokerProcess
from tests.integration.test_operations import as_json, odradek, unique


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.kafka_reference import KafkaBroker, kraft_version, require_reference

    version = kraft_version()
    require_reference(version)
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"), version)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def odradek_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("odradek") / "data",
        {"group.initial.rebalance.delay.ms": "0", "num.partitions": "1"},
    )
    proc.start()
    yield proc
    proc.stop()


def scenario(bootstrap: str, topic: str, group: str, txn_id: str) -> dict[str, Any]:
    """What a user's script would read back from one broker, normalised."""
    out: dict[str, Any] = {}
    odradek("topic", "create", topic, "--partitions", "3", "-b", bootstrap)
    described = as_json("topic", "describe", topic, "-b", bootstrap)
    out["describe"] = [
        (p["partition"], len(p["replicas"]), len(p["isr"])) for p in described["partitions"]
    ]
    out["list"] = topic in [t["name"] for t in as_json("topic", "list", "-b", bootstrap)]
    lines = "".join(f"k{i % 5}\tv{i}\n" for i in range(30))
    odradek("topic", "produce", topic, "--key-separator", "\t", "-b", bootstrap, stdin=lines)
    records = [
        __import__("json").loads(line)
        for line in odradek(
            "topic", "consume", topic, "--from-beginning", "--num", "30", "--format", "json",
            "-b", bootstrap,
        ).stdout.splitlines()
        if line.strip()
    ]  # fmt: skip
    out["records"] = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records)

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 30 and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is not None and m.error() is None:
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    out["lag"] = sorted(
        (r["partition"], r["current_offset"], r["log_end_offset"], r["lag"])
        for r in as_json("group", "lag", group, "-b", bootstrap)
    )
    odradek("group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute",
            "-b", bootstrap)  # fmt: skip
    out["after_reset"] = sorted(
        (r["partition"], r["current_offset"])
        for r in as_json("group", "lag", group, "-b", bootstrap)
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"t", partition=0)
    producer.commit_transaction(60)
    out["transaction"] = as_json("transaction", "describe", txn_id, "-b", bootstrap)["state"]
    refused = odradek("acl", "list", "-b", bootstrap, check=False)
    out["acl_without_authorizer"] = (refused.returncode, "SECURITY_DISABLED" in refused.stderr)
    config = {
        c["name"]: (c["value"], c["source"])
        for c in as_json("config", "describe", "--topic", topic, "-b", bootstrap)
    }
    out["topic_config"] = {k: config.get(k) for k in ("cleanup.policy", "retention.ms")}
    return out


def test_the_same_commands_give_the_same_answers(
    kafka: Any, odradek_broker: BrokerProcess, tmp_path: Path
) -> None:
    name = unique("same")
    theirs = scenario(kafka.bootstrap, name, f"{name}-g", f"{name}-tx")
    ours = scenario(odradek_broker.bootstrap, name, f"{name}-g", f"{name}-tx")
    assert ours == theirs
