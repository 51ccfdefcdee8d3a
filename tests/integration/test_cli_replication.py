"""``odradek leader-election`` and ``odradek reassign`` driven as an operator drives them (a
subprocess, both output formats) against a real cluster: three ``odradek serve`` processes on a
real ZooKeeper, shared by the module's tests, which run in file order and leave all three
running.

No broker rebalances leadership by itself here, so a leader moved away stays away until an
election moves it back. The brokers' ZooKeeper sessions are long (30 s) so that a SIGSTOPped
broker stays registered while a reassignment to it starts: it cannot catch up, so the
reassignment is reliably still in progress while ``list``, ``verify`` and ``cancel`` look at it.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import as_json, odradek
from tests.support.cluster import (
    ProcessCluster,
    bootstrap,
    controller,
    create,
    describe,
    restart,
    start_cluster,
    wait_in_sync,
)
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

BROKERS = (1, 2, 3)


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessCluster]:
    c = start_cluster(
        zookeeper,
        tmp_path_factory.mktemp("cli-replication"),
        BROKERS,
        lambda _: {
            "auto.leader.rebalance.enable": "false",
            "zookeeper.session.timeout.ms": "30000",
            "controlled.shutdown.retry.backoff.ms": "500",
        },
    )
    yield c
    c.close()


def leaders(cluster: ProcessCluster, topic: str) -> dict[int, int]:
    return {p: s[0] for p, s in describe(cluster, topic).items()}


def table(text: str) -> dict[tuple[str, str], list[str]]:
    """A table's rows by (first, second column), header left out."""
    rows = [line.split() for line in text.splitlines()[1:] if line.strip()]
    return {(r[0], r[1]): r for r in rows}


def write_plan(path: Path, moves: dict[tuple[str, int], list[int]]) -> str:
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()
                ],
            }
        )
    )
    return str(path)


def produce(b: str, topic: str, values: list[str]) -> None:
    odradek("topic", "produce", topic, "-b", b, stdin="".join(v + "\n" for v in values))


def consume(b: str, topic: str, count: int) -> list[Any]:
    out = odradek(
        "topic", "consume", topic, "--from-beginning", "--num", str(count), "--format", "json",
        "-b", b,
    ).stdout  # fmt: skip
    return [json.loads(line)["value"] for line in out.splitlines() if line.strip()]


# --- leader-election ---------------------------------------------------------------------------


def test_preferred_election_moves_leadership_back_to_the_first_replica(cluster):
    topic = "cli-elect"
    create(cluster, topic, [[1, 2, 3], [1, 3, 2], [2, 3, 1]])
    cluster.brokers[1].stop()  # controlled shutdown: partitions 0 and 1 move off broker 1
    wait_for(lambda: 1 not in leaders(cluster, topic).values(), "leadership off broker 1")
    b = bootstrap(cluster)
    # the preferred replica is down: Kafka's error, and the command fails
    failed = odradek(
        "leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0",
        "--format", "json", "-b", b, check=False,
    )  # fmt: skip
    assert failed.returncode == 1
    assert [r["error"] for r in json.loads(failed.stdout)] == ["PREFERRED_LEADER_NOT_AVAILABLE"]
    assert "1 replica(s) could not be elected" in failed.stderr
    restart(cluster, 1)
    layout = wait_in_sync(cluster, topic, 3)
    assert layout[0][0] != 1 and layout[1][0] != 1 and layout[2][0] == 2
    b = bootstrap(cluster)

    rows = as_json(
        "leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0",
        "-b", b,
    )  # fmt: skip
    assert rows == [
        {
            "topic": topic,
            "partition": 0,
            "election_type": "PREFERRED",
            "result": "elected",
            "error": None,
            "message": "Successfully completed leader election (PREFERRED)",
        }
    ]
    wait_for(lambda: leaders(cluster, topic)[0] == 1, "broker 1 leads partition 0 again")

    # every partition of the topic, as a table: only partition 1 still needs an election
    out = odradek("leader-election", "--election-type", "PREFERRED", "--topic", topic, "-b", b)
    found = table(out.stdout)
    assert found[(topic, "0")][2:4] == ["not_needed", "ELECTION_NOT_NEEDED"]
    assert found[(topic, "1")][2:4] == ["elected", "-"]
    assert found[(topic, "2")][2:4] == ["not_needed", "ELECTION_NOT_NEEDED"]
    assert "Valid replica already elected" in out.stdout
    wait_for(lambda: leaders(cluster, topic) == {0: 1, 1: 1, 2: 2}, "every preferred leader")

    # every partition of the cluster: those that needed no election are left out of the answer
    assert (
        as_json(
            "leader-election", "--election-type", "preferred", "--all-topic-partitions", "-b", b
        )
        == []
    )
    out = odradek(
        "leader-election", "--election-type", "preferred", "--all-topic-partitions", "-b", b
    )
    assert out.stdout.strip() == "No partition needed a preferred leader election"

    # Kafka's JSON file of partitions
    path = Path(cluster.tmp) / "election.json"
    path.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 2}]}))
    rows = as_json(
        "leader-election", "--election-type", "preferred", "--path-to-json-file", str(path),
        "-b", b,
    )  # fmt: skip
    assert [(r["partition"], r["error"]) for r in rows] == [(2, "ELECTION_NOT_NEEDED")]


def test_unclean_election_answers_not_needed_where_a_leader_lives(cluster):
    topic = "cli-elect"
    b = bootstrap(cluster)
    rows = as_json(
        "leader-election", "--election-type", "unclean", "--topic", topic, "--partition", "1",
        "-b", b,
    )  # fmt: skip
    assert rows == [
        {
            "topic": topic,
            "partition": 1,
            "election_type": "UNCLEAN",
            "result": "not_needed",
            "error": "ELECTION_NOT_NEEDED",
            "message": "Valid replica already elected",
        }
    ]
    out = odradek("leader-election", "--election-type", "unclean", "--topic", topic, "-b", b)
    assert [r[2:4] for r in table(out.stdout).values()] == [
        ["not_needed", "ELECTION_NOT_NEEDED"]
    ] * 3
    assert (
        as_json("leader-election", "--election-type", "unclean", "--all-topic-partitions", "-b", b)
        == []
    )
    # an unknown partition fails the command, as kafka-leader-election does
    failed = odradek(
        "leader-election", "--election-type", "unclean", "--topic", "cli-nope", "--partition", "0",
        "-b", b, check=False,
    )  # fmt: skip
    assert failed.returncode == 1
    assert table(failed.stdout)[("cli-nope", "0")][2:4] == ["failed", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert "odradek: 1 replica(s) could not be elected" in failed.stderr
    usage = odradek("leader-election", "--election-type", "preferred", "-b", b, check=False)
    assert usage.returncode == 2


# --- reassign ----------------------------------------------------------------------------------


def test_reassign_grows_and_moves_replicas_then_rolls_back(cluster, tmp_path):
    create(cluster, "cli-grow", [[1]])
    create(cluster, "cli-move", [[1, 2]])
    b = bootstrap(cluster)
    grow = [f"grow-{i}-" + "x" * 200 for i in range(300)]
    move = [f"move-{i}" for i in range(100)]
    produce(b, "cli-grow", grow)
    produce(b, "cli-move", move)
    plan = write_plan(tmp_path / "plan.json", {("cli-grow", 0): [1, 2, 3], ("cli-move", 0): [3, 2]})
    rollback = tmp_path / "rollback.json"

    rows = as_json("reassign", "execute", plan, "--rollback-file", str(rollback), "-b", b)
    assert [
        (r["topic"], r["partition"], r["status"], r["replicas"], r["target_replicas"], r["error"])
        for r in rows
    ] == [
        ("cli-grow", 0, "started", [1], [1, 2, 3], None),
        ("cli-move", 0, "started", [1, 2], [3, 2], None),
    ]
    assert json.loads(rollback.read_text()) == {
        "version": 1,
        "partitions": [
            {"topic": "cli-grow", "partition": 0, "replicas": [1], "log_dirs": ["any"]},
            {"topic": "cli-move", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        ],
    }
    # whatever is still moving has list's shape (the moves may be done already)
    for r in as_json("reassign", "list", "-b", b):
        assert set(r) == {"topic", "partition", "replicas", "adding_replicas", "removing_replicas"}

    rows = as_json("reassign", "verify", plan, "--wait", "-b", b)
    assert [(r["topic"], r["status"], r["replicas"]) for r in rows] == [
        ("cli-grow", "completed", [1, 2, 3]),
        ("cli-move", "completed", [3, 2]),
    ]
    found = table(odradek("reassign", "verify", plan, "-b", b).stdout)
    assert [r[2] for r in found.values()] == ["completed", "completed"]
    assert as_json("reassign", "list", "-b", b) == []
    assert odradek("reassign", "list", "-b", b).stdout.strip() == (
        "No partition reassignments found."
    )
    assert wait_in_sync(cluster, "cli-grow", 1)[0][1] == [1, 2, 3]
    assert wait_in_sync(cluster, "cli-move", 1)[0][:2] == (3, [3, 2])
    old = cluster.brokers[1].data_dir / "cli-move-0"
    wait_for(lambda: not old.exists(), "broker 1's replica of cli-move-0 deleted")
    assert consume(b, "cli-grow", len(grow)) == grow
    assert consume(b, "cli-move", len(move)) == move

    # the rollback plan, as a table, waiting: back to the original replicas
    out = odradek("reassign", "execute", str(rollback), "--wait", "-b", b)
    found = table(out.stdout)
    assert [r[2] for r in found.values()] == ["completed", "completed"]
    assert "Current partition replica assignment" in out.stderr
    assert wait_in_sync(cluster, "cli-grow", 1)[0][1] == [1]
    assert wait_in_sync(cluster, "cli-move", 1)[0][1] == [1, 2]
    produce(b, "cli-move", ["after"])
    assert consume(b, "cli-grow", len(grow)) == grow
    assert consume(b, "cli-move", len(move) + 1) == [*move, "after"]


def test_reassign_list_verify_and_cancel_while_in_progress(cluster, tmp_path):
    ctrl = controller(cluster)
    stalled = max(b for b in BROKERS if b != ctrl)  # stopped, it cannot catch up
    origin = [b for b in BROKERS if b != stalled]
    topic = "cli-cancel"
    create(cluster, topic, [origin])
    live = ",".join(cluster.brokers[b].bootstrap for b in origin)
    produce(live, topic, [f"c{i}" for i in range(10)])
    plan = write_plan(tmp_path / "plan.json", {(topic, 0): [*origin, stalled]})
    proc = cluster.brokers[stalled]
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        rows = as_json("reassign", "execute", plan, "-b", live)
        assert [(r["status"], r["replicas"]) for r in rows] == [("started", origin)]
        ongoing = {
            "topic": topic,
            "partition": 0,
            "replicas": [*origin, stalled],
            "adding_replicas": [stalled],
            "removing_replicas": [],
        }
        assert as_json("reassign", "list", "-b", live) == [ongoing]
        listed = table(odradek("reassign", "list", "-b", live).stdout)
        assert listed[(topic, "0")][2:] == [
            ",".join(map(str, ongoing["replicas"])),
            str(stalled),
            "-",
        ]
        rows = as_json("reassign", "verify", plan, "-b", live)
        assert [(r["status"], r["replicas"]) for r in rows] == [("in_progress", [*origin, stalled])]
        assert table(odradek("reassign", "verify", plan, "-b", live).stdout)[(topic, "0")][2] == (
            "in_progress"
        )
        # another plan is refused while this one runs (unless --additional), as Kafka does
        refused = odradek("reassign", "execute", plan, "-b", live, check=False)
        assert refused.returncode == 1
        assert "Cannot execute because there is an existing partition assignment" in (
            refused.stderr
        )

        rows = as_json("reassign", "cancel", plan, "-b", live)
        assert [(r["status"], r["replicas"], r["error"]) for r in rows] == [
            ("cancelled", [*origin, stalled], None)
        ]
        assert as_json("reassign", "list", "-b", live) == []
        wait_for(lambda: describe(cluster, topic, ctrl)[0][1] == origin, "back to the origin")
        out = odradek("reassign", "cancel", "--all", "-b", live)
        assert out.stdout.strip() == "None of the specified partition reassignments are active."
        assert as_json("reassign", "cancel", plan, "-b", live)[0]["status"] == "not_active"
        # not moving, and not where the plan wanted it: verify says so (and --wait fails)
        rows = as_json("reassign", "verify", plan, "-b", live)
        assert [(r["status"], r["replicas"]) for r in rows] == [("not_active", origin)]
        waited = odradek(
            "reassign", "verify", plan, "--wait", "--timeout", "1", "-b", live, check=False
        )
        assert waited.returncode == 1 and "There is no active reassignment" in waited.stderr
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    wait_for(lambda: stalled in cluster.registered(), "the stalled broker registered")
    path = proc.data_dir / f"{topic}-0"
    wait_for(lambda: not path.exists(), "no replica left on the stalled broker")
    assert consume(bootstrap(cluster), topic, 10) == [f"c{i}" for i in range(10)]


def test_reassign_generate_and_plan_checks(cluster, tmp_path):
    b = bootstrap(cluster)
    plan = as_json(
        "reassign", "generate", "--topic", "cli-elect", "--broker-list", "1,2,3", "-b", b
    )
    assert plan["version"] == 1
    proposed = {p["partition"]: p["replicas"] for p in plan["partitions"]}
    assert sorted(proposed) == [0, 1, 2]
    assert all(sorted(r) == [1, 2, 3] for r in proposed.values())
    assert sorted(r[0] for r in proposed.values()) == [1, 2, 3]  # leaders spread round robin
    assert all(p["log_dirs"] == ["any"] * 3 for p in plan["partitions"])
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": "cli-grow"}]}))
    out = odradek(
        "reassign", "generate", "--topics-to-move-json-file", str(topics_file),
        "--broker-list", "2,3", "-b", b,
    ).stdout  # fmt: skip
    row = table(out)[("cli-grow", "0")]
    assert row[2] == "1" and row[3] in ("2", "3")
    too_few = odradek(
        "reassign", "generate", "--topic", "cli-elect", "--broker-list", "1,2", "-b", b,
        check=False,
    )  # fmt: skip
    assert too_few.returncode == 1
    assert "Replication factor: 3 larger than available brokers: 2." in too_few.stderr

    def refused(moves: Any, message: str) -> None:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(moves))
        result = odradek("reassign", "execute", str(path), "-b", b, check=False)
        assert result.returncode != 0 and message in result.stderr, result.stderr

    refused({"version": 1, "partitions": []}, "Partition reassignment list cannot be empty")
    refused(
        {"version": 1, "partitions": [{"topic": "cli-grow", "partition": 0, "replicas": [1, 1]}]},
        "Partition replica lists may not contain duplicate entries: cli-grow-0 contains multiple "
        "entries for 1",
    )
    refused(
        {"version": 1, "partitions": [{"topic": "cli-grow", "partition": 0, "replicas": [1, 9]}]},
        "Unknown broker id 9",
    )
    refused(
        {"version": 1, "partitions": [{"topic": "cli-grow", "partition": 5, "replicas": [1]}]},
        "Unable to find partition: cli-grow-5",
    )
    refused({"version": 2, "partitions": []}, "not supported version field value 2")
