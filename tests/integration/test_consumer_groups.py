"""KIP-848 consumer groups with real clients against real broker subprocesses: confluent-kafka
(librdkafka) consumers with ``group.protocol=consumer`` in separate processes that the tests
start, SIGKILL and close; their logs show who owned which partition when
(:mod:`tests.support.group_log`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.integration.broker_process import BrokerProcess
from tests.support import group_log
from tests.support.group_log import Worker, start_worker
from tests.support.kafka_clients import create_topic
from tests.support.ports import free_port
from tests.support.raw_client import call, connect
from tests.support.waiting import wait_for

#: short sessions so that a SIGKILLed member's partitions move within seconds
SETTINGS = {
    "offsets.topic.num.partitions": "5",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}


def produce_numbers(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def describe(bootstrap: str, group: str) -> Any:
    """ConsumerGroupDescribe v1 of one group, as the broker answers it (None while the broker
    cannot be reached)."""
    try:
        sock = connect(bootstrap)
    except OSError:
        return None
    try:
        request = ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False
        )
        response = call(sock, request, 1)
    except OSError:
        return None
    finally:
        sock.close()
    (described,) = response.groups
    return described


def stable_with(bootstrap: str, group: str, members: int) -> Any:
    d = describe(bootstrap, group)
    return d if d is not None and d.group_state == "Stable" and len(d.members) == members else None


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in got}


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(10)


def wait_all_processed(tmp: Path, workers: list[Worker], count: int, timeout: float) -> None:
    def done() -> bool:
        seen: set[int] = set()
        for w in workers:
            for line in w.log_path.read_text().splitlines():
                parts = line.split(" ")
                if len(parts) == 5 and parts[1] == "rec":
                    seen.add(int(parts[4]))
        return len(seen) >= count

    def slowly() -> bool:
        if done():
            return True
        time.sleep(1)
        return False

    try:
        wait_for(slowly, f"all {count} records processed", timeout=timeout)
    except AssertionError as e:
        # in the message, so that the run's summary (all a CI log may keep) carries it
        raise AssertionError(f"{e}\n{processing_report(workers, count)}") from None


def processing_report(workers: list[Worker], count: int) -> str:
    """What the workers show when records are missing: per worker its state, its last log
    lines and the end of its stderr (librdkafka's complaints); the missing values."""
    seen: set[int] = set()
    lines = []
    for w in workers:
        log_lines = w.log_path.read_text().splitlines()
        for line in log_lines:
            parts = line.split(" ")
            if len(parts) == 5 and parts[1] == "rec":
                seen.add(int(parts[4]))
        stderr = w.log_path.with_suffix(".stderr")
        tail = stderr.read_text(errors="replace")[-3000:] if stderr.exists() else ""
        state = "running" if w.proc.poll() is None else f"exited {w.proc.returncode}"
        ctl = [line for line in log_lines if " rec " not in line]
        lines.append(f"--- {w.name} ({state}): {ctl[-15:]}\nstderr: {tail}")
    missing = sorted(set(range(count)) - seen)
    lines.append(f"{len(missing)} missing, first {missing[:20]}")
    return "\n".join(lines)


def test_members_come_and_go_without_two_owners_and_nothing_is_lost(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """5 members over 12 partitions consume 100k numbered records while members are SIGKILLed,
    closed and started: every record is processed, a new owner resumes at the committed
    offset, a partition never has two owners, and members that keep their partitions keep
    consuming through every change (the longest pause is printed)."""
    count, partitions = 100_000, 12
    with BrokerProcess(tmp_path / "data", SETTINGS) as broker:
        topic, group = "numbers", "kip848"
        create_topic(broker.bootstrap, topic, partitions)
        produce_numbers(broker.bootstrap, topic, count, partitions)
        rate = 350.0  # records per second per member: the churn happens while there is backlog

        def start(name: str) -> Worker:
            w = start_worker(tmp_path, name, broker.bootstrap, group, topic, rate=rate)
            workers.append(w)
            return w

        members = {f"c{i}": start(f"c{i}") for i in range(5)}
        changes: list[tuple[float, str]] = []
        wait_for(lambda: stable_with(broker.bootstrap, group, 5), "5 stable members", timeout=60)
        schedule = [
            ("kill", "c1"),
            ("start", "c5"),
            ("close", "c2"),
            ("kill", "c3"),
            ("start", "c6"),
        ]
        for action, name in schedule:
            time.sleep(8)
            changes.append((time.time(), name))
            if action == "kill":
                members[name].kill()
            elif action == "close":
                members[name].stop()
            else:
                members[name] = start(name)
        wait_all_processed(tmp_path, workers, count, timeout=300)
        for w in workers:
            if w.proc.poll() is None:
                w.stop()
        parsed = group_log.parse(workers)
        values = {v for *_, v in parsed.records}
        assert values == set(range(count)), f"{count - len(values)} records never processed"
        assert group_log.overlaps(parsed) == []
        assert group_log.bad_resumptions(parsed) == []
        # every record's offset is committed at the end
        ends = {
            p: count // partitions + (1 if p < count % partitions else 0) for p in range(partitions)
        }
        assert committed(broker.bootstrap, group, topic, partitions) == ends
        pause, where = group_log.longest_pause(parsed, changes)
        duplicates = len(parsed.records) - count
        print(
            f"\nKIP-848, 5 members, 12 partitions, 100k records, 2 SIGKILLs, 1 close, 2 joins: "
            f"longest pause of a member that kept its partitions through a change: "
            f"{pause * 1000:.0f} ms ({where}); {duplicates} records processed twice "
            f"(after SIGKILLs, from the last commit)"
        )
        assert pause < 30, "a sanity bound: members that keep partitions do not stop"
        assert not [e for e in parsed.errors if "commit-failed" in e], parsed.errors


def test_group_survives_broker_restarts(tmp_path: Path, workers: list[Worker]) -> None:
    """Members keep their member ids, epochs and partitions across a clean restart and a
    SIGKILL of the broker: the coordinator reloads the group from __consumer_offsets."""
    port = free_port()
    # Kafka's default session: a member's client may take up to reconnect.backoff.max.ms
    # (10 s in librdkafka) to reach the restarted broker, and must not be fenced meanwhile
    settings = dict(
        SETTINGS,
        listeners=f"PLAINTEXT://127.0.0.1:{port}",
        **{"group.consumer.session.timeout.ms": "45000"},
    )
    broker = BrokerProcess(tmp_path / "data", settings).start()
    try:
        topic, group = "restarts", "survivor"
        create_topic(broker.bootstrap, topic, 6)
        produce_numbers(broker.bootstrap, topic, 30_000, 6)
        for i in range(3):
            workers.append(
                start_worker(tmp_path, f"r{i}", broker.bootstrap, group, topic, rate=300)
            )

        def stable() -> Any:
            return stable_with(broker.bootstrap, group, 3)

        before = wait_for(stable, "a stable group of 3", timeout=60)
        members = {m.member_id: m.member_epoch for m in before.members}
        for how in ("restart", "kill"):
            if how == "restart":
                broker.restart()
            else:
                broker.kill()
                broker.start()
            after = wait_for(stable, f"the group after a broker {how}", timeout=60)
            # the same members, none fenced: the group was restored, not rebuilt
            assert {m.member_id for m in after.members} == set(members), how
            assert after.group_epoch == before.group_epoch, how
            broker.wait_for_log(f"loaded consumer group {group} with 3 member(s)")
            time.sleep(3)  # the members go on consuming before the next one
        wait_all_processed(tmp_path, workers, 30_000, timeout=240)
        for w in workers:
            w.stop()
        parsed = group_log.parse(workers)
        assert group_log.overlaps(parsed) == []
        assert {v for *_, v in parsed.records} == set(range(30_000))
        assert not [line for line in broker.log().splitlines() if "Traceback" in line]
    finally:
        broker.stop()


def test_admin_client_lists_and_describes_consumer_groups(
    tmp_path: Path, workers: list[Worker]
) -> None:
    with BrokerProcess(tmp_path / "data", SETTINGS) as broker:
        create_topic(broker.bootstrap, "described", 3)
        produce_numbers(broker.bootstrap, "described", 300, 3)
        workers.append(start_worker(tmp_path, "d0", broker.bootstrap, "dg", "described", rate=50))
        wait_for(lambda: stable_with(broker.bootstrap, "dg", 1), "a stable group", timeout=60)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = admin.list_consumer_groups().result(30)
        (found,) = [g for g in listed.valid if g.group_id == "dg"]
        assert found.state == ConsumerGroupState.STABLE
        assert str(found.type).endswith("CONSUMER")
        (future,) = admin.describe_consumer_groups(["dg"]).values()
        desc = future.result(30)
        assert desc.state == ConsumerGroupState.STABLE
        assert str(desc.type).endswith("CONSUMER")
        (member,) = desc.members
        assert member.client_id == "d0"
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1, 2]


def test_regex_subscription_picks_up_a_topic_created_later(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """librdkafka sends a ``^...`` subscription as ``subscribed_topic_regex``; the coordinator
    resolves it (RE2) and resolves it again once topics are created."""
    with BrokerProcess(tmp_path / "data", SETTINGS) as broker:
        create_topic(broker.bootstrap, "regex-a", 2)
        create_topic(broker.bootstrap, "unrelated", 2)
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "regexes",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        try:
            consumer.subscribe(["^regex-.*"])

            def assigned() -> set[tuple[str, int]]:
                consumer.poll(0.2)
                return {(tp.topic, tp.partition) for tp in consumer.assignment()}

            wait_for(lambda: assigned() == {("regex-a", 0), ("regex-a", 1)}, "regex-a", 60)
            create_topic(broker.bootstrap, "regex-b", 3)
            wanted = {
                ("regex-a", 0),
                ("regex-a", 1),
                ("regex-b", 0),
                ("regex-b", 1),
                ("regex-b", 2),
            }
            wait_for(lambda: assigned() == wanted, "regex-b picked up", 90)
            d = describe(broker.bootstrap, "regexes")
            (member,) = d.members
            assert member.subscribed_topic_regex is not None
            assert "regex-" in member.subscribed_topic_regex
        finally:
            consumer.close()


def test_classic_members_and_an_online_upgrade_and_downgrade(
    tmp_path: Path, workers: list[Worker]
) -> None:
    """A classic group (cooperative-sticky) is converted to a consumer group when a KIP-848
    member joins; its classic members stay in the group through the classic protocol; when the
    KIP-848 member leaves the group goes back to the classic protocol. Nothing is lost, no
    partition has two owners."""
    count, partitions = 20_000, 6
    with BrokerProcess(tmp_path / "data", SETTINGS) as broker:
        topic, group = "mixed", "migrating"
        create_topic(broker.bootstrap, topic, partitions)
        produce_numbers(broker.bootstrap, topic, count, partitions)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        def group_type() -> str:
            listed = admin.list_consumer_groups().result(30)
            found = [g for g in listed.valid if g.group_id == group]
            return str(found[0].type).rsplit(".", 1)[-1] if found else ""

        for i in range(2):
            workers.append(
                start_worker(
                    tmp_path,
                    f"classic{i}",
                    broker.bootstrap,
                    group,
                    topic,
                    protocol="classic",
                    rate=200,
                )
            )
        wait_for(lambda: group_type() == "CLASSIC", "a classic group", timeout=60)
        time.sleep(4)
        modern = start_worker(tmp_path, "modern", broker.bootstrap, group, topic, rate=200)
        workers.append(modern)
        upgraded = wait_for(lambda: stable_with(broker.bootstrap, group, 3), "upgraded", 90)
        assert sorted(m.member_type for m in upgraded.members) == [0, 0, 1]
        time.sleep(4)
        modern.stop()
        wait_for(lambda: group_type() == "CLASSIC", "downgraded", timeout=60)
        wait_all_processed(tmp_path, workers, count, timeout=300)
        for w in workers:
            w.stop()
        parsed = group_log.parse(workers)
        assert {v for *_, v in parsed.records} == set(range(count))
        assert group_log.overlaps(parsed) == []
        assert group_log.bad_resumptions(parsed) == []
        broker.wait_for_log("upgrading the classic group")
        broker.wait_for_log("downgraded the consumer group to a classic group")


def test_group_configs_through_kafka_configs(tmp_path: Path) -> None:
    """KIP-848 group configs with Kafka 4.x's kafka-configs (``--entity-type groups``): set,
    refused out of the broker's bounds, described alone and with every group listed
    (ListConfigResources), followed by the coordinator (a member is told the group's heartbeat
    interval), then deleted."""
    from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
    from protocol.messages.find_coordinator import FindCoordinatorRequest
    from tests.support.kafka_reference import kraft_version, run_tool

    version = kraft_version()
    tool = "org.apache.kafka.tools.ConfigCommand"
    with BrokerProcess(tmp_path / "data", SETTINGS) as broker:
        create_topic(broker.bootstrap, "configured", 1)
        group = ("--bootstrap-server", broker.bootstrap, "--entity-type", "groups")
        named = (*group, "--entity-name", "cg")
        out = run_tool(
            version, tool, *named, "--alter",
            "--add-config", "consumer.session.timeout.ms=7000,consumer.heartbeat.interval.ms=600",
        ).stdout  # fmt: skip
        assert out.strip() == "Completed updating config for group cg."
        refused = run_tool(
            version, tool, *named, "--alter", "--add-config", "consumer.session.timeout.ms=5",
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive." in (
            refused.stdout + refused.stderr
        )
        expected = (
            "Dynamic configs for group cg are:\n"
            "  consumer.heartbeat.interval.ms=600 sensitive=false synonyms="
            "{DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=600, "
            "STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=1000, "
            "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n"
            "  consumer.session.timeout.ms=7000 sensitive=false synonyms="
            "{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=7000, "
            "STATIC_BROKER_CONFIG:group.consumer.session.timeout.ms=10000, "
            "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n"
        )
        assert run_tool(version, tool, *named, "--describe").stdout == expected
        assert run_tool(version, tool, *group, "--describe").stdout == expected
        join = ConsumerGroupHeartbeatRequest(
            group_id="cg",
            member_id="ZwsvsQy6Q2iY3VtK8a5o1g",
            member_epoch=0,
            rebalance_timeout_ms=10000,
            subscribed_topic_names=["configured"],
            topic_partitions=[],
        )
        with connect(broker.bootstrap) as sock:
            # (FindCoordinator creates __consumer_offsets, as a client's first does)
            wait_for(
                lambda: call(sock, FindCoordinatorRequest(key="cg"), 0).error_code == 0,
                "the group coordinator",
            )
            joined = wait_for(
                lambda: (r := call(sock, join, 1)).error_code != 14 and r, "the group loaded"
            )
        assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 600)
        run_tool(
            version, tool, *named, "--alter",
            "--delete-config", "consumer.session.timeout.ms,consumer.heartbeat.interval.ms",
        )  # fmt: skip
        # the tool lists groups that exist (ListGroups) besides those with configs, as Kafka's
        assert run_tool(version, tool, *group, "--describe").stdout == (
            "Dynamic configs for group cg are:\n"
        )
