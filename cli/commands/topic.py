"""``odradek topic``: create, list, describe, alter-config, add-partitions, delete, produce,
consume (what ``kafka-topics``, ``kafka-configs --entity-type topics``, kcat and the console
producer/consumer do)."""

from __future__ import annotations

import sys
from typing import TextIO

import click
from rich.progress import BarColumn, Progress, TextColumn

from cli.client import AdminClient, ClientError
from cli.commands.config import TOPIC, describe_entries, parse_pairs
from cli.options import Failure, with_client
from cli.output import emit, format_option, json_line, stderr
from cli.records import (
    COMPRESSION,
    Producer,
    consume,
    lines,
    parse_line,
    record_json,
    record_text,
)


@click.group()
def topic() -> None:
    """Topics: create, list, describe, change, delete; produce and consume records."""


@topic.command("create")
@click.argument("name")
@click.option("-p", "--partitions", type=int, default=-1, help="default: the broker's")
@click.option("-r", "--replication-factor", type=int, default=-1, help="default: the broker's")
@click.option("-c", "--config", "configs", multiple=True, metavar="KEY=VALUE")
@click.option("--if-not-exists", is_flag=True, help="succeed if the topic exists already")
@click.option("--validate-only", is_flag=True, help="check the request, create nothing")
@format_option()
@with_client
def create(
    client: AdminClient,
    name: str,
    partitions: int,
    replication_factor: int,
    configs: tuple[str, ...],
    if_not_exists: bool,
    validate_only: bool,
    fmt: str,
) -> None:
    """Create topic NAME."""
    from cli.client import KafkaError
    from protocol.error_codes import ErrorCode

    try:
        result = client.create_topic(
            name,
            partitions,
            replication_factor,
            parse_pairs(configs),
            validate_only=validate_only,
        )
    except KafkaError as e:
        if if_not_exists and e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
            emit({"name": name, "created": False}, fmt)
            return
        raise
    data = {
        "name": name,
        "created": not validate_only,
        "topic_id": str(result.topic_id),
        "partitions": result.num_partitions,
        "replication_factor": result.replication_factor,
    }
    emit(data, fmt)


@topic.command("list")
@click.option("--exclude-internal", is_flag=True, help="leave out __consumer_offsets and the like")
@format_option()
@with_client
def list_(client: AdminClient, exclude_internal: bool, fmt: str) -> None:
    """List topics."""
    md = client.metadata(None)
    rows = [
        {
            "name": t.name,
            "partitions": len(t.partitions),
            "replication_factor": max((len(p.replicas) for p in t.partitions.values()), default=0),
            "internal": t.internal,
            "topic_id": t.topic_id,
        }
        for t in sorted(md.topics.values(), key=lambda t: t.name)
        if not (exclude_internal and t.internal)
    ]
    emit(
        rows,
        fmt,
        [("NAME", "name"), ("PARTITIONS", "partitions"), ("REPLICAS", "replication_factor")],
        empty="no topics",
    )


def _offsets(client: AdminClient, name: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    """(log start offset, high watermark) per partition; (-1, -1) where no leader answers."""
    tps = [(name, p) for p in partitions]
    try:
        start = client.list_offsets(dict.fromkeys(tps, -2))
        end = client.list_offsets(dict.fromkeys(tps, -1))
    except ClientError:
        return dict.fromkeys(partitions, (-1, -1))
    return {p: (start[(name, p)][0], end[(name, p)][0]) for p in partitions}


@topic.command("describe")
@click.argument("name")
@format_option()
@with_client
def describe(client: AdminClient, name: str, fmt: str) -> None:
    """Partitions (leader, replicas, ISR, offsets) and config overrides of topic NAME."""
    meta = client.topic(name)
    offsets = _offsets(client, name, sorted(meta.partitions))
    partitions = [
        {
            "partition": p.partition,
            "leader": p.leader,
            "leader_epoch": p.leader_epoch,
            "replicas": p.replicas,
            "isr": p.isr,
            "offline_replicas": p.offline,
            "log_start_offset": offsets[p.partition][0],
            "high_watermark": offsets[p.partition][1],
            "error": None if not p.error else _error_name(p.error),
        }
        for p in sorted(meta.partitions.values(), key=lambda p: p.partition)
    ]
    entries = describe_entries(client, TOPIC, name, None)
    overrides = {e["name"]: e["value"] for e in entries if e["source"] == "DYNAMIC_TOPIC_CONFIG"}
    data = {
        "name": meta.name,
        "topic_id": meta.topic_id,
        "internal": meta.internal,
        "partition_count": len(partitions),
        "replication_factor": max((len(p.replicas) for p in meta.partitions.values()), default=0),
        "configs": overrides,
        "partitions": partitions,
    }
    if fmt == "json":
        emit(data, fmt)
        return
    summary = {k: v for k, v in data.items() if k not in ("partitions", "configs")}
    summary["configs"] = ",".join(f"{k}={v}" for k, v in sorted(overrides.items())) or None
    emit(summary, fmt)
    click.echo()
    emit(
        partitions,
        fmt,
        [
            ("PARTITION", "partition"),
            ("LEADER", "leader"),
            ("EPOCH", "leader_epoch"),
            ("REPLICAS", "replicas"),
            ("ISR", "isr"),
            ("OFFLINE", "offline_replicas"),
            ("LOG-START-OFFSET", "log_start_offset"),
            ("HIGH-WATERMARK", "high_watermark"),
        ],
    )


def _error_name(code: int) -> str:
    from protocol.error_codes import ErrorCode

    return ErrorCode.of(code).name


@topic.command("alter-config")
@click.argument("name")
@click.argument("settings", nargs=-1, metavar="KEY=VALUE...")
@click.option("--delete", "deletes", multiple=True, metavar="KEY", help="remove an override")
@with_client
def alter_config(
    client: AdminClient, name: str, settings: tuple[str, ...], deletes: tuple[str, ...]
) -> None:
    """Set (or --delete) config overrides of topic NAME."""
    ops: list[tuple[str, int, str | None]] = [(k, 0, v) for k, v in parse_pairs(settings).items()]
    ops += [(k, 1, None) for k in deletes]
    if not ops:
        raise click.UsageError("nothing to change: give KEY=VALUE or --delete KEY")
    client.incremental_alter_configs(TOPIC, name, ops)
    click.echo(f"Updated config of topic {name}")


@topic.command("add-partitions")
@click.argument("name")
@click.option("--count", type=int, required=True, help="the new total number of partitions")
@click.option("--validate-only", is_flag=True)
@with_client
def add_partitions(client: AdminClient, name: str, count: int, validate_only: bool) -> None:
    """Grow topic NAME to --count partitions."""
    client.create_partitions(name, count, validate_only=validate_only)
    click.echo(
        f"Topic {name} has {count} partitions" + (" (validated only)" if validate_only else "")
    )


@topic.command("delete")
@click.argument("name")
@click.option("--if-exists", is_flag=True, help="succeed if the topic does not exist")
@with_client
def delete(client: AdminClient, name: str, if_exists: bool) -> None:
    """Delete topic NAME and its data."""
    from cli.client import KafkaError
    from protocol.error_codes import ErrorCode

    try:
        client.delete_topic(name)
    except KafkaError as e:
        if if_exists and e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            click.echo(f"Topic {name} does not exist")
            return
        raise
    click.echo(f"Deleted topic {name}")


def _headers(pairs: tuple[str, ...]) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--header")
        out.append((key, value.encode()))
    return out


@topic.command("produce")
@click.argument("name")
@click.option("-k", "--key-separator", help="split each line into KEY<sep>VALUE (text format)")
@click.option(
    "-H", "--header", "headers", multiple=True, metavar="KEY=VALUE", help="on every record"
)
@click.option("-p", "--partition", type=int, help="every record to this partition")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help='text: one value per line; json: {"key","value","headers","partition"} per line',
)
@click.option("-z", "--compression", type=click.Choice(list(COMPRESSION)), default="none")
@click.option(
    "--acks", type=click.Choice(["-1", "0", "1", "all"]), default="all", show_default=True
)
@click.option(
    "-f", "--file", "file", type=click.File("r"), default="-", help="input (default stdin)"
)
@with_client
def produce(
    client: AdminClient,
    name: str,
    key_separator: str | None,
    headers: tuple[str, ...],
    partition: int | None,
    fmt: str,
    compression: str,
    acks: str,
    file: TextIO,
) -> None:
    """Produce one record per input line to topic NAME (like kcat -P)."""
    fixed = _headers(headers)
    console = stderr()
    progress = Progress(
        TextColumn("producing"),
        BarColumn(),
        TextColumn("{task.completed} records"),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )
    with progress:
        task = progress.add_task("produce", total=None)
        producer = Producer(
            client,
            name,
            acks=-1 if acks == "all" else int(acks),
            compression=COMPRESSION[compression],
            on_sent=lambda n: progress.advance(task, n),
        )
        for line in lines(file):
            producer.add(
                parse_line(
                    line, fmt, key_separator=key_separator, headers=fixed, partition=partition
                )
            )
        producer.flush()
    spans = ", ".join(
        f"{name}-{p}@{first}..{last}" for p, (first, last) in sorted(producer.acknowledged.items())
    )
    click.echo(f"Produced {producer.sent} records" + (f" ({spans})" if spans else ""), err=True)


def _start_offsets(
    client: AdminClient, tps: list[tuple[str, int]], offset: str
) -> dict[tuple[str, int], int]:
    if offset in ("earliest", "beginning"):
        return {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -2)).items()}
    if offset in ("latest", "end"):
        return {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -1)).items()}
    try:
        value = int(offset)
    except ValueError:
        raise click.BadParameter(
            f"{offset!r}: give earliest, latest, an offset, or -N (N before the end)",
            param_hint="--offset",
        ) from None
    if value >= 0:
        return dict.fromkeys(tps, value)
    ends = client.list_offsets(dict.fromkeys(tps, -1))
    starts = client.list_offsets(dict.fromkeys(tps, -2))
    return {tp: max(starts[tp][0], ends[tp][0] + value) for tp in tps}


@topic.command("consume")
@click.argument("name")
@click.option("-p", "--partition", "partitions", type=int, multiple=True, help="default: all")
@click.option(
    "-o",
    "--offset",
    default="latest",
    show_default=True,
    help="earliest, latest, an offset, or -N (the last N of each partition)",
)
@click.option("--from-beginning", is_flag=True, help="same as --offset earliest")
@click.option("-n", "--num", type=int, help="stop after this many records")
@click.option("--follow", is_flag=True, help="wait for new records instead of stopping at the end")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: the value per line; json: one object per record per line",
)
@click.option("-k", "--key-separator", help="text format: print KEY<sep>VALUE")
@click.option("--print-headers", is_flag=True, help="text format: headers before the value")
@with_client
def consume_(
    client: AdminClient,
    name: str,
    partitions: tuple[int, ...],
    offset: str,
    from_beginning: bool,
    num: int | None,
    follow: bool,
    fmt: str,
    key_separator: str | None,
    print_headers: bool,
) -> None:
    """Print records of topic NAME (like kcat -C). Without --follow it stops at the end offsets
    it found when it started; with --num it waits until that many records arrived. Ctrl-C
    stops it as it stops kafka-console-consumer: the count on stderr, exit status 130."""
    meta = client.topic(name)
    chosen = list(partitions) or sorted(meta.partitions)
    missing = [p for p in chosen if p not in meta.partitions]
    if missing:
        raise Failure(f"topic {name} has no partition {missing[0]}")
    tps = [(name, p) for p in chosen]
    start = _start_offsets(client, tps, "earliest" if from_beginning else offset)
    stop_at = None
    if not follow and num is None:
        stop_at = {tp: o for tp, (o, _) in client.list_offsets(dict.fromkeys(tps, -1)).items()}
    if num is not None and num <= 0:
        return
    out = sys.stdout
    count = 0
    try:
        for record in consume(client, start, stop_at=stop_at):
            if fmt == "json":
                json_line(record_json(record))
            else:
                out.write(
                    record_text(record, key_separator=key_separator, print_headers=print_headers)
                    + "\n"
                )
                out.flush()
            count += 1
            if num is not None and count >= num:
                break
    except KeyboardInterrupt:
        # the usual end of --follow: not an error, but the shell is told it was interrupted
        # (128 + SIGINT), as Kafka's console consumer exits
        click.echo(f"Processed a total of {count} records", err=True)
        raise click.exceptions.Exit(130) from None
