"""Apache Kafka's command-line tools against Odradek (issue 15): kafka-topics, kafka-configs,
kafka-consumer-groups (describe, list, reset offsets), kafka-console-producer and -consumer,
kafka-get-offsets, kafka-delete-records, kafka-log-dirs, kafka-leader-election,
kafka-reassign-partitions (list; execute and verify, with and without a throttle),
kafka-transactions (describe, list and describe-producers with a transaction left open) and
kafka-acls, run as ``java -cp <Kafka's jars> <main class>`` (what their bin/ scripts run)
against Odradek in ZooKeeper mode, and the same steps against Kafka 3.9; each step's output must
be what Kafka's own broker makes the tool print, after normalising what differs between two
clusters (topic ids, log directories, sizes, log lines' timestamps, producer ids and times).

kafka-acls --add, --list and --remove run against a broker pair of their own with an authorizer
(Kafka's AclAuthorizer; the tools' principal a super user); the shared pair has none, where
``--list`` is checked.

The steps run once per broker (one JVM each); each test compares one step. A step Odradek cannot
pass yet would be a strict expected failure naming its issue (``PENDING``).

Not here: what needs more than one broker (a reassignment that moves replicas, a preferred
leader election that moves leadership); tests/integration covers those against Odradek clusters.
"""

from __future__ import annotations

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaBroker, run_tool, tool_class, zk_version
from tests.support.reference_fixtures import SHARED_BROKER_SETTINGS
from tests.support.zookeeper import ZooKeeperServer

#: the steps run in the first test's set-up: about a minute, several on a loaded machine
pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Step:
    name: str
    script: str
    args: tuple[str, ...]
    stdin: str | None = None
    #: compare the output's lines as a set (a consumer's order across partitions varies)
    unordered: bool = False
    #: keep only the lines that mention this test's names (a listing shows other tests' too)
    own_lines_only: bool = False
    #: ... and the first line, a table's header
    keep_header: bool = False
    #: columns of a tab-separated table whose values each broker picks (producer ids, times)
    volatile_columns: tuple[str, ...] = ()


def steps(topic: str, group: str, offsets_file: Path, reassignment_file: Path) -> list[Step]:
    b = ("--bootstrap-server", "{bootstrap}")
    compact = f"{topic}-compact"
    reassignment = ("--reassignment-json-file", str(reassignment_file))
    return [
        Step(
            "topics-create",
            "kafka-topics",
            (
                *b,
                "--create",
                "--topic",
                topic,
                "--partitions",
                "2",
                "--replication-factor",
                "1",
                "--config",
                "retention.ms=1000000",
            ),
        ),
        Step(
            "topics-create-compacted",
            "kafka-topics",
            (
                *b,
                "--create",
                "--topic",
                compact,
                "--partitions",
                "1",
                "--config",
                "cleanup.policy=compact",
            ),
        ),
        Step("topics-create-existing", "kafka-topics", (*b, "--create", "--topic", topic)),
        Step("topics-describe", "kafka-topics", (*b, "--describe", "--topic", topic)),
        Step(
            "topics-alter-partitions",
            "kafka-topics",
            (*b, "--alter", "--topic", topic, "--partitions", "3"),
        ),
        Step(
            "configs-alter",
            "kafka-configs",
            (
                *b,
                "--alter",
                "--entity-type",
                "topics",
                "--entity-name",
                topic,
                "--add-config",
                "retention.ms=2000000,max.message.bytes=200000",
            ),
        ),
        Step(
            "configs-delete",
            "kafka-configs",
            (
                *b,
                "--alter",
                "--entity-type",
                "topics",
                "--entity-name",
                topic,
                "--delete-config",
                "max.message.bytes",
            ),
        ),
        Step(
            "configs-describe",
            "kafka-configs",
            (*b, "--describe", "--entity-type", "topics", "--entity-name", topic),
        ),
        Step(
            "configs-describe-all",
            "kafka-configs",
            (*b, "--describe", "--all", "--entity-type", "topics", "--entity-name", compact),
        ),
        Step(
            "console-producer",
            "kafka-console-producer",
            (*b, "--topic", topic, "--property", "parse.key=true", "--property", "key.separator=:"),
            stdin="".join(f"k{i}:v{i}\n" for i in range(12)),
        ),
        Step(
            "console-producer-compacted",
            "kafka-console-producer",
            (
                *b,
                "--topic",
                compact,
                "--property",
                "parse.key=true",
                "--property",
                "key.separator=:",
            ),
            stdin="a:1\nb:2\na:3\n",
        ),
        Step(
            "console-consumer",
            "kafka-console-consumer",
            (
                *b,
                "--topic",
                topic,
                "--from-beginning",
                "--max-messages",
                "12",
                "--group",
                group,
                "--property",
                "print.key=true",
                "--property",
                "print.partition=true",
                "--property",
                "print.offset=true",
            ),
            unordered=True,
        ),
        Step("groups-list", "kafka-consumer-groups", (*b, "--list"), own_lines_only=True),
        Step("groups-describe", "kafka-consumer-groups", (*b, "--describe", "--group", group)),
        Step(
            "groups-describe-state",
            "kafka-consumer-groups",
            (*b, "--describe", "--group", group, "--state"),
        ),
        Step(
            "groups-reset-dry-run",
            "kafka-consumer-groups",
            (
                *b,
                "--reset-offsets",
                "--group",
                group,
                "--topic",
                topic,
                "--shift-by",
                "-2",
                "--dry-run",
            ),
        ),
        Step(
            "groups-reset-earliest",
            "kafka-consumer-groups",
            (
                *b,
                "--reset-offsets",
                "--group",
                group,
                "--topic",
                topic,
                "--to-earliest",
                "--execute",
            ),
        ),
        Step(
            "groups-reset-offset",
            "kafka-consumer-groups",
            (
                *b,
                "--reset-offsets",
                "--group",
                group,
                "--topic",
                f"{topic}:0",
                "--to-offset",
                "1",
                "--execute",
            ),
        ),
        Step(
            "groups-describe-after-reset",
            "kafka-consumer-groups",
            (*b, "--describe", "--group", group),
        ),
        Step("get-offsets-latest", "kafka-get-offsets", (*b, "--topic", topic)),
        Step("get-offsets-earliest", "kafka-get-offsets", (*b, "--topic", topic, "--time", "-2")),
        Step(
            "delete-records", "kafka-delete-records", (*b, "--offset-json-file", str(offsets_file))
        ),
        Step(
            "get-offsets-after-delete",
            "kafka-get-offsets",
            (*b, "--topic", topic, "--time", "earliest"),
        ),
        Step("log-dirs", "kafka-log-dirs", (*b, "--describe", "--topic-list", topic)),
        Step(
            "leader-election",
            "kafka-leader-election",
            (*b, "--election-type", "preferred", "--topic", topic, "--partition", "0"),
        ),
        Step("reassignments-list", "kafka-reassign-partitions", (*b, "--list")),
        # a single broker can only move a partition to where it is: the reassignment completes
        # at once, and --verify clears the throttles (--throttle sets them)
        Step("reassign-execute", "kafka-reassign-partitions", (*b, "--execute", *reassignment)),
        Step("reassign-verify", "kafka-reassign-partitions", (*b, "--verify", *reassignment)),
        Step(
            "reassign-execute-throttled",
            "kafka-reassign-partitions",
            (*b, "--execute", *reassignment, "--throttle", "1000000"),
        ),
        Step(
            "reassign-verify-throttled",
            "kafka-reassign-partitions",
            (*b, "--verify", *reassignment),
        ),
        Step("acls-list", "kafka-acls", (*b, "--list")),
        Step(
            "transactions-describe",
            "kafka-transactions",
            (*b, "describe", "--transactional-id", f"{group}-none"),
        ),
        # the transaction tool_runs keeps open on <topic>-txn while the steps run
        Step(
            "transactions-list",
            "kafka-transactions",
            (*b, "list"),
            own_lines_only=True,
            keep_header=True,
            volatile_columns=("ProducerId",),
        ),
        Step(
            "transactions-describe-open",
            "kafka-transactions",
            (*b, "describe", "--transactional-id", f"{group}-txn"),
            volatile_columns=(
                "ProducerId",
                "CurrentTransactionStartTimeMs",
                "TransactionDurationMs",
            ),
        ),
        Step(
            "transactions-describe-producers",
            "kafka-transactions",
            (*b, "describe-producers", "--topic", f"{topic}-txn", "--partition", "0"),
            volatile_columns=("ProducerId", "LastTimestamp"),
        ),
        # the console producer's idempotent producer, with no transaction
        Step(
            "transactions-describe-producers-idempotent",
            "kafka-transactions",
            (*b, "describe-producers", "--topic", topic, "--partition", "1"),
            volatile_columns=("ProducerId", "LastTimestamp"),
        ),
        Step(
            "groups-describe-members",
            "kafka-consumer-groups",
            (*b, "--describe", "--group", group, "--members", "--verbose"),
        ),
        Step(
            "groups-delete-offsets",
            "kafka-consumer-groups",
            (*b, "--delete-offsets", "--group", group, "--topic", topic),
        ),
        Step(
            "groups-describe-after-delete-offsets",
            "kafka-consumer-groups",
            (*b, "--describe", "--group", group),
        ),
        # client quotas and SCRAM credentials (KIP-546, KIP-554) through kafka-configs
        *entity_config_steps(
            "quotas",
            "clients",
            f"{group}-client",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            "producer_byte_rate,consumer_byte_rate",
        ),
        # connection rate quotas of an ip entity (KIP-612)
        *entity_config_steps(
            "ip-quotas",
            "ips",
            "127.0.0.5",
            "connection_creation_rate=100",
            "connection_creation_rate",
            describe_all=True,
        ),
        *entity_config_steps(
            "ip-quota-default",
            "ips",
            None,
            "connection_creation_rate=1000000",
            "connection_creation_rate",
        ),
        *entity_config_steps(
            "scram",
            "users",
            f"{group}-user",
            "SCRAM-SHA-256=[iterations=8192,password=tool-secret]",
            "SCRAM-SHA-256",
        ),
        Step("groups-delete", "kafka-consumer-groups", (*b, "--delete", "--group", group)),
        Step("topics-delete", "kafka-topics", (*b, "--delete", "--topic", compact)),
    ]


def entity_config_steps(
    name: str,
    entity_type: str,
    entity: str | None,
    add: str,
    delete: str,
    *,
    describe_all: bool = False,
) -> list[Step]:
    """kafka-configs on one entity (None: the type's default entity): add configs, describe
    them (and, with ``describe_all``, every entity of the type), delete them."""
    b = ("--bootstrap-server", "{bootstrap}")
    named = ("--entity-default",) if entity is None else ("--entity-name", entity)
    target = (*b, "--entity-type", entity_type, *named)
    every = (*b, "--entity-type", entity_type, "--describe")
    return [
        Step(f"{name}-alter", "kafka-configs", (*target, "--alter", "--add-config", add)),
        Step(f"{name}-describe", "kafka-configs", (*target, "--describe")),
        *([Step(f"{name}-describe-all", "kafka-configs", every)] if describe_all else []),
        Step(f"{name}-delete", "kafka-configs", (*target, "--alter", "--delete-config", delete)),
    ]


#: Steps Odradek cannot pass yet, with the issue that makes them pass.
PENDING: dict[str, str] = {}

#: Lines a step's two outputs may differ in, with the allowed difference of docs/compatibility.md
#: that explains them (D6: the topic configs Kafka 4 removed or changed the default of).
ALLOWED_LINES = {
    "configs-describe-all": (
        "D6",
        re.compile(
            r"^\s*(message\.format\.version|message\.downconversion\.enable|"
            r"message\.timestamp\.difference\.max\.ms|message\.timestamp\.after\.max\.ms)="
        ),
    ),
}

#: Parts of a step's lines that may differ, with the allowed difference of docs/compatibility.md
#: that explains them, written the Kafka way in both outputs before comparing (D15: against a
#: broker with DescribeTopicPartitions, as Kafka 4's KRaft brokers and Odradek, kafka-topics 3.9
#: prints the partitions' eligible leader replicas, none; against Kafka 3.9 in ZooKeeper mode it
#: prints N/A).
ALLOWED_PARTS = {
    "topics-describe": ("D15", re.compile(r"Elr:( LastKnownElr:)$"), r"Elr: N/A\1 N/A"),
}


def _volatile_columns(text: str, columns: tuple[str, ...]) -> str:
    """The values of ``columns`` in a tab-separated table (a header line, then rows) replaced
    by ``_``: what each broker picks (producer ids, times)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        header = [c.strip() for c in line.split("\t")]
        if all(c in header for c in columns):
            at = [header.index(c) for c in columns]
            for j in range(i + 1, len(lines)):
                cells = lines[j].split("\t")
                if len(cells) == len(header):
                    for k in at:
                        cells[k] = "_"
                    lines[j] = "\t".join(cells)
            break
    return "\n".join(lines)


_LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+\] (WARN|ERROR|INFO) .*$")


def normalise(text: str, names: dict[str, str]) -> str:
    out = re.sub(r"TopicId: \S+", "TopicId: <id>", text)
    out = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", out)
    for name, placeholder in names.items():
        out = out.replace(name, placeholder)
    out = re.sub(r"\s+\n", "\n", out)
    lines = []
    for line in out.splitlines():
        if _LOG_LINE.match(line):
            # a client-side log line: keep its level and logger, not its time or wording
            m = re.match(r"^\[[^]]+\] (\w+) .*\((\S+)\)$", line)
            line = f"<log {m.group(1)} {m.group(2)}>" if m else "<log>"
        if line.startswith("{") and '"brokers"' in line:
            line = _log_dirs_json(line)
        lines.append(re.sub(r"[ \t]+", " ", line.rstrip()))
    return "\n".join(lines).strip()


def _log_dirs_json(line: str) -> str:
    data: Any = json.loads(line)
    for broker in data.get("brokers", []):
        for log_dir in broker.get("logDirs", []):
            log_dir["logDir"] = "<dir>"
            for p in log_dir.get("partitions", []):
                p["size"] = "<size>"
    return json.dumps(data, sort_keys=True)


def _run_steps(
    bootstrap: str, tmp: Path, names: dict[str, str], step_list: list[Step] | None = None
) -> dict[str, tuple[int, str]]:
    topic = next(k for k, v in names.items() if v == "<topic>")
    group = next(k for k, v in names.items() if v == "<group>")
    offsets_file = tmp / "offsets.json"
    reassignment_file = tmp / "reassignment.json"
    reassignment_file.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [0]}]}
        )
    )
    offsets_file.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": 0, "offset": 2},
                    {"topic": f"{topic}-compact", "partition": 0, "offset": 1},
                ],
            }
        )
    )
    version = zk_version()
    results = {}
    if step_list is None:
        step_list = steps(topic, group, offsets_file, reassignment_file)
    for step in step_list:
        args = [a.replace("{bootstrap}", bootstrap) for a in step.args]
        proc = run_tool(
            version, tool_class(version, step.script), *args, check=False, input_text=step.stdin
        )
        raw = proc.stdout + "\n" + proc.stderr
        if step.volatile_columns:
            raw = _volatile_columns(raw, step.volatile_columns)
        output = normalise(raw, names)
        if step.own_lines_only:
            output = "\n".join(
                line
                for i, line in enumerate(output.splitlines())
                if "<" in line or (step.keep_header and i == 0)
            )
        if step.unordered:
            output = "\n".join(sorted(output.splitlines()))
        results[step.name] = (proc.returncode, output)
    return results


@pytest.fixture(scope="module")
def tool_runs(
    kafka_reference: KafkaBroker,
    odradek_zk: BrokerProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[str, tuple[int, str]]]:
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"tools-{suffix}", f"tools-group-{suffix}"
    # longest first, so that the topic's name is replaced before the group's shorter prefix
    names = {
        f"{topic}-compact": "<topic>-compact",
        f"{topic}-txn": "<topic>-txn",
        group: "<group>",
        topic: "<topic>",
    }
    targets = {"kafka": kafka_reference.bootstrap, "odradek": odradek_zk.bootstrap}
    homes = {target: tmp_path_factory.mktemp(f"tools-{target}") for target in targets}
    # a transaction left open on each broker while the steps run (kafka-transactions list,
    # describe and describe-producers see it)
    producers = {
        target: _open_transaction(bootstrap, f"{topic}-txn", f"{group}-txn")
        for target, bootstrap in targets.items()
    }
    try:
        # the two brokers' step sequences run side by side (each in order): half the JVM
        # start-ups in wall time
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                target: pool.submit(_run_steps, bootstrap, homes[target], names)
                for target, bootstrap in targets.items()
            }
            return {target: future.result() for target, future in futures.items()}
    finally:
        for producer in producers.values():
            producer.abort_transaction(60)


def _open_transaction(bootstrap: str, topic: str, transactional_id: str) -> Producer:
    """A transactional producer with a transaction begun and three records written to
    ``topic`` (created here), not ended: the caller aborts it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            # open for the whole run of the steps
            "transaction.timeout.ms": 600000,
            "linger.ms": 0,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, key=b"k", value=b"v%d" % i)
    assert producer.flush(60) == 0
    return producer


def _cases() -> list[Any]:
    names = [s.name for s in steps("t", "g", Path("f"), Path("r"))]
    return [
        pytest.param(
            n,
            marks=[pytest.mark.xfail(strict=True, reason=PENDING[n])] if n in PENDING else [],
            id=n,
        )
        for n in names
    ]


@pytest.mark.parametrize("step", _cases())
def test_tool_output_matches_kafka(
    step: str, tool_runs: dict[str, dict[str, tuple[int, str]]]
) -> None:
    kafka_rc, kafka_out = tool_runs["kafka"][step]
    odradek_rc, odradek_out = tool_runs["odradek"][step]
    if step in ALLOWED_LINES:
        _, allowed = ALLOWED_LINES[step]
        kafka_out, odradek_out = (
            "\n".join(line for line in out.splitlines() if not allowed.match(line))
            for out in (kafka_out, odradek_out)
        )
    if step in ALLOWED_PARTS:
        _, part, kafka_way = ALLOWED_PARTS[step]
        kafka_out, odradek_out = (
            "\n".join(part.sub(kafka_way, line) for line in out.splitlines())
            for out in (kafka_out, odradek_out)
        )
    assert (odradek_rc, odradek_out) == (kafka_rc, kafka_out), (
        f"{step}: against Kafka (exit {kafka_rc}):\n{kafka_out}\n\n"
        f"against Odradek (exit {odradek_rc}):\n{odradek_out}"
    )


# --- kafka-acls against brokers with an authorizer ---------------------------------------------

#: Both brokers authorize with ACLs (Kafka 3.9: its AclAuthorizer, ACLs in ZooKeeper; Odradek:
#: its own, under the same class name), and the tools' principal (ANONYMOUS on PLAINTEXT) is a
#: super user, so the tool may act.
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def acl_steps(topic: str, group: str) -> list[Step]:
    b = ("--bootstrap-server", "{bootstrap}")
    txn = f"{group}-txn"
    return [
        Step(
            "acls-add-topic",
            "kafka-acls",
            (
                *b,
                "--add",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Read",
                "--operation",
                "Write",
                "--topic",
                topic,
            ),
        ),
        Step(
            "acls-add-producer",
            "kafka-acls",
            (
                *b,
                "--add",
                "--allow-principal",
                "User:bob",
                "--producer",
                "--topic",
                topic,
                "--transactional-id",
                txn,
            ),
        ),
        Step(
            "acls-add-consumer",
            "kafka-acls",
            (
                *b,
                "--add",
                "--allow-principal",
                "User:carol",
                "--consumer",
                "--topic",
                topic,
                "--group",
                group,
            ),
        ),
        Step(
            "acls-add-deny",
            "kafka-acls",
            (
                *b,
                "--add",
                "--deny-principal",
                "User:mallory",
                "--deny-host",
                "127.0.0.2",
                "--operation",
                "Describe",
                "--topic",
                topic,
            ),
        ),
        Step(
            "acls-add-prefixed",
            "kafka-acls",
            (
                *b,
                "--add",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Read",
                "--group",
                group,
                "--resource-pattern-type",
                "prefixed",
            ),
        ),
        Step(
            "acls-add-cluster",
            "kafka-acls",
            (*b, "--add", "--allow-principal", "User:ops", "--operation", "Alter", "--cluster"),
        ),
        Step("acls-list-topic", "kafka-acls", (*b, "--list", "--topic", topic), unordered=True),
        Step(
            "acls-list-principal",
            "kafka-acls",
            (*b, "--list", "--principal", "User:alice"),
            unordered=True,
        ),
        Step(
            "acls-list-match",
            "kafka-acls",
            (*b, "--list", "--group", f"{group}-x", "--resource-pattern-type", "match"),
            unordered=True,
        ),
        Step("acls-list-all", "kafka-acls", (*b, "--list"), unordered=True),
        Step(
            "acls-remove-one",
            "kafka-acls",
            (
                *b,
                "--remove",
                "--force",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Write",
                "--topic",
                topic,
            ),
        ),
        Step(
            "acls-list-after-remove",
            "kafka-acls",
            (*b, "--list", "--topic", topic),
            unordered=True,
        ),
        Step("acls-remove-topic", "kafka-acls", (*b, "--remove", "--force", "--topic", topic)),
        Step(
            "acls-remove-prefixed",
            "kafka-acls",
            (*b, "--remove", "--force", "--group", group, "--resource-pattern-type", "prefixed"),
        ),
        Step("acls-remove-cluster", "kafka-acls", (*b, "--remove", "--force", "--cluster")),
        Step(
            "acls-remove-rest",
            "kafka-acls",
            (*b, "--remove", "--force", "--group", group, "--transactional-id", txn),
        ),
        Step("acls-list-empty", "kafka-acls", (*b, "--list"), unordered=True),
    ]


@pytest.fixture(scope="module")
def acl_tool_runs(
    reference_zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, tuple[int, str]]]:
    """kafka-acls' steps against a Kafka 3.9 and an Odradek of their own, both with an
    authorizer (the shared brokers run without one)."""
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"acl-tools-{suffix}", f"acl-tools-group-{suffix}"
    names = {group: "<group>", topic: "<topic>"}
    home = tmp_path_factory.mktemp("acl-tools")
    kafka = KafkaBroker(
        home / "kafka",
        zk_version(),
        zookeeper_connect=reference_zookeeper.chroot_connect(f"kafka-acl-{suffix}"),
        overrides={**SHARED_BROKER_SETTINGS, **AUTHORIZER},
    )
    odradek = BrokerProcess(
        home / "odradek" / "data",
        {
            "broker.id": "0",
            "zookeeper.connect": reference_zookeeper.chroot_connect(f"odradek-acl-{suffix}"),
            **SHARED_BROKER_SETTINGS,
            **AUTHORIZER,
        },
        log_path=home / "odradek.log",
    )
    with kafka, odradek:
        targets = {"kafka": kafka.bootstrap, "odradek": odradek.bootstrap}
        homes = {target: home / f"steps-{target}" for target in targets}
        for directory in homes.values():
            directory.mkdir()
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                target: pool.submit(
                    _run_steps, bootstrap, homes[target], names, acl_steps(topic, group)
                )
                for target, bootstrap in targets.items()
            }
            return {target: future.result() for target, future in futures.items()}


@pytest.mark.parametrize("step", [s.name for s in acl_steps("t", "g")])
def test_acl_tool_output_matches_kafka(
    step: str, acl_tool_runs: dict[str, dict[str, tuple[int, str]]]
) -> None:
    kafka_rc, kafka_out = acl_tool_runs["kafka"][step]
    odradek_rc, odradek_out = acl_tool_runs["odradek"][step]
    assert (odradek_rc, odradek_out) == (kafka_rc, kafka_out), (
        f"{step}: against Kafka (exit {kafka_rc}):\n{kafka_out}\n\n"
        f"against Odradek (exit {odradek_rc}):\n{odradek_out}"
    )
