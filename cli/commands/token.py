"""``odradek token create|describe|renew|expire``: delegation tokens (KIP-48) as
``kafka-delegation-tokens`` manages them, over CreateDelegationToken, DescribeDelegationToken,
RenewDelegationToken and ExpireDelegationToken. The broker refuses them on a PLAINTEXT
listener: connect to a SASL (or mutual TLS) listener with ``--command-config`` or the SASL
flags. A token is given back by its HMAC, in base64 as the broker's answer and Kafka's tool
print it; a job logs in with SCRAM, the token id as user name, the HMAC as password and
``tokenauth="true"`` (docs/security.md)."""

from __future__ import annotations

import base64
import binascii
import datetime
from typing import Any

import click

from cli.client import AdminClient, SecurityAdmin
from cli.options import with_client
from cli.output import emit, format_option


def _principal(text: str) -> tuple[str, str]:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise click.BadParameter(f"{text!r} is not a principal (User:<name>)")
    return kind, name


def _hmac(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise click.BadParameter(f"{text!r} is not a base64 HMAC") from None


def _time(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).isoformat(timespec="seconds")


def _principal_text(kind: str, name: str) -> str:
    return f"{kind}:{name}"


def _row(token: Any, *, created: bool = False) -> dict[str, Any]:
    suffix = "_ms" if created else ""
    return {
        "token_id": token.token_id,
        "hmac": base64.b64encode(bytes(token.hmac)).decode(),
        "owner": _principal_text(token.principal_type, token.principal_name),
        # (before v3 of the APIs, which name it, the requester is the owner)
        "requester": _principal_text(
            token.token_requester_principal_type or token.principal_type,
            token.token_requester_principal_name or token.principal_name,
        ),
        "renewers": [
            _principal_text(r.principal_type, r.principal_name)
            for r in getattr(token, "renewers", None) or []
        ],
        "issued": _time(getattr(token, f"issue_timestamp{suffix}")),
        "expires": _time(getattr(token, f"expiry_timestamp{suffix}")),
        "max": _time(getattr(token, f"max_timestamp{suffix}")),
    }


COLUMNS = [
    ("TOKEN ID", "token_id"),
    ("HMAC", "hmac"),
    ("OWNER", "owner"),
    ("REQUESTER", "requester"),
    ("RENEWERS", "renewers"),
    ("ISSUED", "issued"),
    ("EXPIRES", "expires"),
    ("MAX", "max"),
]


@click.group()
def token() -> None:
    """Delegation tokens (KIP-48), as kafka-delegation-tokens."""


@token.command("create")
@click.option("--renewer-principal", "renewers", multiple=True, help="User:<name> who may renew it")
@click.option("--owner-principal", "owner", help="another owner (needs CREATE_TOKENS on it)")
@click.option(
    "--max-life-time-period",
    "max_lifetime_ms",
    type=int,
    default=-1,
    show_default=True,
    help="ms; -1: the broker's delegation.token.max.lifetime.ms",
)
@format_option()
@with_client
def create(
    client: AdminClient,
    renewers: tuple[str, ...],
    owner: str | None,
    max_lifetime_ms: int,
    fmt: str,
) -> None:
    """Create a token (of the caller, or of --owner-principal)."""
    body = SecurityAdmin(client).create_token(
        [_principal(r) for r in renewers], _principal(owner) if owner else None, max_lifetime_ms
    )
    row = _row(body, created=True)
    row["renewers"] = list(renewers)
    emit([row], fmt, COLUMNS)


@token.command("describe")
@click.option(
    "--owner-principal",
    "owners",
    multiple=True,
    help="only these owners' tokens (default: every token the caller may see)",
)
@format_option()
@with_client
def describe(client: AdminClient, owners: tuple[str, ...], fmt: str) -> None:
    """The tokens the caller owns, asked for or renews, or may describe."""
    tokens = SecurityAdmin(client).describe_tokens(
        [_principal(o) for o in owners] if owners else None
    )
    emit([_row(t) for t in tokens], fmt, COLUMNS, empty="no delegation tokens")


@token.command("renew")
@click.option("--hmac", "hmac", required=True, help="the token's HMAC (base64)")
@click.option(
    "--renew-time-period",
    "period_ms",
    type=int,
    default=-1,
    show_default=True,
    help="ms; -1: the broker's delegation.token.expiry.time.ms",
)
@with_client
def renew(client: AdminClient, hmac: str, period_ms: int) -> None:
    """Move a token's expiry (owner and renewers only)."""
    expiry = SecurityAdmin(client).renew_token(_hmac(hmac), period_ms)
    click.echo(f"Renewed: the token expires at {_time(expiry)}")


@token.command("expire")
@click.option("--hmac", "hmac", required=True, help="the token's HMAC (base64)")
@click.option(
    "--expiry-time-period",
    "period_ms",
    type=int,
    default=-1,
    show_default=True,
    help="ms from now; -1: at once (the token is removed)",
)
@with_client
def expire(client: AdminClient, hmac: str, period_ms: int) -> None:
    """Bring a token's expiry forward, or remove it (owner and renewers only)."""
    expiry = SecurityAdmin(client).expire_token(_hmac(hmac), period_ms)
    if period_ms < 0:
        click.echo("Expired: the token is removed")
    else:
        click.echo(f"The token now expires at {_time(expiry)}")
