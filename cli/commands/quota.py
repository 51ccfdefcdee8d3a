"""``odradek quota describe|set|delete``: client quotas as ``kafka-configs --entity-type
users|clients|ips`` manages them (DescribeClientQuotas, AlterClientQuotas; KIP-546): for a user,
a client id, both, or their defaults (``--user-default``, ``--client-default``); or the
connection creation rate of an IP address (``--ip``) or of every address (``--ip-default``;
KIP-612)."""

from __future__ import annotations

from typing import Any

import click

from cli.client import AdminClient, SecurityAdmin, check
from cli.options import with_client
from cli.output import emit, format_option

KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
)


def _entity_options(fn: Any) -> Any:
    fn = click.option("--ip-default", is_flag=True, help="the default of every IP address")(fn)
    fn = click.option("--ip", help="an IP address or host name (connection_creation_rate)")(fn)
    fn = click.option("--client-default", is_flag=True, help="the default of every client id")(fn)
    fn = click.option("--client", "client_id", help="a client id")(fn)
    fn = click.option("--user-default", is_flag=True, help="the default of every user")(fn)
    fn = click.option("--user", help="a user principal's name")(fn)
    return fn


def _entity(
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_default: bool,
    ip: str | None = None,
    ip_default: bool = False,
) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    if user is not None or user_default:
        out.append(("user", None if user_default else user))
    if client_id is not None or client_default:
        out.append(("client-id", None if client_default else client_id))
    if ip is not None or ip_default:
        out.append(("ip", None if ip_default else ip))
    return out


def _name(entity: list[Any]) -> dict[str, str]:
    return {
        e.entity_type: e.entity_name if e.entity_name is not None else "<default>" for e in entity
    }


@click.group()
def quota() -> None:
    """Client quotas (byte rates, request percentage) of users and client ids, and connection
    creation rates of IP addresses."""


@quota.command("describe")
@_entity_options
@format_option()
@with_client
def describe(
    client: AdminClient,
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_default: bool,
    ip: str | None,
    ip_default: bool,
    fmt: str,
) -> None:
    """Quotas of the entity named (every entity with quotas when none is)."""
    from protocol.messages.describe_client_quotas import (
        MATCH_DEFAULT,
        MATCH_EXACT,
        QuotaFilterComponent,
    )

    components = [
        QuotaFilterComponent(
            entity_type=t,
            match_type=MATCH_DEFAULT if name is None else MATCH_EXACT,
            match=name,
        )
        for t, name in _entity(user, user_default, client_id, client_default, ip, ip_default)
    ]
    entries = SecurityAdmin(client).describe_quotas(components, strict=bool(components))
    rows: list[dict[str, Any]] = [
        {
            "user": _name(e.entity).get("user"),
            "client_id": _name(e.entity).get("client-id"),
            "ip": _name(e.entity).get("ip"),
            "quotas": {v.key: v.value for v in e.values},
        }
        for e in entries
    ]
    if fmt == "json":
        emit(rows, fmt)
        return
    emit(
        [
            {"user": r["user"], "client_id": r["client_id"], "ip": r["ip"], "key": k, "value": v}
            for r in rows
            for k, v in sorted(r["quotas"].items())
        ],
        fmt,
        [
            ("USER", "user"),
            ("CLIENT-ID", "client_id"),
            ("IP", "ip"),
            ("QUOTA", "key"),
            ("VALUE", "value"),
        ],
        empty="no quotas",
    )


def _alter(
    client: AdminClient,
    entity: list[tuple[str, str | None]],
    ops: list[tuple[str, float, bool]],
    validate_only: bool,
) -> None:
    from protocol.messages.alter_client_quotas import (
        QuotaAlteration,
        QuotaAlterationOp,
        QuotaEntityComponent,
    )

    if not entity:
        raise click.UsageError(
            "name an entity: --user, --user-default, --client, --client-default, --ip or "
            "--ip-default"
        )
    alteration = QuotaAlteration(
        entity=[QuotaEntityComponent(entity_type=t, entity_name=n) for t, n in entity],
        ops=[QuotaAlterationOp(key=k, value=v, remove=r) for k, v, r in ops],
    )
    for result in SecurityAdmin(client).alter_quotas([alteration], validate_only):
        check(result.error_code, "AlterClientQuotas", result.error_message)


@quota.command("set")
@click.argument("settings", nargs=-1, required=True, metavar="KEY=VALUE...")
@_entity_options
@click.option("--validate-only", is_flag=True)
@with_client
def set_(
    client: AdminClient,
    settings: tuple[str, ...],
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_default: bool,
    ip: str | None,
    ip_default: bool,
    validate_only: bool,
) -> None:
    """Set quotas (producer_byte_rate, consumer_byte_rate, request_percentage...; of an IP:
    connection_creation_rate)."""
    ops = []
    for s in settings:
        key, sep, value = s.partition("=")
        if not sep:
            raise click.UsageError(f"{s!r} is not KEY=VALUE")
        try:
            ops.append((key, float(value), False))
        except ValueError:
            raise click.UsageError(f"{key}: {value!r} is not a number") from None
    entity = _entity(user, user_default, client_id, client_default, ip, ip_default)
    _alter(client, entity, ops, validate_only)
    click.echo("Quotas updated" if not validate_only else "Quotas valid")


@quota.command("delete")
@click.argument("keys", nargs=-1, required=True)
@_entity_options
@with_client
def delete(
    client: AdminClient,
    keys: tuple[str, ...],
    user: str | None,
    user_default: bool,
    client_id: str | None,
    client_default: bool,
    ip: str | None,
    ip_default: bool,
) -> None:
    """Remove quotas KEYS of the entity."""
    ops = [(k, 0.0, True) for k in keys]
    entity = _entity(user, user_default, client_id, client_default, ip, ip_default)
    _alter(client, entity, ops, False)
    click.echo("Quotas removed")
