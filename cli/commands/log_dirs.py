"""``odradek log-dirs``: each broker's log directories (JBOD), whether they are online, their
space, and the partitions they hold (DescribeLogDirs, KIP-113); ``log-dirs move`` moves a
partition to another directory of its broker (AlterReplicaLogDirs)."""

from __future__ import annotations

from typing import Any

import click

from cli.client import AdminClient
from cli.options import with_client
from cli.output import emit, format_option


def _error_name(code: int) -> str | None:
    from protocol.error_codes import ErrorCode

    return None if code == 0 else ErrorCode.of(code).name


def describe_dirs(
    client: AdminClient, brokers: list[int], topics: list[str]
) -> list[dict[str, Any]]:
    out = []
    for broker in brokers:
        body = client.describe_log_dirs(broker, topics or None)
        for r in body.results:
            out.append(
                {
                    "broker": broker,
                    "path": r.log_dir,
                    "error": _error_name(r.error_code),
                    "total_bytes": r.total_bytes if r.total_bytes >= 0 else None,
                    "usable_bytes": r.usable_bytes if r.usable_bytes >= 0 else None,
                    "partitions": [
                        {
                            "topic": t.name,
                            "partition": p.partition_index,
                            "size": p.partition_size,
                            "offset_lag": p.offset_lag,
                            "is_future": p.is_future_key,
                        }
                        for t in sorted(r.topics, key=lambda t: t.name)
                        for p in sorted(t.partitions, key=lambda p: p.partition_index)
                    ],
                }
            )
    return out


def show(client: AdminClient, brokers: tuple[int, ...], topics: tuple[str, ...], fmt: str) -> None:
    chosen = list(brokers) or sorted(client.metadata([]).brokers)
    dirs = describe_dirs(client, chosen, list(topics))
    if fmt == "json":
        emit(dirs, fmt)
        return
    emit(
        [
            {
                **d,
                "status": d["error"] or "online",
                "partition_count": len(d["partitions"]),
                "size": sum(p["size"] for p in d["partitions"]),
            }
            for d in dirs
        ],
        fmt,
        [
            ("BROKER", "broker"),
            ("DIR", "path"),
            ("STATUS", "status"),
            ("PARTITIONS", "partition_count"),
            ("SIZE", "size"),
            ("TOTAL-BYTES", "total_bytes"),
            ("USABLE-BYTES", "usable_bytes"),
        ],
    )


def _describe_options(fn: Any) -> Any:
    fn = format_option()(fn)
    fn = click.option("--topic", "topics", multiple=True, help="only these topics' partitions")(fn)
    fn = click.option("--broker", "brokers", type=int, multiple=True, help="default: every broker")(
        fn
    )
    return fn


@click.group("log-dirs", invoke_without_command=True)
@_describe_options
@with_client
@click.pass_context
def log_dirs(
    ctx: click.Context,
    client: AdminClient,
    brokers: tuple[int, ...],
    topics: tuple[str, ...],
    fmt: str,
) -> None:
    """Log directories of the brokers (online or not, space, partitions); same as
    ``log-dirs describe``."""
    if ctx.invoked_subcommand is None:
        show(client, brokers, topics, fmt)


@log_dirs.command("describe")
@_describe_options
@with_client
def describe(
    client: AdminClient, brokers: tuple[int, ...], topics: tuple[str, ...], fmt: str
) -> None:
    """Log directories of the brokers, and the partitions in each."""
    show(client, brokers, topics, fmt)


@log_dirs.command("move")
@click.argument("topic")
@click.argument("partition", type=int)
@click.argument("path")
@click.option("--broker", type=int, required=True, help="the broker whose directories these are")
@with_client
def move(client: AdminClient, topic: str, partition: int, path: str, broker: int) -> None:
    """Move TOPIC's PARTITION to log directory PATH of --broker."""
    client.alter_replica_log_dir(broker, topic, partition, path)
    click.echo(f"Moving {topic}-{partition} to {path} on broker {broker}")
