"""Options every cluster command shares: ``-b/--bootstrap-server``, ``--timeout``, the security
options (``--command-config`` with Kafka client properties, and flags: :mod:`cli.security`), and
how failures end a command."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cli.client import AdminClient, ClientError
from cli.security import (
    MECHANISMS,
    PROTOCOLS,
    SecurityConfigError,
    load_command_config,
    security_from,
)

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
    @click.option(
        "--command-config",
        type=click.Path(dir_okay=False),
        envvar="ODRADEK_COMMAND_CONFIG",
        help="Kafka client properties (security.protocol, sasl.mechanism, sasl.jaas.config, "
        "ssl.truststore.location...), as Kafka's tools take them",
    )
    @click.option(
        "--security-protocol",
        type=click.Choice(PROTOCOLS, case_sensitive=False),
        help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (wins over --command-config)",
    )
    @click.option("--sasl-mechanism", type=click.Choice(MECHANISMS, case_sensitive=False))
    @click.option("--sasl-username")
    @click.option("--sasl-password", envvar="ODRADEK_SASL_PASSWORD")
    @click.option("--ssl-cafile", type=click.Path(dir_okay=False), help="CA certificates (PEM)")
    @click.option("--ssl-certfile", type=click.Path(dir_okay=False), help="client certificate")
    @click.option("--ssl-keyfile", type=click.Path(dir_okay=False), help="its private key")
    @functools.wraps(fn)
    def wrapper(
        bootstrap: str,
        timeout_s: float,
        command_config: str | None,
        security_protocol: str | None,
        sasl_mechanism: str | None,
        sasl_username: str | None,
        sasl_password: str | None,
        ssl_cafile: str | None,
        ssl_certfile: str | None,
        ssl_keyfile: str | None,
        **kwargs: Any,
    ) -> Any:
        try:
            security = security_from(
                load_command_config(command_config),
                protocol=security_protocol,
                mechanism=sasl_mechanism,
                username=sasl_username,
                password=sasl_password,
                cafile=ssl_cafile,
                certfile=ssl_certfile,
                keyfile=ssl_keyfile,
            )
        except SecurityConfigError as e:
            raise click.UsageError(str(e)) from None
        try:
            with AdminClient(bootstrap, timeout_s=timeout_s, security=security) as client:
                return fn(client=client, **kwargs)
        except ClientError as e:
            raise Failure(str(e)) from None

    return wrapper  # type: ignore[return-value]


class Failure(click.ClickException):
    """A command that failed for a reason the operator should read (exit status 1)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"odradek: {self.format_message()}", err=True)
