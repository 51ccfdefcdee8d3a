"""``odradek group``: list, describe, lag, reset-offsets, delete (what
``kafka-consumer-groups`` does), over ListGroups, DescribeGroups, OffsetFetch, ListOffsets,
OffsetCommit and DeleteGroups."""

from __future__ import annotations

import struct
from datetime import datetime
from typing import Any

import click
from rich.progress import Progress

from cli.client import AdminClient, SecurityAdmin, TopicPartition
from cli.options import Failure, with_client
from cli.output import emit, format_option, stderr

#: Group states in which offsets may be reset (no member would overwrite them).
INACTIVE = ("Empty", "Dead")


def decode_assignment(data: bytes | None) -> list[TopicPartition]:
    """The partitions in a consumer's assignment (Kafka's ConsumerProtocol ``Assignment``:
    int16 version, [topic: string, partitions: [int32]], user data); [] if unreadable."""
    if not data:
        return []
    out: list[TopicPartition] = []
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topic = bytes(data[pos : pos + length]).decode()
            pos += length
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            for _ in range(max(n, 0)):
                (p,) = struct.unpack_from(">i", data, pos)
                pos += 4
                out.append((topic, p))
    except (struct.error, UnicodeDecodeError):
        return []
    return out


@click.group()
def group() -> None:
    """Consumer groups: members, lag, offset resets."""


@group.command("list")
@format_option()
@with_client
def list_(client: AdminClient, fmt: str) -> None:
    """List every group of the cluster."""
    rows = [
        {"group": g.group_id, "state": g.group_state or None, "protocol_type": g.protocol_type}
        for g in client.list_groups()
    ]
    emit(
        rows,
        fmt,
        [("GROUP", "group"), ("STATE", "state"), ("PROTOCOL-TYPE", "protocol_type")],
        empty="no groups",
    )


def _members(described: Any) -> list[dict[str, Any]]:
    return [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "assignment": [f"{t}-{p}" for t, p in sorted(decode_assignment(m.member_assignment))],
        }
        for m in described.members
    ]


@group.command("describe")
@click.argument("name")
@format_option()
@with_client
def describe(client: AdminClient, name: str, fmt: str) -> None:
    """State, protocol and members (with their partitions) of group NAME; a KIP-848 consumer
    group (group.protocol=consumer) with its epochs, assignor and each member's target
    assignment (ConsumerGroupDescribe)."""
    consumer = SecurityAdmin(client).consumer_group_describe(name)
    if consumer is not None:
        data = _consumer_group(client, consumer)
    else:
        d = client.describe_group(name)
        data = {
            "group": d.group_id,
            "type": "classic",
            "state": d.group_state,
            "protocol_type": d.protocol_type,
            "protocol": d.protocol_data,
            "coordinator": client._coordinators.get(name),
            "members": _members(d),
        }
    if fmt == "json":
        emit(data, fmt)
        return
    emit({k: v for k, v in data.items() if k != "members"}, fmt)
    click.echo()
    columns = [("MEMBER-ID", "member_id"), ("CLIENT-ID", "client_id"), ("HOST", "host")]
    if data["type"] == "consumer":
        columns += [("EPOCH", "member_epoch"), ("ASSIGNMENT", "assignment")]
        columns += [("TARGET-ASSIGNMENT", "target_assignment")]
    else:
        columns.append(("ASSIGNMENT", "assignment"))
    emit(data["members"], fmt, columns, empty="no members")


def _partitions(assignment: Any) -> list[str]:
    return sorted(f"{t.topic_name}-{p}" for t in assignment.topic_partitions for p in t.partitions)


def _consumer_group(client: AdminClient, d: Any) -> dict[str, Any]:
    """A KIP-848 consumer group as ConsumerGroupDescribe answers it."""
    return {
        "group": d.group_id,
        "type": "consumer",
        "state": d.group_state,
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "assignor": d.assignor_name,
        "coordinator": client._coordinators.get(d.group_id),
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "member_epoch": m.member_epoch,
                "subscription": m.subscribed_topic_regex or sorted(m.subscribed_topic_names),
                "assignment": _partitions(m.assignment),
                "target_assignment": _partitions(m.target_assignment),
            }
            for m in d.members
        ],
    }


def _owners(client: AdminClient, name: str) -> dict[TopicPartition, dict[str, Any]]:
    """Which member owns each partition (a classic group's assignments, or a consumer
    group's current assignment)."""
    owners: dict[TopicPartition, dict[str, Any]] = {}
    consumer = SecurityAdmin(client).consumer_group_describe(name)
    if consumer is not None:
        for m in consumer.members:
            for t in m.assignment.topic_partitions:
                for p in t.partitions:
                    owners[(t.topic_name, p)] = {
                        "member_id": m.member_id,
                        "host": m.client_host,
                        "client_id": m.client_id,
                    }
        return owners
    for m in client.describe_group(name).members:
        for tp in decode_assignment(m.member_assignment):
            owners[tp] = {"member_id": m.member_id, "host": m.client_host, "client_id": m.client_id}
    return owners


def lag_rows(client: AdminClient, name: str) -> list[dict[str, Any]]:
    """One row per partition the group committed or is assigned (kafka-consumer-groups
    --describe): committed offset, log end offset, lag and the owning member."""
    committed = client.committed_offsets(name)
    owners = _owners(client, name)
    tps = sorted(set(committed) | set(owners))
    ends = (
        {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -1)).items()} if tps else {}
    )
    rows = []
    for tp in tps:
        current = committed.get(tp, (None, None))[0]
        end = ends.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "group": name,
                "topic": tp[0],
                "partition": tp[1],
                "current_offset": current,
                "log_end_offset": end,
                "lag": end - current if end is not None and current is not None else None,
                "consumer_id": owner["member_id"] if owner is not None else None,
                "host": owner["host"] if owner is not None else None,
                "client_id": owner["client_id"] if owner is not None else None,
            }
        )
    return rows


@group.command("lag")
@click.argument("name")
@format_option()
@with_client
def lag(client: AdminClient, name: str, fmt: str) -> None:
    """Committed offsets, log end offsets and lag of group NAME, per partition."""
    emit(
        lag_rows(client, name),
        fmt,
        [
            ("GROUP", "group"),
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("CURRENT-OFFSET", "current_offset"),
            ("LOG-END-OFFSET", "log_end_offset"),
            ("LAG", "lag"),
            ("CONSUMER-ID", "consumer_id"),
            ("HOST", "host"),
            ("CLIENT-ID", "client_id"),
        ],
        empty=f"group {name} has no committed offsets",
    )


def _parse_topic_spec(client: AdminClient, spec: str) -> list[TopicPartition]:
    """``TOPIC`` (every partition) or ``TOPIC:0,2`` (Kafka's spelling)."""
    name, _, parts = spec.partition(":")
    meta = client.topic(name)
    if not parts:
        return [(name, p) for p in sorted(meta.partitions)]
    chosen = [int(p) for p in parts.split(",") if p.strip()]
    for p in chosen:
        if p not in meta.partitions:
            raise Failure(f"topic {name} has no partition {p}")
    return [(name, p) for p in chosen]


def _datetime_ms(text: str) -> int:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO date-time (e.g. 2024-05-01T12:00:00Z)",
            param_hint="--to-datetime",
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as kafka-consumer-groups reads it
    return int(when.timestamp() * 1000)


@group.command("reset-offsets")
@click.argument("name")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:P,P]", help="repeatable")
@click.option("--all-topics", is_flag=True, help="every topic the group committed offsets for")
@click.option("--to-earliest", "to", flag_value="earliest", help="the log start offsets")
@click.option("--to-latest", "to", flag_value="latest", help="the log end offsets")
@click.option("--to-offset", type=int, help="this offset (clamped to each partition's range)")
@click.option("--to-datetime", help="the first offset at or after this ISO date-time")
@click.option("--shift-by", type=int, help="move the committed offsets by N (negative: back)")
@click.option(
    "--dry-run", "mode", flag_value="dry-run", default=True, help="show the plan (default)"
)
@click.option("--execute", "mode", flag_value="execute", help="commit the new offsets")
@format_option()
@with_client
def reset_offsets(
    client: AdminClient,
    name: str,
    topics: tuple[str, ...],
    all_topics: bool,
    to: str | None,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    mode: str,
    fmt: str,
) -> None:
    """Move group NAME's committed offsets (the group must have no active members)."""
    chosen_specs = [
        to is not None,
        to_offset is not None,
        to_datetime is not None,
        shift_by is not None,
    ]
    if sum(chosen_specs) != 1:
        raise click.UsageError(
            "give one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by"
        )
    if bool(topics) == all_topics:
        raise click.UsageError("give --topic TOPIC (repeatable) or --all-topics")
    state = client.describe_group(name).group_state
    if state not in INACTIVE:
        raise Failure(
            f"Assignments can only be reset if the group '{name}' is inactive, but the current "
            f"state is {state}."
        )
    committed = client.committed_offsets(name)
    if all_topics:
        tps = sorted(committed)
    else:
        tps = sorted({tp for spec in topics for tp in _parse_topic_spec(client, spec)})
    if not tps:
        raise Failure(f"group {name} has no offsets to reset")
    starts = {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -2)).items()}
    ends = {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -1)).items()}
    if to == "earliest":
        new = dict(starts)
    elif to == "latest":
        new = dict(ends)
    elif to_offset is not None:
        new = dict.fromkeys(tps, to_offset)
    elif to_datetime is not None:
        found = client.list_offsets(dict.fromkeys(tps, _datetime_ms(to_datetime)))
        new = {tp: (o if o >= 0 else ends[tp]) for tp, (o, _) in found.items()}
    else:
        assert shift_by is not None
        new = {tp: committed.get(tp, (ends[tp], None))[0] + shift_by for tp in tps}
    new = {tp: min(max(o, starts[tp]), ends[tp]) for tp, o in new.items()}
    rows = [
        {
            "group": name,
            "topic": t,
            "partition": p,
            "current_offset": committed.get((t, p), (None, None))[0],
            "new_offset": new[(t, p)],
        }
        for t, p in tps
    ]
    if mode == "execute":
        by_topic: dict[str, dict[TopicPartition, int]] = {}
        for tp in tps:
            by_topic.setdefault(tp[0], {})[tp] = new[tp]
        console = stderr()
        with Progress(console=console, disable=not console.is_terminal, transient=True) as bar:
            task = bar.add_task("committing", total=len(tps))
            for offsets in by_topic.values():
                client.commit_offsets(name, offsets)
                bar.advance(task, len(offsets))
    emit(
        rows,
        fmt,
        [
            ("GROUP", "group"),
            ("TOPIC", "topic"),
            ("PARTITION", "partition"),
            ("CURRENT-OFFSET", "current_offset"),
            ("NEW-OFFSET", "new_offset"),
        ],
    )
    if mode != "execute" and fmt != "json":
        click.echo("(dry run: nothing committed; add --execute to commit)", err=True)


@group.command("delete")
@click.argument("name")
@with_client
def delete(client: AdminClient, name: str) -> None:
    """Delete group NAME and its committed offsets (it must have no members)."""
    client.delete_group(name)
    click.echo(f"Deleted group {name}")
