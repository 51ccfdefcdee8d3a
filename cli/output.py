"""How commands print: a human table (rich) by default, JSON for scripts (``--format json``).

A command builds its answer as plain data (a list of dicts, or one dict) and hands it to
:func:`emit` with the columns a table shows; the JSON form is the data itself, so scripts get
every field whatever the table shows. Errors go to stderr as ``odradek: <message>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json")

#: (header, key) per column; a key's value is looked up in each row
Columns = Sequence[tuple[str, str]]


def format_option(*, choices: Sequence[str] = FORMATS, default: str = "table") -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=default,
        show_default=True,
        help="table for people, json for scripts",
    )


def stdout() -> Console:
    console = Console(soft_wrap=True, highlight=False)
    if not console.is_terminal:
        # piped into a file or another program: never fold a table to 80 columns
        console = Console(soft_wrap=True, highlight=False, width=250)
    return console


def stderr() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def emit(
    data: Any,
    fmt: str,
    columns: Columns | None = None,
    *,
    title: str | None = None,
    empty: str | None = None,
) -> None:
    """Prints ``data`` (a list of rows, or one mapping shown as KEY VALUE lines) as JSON or as
    a table of ``columns``."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
        return
    console = stdout()
    if isinstance(data, Mapping):
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for key, value in data.items():
            table.add_row(str(key), _cell(value))
        console.print(table)
        return
    if not data and empty:
        console.print(empty)
        return
    assert columns is not None
    table = Table(box=None, title=title, pad_edge=False, header_style="bold")
    for header, _ in columns:
        table.add_column(header, overflow="fold")
    for row in data:
        table.add_row(*(_cell(row.get(key)) for _, key in columns))
    console.print(table)


def json_line(obj: Any) -> None:
    """One JSON object on one line (JSON Lines), flushed at once (``consume --follow``)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()
