"""Authorization: the seam (:class:`Authorizer`) and the built-in ACL authorizer (Kafka's
``AclAuthorizer`` / ``StandardAuthorizer`` model).

Every request handler declares the ACL operation and resource type it needs
(:func:`broker.registry.handler`); the dispatcher checks requirements on the CLUSTER resource
before the handler runs, and handlers ask :meth:`~broker.dispatch.RequestContext.authorize` for
each topic, group or transactional id a request names, answering TOPIC_AUTHORIZATION_FAILED and
its kin per resource, as Kafka's ``KafkaApis`` does. With no ``authorizer.class.name`` (the
default, as in Kafka) there is no authorizer and every operation is allowed.

:class:`AclAuthorizer`'s rules, Kafka's:

* ``super.users`` may do anything;
* the ACLs that apply to a resource are those of the LITERAL pattern of its name, the LITERAL
  wildcard ``*`` and every PREFIXED pattern its name starts with;
* none at all: allowed only with ``allow.everyone.if.no.acl.found``;
* a DENY entry matching the principal (or ``User:*``), the host (or ``*``) and the operation (or
  ALL) denies; otherwise an ALLOW entry that matches allows. ALLOW of READ, WRITE, DELETE or ALTER
  implies DESCRIBE, ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS.

Decisions are cached per (principal, host, operation, resource) until the ACLs change (on this
broker or, through the store's notifications, any other), so a request costs a dictionary lookup
per resource however many ACLs there are. The ACLs themselves live in the
:class:`~coordination.metadata.security.SecurityStore` (ZooKeeper's ``/kafka-acl`` or the embedded
file); CreateAcls/DeleteAcls write there and every broker's authorizer follows.

Thread-safety: ``authorize`` is called from every processor thread at once; it reads immutable
snapshots and a dictionary replaced whole on change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker.net.session import KafkaPrincipal
from broker.security.audit import SecurityAudit
from broker.security.principal import parse_principal
from coordination.metadata.security import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclSnapshot,
    ResourcePattern,
    SecurityStore,
    SecurityStoreError,
)
from protocol.acl import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

log = logging.getLogger(__name__)

#: authorizer.class.name values that select the built-in ACL authorizer
ACL_AUTHORIZER_CLASSES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "odradek.AclAuthorizer",
    }
)

#: what each resource type supports (Kafka's AclEntry.supportedOperations)
SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}

_IMPLIED: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}

#: decisions kept before the cache starts over (bounded memory for many clients and topics)
DECISION_CACHE_MAX = 200_000


class Authorizer(Protocol):
    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on the resource."""
        ...

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``principal`` may do ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``)."""
        ...

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        resource_name: str,
    ) -> list[AclOperation]:
        """The supported operations of the resource that ``principal`` may do."""
        ...


@dataclass(frozen=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: None names and hosts, ANY types match everything; a MATCH
    pattern type matches the patterns that would apply to the name."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches_pattern(self, p: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != p.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != p.pattern_type:
            return False
        if self.name is None:
            return True
        if pt in (PatternType.ANY, p.pattern_type):
            return self.name == p.name
        if p.pattern_type == PatternType.LITERAL:
            return self.name == p.name or p.name == WILDCARD_RESOURCE
        return self.name.startswith(p.name)

    def matches_entry(self, e: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != e.principal:
            return False
        if self.host is not None and self.host != e.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != e.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == e.permission


class _Index:
    """The ACLs of one resource type, arranged for matching: literal names (with ``*``) and
    prefixes by length."""

    __slots__ = ("literal", "prefix_lengths", "prefixed")

    def __init__(self) -> None:
        self.literal: dict[str, list[AccessControlEntry]] = {}
        self.prefixed: dict[str, list[AccessControlEntry]] = {}
        self.prefix_lengths: tuple[int, ...] = ()

    def matching(self, name: str) -> list[AccessControlEntry]:
        out: list[AccessControlEntry] = []
        literal = self.literal
        if literal:
            out.extend(literal.get(name, ()))
            if name != WILDCARD_RESOURCE:
                out.extend(literal.get(WILDCARD_RESOURCE, ()))
        prefixed = self.prefixed
        if prefixed:
            n = len(name)
            for k in self.prefix_lengths:
                if k > n:
                    break
                found = prefixed.get(name[:k])
                if found:
                    out.extend(found)
        return out


def _build_index(acls: AclSnapshot) -> dict[ResourceType, _Index]:
    index: dict[ResourceType, _Index] = {}
    for pattern, entries in acls.items():
        idx = index.setdefault(pattern.resource_type, _Index())
        table = idx.literal if pattern.pattern_type == PatternType.LITERAL else idx.prefixed
        table.setdefault(pattern.name, []).extend(sorted(entries))
    for idx in index.values():
        idx.prefix_lengths = tuple(sorted({len(p) for p in idx.prefixed}))
    return index


def _entry_matches(
    e: AccessControlEntry,
    principal: str,
    host: str,
    operations: frozenset[AclOperation] | None,
    operation: AclOperation,
    permission: AclPermissionType,
) -> bool:
    if e.permission != permission:
        return False
    if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
        return False
    if e.host != host and e.host != WILDCARD_HOST:
        return False
    if e.operation == AclOperation.ALL:
        return True
    return e.operation == operation if operations is None else e.operation in operations


class AclAuthorizer:
    """The built-in ACL authorizer (see the module docstring)."""

    def __init__(
        self,
        store: SecurityStore,
        *,
        super_users: Iterable[KafkaPrincipal] = (),
        allow_everyone_if_no_acl_found: bool = False,
        audit: SecurityAudit | None = None,
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.audit = audit
        self._index: dict[ResourceType, _Index] = {}
        self._cache: dict[tuple[KafkaPrincipal, str, int, int, str], bool] = {}
        self._write_lock = threading.Lock()
        self._on_acls(store.acls)
        store.add_acl_listener(self._on_acls)

    @staticmethod
    def parse_super_users(text: str | None) -> list[KafkaPrincipal]:
        """``super.users``: ``User:a;User:b`` (Kafka separates them with semicolons)."""
        return [parse_principal(s.strip()) for s in (text or "").split(";") if s.strip()]

    def _on_acls(self, acls: AclSnapshot) -> None:
        self._index = _build_index(acls)
        self._cache = {}  # a new dictionary: readers holding the old one finish with it

    # -- decisions ---------------------------------------------------------------------------

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        cache = self._cache
        key = (principal, host, operation, resource_type, resource_name)
        decision = cache.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, resource_name)
            if len(cache) >= DECISION_CACHE_MAX:
                cache.clear()
            cache[key] = decision
        return decision

    def _decide(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        idx = self._index.get(resource_type)
        entries = idx.matching(resource_name) if idx is not None else []
        if not entries:
            return self.allow_everyone_if_no_acl_found
        who = str(principal)
        for e in entries:
            if _entry_matches(e, who, host, None, operation, AclPermissionType.DENY):
                return False
        implied = _IMPLIED.get(operation, frozenset({operation}))
        return any(
            _entry_matches(e, who, host, implied, operation, AclPermissionType.ALLOW)
            for e in entries
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: some resource of the type allows
        ``operation`` and no DENY covers it (a DENY on the literal ``*`` covers all)."""
        if principal in self.super_users:
            return True
        idx = self._index.get(resource_type)
        if idx is None:
            return self.allow_everyone_if_no_acl_found
        who = str(principal)

        def names(
            table: dict[str, list[AccessControlEntry]], permission: AclPermissionType
        ) -> set[str]:
            return {
                name
                for name, entries in table.items()
                if any(_entry_matches(e, who, host, None, operation, permission) for e in entries)
            }

        deny_literal = names(idx.literal, AclPermissionType.DENY)
        if WILDCARD_RESOURCE in deny_literal:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixed = names(idx.prefixed, AclPermissionType.DENY)

        def dominated(name: str) -> bool:
            return any(name[:k] in deny_prefixed for k in range(1, len(name) + 1))

        allow_prefixed = names(idx.prefixed, AclPermissionType.ALLOW)
        if any(not dominated(p) for p in allow_prefixed):
            return True
        allow_literal = names(idx.literal, AclPermissionType.ALLOW)
        return any(
            name == WILDCARD_RESOURCE or (name not in deny_literal and not dominated(name))
            for name in allow_literal
        )

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        resource_name: str,
    ) -> list[AclOperation]:
        return [
            op
            for op in SUPPORTED_OPERATIONS.get(resource_type, ())
            if self.authorize(principal, host, op, resource_type, resource_name)
        ]

    # -- ACL management (CreateAcls, DeleteAcls, DescribeAcls) -------------------------------

    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        out: list[AclBinding] = []
        for pattern, entries in sorted(self.store.acls.items()):
            if not flt.matches_pattern(pattern):
                continue
            out.extend(AclBinding(pattern, e) for e in sorted(entries) if flt.matches_entry(e))
        return out

    def create_acls(self, bindings: list[AclBinding]) -> list[Exception | None]:
        """One result per binding: None or the error (SecurityStoreError when not stored)."""
        results: list[Exception | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, b in enumerate(bindings):
            by_pattern.setdefault(b.pattern, []).append(i)
        with self._write_lock:
            for pattern, indexes in by_pattern.items():
                new = frozenset(bindings[i].entry for i in indexes)
                try:
                    self.store.update_acls(pattern, lambda current, new=new: current | new)  # type: ignore[misc]
                except (SecurityStoreError, ValueError) as e:
                    for i in indexes:
                        results[i] = e
        return results

    def delete_acls(
        self, filters: list[AclBindingFilter]
    ) -> list[tuple[list[AclBinding], Exception | None]]:
        """Per filter: the bindings it deleted (a binding matched by several filters is
        reported under the first), and an error if a pattern could not be updated."""
        deleted: list[list[AclBinding]] = [[] for _ in filters]
        errors: list[Exception | None] = [None] * len(filters)
        with self._write_lock:
            patterns = set(self.store.acls)
            for flt in filters:
                # a filter naming one pattern exactly also reaches ACLs not propagated here yet
                if (
                    flt.name is not None
                    and flt.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)
                    and flt.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN)
                ):
                    patterns.add(ResourcePattern(flt.resource_type, flt.name, flt.pattern_type))
            for pattern in sorted(patterns):
                matching = [i for i, f in enumerate(filters) if f.matches_pattern(pattern)]
                if not matching:
                    continue
                removal = _Removal(filters, matching)
                try:
                    self.store.update_acls(pattern, removal.apply)
                except (SecurityStoreError, ValueError) as err:
                    for i in matching:
                        errors[i] = err
                    continue
                for entry, i in sorted(removal.removed.items()):
                    deleted[i].append(AclBinding(pattern, entry))
        return list(zip(deleted, errors, strict=True))


class _Removal:
    """What DeleteAcls removes from one pattern's entries (re-applied on a retried write)."""

    def __init__(self, filters: list[AclBindingFilter], matching: list[int]) -> None:
        self.filters = filters
        self.matching = matching
        self.removed: dict[AccessControlEntry, int] = {}

    def apply(self, current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
        self.removed.clear()
        for entry in current:
            for i in self.matching:
                if self.filters[i].matches_entry(entry):
                    self.removed.setdefault(entry, i)
                    break
        return current - set(self.removed)
