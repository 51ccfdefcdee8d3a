"""Options every cluster command shares: ``-b/--bootstrap-server`` and ``--timeout``, and how
failures end a command."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cli.client import AdminClient, ClientError

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def with_client(fn: F) -> F:
    """Adds ``-b``/``--timeout`` and passes an :class:`AdminClient` as ``client``; turns client
    errors into an ``odradek: ...`` line and exit status 1."""

    @click.option(
        "-b",
        "--bootstrap-server",
        "bootstrap",
        envvar="ODRADEK_BOOTSTRAP_SERVER",
        default=DEFAULT_BOOTSTRAP,
        show_default=True,
        help="HOST:PORT[,HOST:PORT...] of any broker(s) of the cluster",
    )
    @click.option(
        "--timeout",
        "timeout_s",
        type=float,
        default=30.0,
        show_default=True,
        help="seconds an operation keeps retrying",
    )
    @functools.wraps(fn)
    def wrapper(bootstrap: str, timeout_s: float, **kwargs: Any) -> Any:
        try:
            with AdminClient(bootstrap, timeout_s=timeout_s) as client:
                return fn(client=client, **kwargs)
        except ClientError as e:
            raise Failure(str(e)) from None

    return wrapper  # type: ignore[return-value]


class Failure(click.ClickException):
    """A command that failed for a reason the operator should read (exit status 1)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"odradek: {self.format_message()}", err=True)
