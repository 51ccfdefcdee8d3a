"""``odradek user create|describe|delete``: SCRAM credentials as ``kafka-configs --entity-type
users --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'`` manages them, over
DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554). The password is salted
here (a random salt, PBKDF2 with the mechanism's hash): only the salted password travels."""

from __future__ import annotations

import secrets
from typing import Any

import click

from cli.client import AdminClient, SecurityAdmin, check
from cli.options import with_client
from cli.output import emit, format_option
from protocol.scram import MECHANISMS, salted_password

#: the mechanism's code in the SCRAM credential APIs
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_TYPES.items()}


@click.group()
def user() -> None:
    """SCRAM users (SASL/SCRAM-SHA-256 and SCRAM-SHA-512 credentials)."""


@user.command("create")
@click.argument("name")
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    type=click.Choice(list(MECHANISMS), case_sensitive=False),
    help="default: SCRAM-SHA-256 and SCRAM-SHA-512",
)
@click.option("--iterations", type=int, default=4096, show_default=True)
@click.password_option(
    "--password", envvar="ODRADEK_USER_PASSWORD", help="asked for when not given"
)
@with_client
def create(
    client: AdminClient, name: str, mechanisms: tuple[str, ...], iterations: int, password: str
) -> None:
    """Create (or change the password of) user NAME."""
    from protocol.messages.alter_user_scram_credentials import ScramCredentialUpsertion

    upsertions = []
    for mechanism in [m.upper() for m in mechanisms] or list(MECHANISM_TYPES):
        salt = secrets.token_bytes(32)
        upsertions.append(
            ScramCredentialUpsertion(
                name=name,
                mechanism=MECHANISM_TYPES[mechanism],
                iterations=iterations,
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations),
            )
        )
    for result in SecurityAdmin(client).alter_users(upsertions, []):
        check(result.error_code, f"AlterUserScramCredentials {result.user}", result.error_message)
    click.echo(f"Created SCRAM credentials of user {name}")


@user.command("describe")
@click.argument("names", nargs=-1)
@format_option()
@with_client
def describe(client: AdminClient, names: tuple[str, ...], fmt: str) -> None:
    """The mechanisms and iterations of NAMES (every user when none is given)."""
    body = SecurityAdmin(client).describe_users(list(names) or None)
    rows: list[dict[str, Any]] = []
    for result in body.results:
        check(
            result.error_code, f"DescribeUserScramCredentials {result.user}", result.error_message
        )
        rows.append(
            {
                "user": result.user,
                "credentials": [
                    {
                        "mechanism": MECHANISM_NAMES.get(c.mechanism, str(c.mechanism)),
                        "iterations": c.iterations,
                    }
                    for c in result.credential_infos
                ],
            }
        )
    if fmt == "json":
        emit(rows, fmt)
        return
    emit(
        [
            {"user": r["user"], "mechanism": c["mechanism"], "iterations": c["iterations"]}
            for r in rows
            for c in r["credentials"]
        ],
        fmt,
        [("USER", "user"), ("MECHANISM", "mechanism"), ("ITERATIONS", "iterations")],
        empty="no SCRAM users",
    )


@user.command("delete")
@click.argument("name")
@click.option(
    "--mechanism",
    "mechanisms",
    multiple=True,
    type=click.Choice(list(MECHANISMS), case_sensitive=False),
    help="default: every mechanism the user has",
)
@with_client
def delete(client: AdminClient, name: str, mechanisms: tuple[str, ...]) -> None:
    """Remove user NAME's SCRAM credentials."""
    from protocol.messages.alter_user_scram_credentials import ScramCredentialDeletion

    admin = SecurityAdmin(client)
    chosen = [m.upper() for m in mechanisms]
    if not chosen:
        body = admin.describe_users([name])
        for result in body.results:
            check(result.error_code, f"DescribeUserScramCredentials {name}", result.error_message)
            chosen = [MECHANISM_NAMES[c.mechanism] for c in result.credential_infos]
    deletions = [ScramCredentialDeletion(name=name, mechanism=MECHANISM_TYPES[m]) for m in chosen]
    for result in admin.alter_users([], deletions):
        check(result.error_code, f"AlterUserScramCredentials {result.user}", result.error_message)
    click.echo(f"Deleted SCRAM credentials of user {name} ({', '.join(chosen)})")
