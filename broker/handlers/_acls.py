"""What CreateAcls, DescribeAcls and DeleteAcls share: wire codes to Kafka's ACL model and
back, and the checks Kafka's ``AclApis`` makes on bindings and filters."""

from __future__ import annotations

from broker.security.authorizer import AclBindingFilter
from broker.security.principal import parse_principal
from coordination.errors import KafkaApiError
from coordination.metadata.security import AccessControlEntry, AclBinding, ResourcePattern
from protocol.acl import CLUSTER_NAME, AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.error_codes import ErrorCode

NO_AUTHORIZER = "No Authorizer is configured on the broker"


class InvalidAcl(KafkaApiError):
    error_code = ErrorCode.INVALID_REQUEST


def _enum(enum: type, code: int, what: str) -> int:
    try:
        return int(enum(code))
    except ValueError:
        raise InvalidAcl(f"Unknown {what} code {code}") from None


def binding(
    resource_type: int,
    name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A creation as a binding; raises InvalidAcl (INVALID_REQUEST) as Kafka would."""
    rtype = ResourceType(_enum(ResourceType, resource_type, "resource type"))
    ptype = PatternType(_enum(PatternType, pattern_type, "pattern type"))
    op = AclOperation(_enum(AclOperation, operation, "operation"))
    perm = AclPermissionType(_enum(AclPermissionType, permission, "permission type"))
    if rtype in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise InvalidAcl(f"Invalid resource type {rtype.name} in an ACL binding")
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid pattern type {ptype.name} in an ACL binding")
    if op in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise InvalidAcl(f"Invalid operation {op.name} in an ACL binding")
    if perm in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
        raise InvalidAcl(f"Invalid permission type {perm.name} in an ACL binding")
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not name:
        raise InvalidAcl("Invalid empty resource name")
    if "/" in name:
        raise InvalidAcl(f"ACL binding contains invalid resource name: {name}")
    try:
        parse_principal(principal)
    except ValueError as e:
        raise InvalidAcl(str(e)) from None
    if not host:
        raise InvalidAcl("Invalid empty host in an ACL binding")
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm)
    )


def binding_filter(
    resource_type: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclBindingFilter:
    rtype = ResourceType(_enum(ResourceType, resource_type, "resource type"))
    ptype = PatternType(_enum(PatternType, pattern_type, "pattern type"))
    op = AclOperation(_enum(AclOperation, operation, "operation"))
    perm = AclPermissionType(_enum(AclPermissionType, permission, "permission type"))
    for value, what in ((rtype, "resource type"), (ptype, "pattern type"), (op, "operation"),
                        (perm, "permission type")):  # fmt: skip
        if value.name == "UNKNOWN":
            raise InvalidAcl(f"Invalid {what} UNKNOWN in an ACL filter")
    return AclBindingFilter(rtype, name, ptype, principal, host, op, perm)
