"""Where ACLs, SCRAM credentials and client quotas live: the security store interface, Kafka's
ACL model, and the encodings Kafka stores them in.

Two stores implement :class:`SecurityStore`: the embedded one (standalone mode, one file beside
the logs: :mod:`coordination.metadata.embedded_security`) and the ZooKeeper one (cluster mode,
Kafka's own znodes: :mod:`coordination.zk.security`). What they keep:

* **ACLs**: per resource pattern (resource type, name, LITERAL or PREFIXED), a set of access
  control entries (principal, host, operation, permission), as Kafka's ``AclAuthorizer`` kept
  them: one document per pattern, in Kafka's ``AclEntry`` JSON
  (``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
  "operation":"Read","host":"*"}]}``). Changes are compare-and-set per pattern
  (:meth:`SecurityStore.update_acls`), so two brokers adding ACLs at once both land.
* **Entity configs**: Kafka's ``/config/users/<user>``, ``/config/clients/<client-id>`` and
  ``/config/users/<user>/clients/<client-id>`` documents, keyed here by their path under
  ``/config`` with sanitized names (:func:`entity_path`): SCRAM credentials (``SCRAM-SHA-256``,
  ``SCRAM-SHA-512`` keys in Kafka's ``salt=...,stored_key=...,server_key=...,iterations=...``
  string) and quotas (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``).
* **Delegation tokens** (KIP-48): each token's :class:`TokenInformation` (owner, requester,
  renewers, issue, expiry and maximum timestamps), in Kafka's ``DelegationTokenInfoZNode`` JSON
  (:func:`encode_token`). A token's HMAC is not stored: every broker derives it from the token
  id and ``delegation.token.secret.key``.

Readers use immutable snapshots (:attr:`SecurityStore.acls`, :attr:`SecurityStore.entity_configs`)
and are told of changes by listeners, called on the store's thread, possibly several brokers
away from the write (ZooKeeper's change notifications).

Thread-safety: snapshots are replaced whole; writes may be called from any thread.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType

# --- the ACL model (Kafka's ResourcePattern, AccessControlEntry, AclBinding) ------------------

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


AclSet = frozenset[AccessControlEntry]
AclSnapshot = Mapping[ResourcePattern, AclSet]

#: the resource types ACLs may name (Kafka's AclEntry.RESOURCE_TYPES)
ACL_RESOURCE_TYPES = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
    ResourceType.DELEGATION_TOKEN,
    ResourceType.USER,
)


def pascal_case(enum_name: str) -> str:
    """``TRANSACTIONAL_ID`` -> ``TransactionalId`` (Kafka's SecurityUtils names)."""
    return "".join(part.capitalize() for part in enum_name.split("_"))


def _by_name(enum: type[AclOperation] | type[AclPermissionType] | type[ResourceType]) -> dict:  # type: ignore[type-arg]
    table = {}
    for member in enum:
        table[pascal_case(member.name)] = member
        table[pascal_case(member.name).upper()] = member
        table[member.name] = member
    return table


_OPERATIONS = _by_name(AclOperation)
_PERMISSIONS = _by_name(AclPermissionType)
_RESOURCE_TYPES = _by_name(ResourceType)


def resource_type_name(resource_type: ResourceType) -> str:
    return pascal_case(resource_type.name)


def parse_resource_type(name: str) -> ResourceType:
    found = _RESOURCE_TYPES.get(name) or _RESOURCE_TYPES.get(name.upper().replace("_", ""))
    if found is None:
        raise ValueError(f"unknown resource type {name!r}")
    return ResourceType(found)


class AclDataError(ValueError):
    """An ACL document that cannot be read."""


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """Kafka's ``AclEntry`` JSON for one resource pattern's entries."""
    doc = {
        "version": 1,
        "acls": [
            {
                "principal": e.principal,
                "permissionType": pascal_case(e.permission.name),
                "operation": pascal_case(e.operation.name),
                "host": e.host,
            }
            for e in sorted(entries)
        ],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> AclSet:
    if not data:
        return frozenset()
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise AclDataError(f"not JSON: {e}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 1
        or not isinstance(doc.get("acls"), list)
    ):
        raise AclDataError("not a version 1 ACL document")
    out = set()
    for item in doc["acls"]:
        try:
            principal = str(item["principal"])
            if ":" not in principal:
                raise KeyError("principal")
            operation = _OPERATIONS[str(item["operation"])]
            permission = _PERMISSIONS[str(item["permissionType"])]
            out.add(
                AccessControlEntry(
                    principal,
                    str(item["host"]),
                    AclOperation(operation),
                    AclPermissionType(permission),
                )
            )
        except (KeyError, TypeError) as e:
            raise AclDataError(f"invalid ACL entry {item!r}: {e}") from None
    return frozenset(out)


# --- entity configs (/config/users, /config/clients, /config/ips) --------------------------------

USERS = "users"
CLIENTS = "clients"
#: ip entities (KIP-612): ``ips/<address or host name>``, ``ips/<default>``
IPS = "ips"
#: the kinds of entity under ``/config`` that hold quotas and credentials
ENTITY_TYPES = (USERS, CLIENTS, IPS)
#: the default entity's name in a path (Kafka's ZooKeeperInternals.DEFAULT_STRING)
DEFAULT_ENTITY = "<default>"

#: quota keys of user and client-id entities (Kafka's QuotaConfigs)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)
#: the quota key of ip entities (Kafka's QuotaConfig.IP_CONNECTION_RATE_OVERRIDE_CONFIG)
IP_CONNECTION_RATE = "connection_creation_rate"


#: what Java's URLEncoder leaves as it is, less ``*`` (Kafka's Sanitizer encodes it)
_URL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding, with ``*`` as ``%2A`` and space as
    ``%20``, so that any user or client id is a valid znode name."""
    out = []
    for ch in name:
        if ch in _URL_SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode())
    return "".join(out)


def desanitize(name: str) -> str:
    return urllib.parse.unquote_plus(name)


def entity_path(
    user: str | None = None,
    client_id: str | None = None,
    *,
    default_user: bool = False,
    default_client: bool = False,
) -> str:
    """The path of a quota/credential entity under ``/config``: ``users/<u>``, ``clients/<c>``
    or ``users/<u>/clients/<c>`` (``<default>`` for the default entity)."""
    u = DEFAULT_ENTITY if default_user else (sanitize(user) if user is not None else None)
    c = (
        DEFAULT_ENTITY
        if default_client
        else (sanitize(client_id) if client_id is not None else None)
    )
    if u is not None and c is not None:
        return f"{USERS}/{u}/{CLIENTS}/{c}"
    if u is not None:
        return f"{USERS}/{u}"
    if c is not None:
        return f"{CLIENTS}/{c}"
    raise ValueError("an entity names a user, a client id or both")


def parse_entity_path(path: str) -> tuple[str | None, str | None, bool, bool] | None:
    """``users/<u>[/clients/<c>]`` or ``clients/<c>`` -> (user, client id, user is default,
    client is default), names desanitized; None for other paths."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] in (USERS, CLIENTS):
        name = parts[1]
        default = name == DEFAULT_ENTITY
        value = None if default else desanitize(name)
        if parts[0] == USERS:
            return value, None, default, False
        return None, value, False, default
    if len(parts) == 4 and parts[0] == USERS and parts[2] == CLIENTS:
        du, dc = parts[1] == DEFAULT_ENTITY, parts[3] == DEFAULT_ENTITY
        return (
            None if du else desanitize(parts[1]),
            None if dc else desanitize(parts[3]),
            du,
            dc,
        )
    return None


def ip_entity_path(ip: str | None) -> str:
    """The path of an ip entity under ``/config``: ``ips/<ip>``, or ``ips/<default>`` for the
    default entity (None). Kafka keeps the name as given (an address or a host name)."""
    return f"{IPS}/{DEFAULT_ENTITY if ip is None else ip}"


def parse_ip_entity_path(path: str) -> tuple[str | None] | None:
    """``ips/<ip>`` -> (the ip, None for the default entity); None for other paths."""
    kind, sep, name = path.partition("/")
    if kind != IPS or not sep or not name or "/" in name:
        return None
    return (None if name == DEFAULT_ENTITY else name,)


def is_entity_path(path: str) -> bool:
    """Whether ``path`` names a user, client-id, user+client-id or ip entity."""
    return parse_entity_path(path) is not None or parse_ip_entity_path(path) is not None


EntityConfigs = Mapping[str, Mapping[str, str]]
AclListener = Callable[[AclSnapshot], None]
EntityListener = Callable[[EntityConfigs], None]


# --- delegation tokens (KIP-48) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenInformation:
    """Kafka's ``TokenInformation``: principals as ``<type>:<name>`` strings."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int


TokenSnapshot = Mapping[str, TokenInformation]
TokenListener = Callable[[TokenSnapshot], None]

#: the version of Kafka's token JSON written (3 added ``tokenRequester``, KIP-373)
TOKEN_FORMAT_VERSION = 3


def encode_token(token: TokenInformation) -> bytes:
    """Kafka's ``DelegationTokenInfoZNode`` JSON (version 3, principals sanitized)."""
    doc = {
        "version": TOKEN_FORMAT_VERSION,
        "owner": sanitize(token.owner),
        "tokenRequester": sanitize(token.requester),
        "renewers": [sanitize(r) for r in token.renewers],
        "issueTimestamp": token.issue_timestamp,
        "maxTimestamp": token.max_timestamp,
        "expiryTimestamp": token.expiry_timestamp,
        "tokenId": token.token_id,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


class TokenDataError(ValueError):
    """A token document that cannot be read."""


def _principal(text: str) -> str:
    kind, sep, _name = text.partition(":")
    if not sep or not kind:
        raise TokenDataError(f"not a principal: {text!r}")
    return text


def decode_token(data: bytes | None) -> TokenInformation:
    """Versions 1-3 of Kafka's token JSON (before 3, the requester is the owner)."""
    try:
        doc = json.loads(data or b"")
        version = int(doc["version"])
        if not 0 < version <= TOKEN_FORMAT_VERSION:
            raise TokenDataError(f"unsupported token format version {version}")
        owner = _principal(desanitize(str(doc["owner"])))
        requester = _principal(desanitize(str(doc["tokenRequester"]))) if version >= 3 else owner
        return TokenInformation(
            token_id=str(doc["tokenId"]),
            owner=owner,
            requester=requester,
            renewers=tuple(_principal(desanitize(str(r))) for r in doc["renewers"]),
            issue_timestamp=int(doc["issueTimestamp"]),
            max_timestamp=int(doc["maxTimestamp"]),
            expiry_timestamp=int(doc["expiryTimestamp"]),
        )
    except TokenDataError:
        raise
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise TokenDataError(f"invalid token document: {e!r}") from None


class SecurityStoreError(Exception):
    """A write that could not be made (ZooKeeper unavailable, a full disk); the message says why."""


class SecurityStore(ABC):
    """ACLs and entity configs (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._acl_listeners: list[AclListener] = []
        self._entity_listeners: list[EntityListener] = []
        self._listeners_lock = threading.Lock()
        self._token_listeners: list[TokenListener] = []
        self._acls: AclSnapshot = MappingProxyType({})
        self._entities: EntityConfigs = MappingProxyType({})
        self._tokens: TokenSnapshot = MappingProxyType({})

    @property
    def acls(self) -> AclSnapshot:
        """Every resource pattern that has ACLs, with its entries (a snapshot)."""
        return self._acls

    @property
    def entity_configs(self) -> EntityConfigs:
        """Every user/client entity's configs by path (a snapshot)."""
        return self._entities

    @property
    def tokens(self) -> TokenSnapshot:
        """Every delegation token by id (a snapshot)."""
        return self._tokens

    def add_token_listener(self, listener: TokenListener) -> None:
        with self._listeners_lock:
            self._token_listeners.append(listener)

    def _publish_tokens(self, tokens: Mapping[str, TokenInformation]) -> None:
        snapshot = MappingProxyType(dict(tokens))
        self._tokens = snapshot
        with self._listeners_lock:
            listeners = list(self._token_listeners)
        for listener in listeners:
            listener(snapshot)

    def add_acl_listener(self, listener: AclListener) -> None:
        with self._listeners_lock:
            self._acl_listeners.append(listener)

    def add_entity_listener(self, listener: EntityListener) -> None:
        with self._listeners_lock:
            self._entity_listeners.append(listener)

    def _publish_acls(self, acls: Mapping[ResourcePattern, AclSet]) -> None:
        snapshot = MappingProxyType({k: v for k, v in acls.items() if v})
        self._acls = snapshot
        with self._listeners_lock:
            listeners = list(self._acl_listeners)
        for listener in listeners:
            listener(snapshot)

    def _publish_entities(self, entities: Mapping[str, Mapping[str, str]]) -> None:
        snapshot = MappingProxyType(
            {k: MappingProxyType(dict(v)) for k, v in entities.items() if v}
        )
        self._entities = snapshot
        with self._listeners_lock:
            listeners = list(self._entity_listeners)
        for listener in listeners:
            listener(snapshot)

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def update_acls(self, pattern: ResourcePattern, change: Callable[[AclSet], AclSet]) -> AclSet:
        """Applies ``change`` to the pattern's current entries and stores the result
        (compare-and-set, retried on a concurrent change; an empty result removes the
        pattern); returns what was stored. Raises SecurityStoreError."""

    @abstractmethod
    def alter_entity_configs(
        self, path: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        """Applies ``change`` to the entity's current configs (a fresh dict it may modify and
        return) and stores the result; returns it. Raises SecurityStoreError."""

    @abstractmethod
    def read_entity_configs(self, path: str) -> dict[str, str]:
        """The entity's configs as stored now (not the possibly older snapshot)."""

    @abstractmethod
    def put_token(self, token: TokenInformation) -> None:
        """Creates or replaces the token (on every broker of the cluster). Raises
        SecurityStoreError."""

    @abstractmethod
    def remove_token(self, token_id: str) -> None:
        """Removes the token if it exists. Raises SecurityStoreError."""
