"""``odradek reassign``: partition reassignments (AlterPartitionReassignments and
ListPartitionReassignments, KIP-455), what Kafka's ``kafka-reassign-partitions`` does, with its
plan files: ``{"version": 1, "partitions": [{"topic": "foo", "partition": 0, "replicas": [1, 2,
3]}, ...]}`` (``log_dirs``, when there, must be ``"any"``: moving a replica between the log
directories of a broker is ``odradek log-dirs move``).

* ``generate`` proposes a plan spreading topics over a list of brokers (Kafka's rack-unaware
  round robin, ``AdminUtils.assignReplicasToBrokers``; racks are not considered);
* ``execute PLAN`` starts it (refused while other reassignments run, unless ``--additional``, as
  Kafka does) and shows the current replicas, the plan to roll back with;
* ``verify PLAN`` tells per partition whether it is complete, still in progress, or not under
  way with other replicas than the plan's, as ``--verify`` does (``--wait``: until none is in
  progress);
* ``list`` shows the ongoing reassignments, ``cancel PLAN`` (or ``--all``) cancels them: the
  partitions go back to their original replicas.

Replication throttles (Kafka's ``--throttle``) are not set: the data moves at the speed of
replication.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, Progress, TextColumn

from cli.client import AdminClient, TopicPartition
from cli.options import Failure, with_client
from cli.output import emit, format_option, stderr
from protocol.error_codes import ErrorCode

Plan = list[tuple[TopicPartition, list[int]]]
ANY_LOG_DIR = "any"
#: How often ``--wait`` asks the controller.
POLL_S = 0.5


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _load_json(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as e:
        raise click.UsageError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise click.UsageError(f"{path} is not JSON: {e}") from None


def read_plan(path: str) -> Plan:
    """Kafka's reassignment JSON (version 1). UsageError when it is not one."""
    data = _load_json(path)
    if not isinstance(data, dict):
        raise click.UsageError(f"{path}: a reassignment plan is a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise click.UsageError(f"{path}: not supported version field value {version}")
    entries = data.get("partitions", [])
    if not isinstance(entries, list):
        raise click.UsageError(f'{path}: "partitions" is not a list')
    plan: Plan = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise click.UsageError(f"{path}: {entry!r} is not an object")
        topic, partition, replicas = (
            entry.get("topic"),
            entry.get("partition"),
            entry.get("replicas"),
        )
        if (
            not isinstance(topic, str)
            or not isinstance(partition, int)
            or not isinstance(replicas, list)
            or not all(isinstance(r, int) for r in replicas)
        ):
            raise click.UsageError(
                f'{path}: {entry!r} is not {{"topic": ..., "partition": ..., "replicas": [...]}}'
            )
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise click.UsageError(
                f"{path}: size of replicas list {replicas} is different from size of log dirs "
                f"list {log_dirs} for partition {topic}-{partition}"
            )
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise click.UsageError(
                f'{path}: {topic}-{partition}: log_dirs other than "any" are not supported; '
                "move a replica between log directories with `odradek log-dirs move`"
            )
        plan.append(((topic, partition), list(replicas)))
    return plan


def check_plan(plan: Plan) -> None:
    """Kafka's checks before executing a plan."""
    if not plan:
        raise Failure("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in plan):
        raise Failure("Partition replica list cannot be empty")
    names = [tp for tp, _ in plan]
    duplicates = sorted({tp for tp in names if names.count(tp) > 1})
    if duplicates:
        raise Failure(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(map(_name, duplicates))
        )
    repeated = [
        f"{_name(tp)} contains multiple entries for "
        + ",".join(str(r) for r in sorted({r for r in replicas if replicas.count(r) > 1}))
        for tp, replicas in plan
        if len(set(replicas)) != len(replicas)
    ]
    if repeated:
        raise Failure(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(repeated)
        )


def plan_json(assignment: dict[TopicPartition, list[int]]) -> dict[str, Any]:
    """A plan in Kafka's format (what ``--generate`` prints and ``--execute`` reads)."""
    return {
        "version": 1,
        "partitions": [
            {
                "topic": t,
                "partition": p,
                "replicas": assignment[(t, p)],
                "log_dirs": [ANY_LOG_DIR] * len(assignment[(t, p)]),
            }
            for t, p in sorted(assignment)
        ],
    }


def current_replicas(
    client: AdminClient, tps: list[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    """The replicas Metadata shows for each partition that exists."""
    md = client.metadata({t for t, _ in tps})
    out = {}
    for t, p in tps:
        topic = md.topics.get(t)
        part = topic.partitions.get(p) if topic is not None and not topic.error else None
        if part is not None:
            out[(t, p)] = list(part.replicas)
    return out


def _progress(what: str) -> Progress:
    console = stderr()
    return Progress(
        TextColumn(what),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} partitions"),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )


@click.group()
def reassign() -> None:
    """Move partitions between brokers: generate, execute, verify, list and cancel plans (what
    kafka-reassign-partitions does)."""


# -- generate -----------------------------------------------------------------------------------


def assign_round_robin(
    brokers: list[int], partitions: int, replication_factor: int, rng: random.Random
) -> list[list[int]]:
    """Kafka's rack-unaware assignment (``AdminUtils.assignReplicasToBrokers``): leaders round
    robin over the brokers from a random one, each further replica a random shift away (+1
    whenever the leaders have gone once round), so leaders and followers spread evenly."""
    n = len(brokers)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(replicas)
    return out


def _topics_file(path: str) -> list[str]:
    data = _load_json(path)
    if not isinstance(data, dict) or data.get("version", 1) != 1:
        raise click.UsageError(f'{path}: not {{"version": 1, "topics": [{{"topic": ...}}]}}')
    topics = data.get("topics", [])
    if not isinstance(topics, list) or not all(
        isinstance(t, dict) and isinstance(t.get("topic"), str) for t in topics
    ):
        raise click.UsageError(f'{path}: "topics" is not a list of {{"topic": ...}}')
    return [t["topic"] for t in topics]


@reassign.command("generate")
@click.option("--topic", "topics", multiple=True, help="a topic to move (repeatable)")
@click.option(
    "--topics-to-move-json-file",
    type=click.Path(dir_okay=False),
    help='Kafka\'s file: {"version": 1, "topics": [{"topic": "foo"}, ...]}',
)
@click.option(
    "--broker-list", required=True, metavar="ID,ID...", help="the brokers to spread them over"
)
@format_option()
@with_client
def generate(
    client: AdminClient,
    topics: tuple[str, ...],
    topics_to_move_json_file: str | None,
    broker_list: str,
    fmt: str,
) -> None:
    """Propose a plan putting the topics' partitions on --broker-list (replication factors kept).
    --format json prints the plan itself, for `reassign execute`."""
    names = list(topics)
    if topics_to_move_json_file is not None:
        names += _topics_file(topics_to_move_json_file)
    if not names:
        raise click.UsageError("give --topic TOPIC (repeatable) or --topics-to-move-json-file")
    try:
        wanted = [int(b) for b in broker_list.split(",") if b.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{broker_list!r} is not ID,ID...", param_hint="--broker-list"
        ) from None
    if not wanted:
        raise click.BadParameter("no broker given", param_hint="--broker-list")
    for what, items in (
        ("Broker list", [str(b) for b in wanted]),
        ("List of topics to reassign", names),
    ):
        duplicates = sorted({i for i in items if items.count(i) > 1})
        if duplicates:
            raise Failure(f"{what} contains duplicate entries: {', '.join(duplicates)}")
    md = client.metadata(names)
    brokers = [b for b in wanted if b in md.brokers]
    if not brokers:
        raise Failure(f"none of the brokers {broker_list} is in the cluster")
    current: dict[TopicPartition, list[int]] = {}
    proposed: dict[TopicPartition, list[int]] = {}
    rng = random.Random()
    for name in names:
        topic = client.topic(name)
        parts = sorted(topic.partitions)
        rf = len(topic.partitions[parts[0]].replicas) if parts else 0
        if rf > len(brokers):
            raise Failure(
                f"Replication factor: {rf} larger than available brokers: {len(brokers)}."
            )
        for p in parts:
            current[(name, p)] = list(topic.partitions[p].replicas)
        for p, replicas in zip(
            parts, assign_round_robin(brokers, len(parts), rf, rng), strict=True
        ):
            proposed[(name, p)] = replicas
    if fmt == "json":
        emit(plan_json(proposed), fmt)
        return
    rows = [
        {"topic": t, "partition": p, "current": current[(t, p)], "proposed": proposed[(t, p)]}
        for t, p in sorted(proposed)
    ]
    emit(
        rows,
        fmt,
        [
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("CURRENT-REPLICAS", "current"),
            ("PROPOSED-REPLICAS", "proposed"),
        ],
    )
    click.echo("(--format json prints this plan for `odradek reassign execute`)", err=True)


# -- verify (and the wait of execute --wait) ------------------------------------------------------


def partition_states(client: AdminClient, plan: Plan) -> list[dict[str, Any]]:
    """Each planned partition's state, as ``--verify`` finds it: in progress while the controller
    lists it, else complete when its replicas are the plan's."""
    tps = [tp for tp, _ in plan]
    ongoing = client.list_partition_reassignments(tps)
    replicas = current_replicas(client, [tp for tp in tps if tp not in ongoing])
    rows = []
    for tp, target in sorted(plan):
        if tp in ongoing:
            now = ongoing[tp][0]
            status = "in_progress"
            message = f"Reassignment of partition {_name(tp)} is still in progress."
        else:
            now = replicas.get(tp, [])
            if now == target:
                status = "completed"
                message = f"Reassignment of partition {_name(tp)} is completed."
            else:
                status = "not_active"
                message = (
                    f"There is no active reassignment of partition {_name(tp)}, but replica set "
                    f"is {','.join(map(str, now))} rather than {','.join(map(str, target))}."
                )
        rows.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "status": status,
                "replicas": now,
                "target_replicas": target,
                "message": message,
            }
        )
    return rows


def wait_until_done(client: AdminClient, plan: Plan) -> list[dict[str, Any]]:
    """The partitions' states once none is in progress (a progress bar meanwhile, on a
    terminal). A partition no longer listed whose replicas are not yet the plan's is asked
    about again for ``--timeout`` seconds: a broker's metadata may show the end a moment after
    the controller."""
    settle_until: float | None = None
    with _progress("reassigning") as bar:
        task = bar.add_task("reassign", total=len(plan))
        while True:
            rows = partition_states(client, plan)
            done = sum(r["status"] == "completed" for r in rows)
            bar.update(task, completed=done)
            if done == len(rows):
                return rows
            if any(r["status"] == "in_progress" for r in rows):
                settle_until = None
            elif settle_until is None:
                settle_until = time.monotonic() + client.timeout_s
            elif time.monotonic() > settle_until:
                return rows
            time.sleep(POLL_S)


STATE_COLUMNS = [
    ("TOPIC", "topic"),
    ("PARTITION", "partition"),
    ("STATUS", "status"),
    ("REPLICAS", "replicas"),
    ("TARGET-REPLICAS", "target_replicas"),
]


def _verified(rows: list[dict[str, Any]], fmt: str, wait: bool) -> None:
    emit(rows, fmt, STATE_COLUMNS)
    if fmt != "json":
        for r in rows:
            if r["status"] == "not_active":
                click.echo(r["message"], err=True)
    if wait and any(r["status"] != "completed" for r in rows):
        unfinished = [f"{r['topic']}-{r['partition']}" for r in rows if r["status"] != "completed"]
        raise Failure("reassignment not completed for " + ",".join(unfinished))


@reassign.command("verify")
@click.argument("plan_file", metavar="PLAN")
@click.option("--wait", is_flag=True, help="until no partition of the plan is in progress")
@format_option()
@with_client
def verify(client: AdminClient, plan_file: str, wait: bool, fmt: str) -> None:
    """Whether each partition of PLAN (a reassignment JSON file, - for stdin) is complete or
    still in progress (what kafka-reassign-partitions --verify does). With --wait, exit status
    1 unless every partition completed."""
    plan = read_plan(plan_file)
    rows = wait_until_done(client, plan) if wait else partition_states(client, plan)
    _verified(rows, fmt, wait)


# -- execute ------------------------------------------------------------------------------------


@reassign.command("execute")
@click.argument("plan_file", metavar="PLAN")
@click.option(
    "--additional", is_flag=True, help="start it although other reassignments are in progress"
)
@click.option(
    "--rollback-file",
    type=click.Path(dir_okay=False, writable=True),
    help="write the current replicas there, as a plan that undoes this one",
)
@click.option("--wait", is_flag=True, help="until no partition of the plan is in progress")
@format_option()
@with_client
def execute(
    client: AdminClient,
    plan_file: str,
    additional: bool,
    rollback_file: str | None,
    wait: bool,
    fmt: str,
) -> None:
    """Start the reassignments of PLAN (a reassignment JSON file, - for stdin; what
    kafka-reassign-partitions --execute does). The data moves by replication; `reassign verify`
    tells when it is done (or give --wait)."""
    plan = read_plan(plan_file)
    check_plan(plan)
    if not additional and client.list_partition_reassignments():
        raise Failure(
            "Cannot execute because there is an existing partition assignment. Use "
            "--additional to override this and create a new partition assignment in addition "
            "to the existing one."
        )
    tps = [tp for tp, _ in plan]
    current = current_replicas(client, tps)
    known = client.cluster.brokers
    unknown = sorted({r for _, replicas in plan for r in replicas} - set(known))
    if unknown:
        raise Failure(f"Unknown broker id {unknown[0]}")
    missing = [_name(tp) for tp in tps if tp not in current]
    if missing:
        raise Failure("Unable to find partition: " + ", ".join(missing))
    rollback = plan_json({tp: current[tp] for tp in tps})
    if rollback_file is not None:
        Path(rollback_file).write_text(json.dumps(rollback) + "\n")
    elif fmt != "json":
        click.echo(
            "Current partition replica assignment (a plan to roll back with):\n"
            + json.dumps(rollback),
            err=True,
        )
    results = client.alter_partition_reassignments(dict(plan))
    rows = []
    for tp, target in sorted(plan):
        code, message = results.get(tp, (ErrorCode.NONE, None))
        rows.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "status": "started" if code == ErrorCode.NONE else "failed",
                "replicas": current[tp],
                "target_replicas": target,
                "error": None if code == ErrorCode.NONE else code.name,
                "message": message or (code.message if code != ErrorCode.NONE else None),
            }
        )
    failed = [r for r in rows if r["error"]]
    if failed or not wait:
        emit(rows, fmt, [*STATE_COLUMNS, ("ERROR", "error")])
    if failed:
        raise Failure(
            "Error reassigning partition(s): "
            + "; ".join(f"{r['topic']}-{r['partition']}: {r['message']}" for r in failed)
        )
    if wait:
        _verified(wait_until_done(client, plan), fmt, wait)
    elif fmt != "json":
        click.echo(
            f"Successfully started partition reassignment{'s' if len(rows) > 1 else ''} for "
            + ",".join(_name(tp) for tp in sorted(tps)),
            err=True,
        )


# -- list, cancel -------------------------------------------------------------------------------


def _ongoing_rows(
    ongoing: dict[TopicPartition, tuple[list[int], list[int], list[int]]],
) -> list[dict[str, Any]]:
    return [
        {
            "topic": t,
            "partition": p,
            "replicas": ongoing[(t, p)][0],
            "adding_replicas": ongoing[(t, p)][1],
            "removing_replicas": ongoing[(t, p)][2],
        }
        for t, p in sorted(ongoing)
    ]


@reassign.command("list")
@format_option()
@with_client
def list_(client: AdminClient, fmt: str) -> None:
    """The reassignments in progress (what kafka-reassign-partitions --list shows): the replicas
    (the target ones, then the original ones), those being added and those being removed."""
    emit(
        _ongoing_rows(client.list_partition_reassignments()),
        fmt,
        [
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("REPLICAS", "replicas"),
            ("ADDING", "adding_replicas"),
            ("REMOVING", "removing_replicas"),
        ],
        empty="No partition reassignments found.",
    )


@reassign.command("cancel")
@click.argument("plan_file", metavar="[PLAN]", required=False)
@click.option("--all", "all_", is_flag=True, help="every reassignment in progress")
@format_option()
@with_client
def cancel(client: AdminClient, plan_file: str | None, all_: bool, fmt: str) -> None:
    """Cancel the reassignments of PLAN (or --all) that are in progress: those partitions go
    back to their original replicas (what kafka-reassign-partitions --cancel does)."""
    if (plan_file is None) == (not all_):
        raise click.UsageError("give PLAN (a reassignment JSON file) or --all")
    wanted: list[TopicPartition] | None = None
    if plan_file is not None:
        wanted = [tp for tp, _ in read_plan(plan_file)]
    ongoing = client.list_partition_reassignments(wanted)
    active = sorted(tp for tp, (_, adding, removing) in ongoing.items() if adding or removing)
    results = client.alter_partition_reassignments(dict.fromkeys(active)) if active else {}
    rows = []
    for tp in sorted(set(wanted or []) | set(active)):
        code, message = results.get(tp, (ErrorCode.NONE, None))
        if tp not in results:
            status = "not_active"
        else:
            status = "cancelled" if code == ErrorCode.NONE else "failed"
        rows.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "status": status,
                "replicas": ongoing[tp][0] if tp in ongoing else None,
                "error": None if code == ErrorCode.NONE else code.name,
                "message": message or (code.message if code != ErrorCode.NONE else None),
            }
        )
    emit(
        rows,
        fmt,
        [
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("STATUS", "status"),
            ("REPLICAS", "replicas"),
            ("ERROR", "error"),
        ],
        empty="None of the specified partition reassignments are active.",
    )
    failed = [r for r in rows if r["status"] == "failed"]
    if failed:
        raise Failure(
            "Error cancelling partition reassignment(s) for: "
            + "; ".join(f"{r['topic']}-{r['partition']}: {r['message']}" for r in failed)
        )
    if fmt != "json" and rows and not any(r["status"] == "cancelled" for r in rows):
        click.echo("None of the specified partition reassignments are active.", err=True)
