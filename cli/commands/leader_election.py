"""``odradek leader-election``: preferred or unclean leader elections (ElectLeaders, KIP-183 and
KIP-460), what Kafka's ``kafka-leader-election`` does, with the same options.

The partitions are ``--topic T --partition P``, every partition of ``--topic T`` (an addition:
Kafka's tool wants ``--partition`` with ``--topic``), Kafka's ``--path-to-json-file``
(``{"partitions": [{"topic": "foo", "partition": 1}, ...]}``), or ``--all-topic-partitions`` (the
controller then answers only for the partitions that needed an election). Per partition the
answer is Kafka's: elected, ELECTION_NOT_NEEDED (a valid leader leads already: not a failure),
or an error (PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION...), which makes the command fail with Kafka's "N replica(s) could
not be elected".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cli.client import AdminClient, TopicPartition
from cli.options import Failure, with_client
from cli.output import emit, format_option
from protocol.error_codes import ErrorCode

ELECTION_TYPES = {"preferred": 0, "unclean": 1}


def read_election_file(path: str) -> list[TopicPartition]:
    """The partitions of Kafka's replica election JSON file; UsageError when it is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise click.UsageError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise click.UsageError(f"{path} is not JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise click.UsageError(f'{path}: replica election data is missing "partitions"')
    out: list[TopicPartition] = []
    for entry in data["partitions"]:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise click.UsageError(f'{path}: {entry!r} is not {{"topic": ..., "partition": ...}}')
        out.append((topic, partition))
    duplicates = sorted({tp for tp in out if out.count(tp) > 1})
    if duplicates:
        raise click.UsageError(
            f"{path}: replica election data contains duplicate partitions: "
            + ", ".join(f"{t}-{p}" for t, p in duplicates)
        )
    return out


def _row(tp: TopicPartition, kind: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    if code == ErrorCode.NONE:
        result, text = "elected", f"Successfully completed leader election ({kind})"
    elif code == ErrorCode.ELECTION_NOT_NEEDED:
        result, text = "not_needed", "Valid replica already elected"
    else:
        result, text = "failed", message or code.message
    return {
        "topic": tp[0],
        "partition": tp[1],
        "election_type": kind,
        "result": result,
        "error": None if code == ErrorCode.NONE else code.name,
        "message": text,
    }


@click.command("leader-election")
@click.option(
    "--election-type",
    type=click.Choice(sorted(ELECTION_TYPES), case_sensitive=False),
    required=True,
    help="preferred: the first replica, where it is alive and in sync; unclean: any live replica "
    "of a partition that has no leader",
)
@click.option("--topic", help="a topic (every partition of it without --partition)")
@click.option("--partition", type=int, help="one partition of --topic")
@click.option("--all-topic-partitions", is_flag=True, help="every partition of the cluster")
@click.option(
    "--path-to-json-file",
    type=click.Path(dir_okay=False),
    help='Kafka\'s JSON file: {"partitions": [{"topic": "foo", "partition": 1}, ...]}',
)
@format_option()
@with_client
def leader_election(
    client: AdminClient,
    election_type: str,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    path_to_json_file: str | None,
    fmt: str,
) -> None:
    """Elect partition leaders (what kafka-leader-election does)."""
    chosen = [topic is not None, all_topic_partitions, path_to_json_file is not None]
    if sum(chosen) != 1:
        raise click.UsageError("give one of --topic, --all-topic-partitions, --path-to-json-file")
    if partition is not None and topic is None:
        raise click.UsageError("--partition is only allowed with --topic")
    kind = election_type.upper()
    partitions: list[TopicPartition] | None = None
    if path_to_json_file is not None:
        partitions = read_election_file(path_to_json_file)
    elif topic is not None and partition is not None:
        partitions = [(topic, partition)]
    elif topic is not None:
        partitions = [(topic, p) for p in sorted(client.topic(topic).partitions)]
    results = client.elect_leaders(ELECTION_TYPES[election_type.lower()], partitions)
    rows = [_row(tp, kind, *results[tp]) for tp in sorted(results)]
    emit(
        rows,
        fmt,
        [
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("RESULT", "result"),
            ("ERROR", "error"),
            ("MESSAGE", "message"),
        ],
        empty=f"No partition needed a {kind.lower()} leader election",
    )
    failed = [r for r in rows if r["result"] == "failed"]
    if failed:
        raise Failure(f"{len(failed)} replica(s) could not be elected")
