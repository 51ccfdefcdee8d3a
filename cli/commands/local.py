"""The commands that work on this machine rather than over the Kafka protocol: ``serve`` (run a
broker), ``dump-log`` (print segment files, like kafka-dump-log) and ``check-log`` (verify a log
directory offline: CRCs, index sanity, what recovery would truncate)."""

from __future__ import annotations

from pathlib import Path

import click

from cli.output import emit, format_option


@click.command("serve")
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="a Kafka server.properties file",
)
@click.option(
    "-o",
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="set a configuration key (repeatable)",
)
@click.option("--log-level", default="INFO", show_default=True)
def serve(config_path: str | None, overrides: tuple[str, ...], log_level: str) -> int:
    """Run a broker (standalone, or in a ZooKeeper cluster with zookeeper.connect)."""
    from broker.cli import serve as run

    code = run(config_path, list(overrides), log_level)
    if code:
        raise click.exceptions.Exit(code)
    return code


@click.command("dump-log")
@click.argument("paths", nargs=-1, metavar="FILE...")
@click.option("--files", default="", help="comma-separated files (Kafka's spelling)")
@click.option(
    "--records",
    "--deep-iteration",
    "records",
    is_flag=True,
    help="print every record, not only batches",
)
@click.option("--print-data-log", is_flag=True, help="print keys and values (implies --records)")
@click.option("--max-bytes", type=int, default=2**31 - 1)
def dump_log(
    paths: tuple[str, ...], files: str, records: bool, print_data_log: bool, max_bytes: int
) -> None:
    """Print the batches (and records) of segment and index files, like kafka-dump-log."""
    from broker.cli import dump_log as run

    chosen = [*paths, *(p for p in files.split(",") if p)]
    if not chosen:
        raise click.UsageError("no files given")
    code = run(chosen, records=records, print_data=print_data_log, max_bytes=max_bytes)
    if code:
        raise click.exceptions.Exit(code)


@click.command("check-log")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--all", "show_all", is_flag=True, help="list healthy segments too")
@format_option()
def check_log(directory: Path, show_all: bool, fmt: str) -> None:
    """Verify log directory DIRECTORY (or one partition's directory) offline: batch CRCs and
    offsets, index sanity, and what recovery would truncate. Exit status 1 if anything is
    wrong. Read-only."""
    from storage.check import check_dir

    results = check_dir(directory)
    rows = [
        {
            "segment": r.path,
            "base_offset": r.base_offset,
            "batches": r.batches,
            "records": r.records,
            "size": r.size,
            "valid_bytes": r.valid_bytes,
            "truncate_bytes": r.truncate_bytes,
            "truncate_reason": r.truncate_reason,
            "index_entries": r.index_entries,
            "time_index_entries": r.time_index_entries,
            "errors": r.errors,
            "ok": r.ok,
        }
        for r in results
    ]
    bad = [r for r in rows if not r["ok"]]
    if fmt == "json":
        emit(rows if show_all else bad, fmt)
    else:
        shown = rows if show_all else bad
        if shown:
            emit(
                shown,
                fmt,
                [
                    ("SEGMENT", "segment"),
                    ("BATCHES", "batches"),
                    ("VALID-BYTES", "valid_bytes"),
                    ("TRUNCATE-BYTES", "truncate_bytes"),
                    ("PROBLEM", "truncate_reason"),
                    ("INDEX ERRORS", "errors"),
                ],
            )
        click.echo(
            f"{len(rows)} segments checked in {directory}: "
            + ("all healthy" if not bad else f"{len(bad)} with problems"),
            err=fmt == "json",
        )
    if bad:
        raise click.exceptions.Exit(1)


COMMANDS = [serve, dump_log, check_log]
