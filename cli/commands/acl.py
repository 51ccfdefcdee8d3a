"""``odradek acl create|list|delete``: ACLs as ``kafka-acls`` manages them (CreateAcls,
DescribeAcls, DeleteAcls; KIP-140): a principal (``User:alice``), a host (``*``), an operation,
ALLOW or DENY, on a resource (``--topic``, ``--group``, ``--transactional-id``, ``--cluster``)
named literally or by prefix (``--resource-pattern-type``)."""

from __future__ import annotations

from typing import Any

import click

from cli.client import AdminClient, SecurityAdmin, check
from cli.options import Failure, with_client
from cli.output import emit, format_option
from protocol.acl import CLUSTER_NAME, AclOperation, AclPermissionType, PatternType, ResourceType

OPERATIONS = [o.name for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY)]
PATTERNS = ("LITERAL", "PREFIXED", "MATCH", "ANY")


def _resource_options(fn: Any) -> Any:
    fn = click.option(
        "--resource-pattern-type",
        "pattern",
        type=click.Choice(PATTERNS, case_sensitive=False),
        default="LITERAL",
        show_default=True,
        help="LITERAL or PREFIXED names; MATCH and ANY in filters (list, delete)",
    )(fn)
    fn = click.option("--cluster", is_flag=True, help="the cluster resource")(fn)
    fn = click.option("--transactional-id", "txn_ids", multiple=True)(fn)
    fn = click.option("--group", "groups", multiple=True)(fn)
    fn = click.option("--topic", "topics", multiple=True)(fn)
    return fn


def _resources(
    topics: tuple[str, ...], groups: tuple[str, ...], txn_ids: tuple[str, ...], cluster: bool
) -> list[tuple[ResourceType, str]]:
    out = [(ResourceType.TOPIC, t) for t in topics]
    out += [(ResourceType.GROUP, g) for g in groups]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in txn_ids]
    if cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _rows(resources: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "resource_type": ResourceType(r.resource_type).name,
            "resource_name": r.resource_name,
            "pattern_type": PatternType(r.pattern_type).name,
            "principal": a.principal,
            "host": a.host,
            "operation": AclOperation(a.operation).name,
            "permission": AclPermissionType(a.permission_type).name,
        }
        for r in resources
        for a in r.acls
    ]


COLUMNS = [
    ("RESOURCE-TYPE", "resource_type"),
    ("NAME", "resource_name"),
    ("PATTERN", "pattern_type"),
    ("PRINCIPAL", "principal"),
    ("HOST", "host"),
    ("OPERATION", "operation"),
    ("PERMISSION", "permission"),
]


@click.group()
def acl() -> None:
    """ACLs of the cluster's authorizer (as kafka-acls)."""


@acl.command("create")
@click.option("--allow-principal", "allow", multiple=True, help="e.g. User:alice")
@click.option("--deny-principal", "deny", multiple=True)
@click.option("--allow-host", "allow_hosts", multiple=True, help="default: every host (*)")
@click.option("--deny-host", "deny_hosts", multiple=True)
@click.option(
    "--operation",
    "operations",
    multiple=True,
    required=True,
    type=click.Choice(OPERATIONS, case_sensitive=False),
)
@_resource_options
@format_option()
@with_client
def create(
    client: AdminClient,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    operations: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    txn_ids: tuple[str, ...],
    cluster: bool,
    pattern: str,
    fmt: str,
) -> None:
    """Add ACLs: each principal may (or may not) do each operation on each resource."""
    from protocol.messages.create_acls import AclCreation

    resources = _resources(topics, groups, txn_ids, cluster)
    if not resources:
        raise click.UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
    if not allow and not deny:
        raise click.UsageError("name a principal: --allow-principal or --deny-principal")
    if pattern.upper() not in ("LITERAL", "PREFIXED"):
        raise click.UsageError("ACLs are created LITERAL or PREFIXED")
    creations = []
    rows = []
    for principals, hosts, permission in (
        (allow, allow_hosts or ("*",), AclPermissionType.ALLOW),
        (deny, deny_hosts or ("*",), AclPermissionType.DENY),
    ):
        for principal in principals:
            for host in hosts:
                for op in operations:
                    for rtype, rname in resources:
                        creations.append(
                            AclCreation(
                                resource_type=rtype,
                                resource_name=rname,
                                resource_pattern_type=PatternType[pattern.upper()],
                                principal=principal,
                                host=host,
                                operation=AclOperation[op.upper()],
                                permission_type=permission,
                            )
                        )
                        rows.append(
                            {
                                "resource_type": rtype.name,
                                "resource_name": rname,
                                "pattern_type": pattern.upper(),
                                "principal": principal,
                                "host": host,
                                "operation": op.upper(),
                                "permission": permission.name,
                            }
                        )
    for result in SecurityAdmin(client).create_acls(creations):
        check(result.error_code, "CreateAcls", result.error_message)
    emit(rows, fmt, COLUMNS)


def _filter(
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    txn_ids: tuple[str, ...],
    cluster: bool,
    pattern: str,
    principal: str | None,
    host: str | None,
    operation: str | None,
    permission: str | None,
) -> list[dict[str, Any]]:
    """DescribeAcls/DeleteAcls filter fields, one per named resource (ANY when none)."""
    resources: list[tuple[int, str | None]] = list(_resources(topics, groups, txn_ids, cluster))
    if not resources:
        resources = [(ResourceType.ANY, None)]
    pattern_type = PatternType[pattern.upper()]
    if pattern_type == PatternType.LITERAL and resources == [(ResourceType.ANY, None)]:
        pattern_type = PatternType.ANY
    return [
        {
            "resource_type_filter": int(rtype),
            "resource_name_filter": rname,
            "pattern_type_filter": int(pattern_type),
            "principal_filter": principal,
            "host_filter": host,
            "operation": int(AclOperation[operation.upper()])
            if operation
            else int(AclOperation.ANY),
            "permission_type": int(AclPermissionType[permission.upper()])
            if permission
            else int(AclPermissionType.ANY),
        }
        for rtype, rname in resources
    ]


def _filter_options(fn: Any) -> Any:
    fn = click.option("--principal")(fn)
    fn = click.option("--host")(fn)
    fn = click.option("--operation", type=click.Choice(OPERATIONS, case_sensitive=False))(fn)
    fn = click.option("--permission", type=click.Choice(["ALLOW", "DENY"], case_sensitive=False))(
        fn
    )
    return _resource_options(fn)


@acl.command("list")
@_filter_options
@format_option()
@with_client
def list_(client: AdminClient, fmt: str, **opts: Any) -> None:
    """ACLs matching the filter (every ACL without one)."""
    from protocol.messages.describe_acls import DescribeAclsRequest

    rows = []
    for f in _filter(**_filter_args(opts)):
        rows.extend(_rows(SecurityAdmin(client).describe_acls(DescribeAclsRequest(**f))))
    emit(rows, fmt, COLUMNS, empty="no ACLs")


def _filter_args(opts: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": opts["topics"],
        "groups": opts["groups"],
        "txn_ids": opts["txn_ids"],
        "cluster": opts["cluster"],
        "pattern": opts["pattern"],
        "principal": opts["principal"],
        "host": opts["host"],
        "operation": opts["operation"],
        "permission": opts["permission"],
    }


@acl.command("delete")
@_filter_options
@click.option("--force", is_flag=True, help="delete every ACL when no filter is given")
@format_option()
@with_client
def delete(client: AdminClient, fmt: str, force: bool, **opts: Any) -> None:
    """Remove the ACLs matching the filter; prints what was removed."""
    from protocol.messages.delete_acls import DeleteAclsFilter

    args = _filter_args(opts)
    if not force and not any(
        args[k] for k in ("topics", "groups", "txn_ids", "cluster", "principal", "operation")
    ):
        raise Failure("no filter given: add --force to delete every ACL")
    filters = [DeleteAclsFilter(**f) for f in _filter(**args)]
    rows = []
    for result in SecurityAdmin(client).delete_acls(filters):
        check(result.error_code, "DeleteAcls", result.error_message)
        for m in result.matching_acls:
            check(m.error_code, "DeleteAcls", m.error_message)
            rows.append(
                {
                    "resource_type": ResourceType(m.resource_type).name,
                    "resource_name": m.resource_name,
                    "pattern_type": PatternType(m.pattern_type).name,
                    "principal": m.principal,
                    "host": m.host,
                    "operation": AclOperation(m.operation).name,
                    "permission": AclPermissionType(m.permission_type).name,
                }
            )
    emit(rows, fmt, COLUMNS, empty="no ACL matched")
