"""docs/operations.md stays true: every ``odradek`` command it shows runs, in order, against a
real broker (``HOST:PORT`` is its address, ``DATA`` and ``DATA-2`` its log directories, a free
port the metrics port 9404; the first command, ``odradek serve``, starts that broker), in a
working directory of its own, where ``> FILE`` writes the output; and each command's output
shows what the page says it shows (:data:`CHECKS`, one check per command).

The situations the page describes around its commands are made real where a test can make
them: the group ``billing`` reads the records and stops before its lag is looked at; the broker
is stopped (SIGTERM) for ``check-log`` and started again, and /ready awaited, as in an upgrade;
a log directory on a real 64 MB file system fills up for the full-disk steps, and space is
freed before the restart; two brokers on ZooKeeper go through the rolling-restart steps and
one is replaced by a new machine (empty log directory, same ``broker.id``).

One broker cannot show what needs several (a preferred leader elsewhere, data moving between
brokers): there the runbook's elections are not needed and its reassignment plan keeps the
replicas where they are; tests/integration/test_cli_replication.py runs those commands against
three brokers."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from cli.client import AdminClient as OdradekAdmin
from cli.client import KafkaError
from cli.records import OutRecord, Producer
from protocol.error_codes import ErrorCode
from tests.integration.broker_process import BrokerProcess
from tests.support.cli import pairs, rows
from tests.support.cluster import ProcessCluster, bootstrap, create, restart, start_cluster
from tests.support.kafka_clients import consume_from_start, consume_in_group
from tests.support.metrics import http_or_refused
from tests.support.ports import free_port
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

ROOT = Path(__file__).resolve().parents[2]
ODRADEK = str(Path(sys.executable).parent / "odradek")


def runbook_sections() -> list[tuple[str, list[str]]]:
    """Each ``## `` section of the runbook with its commands (indented lines, also inside a
    list item, starting with ``odradek``), in order."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in (ROOT / "docs" / "operations.md").read_text().splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif line.startswith("    ") and line.strip().startswith("odradek "):
            sections[-1][1].append(line.strip())
    return [s for s in sections if s[1]]


def runbook_commands() -> list[str]:
    return [c for _, commands in runbook_sections() for c in commands]


def section(title: str) -> list[str]:
    found = [commands for name, commands in runbook_sections() if name == title]
    assert found, f"no section {title!r} with commands in docs/operations.md"
    return found[0]


@dataclass
class Run:
    """Where the runbook's commands run: HOST:PORT, DATA (and DATA-2), the working directory."""

    bootstrap: Callable[[], str]
    data: Path
    cwd: Path
    data_2: Path | None = None
    #: the port that replaces the page's metrics port (9404)
    metrics_port: int | None = None
    #: what the checks learned along the way (committed offsets, the partitions' log ends)
    seen: dict[str, Any] = field(default_factory=dict)

    def line(self, command: str) -> str:
        line = command
        if "HOST:PORT" in line:  # (the Start command has none: no broker to ask yet)
            line = line.replace("HOST:PORT", self.bootstrap())
        if self.metrics_port is not None:
            line = line.replace("metrics.port=9404", f"metrics.port={self.metrics_port}")
        if self.data_2 is not None:
            line = line.replace("DATA-2", str(self.data_2))
        return line.replace("DATA", str(self.data))

    def argv(self, command: str) -> list[str]:
        """The command's arguments, the installed ``odradek`` script first (for a command that
        keeps running, such as ``odradek serve``)."""
        return [ODRADEK, *shlex.split(self.line(command))[1:]]

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        line, redirect, output = self.line(command).partition(" > ")
        result = subprocess.run(
            [ODRADEK, *shlex.split(line)[1:]],  # quoted as a shell reads them
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ),
            cwd=self.cwd,
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        if redirect:
            (self.cwd / output.strip()).write_text(result.stdout)
        return result


Result = subprocess.CompletedProcess[str]


# --- what each command shows ----------------------------------------------------------------------


def topic_created(r: Result, run: Run) -> None:
    about = pairs(r.stdout)
    assert re.fullmatch(r"[0-9a-f-]{36}", about.pop("topic_id"))
    assert about == {
        "name": "orders",
        "created": "true",
        "partitions": "3",
        "replication_factor": "1",
    }


def topic_describe(r: Result, run: Run) -> None:
    summary, _, partitions = r.stdout.partition("\n\n")
    about = pairs(summary)
    assert (about["name"], about["partition_count"]) == ("orders", "3")
    assert about["configs"] == "retention.ms=86400000"
    header, table = rows(partitions)
    assert header == [
        "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START-OFFSET",
        "HIGH-WATERMARK",
    ]  # fmt: skip
    assert [row[0] for row in table] == ["0", "1", "2"]
    for row in table:
        assert row[3] == row[4]  # every replica in sync
        assert int(row[6]) <= int(row[7])


def config_changed(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["NAME", "VALUE", "SOURCE", "READ-ONLY"]
    found = {row[0]: (row[1], row[2]) for row in table}
    assert found["message.max.bytes"] == ("2097152", "DYNAMIC_BROKER_CONFIG")
    assert found["log.retention.ms"] == ("604800000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert found["log.dirs"] == (f"{run.data},{run.data_2}", "STATIC_BROKER_CONFIG")
    assert {source for _, source in found.values()} == {
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
    }


def cluster_describe(r: Result, run: Run) -> None:
    about = pairs(r.stdout)
    assert set(about) == {"cluster_id", "controller", "brokers", "topics", "partitions"}
    assert (about["controller"], about["brokers"]) == ("0", "0")
    assert about["cluster_id"] != "-" and int(about["topics"]) >= 1
    assert int(about["partitions"]) >= 3


def topic_list(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["NAME", "PARTITIONS", "REPLICAS"]
    assert ["orders", "3", "1"] in table


def log_dirs_table(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header[:3] == ["BROKER", "DIR", "STATUS"]
    assert sorted((row[0], row[1], row[2]) for row in table) == [
        ("0", str(run.data), "online"),
        ("0", str(run.data_2), "online"),
    ]
    assert sum(int(row[3]) for row in table) >= 3  # orders' partitions, at least


def produced(r: Result, run: Run) -> None:
    assert re.match(r"Produced 3 records \(orders-\d@\d\.\.\d", r.stderr), r.stderr


def consumed(r: Result, run: Run) -> None:
    records = [json.loads(line) for line in r.stdout.splitlines()]
    assert sorted(rec["value"] for rec in records) == ["a", "b", "c"]
    assert {rec["topic"] for rec in records} == {"orders"}
    assert all(
        {"partition", "offset", "timestamp", "key", "headers"} <= set(rec) for rec in records
    )


def group_list(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["GROUP", "STATE", "PROTOCOL-TYPE"]
    assert ["billing", "Empty", "consumer"] in table


LAG_HEADER = [
    "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
    "HOST", "CLIENT-ID",
]  # fmt: skip


def lag_before_reset(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == LAG_HEADER
    # the group read everything: committed offset = log end, lag 0, no member
    for row in table:
        assert row[:3] == ["billing", "orders", row[2]]
        assert row[3] == row[4] and row[5] == "0" and row[6:] == ["-", "-", "-"]
    assert sum(int(row[4]) for row in table) == 3
    run.seen["committed"] = {int(row[2]): row[3] for row in table}


def reset_plan(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    committed = run.seen["committed"]
    assert {int(row[2]): (row[3], row[4]) for row in table} == {
        p: (committed.get(p, "-"), "0") for p in (0, 1, 2)
    }
    assert ("dry run: nothing committed" in r.stderr) == ("--dry-run" in r.args)


def lag_after_reset(r: Result, run: Run) -> None:
    lag = json.loads(r.stdout)
    assert {(row["partition"], row["current_offset"]) for row in lag} == {(0, 0), (1, 0), (2, 0)}
    assert all(row["lag"] == row["log_end_offset"] for row in lag)
    assert sum(row["lag"] for row in lag) == 3


def moving(r: Result, run: Run) -> None:
    assert r.stdout.strip() == f"Moving orders-0 to {run.data_2} on broker 0"


def where_orders(r: Result) -> dict[int, tuple[str, bool]]:
    dirs = json.loads(r.stdout)
    assert all(d["error"] is None and d["broker"] == 0 for d in dirs), dirs
    out: dict[int, tuple[str, bool]] = {}
    for d in dirs:
        for p in d["partitions"]:
            assert p["topic"] == "orders"
            if not p["is_future"] or p["partition"] not in out:
                out[p["partition"]] = (d["path"], p["is_future"])
    return out


def moved(r: Result, run: Run) -> None:
    where = where_orders(r)
    assert set(where) == {0, 1, 2}
    # partition 0's copy in DATA-2: still copying (is_future) or done
    dirs = json.loads(r.stdout)
    assert any(
        p["partition"] == 0 for d in dirs if d["path"] == str(run.data_2) for p in d["partitions"]
    )


def online_after_restart(r: Result, run: Run) -> None:
    where = where_orders(r)
    assert where[0] == (str(run.data_2), False)  # the move finished before the restart
    assert set(where) == {0, 1, 2}


def log_dirs_json(r: Result, run: Run) -> None:
    dirs = json.loads(r.stdout)
    assert {d["path"]: d["error"] for d in dirs} == {str(run.data): None, str(run.data_2): None}


def user_describe(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["USER", "MECHANISM", "ITERATIONS"]
    assert table == [["alice", "SCRAM-SHA-256", "4096"], ["alice", "SCRAM-SHA-512", "4096"]]


ACL_HEADER = ["RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"]
ALICE_ACLS = [
    ["TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"],
    ["TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"],
    ["GROUP", "billing", "LITERAL", "User:alice", "*", "READ", "ALLOW"],
]


def acls(expected: list[list[str]]) -> Callable[[Result, Run], None]:
    def check(r: Result, run: Run) -> None:
        header, table = rows(r.stdout)
        assert header == ACL_HEADER
        assert sorted(table) == sorted(expected)

    return check


def quota_describe(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["USER", "CLIENT-ID", "IP", "QUOTA", "VALUE"]
    assert sorted((row[:4], float(row[4])) for row in table) == [
        (["-", "-", "10.0.0.7", "connection_creation_rate"], 20.0),
        (["alice", "-", "-", "producer_byte_rate"], 1048576.0),
    ]


def producers(r: Result, run: Run) -> None:
    # the command line's producer is not idempotent: no producer state to show
    assert r.stdout.strip() == "no active producers"


def healthy(what: str) -> Callable[[Result, Run], None]:
    def check(r: Result, run: Run) -> None:
        path = run.data_2 if what == "DATA-2" else run.data
        assert re.fullmatch(
            rf"\d+ segments checked in {re.escape(str(path))}: all healthy\n", r.stdout
        )

    return check


def election_table(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["TOPIC", "PARTITION", "RESULT", "ERROR", "MESSAGE"]
    assert table == [["orders", "0", "not_needed", "ELECTION_NOT_NEEDED", "Valid", "replica",
                      "already", "elected"]]  # fmt: skip


def election_json(r: Result, run: Run) -> None:
    assert json.loads(r.stdout) == [
        {
            "topic": "orders",
            "partition": 0,
            "election_type": "PREFERRED",
            "result": "not_needed",
            "error": "ELECTION_NOT_NEEDED",
            "message": "Valid replica already elected",
        }
    ]


def plan_file(r: Result, run: Run) -> None:
    plan = json.loads((run.cwd / "plan.json").read_text())
    assert plan["version"] == 1
    # one broker: the replicas stay where they are
    assert [(p["topic"], p["partition"], p["replicas"]) for p in plan["partitions"]] == [
        ("orders", 0, [0]),
        ("orders", 1, [0]),
        ("orders", 2, [0]),
    ]


def reassign_table(status: str, stderr: str | None = None) -> Callable[[Result, Run], None]:
    def check(r: Result, run: Run) -> None:
        header, table = rows(r.stdout)
        assert header[:3] == ["TOPIC", "PARTITION", "STATUS"]
        assert [row[:3] for row in table] == [["orders", str(p), status] for p in (0, 1, 2)]
        if stderr is not None:
            assert stderr in r.stderr

    return check


def says(text: str, *, stream: str = "stdout") -> Callable[[Result, Run], None]:
    def check(r: Result, run: Run) -> None:
        out = r.stdout if stream == "stdout" else r.stderr
        assert out.strip() == text, out

    return check


def cluster_brokers(r: Result, run: Run) -> None:
    header, table = rows(r.stdout)
    assert header == ["ID", "HOST", "PORT", "RACK", "CONTROLLER"]
    assert table == [["0", "127.0.0.1", run.bootstrap().rsplit(":", 1)[1], "-", "true"]]


def described_json(r: Result, run: Run) -> None:
    topic = json.loads(r.stdout)
    assert topic["name"] == "orders" and topic["partition_count"] == 3
    assert all(p["isr"] == p["replicas"] == [0] for p in topic["partitions"])


#: what the runbook's commands show, checked when the single broker runs them
CHECKS: dict[str, Callable[[Result, Run], None]] = {
    "odradek topic create orders --partitions 3 -b HOST:PORT": topic_created,
    "odradek topic alter-config orders retention.ms=86400000 -b HOST:PORT": says(
        "Updated config of topic orders"
    ),
    "odradek topic describe orders -b HOST:PORT": topic_describe,
    "odradek config set --broker-default log.retention.ms=604800000 -b HOST:PORT": says(
        "Updated log.retention.ms of the cluster-wide broker default"
    ),
    "odradek config set --broker 0 message.max.bytes=2097152 -b HOST:PORT": says(
        "Updated message.max.bytes of broker 0"
    ),
    "odradek config describe --broker 0 --changed -b HOST:PORT": config_changed,
    "odradek config delete --broker 0 message.max.bytes -b HOST:PORT": says(
        "Deleted message.max.bytes of broker 0"
    ),
    "odradek config set --broker-logger 0 broker.replication.replica_manager=DEBUG -b HOST:PORT": (
        says("Updated broker.replication.replica_manager of loggers of broker 0")
    ),
    "odradek cluster describe -b HOST:PORT": cluster_describe,
    "odradek topic list -b HOST:PORT": topic_list,
    "odradek log-dirs -b HOST:PORT": log_dirs_table,
    "odradek topic produce orders -b HOST:PORT --file DATA/../orders.txt": produced,
    "odradek topic consume orders --from-beginning --num 3 --format json -b HOST:PORT": consumed,
    "odradek group list -b HOST:PORT": group_list,
    "odradek group lag billing -b HOST:PORT": lag_before_reset,
    "odradek group reset-offsets billing --topic orders --to-earliest --dry-run -b HOST:PORT": (
        reset_plan
    ),
    "odradek group reset-offsets billing --topic orders --to-earliest --execute -b HOST:PORT": (
        reset_plan
    ),
    "odradek group lag billing --format json -b HOST:PORT": lag_after_reset,
    "odradek log-dirs move orders 0 DATA-2 --broker 0 -b HOST:PORT": moving,
    "odradek log-dirs --topic orders --format json -b HOST:PORT": lambda r, run: (
        online_after_restart(r, run) if run.seen.get("restarted_after_full_disk") else moved(r, run)
    ),
    "odradek user create alice --password alice-secret -b HOST:PORT": says(
        "Created SCRAM credentials of user alice"
    ),
    "odradek user describe alice -b HOST:PORT": user_describe,
    "odradek acl create --allow-principal User:alice --operation READ --operation DESCRIBE "
    "--topic orders -b HOST:PORT": acls(ALICE_ACLS[:2]),
    "odradek acl create --allow-principal User:alice --operation READ --group billing "
    "-b HOST:PORT": acls(ALICE_ACLS[2:]),
    "odradek acl list --principal User:alice -b HOST:PORT": acls(ALICE_ACLS),
    "odradek quota set producer_byte_rate=1048576 --user alice -b HOST:PORT": says(
        "Quotas updated"
    ),
    "odradek quota set connection_creation_rate=20 --ip 10.0.0.7 -b HOST:PORT": says(
        "Quotas updated"
    ),
    "odradek quota describe -b HOST:PORT": quota_describe,
    "odradek transaction list -b HOST:PORT": says("no transactions"),
    "odradek transaction list --transactional-id-pattern 'billing-.*' -b HOST:PORT": says(
        "no transactions"
    ),
    "odradek transaction describe-producers --topic orders -b HOST:PORT": producers,
    "odradek check-log DATA": healthy("DATA"),
    "odradek leader-election --election-type preferred --all-topic-partitions -b HOST:PORT": says(
        "No partition needed a preferred leader election"
    ),
    "odradek leader-election --election-type preferred --topic orders --partition 0 "
    "--format json -b HOST:PORT": election_json,
    "odradek leader-election --election-type unclean --topic orders --partition 0 "
    "-b HOST:PORT": election_table,
    "odradek reassign generate --topic orders --broker-list 0,1,2 --format json -b HOST:PORT "
    "> plan.json": plan_file,
    "odradek reassign execute plan.json --rollback-file rollback.json -b HOST:PORT": (
        reassign_table("started", "Successfully started partition reassignments")
    ),
    "odradek reassign list -b HOST:PORT": says("No partition reassignments found."),
    "odradek reassign verify plan.json --wait -b HOST:PORT": reassign_table("completed"),
    "odradek reassign cancel plan.json -b HOST:PORT": reassign_table(
        "not_active", "None of the specified partition reassignments are active."
    ),
    "odradek log-dirs --format json -b HOST:PORT": log_dirs_json,
    "odradek check-log DATA-2": healthy("DATA-2"),
    "odradek cluster brokers -b HOST:PORT": cluster_brokers,
    "odradek topic describe orders --format json -b HOST:PORT": described_json,
}


def wait_ready(port: int | str) -> None:
    wait_for(
        lambda: http_or_refused(f"http://127.0.0.1:{port}/ready")[0] == 200, "/ready", timeout=120
    )


#: the runbook's first command (section Start): the broker the others run against
START = "odradek serve --override log.dirs=DATA,DATA-2 --override metrics.port=9404"


def test_every_runbook_command_runs_and_shows_what_the_runbook_says(tmp_path: Path) -> None:
    commands = runbook_commands()
    assert len(commands) >= 15
    assert commands[0] == START
    # one check per command, and no check for a command the page no longer shows
    assert set(CHECKS) == set(commands[1:]), set(CHECKS) ^ set(commands[1:])
    data, metrics_port = tmp_path / "data", free_port()
    run = Run(
        lambda: proc.bootstrap, data, tmp_path, data_2=Path(f"{data}-2"), metrics_port=metrics_port
    )
    # the Start command as written (two log dirs, DATA and DATA-2, to move a partition between;
    # the metrics port), with what the page leaves to the defaults and a test may not: a free
    # port, not 9092; the ACL authorizer for the security commands (this anonymous listener is
    # a super user); no initial rebalance delay
    proc = BrokerProcess(
        data,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            "group.initial.rebalance.delay.ms": "0",
        },
        command=run.argv(commands[0]),
    ).start()
    try:
        wait_ready(metrics_port)
        (tmp_path / "orders.txt").write_text("a\nb\nc\n")
        for command in commands[1:]:
            if command.startswith("odradek check-log"):
                # an upgrade's step: stopped (SIGTERM), checked offline
                assert proc.stop() == 0
            result = run.run(command)
            CHECKS[command](result, run)
            if command.startswith("odradek topic consume"):
                # the billing application reads the three records, commits and stops
                assert len(consume_in_group(proc.bootstrap, "billing", "orders", 3)) == 3
            if command.startswith("odradek check-log"):
                proc.start()
                wait_ready(metrics_port)
                if command.endswith("DATA-2"):
                    run.seen["restarted_after_full_disk"] = True
    finally:
        proc.stop()


def test_the_start_command_with_a_properties_file_and_a_log_level(tmp_path: Path) -> None:
    """The Start section's command as written (the installed ``odradek`` script's ``serve``,
    the click command the Dockerfile and docker-compose.yml run too), with ``-c`` (a Kafka
    properties file: a listener on a free port, ``log.dirs`` that the command's ``--override``
    replaces, ``num.partitions``) and ``--log-level DEBUG``: /ready turns 200, confluent-kafka
    produces and consumes, the file's settings and the override both apply, DEBUG lines are
    logged, and SIGTERM stops the broker cleanly (exit status 0)."""
    from confluent_kafka import Producer as CProducer

    (start,) = section("Start")
    assert start == START
    data, port, metrics_port = tmp_path / "data", free_port(), free_port()
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# Kafka's server.properties keys\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'from-file'}\n"
        "num.partitions=3\n"
        "group.initial.rebalance.delay.ms=0\n"
    )
    run = Run(
        lambda: f"127.0.0.1:{port}",
        data,
        tmp_path,
        data_2=Path(f"{data}-2"),
        metrics_port=metrics_port,
    )
    command = [*run.argv(start), "-c", str(properties), "--log-level", "DEBUG"]
    assert command[:2] == [ODRADEK, "serve"]
    proc = BrokerProcess(data, command=command).start()
    try:
        wait_ready(metrics_port)
        assert proc.port == port  # the file's listener
        producer = CProducer({"bootstrap.servers": proc.bootstrap})
        for i in range(6):
            producer.produce("started", key=b"%d" % i, value=b"record-%d" % i)
        assert producer.flush(30) == 0
        values = [m.value() for m in consume_from_start(proc.bootstrap, "started", 3, 6)]
        assert sorted(values) == [b"record-%d" % i for i in range(6)]

        # num.partitions from the file; log.dirs from the command, over the file's
        topic = json.loads(
            run.run("odradek topic describe started --format json -b HOST:PORT").stdout
        )
        assert topic["partition_count"] == 3
        dirs = json.loads(run.run("odradek log-dirs --format json -b HOST:PORT").stdout)
        assert sorted(d["path"] for d in dirs) == [str(data), f"{data}-2"]
        assert not (tmp_path / "from-file").exists()
        # --log-level DEBUG: the connections' DEBUG lines (INFO, the default, leaves them out)
        wait_for(
            lambda: re.search(r"^\[.*\] DEBUG .*\(broker\.net\.connection\)$", proc.log(), re.M),
            "a DEBUG line of broker.net.connection",
        )
    finally:
        code = proc.stop()
    assert code == 0, proc.log()[-3000:]
    assert "Odradek broker 0 stopped cleanly" in proc.log()


# --- a full disk ---------------------------------------------------------------------------------


def test_the_full_disk_steps_on_a_full_file_system(tmp_path: Path, small_tmpfs: Path) -> None:
    """The section's commands with DATA-2 on a real 64 MB tmpfs that fills up: ``log-dirs``
    shows it offline while DATA serves; the broker is stopped, ``check-log`` finds nothing
    that recovery would cut, space is freed (the tmpfs grown), the broker restarted: the
    directory is online and every acknowledged record is read back."""
    commands = section("Recover from a full disk")
    assert commands == [
        "odradek log-dirs --format json -b HOST:PORT",
        "odradek check-log DATA-2",
        "odradek log-dirs --topic orders --format json -b HOST:PORT",
    ]
    data = tmp_path / "data"
    metrics_port = free_port()
    proc = BrokerProcess(
        data, {"log.dirs": f"{data},{small_tmpfs}", "metrics.port": str(metrics_port)}
    ).start()
    run = Run(lambda: proc.bootstrap, data, tmp_path, data_2=small_tmpfs)
    try:
        with OdradekAdmin(proc.bootstrap) as client:
            client.create_topic("orders", 3, 1, {})
            wait_for(lambda: len(client.topic("orders").partitions) == 3, "orders")
            dirs = json.loads(run.run("odradek log-dirs --format json -b HOST:PORT").stdout)
            on_tmpfs = sorted(
                p["partition"]
                for d in dirs
                if d["path"] == str(small_tmpfs)
                for p in d["partitions"]
            )
            assert on_tmpfs, dirs  # new partitions go to the directory with the fewest
            full = on_tmpfs[0]
            healthy = next(p for p in (0, 1, 2) if p not in on_tmpfs)
            value = os.urandom(700 * 1024)
            acknowledged = 0
            with pytest.raises(KafkaError) as failure:
                for _ in range(200):
                    producer = Producer(client, "orders")
                    producer.add(OutRecord(value, partition=full))
                    producer.flush()
                    acknowledged += 1
            assert failure.value.code == ErrorCode.KAFKA_STORAGE_ERROR and acknowledged > 10
            # the other directory keeps serving
            producer = Producer(client, "orders")
            producer.add(OutRecord(b"still here", partition=healthy))
            producer.flush()

        # the directory is offline, the other one serves
        dirs = json.loads(run.run(commands[0]).stdout)
        assert {d["path"]: d["error"] for d in dirs} == {
            str(data): None,
            str(small_tmpfs): "KAFKA_STORAGE_ERROR",
        }
        assert proc.stop() == 0
        checked = run.run(commands[1])
        assert re.fullmatch(
            rf"\d+ segments checked in {re.escape(str(small_tmpfs))}: all healthy\n",
            checked.stdout,
        )
        # free space, then restart
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_tmpfs)], check=True)
        proc.start()
        wait_ready(metrics_port)
        dirs = json.loads(run.run(commands[2]).stdout)
        assert {d["path"]: d["error"] for d in dirs} == {str(data): None, str(small_tmpfs): None}
        assert full in {p["partition"] for d in dirs if d["path"] == str(small_tmpfs)
                        for p in d["partitions"]}  # fmt: skip
        consumer = Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": "check",
                "fetch.message.max.bytes": 2 * 1024 * 1024,
            }
        )
        consumer.assign([TopicPartition("orders", full, 0)])
        got = 0
        while got < acknowledged:
            m = consumer.poll(30)
            assert m is not None, f"{got} of {acknowledged} records read back"
            if m.error() is None:
                assert m.value() == value
                got += 1
        consumer.close()
        # and the partition takes writes again
        with OdradekAdmin(proc.bootstrap) as client:
            producer = Producer(client, "orders")
            producer.add(OutRecord(b"after", partition=full))
            producer.flush()
    finally:
        proc.stop()


# --- a rolling restart and a replaced broker, on two brokers -----------------------------------


@pytest.fixture
def two_brokers(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[ProcessCluster]:
    c = start_cluster(
        zookeeper,
        tmp_path,
        (1, 2),
        lambda _: {"metrics.port": str(free_port()), "auto.leader.rebalance.enable": "false"},
    )
    yield c
    c.close()


def isr_complete(run: Run, command: str) -> dict[str, Any] | None:
    """The runbook's ``topic describe`` (either format), once every partition's ISR is its
    replica set."""
    out = run.run(command).stdout
    if "--format json" in command:
        topic = json.loads(out)
        parts = [(p["partition"], p["replicas"], p["isr"]) for p in topic["partitions"]]
    else:
        _, table = rows(out.partition("\n\n")[2])
        parts = [(int(r[0]), r[3].split(","), r[4].split(",")) for r in table]
    if len(parts) == 3 and all(sorted(isr) == sorted(replicas) for _, replicas, isr in parts):
        return {"partitions": parts}
    return None


def brokers_listed(run: Run, command: str) -> list[tuple[str, str]]:
    """``cluster brokers``: (id, port) of each broker listed."""
    header, table = rows(run.run(command).stdout)
    assert header == ["ID", "HOST", "PORT", "RACK", "CONTROLLER"]
    return sorted((row[0], row[2]) for row in table)


@pytest.mark.zookeeper
def test_rolling_restart_and_replacing_a_broker(
    two_brokers: ProcessCluster, tmp_path: Path
) -> None:
    c = two_brokers
    run = Run(lambda: bootstrap(c), tmp_path, tmp_path)
    create(c, "orders", [[1, 2], [2, 1], [1, 2]])
    subprocess.run(
        [ODRADEK, "topic", "produce", "orders", "-b", bootstrap(c)],
        input="".join(f"r{i}\n" for i in range(30)),
        text=True,
        check=True,
        capture_output=True,
    )

    # the rolling restart: one broker at a time, SIGTERM (a controlled shutdown), start, /ready,
    # back in every ISR
    [describe] = section("Rolling restart of a cluster")
    assert describe == "odradek topic describe orders -b HOST:PORT"
    for broker_id in (1, 2):
        proc = c.brokers[broker_id]
        assert proc.stop() == 0
        assert f"controlled shutdown of broker {broker_id} succeeded" in proc.log()
        restart(c, broker_id)
        wait_ready(proc.overrides["metrics.port"])
        wait_for(lambda: isr_complete(run, describe), "broker back in every ISR", timeout=120)

    # a new machine replaces broker 2: empty log directory, the same broker.id and ZooKeeper
    commands = section("Replace a broker")
    assert commands == [
        "odradek cluster brokers -b HOST:PORT",
        "odradek cluster brokers -b HOST:PORT",
        "odradek topic describe orders --format json -b HOST:PORT",
    ]
    old = c.brokers[2]
    old.kill()
    old_port = old.port
    # until its session expires, the dead broker is still registered
    replacement = c.process(2, name="broker-2-replacement", **{"metrics.port": str(free_port())})
    c.brokers[2] = replacement
    wait_for(
        lambda: brokers_listed(run, commands[0]) == [("1", str(c.brokers[1].port))],
        "broker 2 gone from the cluster",
    )
    restart(c, 2)
    wait_ready(replacement.overrides["metrics.port"])
    assert replacement.port != old_port
    assert brokers_listed(run, commands[1]) == [
        ("1", str(c.brokers[1].port)),
        ("2", str(replacement.port)),
    ]
    wait_for(lambda: isr_complete(run, commands[2]), "the replacement in every ISR", timeout=120)
    # it copied its replicas: the same bytes as broker 1's
    sizes = {}
    for broker_id in (1, 2):
        dirs = json.loads(
            run.run(
                f"odradek log-dirs --broker {broker_id} --topic orders --format json -b HOST:PORT"
            ).stdout
        )
        sizes[broker_id] = {(p["partition"], p["size"]) for d in dirs for p in d["partitions"]}
    assert sizes[1] == sizes[2] and sum(size for _, size in sizes[2]) > 0
