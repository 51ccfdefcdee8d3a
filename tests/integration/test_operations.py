"""The operator's surface against a real broker: the ``odradek`` command line driven as a user
drives it (a subprocess, both output formats), dynamic broker configs (also through
confluent-kafka's admin client), a full log directory next to a healthy one, and the metrics
port's /health and /ready."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

from cli.client import AdminClient as OdradekAdmin
from cli.client import KafkaError
from cli.records import OutRecord, Producer
from protocol.error_codes import ErrorCode
from tests.integration.broker_process import BrokerProcess
from tests.support.cli import as_json, odradek, unique
from tests.support.kafka_clients import consume_from_start, consume_in_group
from tests.support.metrics import http, http_or_refused
from tests.support.ports import free_port
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def ops_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("ops") / "data"
    proc = BrokerProcess(
        data,
        {
            "metrics.port": str(free_port()),
            "log.retention.check.interval.ms": "500",
            "group.initial.rebalance.delay.ms": "0",
        },
    )
    proc.start()
    yield proc
    proc.stop()


# --- the command line ------------------------------------------------------------------------


def test_topic_commands_in_both_formats(ops_broker: BrokerProcess) -> None:
    b = ops_broker.bootstrap
    topic = unique("cli-topic")
    odradek("topic", "create", topic, "--partitions", "3", "-b", b)
    listed = as_json("topic", "list", "-b", b)
    assert any(t["name"] == topic and t["partitions"] == 3 for t in listed)
    assert topic in odradek("topic", "list", "-b", b).stdout
    described = as_json("topic", "describe", topic, "-b", b)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == 0 for p in described["partitions"])
    assert "HIGH-WATERMARK" in odradek("topic", "describe", topic, "-b", b).stdout

    odradek("topic", "produce", topic, "-b", b, stdin="one\ntwo\nthree\n")
    odradek("topic", "produce", topic, "-b", b, "-k", ":", "-H", "h=v", stdin="k1:v1\n")
    lines = odradek(
        "topic", "consume", topic, "--from-beginning", "--num", "4", "--format", "json", "-b", b
    ).stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert sorted(r["value"] for r in records) == ["one", "three", "two", "v1"]
    keyed = next(r for r in records if r["value"] == "v1")
    assert keyed["key"] == "k1" and keyed["headers"] == {"h": "v"}
    text = odradek("topic", "consume", topic, "--offset", "earliest", "-b", b).stdout
    assert sorted(text.split()) == ["one", "three", "two", "v1"]

    odradek("topic", "alter-config", topic, "retention.ms=86400000", "-b", b)
    assert as_json("topic", "describe", topic, "-b", b)["configs"] == {"retention.ms": "86400000"}
    odradek("topic", "add-partitions", topic, "--count", "4", "-b", b)
    assert len(as_json("topic", "describe", topic, "-b", b)["partitions"]) == 4
    odradek("topic", "delete", topic, "-b", b)
    missing = odradek("topic", "describe", topic, "-b", b, check=False)
    assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr


def test_group_lag_and_reset_offsets(ops_broker: BrokerProcess) -> None:
    b = ops_broker.bootstrap
    topic, group = unique("cli-lag"), unique("cli-group")
    odradek("topic", "create", topic, "--partitions", "2", "-b", b)
    odradek(
        "topic", "produce", topic, "-b", b, "--format", "json",
        stdin="".join(json.dumps({"value": f"m{i}", "partition": i % 2}) + "\n" for i in range(10)),
    )  # fmt: skip
    assert len(consume_in_group(b, group, topic, 6)) >= 6
    lag = as_json("group", "lag", group, "-b", b)
    assert {(r["topic"], r["partition"]) for r in lag} <= {(topic, 0), (topic, 1)}
    committed = {r["partition"]: r["current_offset"] for r in lag}
    # lag is what a consumer sees: the log end minus the committed offset
    for r in lag:
        assert r["log_end_offset"] == 5 and r["lag"] == 5 - r["current_offset"]
    assert "LOG-END-OFFSET" in odradek("group", "lag", group, "-b", b).stdout
    assert any(g["group"] == group for g in as_json("group", "list", "-b", b))
    assert as_json("group", "describe", group, "-b", b)["state"] == "Empty"

    plan = odradek(
        "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--dry-run", "-b", b
    )
    assert "NEW-OFFSET" in plan.stdout
    assert {
        r["partition"]: r["current_offset"] for r in as_json("group", "lag", group, "-b", b)
    } == committed
    executed = as_json(
        "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute", "-b", b
    )
    assert {r["new_offset"] for r in executed} == {0}
    assert {r["lag"] for r in as_json("group", "lag", group, "-b", b)} == {5}
    # the group resumes from the reset offsets: everything again
    again = consume_in_group(b, group, topic, 10)
    assert sorted(again) == sorted((p, o) for p in (0, 1) for o in range(5))
    odradek(
        "group", "reset-offsets", group, "--all-topics", "--shift-by", "-2", "--execute", "-b", b
    )
    assert {r["current_offset"] for r in as_json("group", "lag", group, "-b", b)} == {3}
    odradek("group", "delete", group, "-b", b)


def test_cluster_config_and_log_dir_commands(ops_broker: BrokerProcess) -> None:
    b = ops_broker.bootstrap
    cluster = as_json("cluster", "describe", "-b", b)
    assert cluster["controller"] == 0 and cluster["brokers"] == [0]
    assert as_json("cluster", "brokers", "-b", b)[0]["port"] == ops_broker.port
    assert as_json("cluster", "controller", "-b", b)["id"] == 0
    odradek("config", "set", "--broker-default", "log.cleaner.delete.retention.ms=3600000", "-b", b)
    configs = {c["name"]: c for c in as_json("config", "describe", "--broker", "0", "-b", b)}
    entry = configs["log.cleaner.delete.retention.ms"]
    assert (entry["value"], entry["source"]) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert configs["log.dir"]["source"] == "STATIC_BROKER_CONFIG"
    assert configs["num.partitions"]["source"] == "DEFAULT_CONFIG"
    assert (
        "DYNAMIC_DEFAULT_BROKER_CONFIG"
        in odradek("config", "describe", "--broker", "0", "-b", b).stdout
    )
    refused = odradek("config", "set", "--broker", "0", "broker.id=7", "-b", b, check=False)
    assert refused.returncode == 1 and "Cannot update these configs dynamically" in refused.stderr
    odradek("config", "delete", "--broker-default", "log.cleaner.delete.retention.ms", "-b", b)
    assert as_json("config", "describe", "--broker-default", "-b", b) == []
    odradek(
        "config", "set", "--broker-logger", "0", "broker.replication.replica_manager=DEBUG", "-b", b
    )
    levels = {
        c["name"]: c["value"]
        for c in as_json("config", "describe", "--broker-logger", "0", "-b", b)
    }
    assert levels["broker.replication.replica_manager"] == "DEBUG"

    dirs = as_json("log-dirs", "-b", b)
    assert len(dirs) == 1 and dirs[0]["error"] is None and dirs[0]["total_bytes"] > 0
    assert "USABLE-BYTES" in odradek("log-dirs", "-b", b).stdout


def test_check_log_and_dump_log(tmp_path: Path, ops_broker: BrokerProcess) -> None:
    b = ops_broker.bootstrap
    topic = unique("cli-check")
    odradek("topic", "create", topic, "--partitions", "1", "-b", b)
    odradek("topic", "produce", topic, "-b", b, stdin="a\nb\n")
    partition_dir = ops_broker.data_dir / f"{topic}-0"
    assert odradek("check-log", str(ops_broker.data_dir)).returncode == 0
    # a copy with a torn tail: check-log says what recovery would cut, and changes nothing
    copy = tmp_path / f"{topic}-0"
    copy.mkdir()
    for f in partition_dir.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    segment = copy / "00000000000000000000.log"
    segment.write_bytes(segment.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x05garbage")
    size = segment.stat().st_size
    report = json.loads(odradek("check-log", str(copy), "--format", "json", check=False).stdout)
    assert report[0]["truncate_bytes"] == 15 and segment.stat().st_size == size
    assert "TRUNCATE-BYTES" in odradek("check-log", str(copy), check=False).stdout
    dumped = odradek(
        "dump-log", str(partition_dir / "00000000000000000000.log"), "--print-data-log"
    )
    assert "payload: a" in dumped.stdout


# --- dynamic broker configs -------------------------------------------------------------------


def test_dynamic_retention_on_the_cluster_default_deletes_old_segments(
    ops_broker: BrokerProcess,
) -> None:
    """log.retention.ms set at the cluster-wide default (IncrementalAlterConfigs on the BROKER
    resource ""): confluent-kafka's DescribeConfigs of broker 0 shows it as
    DYNAMIC_DEFAULT_BROKER_CONFIG, and old segments go without a restart. The change is made
    with ``odradek config``: confluent-kafka cannot name the default (librdkafka refuses a
    config resource with an empty name, confluentinc/confluent-kafka-go#396), nor can
    kafka-python (broker resource names must be integers)."""
    b = ops_broker.bootstrap
    topic = unique("retention")
    odradek("topic", "create", topic, "--partitions", "1", "--config", "segment.bytes=300", "-b", b)
    for i in range(4):
        odradek("topic", "produce", topic, "-b", b, stdin=f"record-{i}\n")
    assert as_json("topic", "describe", topic, "-b", b)["partitions"][0]["log_start_offset"] == 0
    odradek("config", "set", "--broker-default", "log.retention.ms=1000", "-b", b)
    try:
        # DescribeConfigs through confluent-kafka: broker 0 takes its value from the default
        admin = AdminClient({"bootstrap.servers": b})
        described = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")])
        entry = next(iter(described.values())).result(timeout=30)["log.retention.ms"]
        assert (entry.value, entry.source) == (
            "1000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
        default = as_json("config", "describe", "--broker-default", "-b", b)
        assert [(c["name"], c["value"], c["source"]) for c in default] == [
            ("log.retention.ms", "1000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        ]
        wait_for(
            lambda: (
                as_json("topic", "describe", topic, "-b", b)["partitions"][0]["log_start_offset"]
                > 0
            ),
            "retention by the dynamic cluster default",
            timeout=60,
        )
    finally:
        odradek("config", "delete", "--broker-default", "log.retention.ms", "-b", b)
    assert as_json("config", "describe", "--broker-default", "-b", b) == []


def test_message_max_bytes_per_broker_sources_restart_and_confluent_admin(tmp_path: Path) -> None:
    """Standalone brokers: the per-broker entity is kept in the embedded store, the sources show
    it, a restart keeps it, and confluent-kafka's admin client sees and makes the same changes
    (two brokers of one ZooKeeper cluster, one changed and not the other, the cluster default
    reaching both: tests/integration/test_dynamic_config_cluster.py)."""
    one = BrokerProcess(tmp_path / "one").start()
    two = BrokerProcess(tmp_path / "two").start()
    try:
        odradek("config", "set", "--broker", "0", "message.max.bytes=2000", "-b", one.bootstrap)
        big = "x" * 3000 + "\n"
        topic = unique("mmb")
        for proc in (one, two):
            odradek("topic", "create", topic, "--partitions", "1", "-b", proc.bootstrap)
        failed = odradek("topic", "produce", topic, "-b", one.bootstrap, stdin=big, check=False)
        assert failed.returncode == 1 and "MESSAGE_TOO_LARGE" in failed.stderr
        odradek("topic", "produce", topic, "-b", two.bootstrap, stdin=big)

        def source(proc: BrokerProcess) -> tuple[str, str]:
            c = as_json(
                "config", "describe", "--broker", "0", "message.max.bytes", "-b", proc.bootstrap
            )
            return c[0]["value"], c[0]["source"]

        assert source(one) == ("2000", "DYNAMIC_BROKER_CONFIG")
        assert source(two) == ("1048588", "DEFAULT_CONFIG")
        one.restart()
        assert source(one) == ("2000", "DYNAMIC_BROKER_CONFIG")
        failed = odradek("topic", "produce", topic, "-b", one.bootstrap, stdin=big, check=False)
        assert "MESSAGE_TOO_LARGE" in failed.stderr

        admin = AdminClient({"bootstrap.servers": two.bootstrap})
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")

        resource.add_incremental_config(
            ConfigEntry("message.max.bytes", "2500", incremental_operation=AlterConfigOpType.SET)
        )
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        described = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")])
        entries = next(iter(described.values())).result(timeout=30)
        entry = entries["message.max.bytes"]
        assert entry.value == "2500"
        assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        failed = odradek("topic", "produce", topic, "-b", two.bootstrap, stdin=big, check=False)
        assert "MESSAGE_TOO_LARGE" in failed.stderr
    finally:
        one.stop()
        two.stop()


# --- health and readiness ---------------------------------------------------------------------


def test_health_and_ready_on_the_metrics_port(ops_broker: BrokerProcess) -> None:
    port = ops_broker.overrides["metrics.port"]
    assert http(f"http://127.0.0.1:{port}/health") == (200, "ok\n")
    assert http(f"http://127.0.0.1:{port}/ready") == (200, "ready\n")
    assert (
        "kafka_network_requestmetrics_requests_total" in http(f"http://127.0.0.1:{port}/metrics")[1]
    )


#: partitions whose loading after a SIGKILL keeps /ready at 503 for a moment (about a second
#: per thousand on a busy 2-core machine; docs/configuration.md, num.recovery.threads.per.data.dir)
LOADING_PARTITIONS = 2000


def test_ready_turns_true_only_after_the_logs_are_loaded(tmp_path: Path) -> None:
    """A broker restarted after SIGKILL over a log dir of 2,000 partitions, polled over HTTP
    from the moment its process starts: /ready answers 503 with the reason (the logs loading)
    until the broker logged that they are loaded, then 200; /health answers 200 throughout."""
    from confluent_kafka import Producer as CProducer

    from tests.support.kafka_clients import create_topic

    port = free_port()
    proc = BrokerProcess(tmp_path / "data", {"metrics.port": str(port)})
    proc.start(timeout=120)
    try:
        create_topic(proc.bootstrap, "wide", LOADING_PARTITIONS, timeout=120)
        producer = CProducer({"bootstrap.servers": proc.bootstrap, "linger.ms": 50})
        for p in range(LOADING_PARTITIONS):
            producer.produce("wide", b"x", partition=p)
        assert producer.flush(60) == 0
        proc.kill()  # an unclean shutdown: every log is recovered at the next start

        #: (when the answer arrived, /ready's status and body, /health's status and body)
        answers: list[tuple[float, int | None, str, int | None, str]] = []
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                ready = http_or_refused(f"http://127.0.0.1:{port}/ready")
                health = http_or_refused(f"http://127.0.0.1:{port}/health")
                answers.append((time.time(), ready[0], ready[1], health[0], health[1]))
                if ready[0] == 200:
                    return
                time.sleep(0.01)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            proc.start(timeout=120)
            poller.join(120)
        finally:
            done.set()
        answered = [a for a in answers if a[1] is not None]
        assert answered and answered[-1][1:3] == (200, "ready\n"), answers[-5:]
        waiting = answered[:-1]
        reasons = sorted({body for _, _, body, *_ in waiting})
        assert {status for _, status, *_ in waiting} == {503}, reasons
        assert "starting: loading logs\n" in reasons, reasons
        assert all(body.startswith("starting: ") for body in reasons), reasons
        unhealthy = [a for a in answered if a[3] != 200]
        assert not unhealthy, unhealthy[:3]
        # the first 200 came after the broker logged that it had loaded the logs
        loaded = next(
            line for line in proc.log().splitlines()[::-1]
            if f"loaded {LOADING_PARTITIONS} log(s)" in line
        )  # fmt: skip
        loaded_at = datetime.strptime(loaded[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        assert answered[-1][0] >= loaded_at, (answered[-1], loaded)
        assert "unclean shutdown: recovering" in proc.log()
    finally:
        proc.stop()
    from broker.config import BrokerConfig
    from broker.server import Broker

    before = Broker(BrokerConfig.from_dict({"log.dir": str(tmp_path / "other")}))
    assert before.ready() == (False, "starting: not started")


# --- a full log directory (JBOD) --------------------------------------------------------------


# (the ``small_tmpfs`` fixture, a real 64 MB tmpfs, is in tests/integration/conftest.py)


def test_a_full_log_dir_fails_its_partitions_only_and_loses_nothing(
    tmp_path: Path, small_tmpfs: Path
) -> None:
    healthy = tmp_path / "healthy"
    proc = BrokerProcess(
        tmp_path / "unused",
        {"log.dirs": f"{healthy},{small_tmpfs}", "log.dir": str(healthy)},
    ).start()
    try:
        topic = unique("jbod")
        with OdradekAdmin(proc.bootstrap) as client:
            client.create_topic(topic, 2, 1, {})
            wait_for(lambda: len(client.topic(topic).partitions) == 2, "topic")
            dirs = as_json("log-dirs", "-b", proc.bootstrap)
            on_tmpfs = {
                p["partition"]
                for d in dirs
                if d["path"] == str(small_tmpfs)
                for p in d["partitions"]
            }
            assert len(on_tmpfs) == 1, dirs
            full, other = on_tmpfs.pop(), ({0, 1} - on_tmpfs).pop()
            value = os.urandom(700 * 1024)
            acknowledged = 0
            with pytest.raises(KafkaError) as failure:
                for _ in range(200):
                    producer = Producer(client, topic)
                    producer.add(OutRecord(value, partition=full))
                    producer.flush()
                    acknowledged += 1
            assert failure.value.code == ErrorCode.KAFKA_STORAGE_ERROR
            assert acknowledged > 10
            # the other dir keeps working
            producer = Producer(client, topic)
            producer.add(OutRecord(b"still here", partition=other))
            producer.flush()
            dirs = as_json("log-dirs", "-b", proc.bootstrap)
            assert {d["path"]: d["error"] for d in dirs} == {
                str(healthy): None,
                str(small_tmpfs): "KAFKA_STORAGE_ERROR",
            }
        proc.stop()
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_tmpfs)], check=True)
        proc.start()
        with OdradekAdmin(proc.bootstrap) as client:
            ends = client.list_offsets({(topic, full): -1, (topic, other): -1})
        assert ends[(topic, full)][0] == acknowledged
        got = consume_from_start(
            proc.bootstrap,
            topic,
            [full],
            acknowledged,
            timeout=60,
            client={"fetch.message.max.bytes": 2 * 1024 * 1024},
        )
        assert [m.value() for m in got] == [value] * acknowledged
        assert odradek("check-log", str(small_tmpfs)).returncode == 0
    finally:
        proc.stop()


def test_a_broker_whose_last_log_dir_fails_stops_and_loses_nothing(
    tmp_path: Path, small_tmpfs: Path
) -> None:
    """One log dir, and its disk fills: with no dir left to serve from, the broker stops with
    status 1 and Kafka's fatal line (Kafka's LogManager halts then) instead of staying up
    refusing everything; after space is freed it starts and serves every acknowledged record."""
    proc = BrokerProcess(tmp_path / "unused", {"log.dirs": str(small_tmpfs)}).start()
    topic = unique("full")
    value = os.urandom(700 * 1024)
    acknowledged = 0
    try:
        with OdradekAdmin(proc.bootstrap) as client:
            client.create_topic(topic, 1, 1, {})
            wait_for(lambda: len(client.topic(topic).partitions) == 1, "topic")
            with pytest.raises((KafkaError, OSError)):
                for _ in range(200):
                    producer = Producer(client, topic)
                    producer.add(OutRecord(value, partition=0))
                    producer.flush()
                    acknowledged += 1
        assert acknowledged > 10
        assert proc.proc is not None
        assert proc.proc.wait(60) == 1
        proc.wait_for_log("Shutdown broker because all log dirs in")
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_tmpfs)], check=True)
        proc.start()
        with OdradekAdmin(proc.bootstrap) as client:
            ends = client.list_offsets({(topic, 0): -1})
        assert ends[(topic, 0)][0] == acknowledged
        got = consume_from_start(
            proc.bootstrap,
            topic,
            [0],
            acknowledged,
            timeout=60,
            client={"fetch.message.max.bytes": 2 * 1024 * 1024},
        )
        assert [m.value() for m in got] == [value] * acknowledged
    finally:
        proc.stop()


# --- log lines ---------------------------------------------------------------------------------


def test_log_lines_use_kafkas_layout_by_default(ops_broker: BrokerProcess) -> None:
    """[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger), as Kafka's log4j layout prints."""
    import re

    layout = re.compile(
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (INFO|WARN|ERROR|DEBUG|TRACE|FATAL) .* "
        r"\([\w.]+\)$"
    )
    started = [line for line in ops_broker.log().splitlines() if "started, listening on" in line]
    assert started and layout.match(started[0]), started
    assert started[0].endswith("(broker.server)")


def test_json_logs_and_logger_levels_set_at_runtime(tmp_path: Path) -> None:
    """log.format=json: one object per line (time, level, logger, message); a BROKER_LOGGER
    level set with the CLI applies at once, through the same formatter."""
    proc = BrokerProcess(tmp_path / "data", {"log.format": "json"})
    proc.start()
    try:
        bootstrap = proc.bootstrap

        def entries() -> list[dict[str, Any]]:
            lines = [line for line in proc.log().splitlines() if line.strip()]
            return [json.loads(line) for line in lines]

        first = entries()
        assert first and all({"time", "level", "logger", "message"} <= set(e) for e in first)
        assert any(
            e["logger"] == "broker.server" and "started, listening on" in e["message"]
            for e in first
        )
        assert not [e for e in first if e["logger"] == "broker.net.connection"]
        odradek("config", "set", "--broker-logger", "0", "broker.net.connection=DEBUG",
                "-b", bootstrap)  # fmt: skip
        # the CLI's own connection closing is now logged at DEBUG
        odradek("cluster", "brokers", "-b", bootstrap)
        wait_for(
            lambda: any(
                e["logger"] == "broker.net.connection" and e["level"] == "DEBUG" for e in entries()
            ),
            "a DEBUG line of broker.net.connection",
        )
        levels = as_json("config", "describe", "--broker-logger", "0", "-b", bootstrap)
        assert {"name": "broker.net.connection", "value": "DEBUG"}.items() <= next(
            c for c in levels if c["name"] == "broker.net.connection"
        ).items()
    finally:
        proc.stop()


# --- moving a partition between log dirs (AlterReplicaLogDirs) -------------------------------


def test_log_dirs_move_copies_a_partition_while_it_serves(tmp_path: Path) -> None:
    """odradek log-dirs move: the partition moves to the other dir while an idempotent
    producer keeps writing; offsets, producer state (no sequence error, no duplicate) and every
    acknowledged record carry over, DescribeLogDirs shows it in its new dir (is_future while
    copying), the old copy goes, and a restart finds it there."""
    from confluent_kafka import Producer as CProducer

    first, second = tmp_path / "d1", tmp_path / "d2"
    proc = BrokerProcess(
        tmp_path / "unused",
        {
            "log.dirs": f"{first},{second}",
            "log.dir": str(first),
            "log.segment.delete.delay.ms": "1000",
        },
    ).start()
    try:
        topic = unique("move")
        odradek("topic", "create", topic, "--partitions", "1", "-b", proc.bootstrap)

        def where() -> list[tuple[str, bool]]:
            return [
                (d["path"], p["is_future"])
                for d in as_json("log-dirs", "-b", proc.bootstrap)
                for p in d["partitions"]
                if p["topic"] == topic
            ]

        wait_for(lambda: len(where()) == 1, "the partition in a log dir")
        ((source, _),) = where()
        target = str(second if source == str(first) else first)
        producer = CProducer(
            {"bootstrap.servers": proc.bootstrap, "enable.idempotence": True, "linger.ms": 2}
        )
        errors: list[Any] = []
        acked: list[int] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                acked.append(msg.offset())

        sent = 0
        payload = os.urandom(2000)
        for _ in range(2500):  # ~5 MB before the move
            producer.produce(topic, value=payload + b"%d" % sent, on_delivery=delivered)
            sent += 1
            producer.poll(0)
        producer.flush(60)
        odradek("log-dirs", "move", topic, "0", target, "--broker", "0", "-b", proc.bootstrap)
        seen: set[tuple[str, bool]] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for _ in range(200):  # the producer goes on during the move
                producer.produce(topic, value=payload + b"%d" % sent, on_delivery=delivered)
                sent += 1
                producer.poll(0)
            now = where()
            seen.update(now)
            if now == [(target, False)]:
                break
        assert where() == [(target, False)], (where(), seen)
        assert (target, False) in seen and not any(
            future and path != target for path, future in seen
        )
        for _ in range(500):
            producer.produce(topic, value=payload + b"%d" % sent, on_delivery=delivered)
            sent += 1
        assert producer.flush(60) == 0
        assert errors == []
        assert sorted(acked) == list(range(sent))  # no gap, no duplicate: offsets carried over
        # removed by the maintenance thread log.segment.delete.delay.ms (the topics'
        # file.delete.delay.ms) after the swap (its fsyncs can take long on a loaded machine)
        try:
            wait_for(lambda: not any(Path(source).glob(f"{topic}-0*")), "the old copy removed", 120)
        except AssertionError as e:
            left = sorted(p.name for p in Path(source).glob(f"{topic}-0*"))
            raise AssertionError(f"{e}: {left} left; broker log: {proc.log()[-3000:]}") from None
        proc.stop()
        proc.start()
        consumer = Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": unique("g"),
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        values = []
        deadline = time.monotonic() + 90
        while len(values) < sent and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                if m.error() is None:
                    values.append(int(m.value()[2000:]))
        consumer.close()
        assert values == list(range(sent))
        assert where() == [(target, False)]
    finally:
        proc.stop()
