"""ACLs, SCRAM credentials, client quotas and delegation tokens in ZooKeeper, where Kafka's
ZooKeeper mode keeps them, so Kafka's tools (``kafka-acls.sh``, ``kafka-configs.sh --zookeeper``),
Kafka brokers and Odradek brokers read and write the same nodes.

====================================================  ==========  ==================================
path                                                  mode        content
====================================================  ==========  ==================================
``/kafka-acl/<Type>/<name>``                          persistent  LITERAL pattern's ACLs, Kafka's
                                                                  ``AclEntry`` JSON
``/kafka-acl-extended/prefixed/<Type>/<name>``        persistent  PREFIXED pattern's ACLs
``/kafka-acl-changes/acl_changes_<10 digits>``        sequential  ``TOPIC:<name>`` (a LITERAL
                                                                  pattern changed)
``/kafka-acl-extended-changes/acl_changes_<…>``       sequential  ``{"version":1,"resourceType":
                                                                  "TOPIC","name":"…",
                                                                  "patternType":"PREFIXED"}``
``/config/users/<user>``                              persistent  ``{"version":1,"config":{…}}``
``/config/users/<user>/clients/<client-id>``          persistent  same
``/config/clients/<client-id>``                       persistent  same
``/config/ips/<ip>``                                  persistent  same (KIP-612)
``/config/changes/config_change_<10 digits>``         sequential  ``{"version":2,
                                                                  "entity_path":"users/alice"}``
``/delegation_token/tokens/<tokenId>``                persistent  the token, Kafka's
                                                                  ``DelegationTokenInfoZNode`` JSON
``/delegation_token/token_changes/token_change_<…>``  sequential  the token id (UTF-8)
====================================================  ==========  ==================================

``<Type>`` is Kafka's resource type name (``Topic``, ``Group``, ``Cluster``,
``TransactionalId``, ``DelegationToken``, ``User``); user and client names are sanitized
(URL-encoded, ``<default>`` for the default entity).

Every broker loads everything at start (and after a new ZooKeeper session), then follows the
change notifications: a new ``acl_changes_`` node names the pattern to re-read, a new
``config_change_`` node the entity, a new ``token_change_`` node the token (gone from
``/delegation_token/tokens``: removed). A write is compare-and-set on the pattern's znode version
(retried), then a notification is created, so all brokers converge without restarting; a token is
set whatever its version, then notified, after every set and every delete (Kafka's
``DelegationTokenManagerZk``). Notifications older than 15 minutes are deleted (Kafka's
``ZkNodeChangeNotificationListener``).

Thread-safety: watch callbacks only post events; one worker thread (``zk-security``) reads
ZooKeeper and publishes snapshots; writes run on the caller's thread and publish their own result
at once.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from coordination.metadata.security import (
    ACL_RESOURCE_TYPES,
    CLIENTS,
    ENTITY_TYPES,
    USERS,
    AclDataError,
    AclSet,
    ResourcePattern,
    SecurityStore,
    SecurityStoreError,
    TokenDataError,
    TokenInformation,
    decode_acls,
    decode_token,
    encode_acls,
    encode_token,
    is_entity_path,
    parse_resource_type,
    resource_type_name,
)
from coordination.zk import data as zd
from coordination.zk.client import ZkClient
from protocol.acl import PatternType

log = logging.getLogger(__name__)

LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
#: Kafka's DelegationTokensZNode, DelegationTokenChangeNotificationZNode and
#: DelegationTokenChangeNotificationSequenceZNode
TOKENS_PATH = "/delegation_token/tokens"
TOKEN_CHANGES_PATH = "/delegation_token/token_changes"  # noqa: S105 - a path, not a password
TOKEN_CHANGE_PREFIX = "token_change_"  # noqa: S105 - a znode name, not a password
#: Kafka's changeExpirationMs for notification nodes
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
#: attempts of a compare-and-set before giving up (Kafka's maxUpdateRetries)
MAX_UPDATE_RETRIES = 10

_ACL_ROOTS = {
    PatternType.LITERAL: LITERAL_ACL_PATH,
    PatternType.PREFIXED: f"{EXTENDED_ACL_PATH}/prefixed",
}


def acl_path(pattern: ResourcePattern) -> str:
    root = _ACL_ROOTS[pattern.pattern_type]
    return f"{root}/{resource_type_name(pattern.resource_type)}/{pattern.name}"


def encode_acl_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(change path, data) of the notification for ``pattern``."""
    if pattern.pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_CHANGES_PATH, f"{pattern.resource_type.name}:{pattern.name}".encode()
    doc = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return EXTENDED_ACL_CHANGES_PATH, json.dumps(doc, separators=(",", ":")).encode()


def decode_acl_change(changes_path: str, data: bytes | None) -> ResourcePattern:
    """Raises ValueError for a notification it cannot read."""
    text = (data or b"").decode()
    if changes_path == LITERAL_ACL_CHANGES_PATH:
        type_name, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:name, got {text!r}")
        return ResourcePattern(parse_resource_type(type_name), name, PatternType.LITERAL)
    doc = json.loads(text)
    if not isinstance(doc, dict) or int(doc.get("version", 0)) > 1:
        raise ValueError(f"unsupported ACL change event {text!r}")
    return ResourcePattern(
        parse_resource_type(str(doc["resourceType"])),
        str(doc["name"]),
        PatternType[str(doc["patternType"]).upper()],
    )


def token_path(token_id: str) -> str:
    return f"{TOKENS_PATH}/{token_id}"


def _sequence(child: str, prefix: str) -> int | None:
    if not child.startswith(prefix):
        return None
    digits = child[len(prefix) :]
    return int(digits) if digits.isdigit() else None


Event = tuple[Any, ...]
_RESYNC: Event = ("resync",)
_STOP: Event = ("stop",)


class ZkSecurityStore(SecurityStore):
    """See the module docstring. Shares the metadata store's ZooKeeper client."""

    def __init__(self, zk: ZkClient) -> None:
        super().__init__()
        self.zk = zk
        self._events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._stopping = False
        self._loaded = threading.Event()
        self._lock = threading.Lock()  # guards the three caches below
        self._acl_state: dict[ResourcePattern, AclSet] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._token_state: dict[str, TokenInformation] = {}
        self._last_seen: dict[str, int] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        for root in _ACL_ROOTS.values():
            for rtype in ACL_RESOURCE_TYPES:
                self.zk.ensure_path(f"{root}/{resource_type_name(rtype)}")
        for path in (LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
            self.zk.ensure_path(path)
        for config_type in ENTITY_TYPES:
            self.zk.ensure_path(f"{zd.CONFIG_PATH}/{config_type}")
        # Kafka's KafkaZkClient.createDelegationTokenPaths
        for path in (TOKENS_PATH, TOKEN_CHANGES_PATH):
            self.zk.ensure_path(path)
        self.zk.raw.add_listener(self._on_connection_state)
        self._worker = threading.Thread(target=self._run, name="zk-security", daemon=True)
        self._worker.start()
        self._events.put(_RESYNC)
        if not self._loaded.wait(max(self.zk.op_timeout_s * 3, 30.0)):
            raise SecurityStoreError("timed out loading ACLs and credentials from ZooKeeper")
        log.info(
            "security store: %d ACL resource patterns, %d user/client entities, "
            "%d delegation tokens (ZooKeeper)",
            len(self.acls),
            len(self.entity_configs),
            len(self.tokens),
        )

    def stop(self) -> None:
        self._stopping = True
        try:
            self.zk.raw.remove_listener(self._on_connection_state)
        except (KeyError, ValueError):
            log.debug("connection listener already removed")
        worker, self._worker = self._worker, None
        if worker is not None:
            self._events.put(_STOP)
            if worker is not threading.current_thread():
                worker.join(5)

    def _on_connection_state(self, state: str) -> None:
        if state == KazooState.CONNECTED and not self._stopping:
            self._events.put(_RESYNC)

    # -- watches (kazoo's threads: only post) --------------------------------------------------

    def _watch_literal(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("acl_changes", LITERAL_ACL_CHANGES_PATH))

    def _watch_extended(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("acl_changes", EXTENDED_ACL_CHANGES_PATH))

    def _watch_config_changes(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("config_changes",))

    def _watch_token_changes(self, event: Any) -> None:
        if event.type != "NONE":
            self._events.put(("token_changes",))

    # -- the worker ----------------------------------------------------------------------------

    def _run(self) -> None:
        retry_at: float | None = None
        while True:
            timeout = None if retry_at is None else max(0.0, retry_at - time.monotonic())
            pending: dict[Event, None] = {}
            try:
                pending[self._events.get(timeout=timeout)] = None
            except queue.Empty:
                pending[_RESYNC] = None
            while True:
                try:
                    pending[self._events.get_nowait()] = None
                except queue.Empty:
                    break
            if _STOP in pending or self._stopping:
                return
            retry_at = None
            try:
                if _RESYNC in pending:
                    self._resync()
                else:
                    for event in pending:
                        if event[0] == "acl_changes":
                            self._process_acl_changes(event[1])
                        elif event[0] == "config_changes":
                            self._process_config_changes()
                        elif event[0] == "token_changes":
                            self._process_token_changes()
            except (KazooException, KazooTimeoutError) as e:
                if self._stopping:
                    return
                log.warning("ZooKeeper error reading ACLs/credentials: %r; retrying", e)
                retry_at = time.monotonic() + 1.0
            except Exception:
                log.exception("error reading ACLs/credentials from ZooKeeper; retrying")
                retry_at = time.monotonic() + 1.0

    def _resync(self) -> None:
        """Reads everything and arms every watch (at start and after each new session)."""
        # the notification lists first, so nothing written meanwhile is missed
        for path, watch in (
            (LITERAL_ACL_CHANGES_PATH, self._watch_literal),
            (EXTENDED_ACL_CHANGES_PATH, self._watch_extended),
        ):
            children = self.zk.children(path, watch) or []
            seqs = [s for c in children if (s := _sequence(c, ACL_CHANGE_PREFIX)) is not None]
            self._last_seen[path] = max(seqs, default=-1)
        children = self.zk.children(zd.CONFIG_CHANGES_PATH, self._watch_config_changes) or []
        seqs = [s for c in children if (s := zd.config_change_sequence(c)) is not None]
        self._last_seen[zd.CONFIG_CHANGES_PATH] = max(seqs, default=-1)
        children = self.zk.children(TOKEN_CHANGES_PATH, self._watch_token_changes) or []
        seqs = [s for c in children if (s := _sequence(c, TOKEN_CHANGE_PREFIX)) is not None]
        self._last_seen[TOKEN_CHANGES_PATH] = max(seqs, default=-1)

        acls: dict[ResourcePattern, AclSet] = {}
        for pattern_type, root in _ACL_ROOTS.items():
            for type_name in self.zk.children(root) or []:
                try:
                    rtype = parse_resource_type(type_name)
                except ValueError:
                    log.warning("ignoring ACLs of unknown resource type %s", type_name)
                    continue
                for name in self.zk.children(f"{root}/{type_name}") or []:
                    pattern = ResourcePattern(rtype, name, pattern_type)
                    entries = self._read_acls(pattern)[0]
                    if entries:
                        acls[pattern] = entries
        configs: dict[str, dict[str, str]] = {}
        for config_type in ENTITY_TYPES:
            for name in self.zk.children(f"{zd.CONFIG_PATH}/{config_type}") or []:
                path = f"{config_type}/{name}"
                configs[path] = self._read_entity(path)
                if config_type == USERS:
                    for client in self.zk.children(f"{zd.CONFIG_PATH}/{path}/{CLIENTS}") or []:
                        sub = f"{path}/{CLIENTS}/{client}"
                        configs[sub] = self._read_entity(sub)
        tokens: dict[str, TokenInformation] = {}
        for token_id in self.zk.children(TOKENS_PATH) or []:
            token = self._read_token(token_id)
            if token is not None:
                tokens[token.token_id] = token
        with self._lock:
            self._acl_state = acls
            self._configs = {k: v for k, v in configs.items() if v}
            self._token_state = tokens
            acl_snapshot = dict(self._acl_state)
            config_snapshot = {k: dict(v) for k, v in self._configs.items()}
            token_snapshot = dict(self._token_state)
        self._publish_acls(acl_snapshot)
        self._publish_entities(config_snapshot)
        self._publish_tokens(token_snapshot)
        self._loaded.set()

    def _read_acls(self, pattern: ResourcePattern) -> tuple[AclSet, int]:
        """The pattern's entries and znode version (-1: no znode)."""
        got = self.zk.get(acl_path(pattern))
        if got is None:
            return frozenset(), -1
        try:
            return decode_acls(got[0]), got[1].version
        except AclDataError as e:
            log.warning("ignoring unreadable ACLs of %s: %s", acl_path(pattern), e)
            return frozenset(), got[1].version

    def _read_entity(self, path: str) -> dict[str, str]:
        full = f"{zd.CONFIG_PATH}/{path}"
        got = self.zk.get(full)
        if got is None:
            return {}
        try:
            return zd.decode_entity_config(full, got[0])
        except zd.ZkDataError as e:
            log.warning("ignoring unreadable config of %s: %s", full, e)
            return {}

    def _read_token(self, token_id: str) -> TokenInformation | None:
        """The token as stored now; None when absent or unreadable (Kafka's
        KafkaZkClient.getDelegationTokenInfo)."""
        got = self.zk.get(token_path(token_id))
        if got is None:
            return None
        try:
            return decode_token(got[0])
        except TokenDataError as e:
            log.warning("ignoring unreadable delegation token %s: %s", token_path(token_id), e)
            return None

    def _new_changes(self, path: str, prefix: str, watch: Callable[[Any], None]) -> list[str]:
        children = self.zk.children(path, watch) or []
        last = self._last_seen.get(path, -1)
        fresh = sorted(
            (seq, c) for c in children if (seq := _sequence(c, prefix)) is not None and seq > last
        )
        if fresh:
            self._last_seen[path] = fresh[-1][0]
        self._purge(path, children)
        return [c for _, c in fresh]

    def _purge(self, path: str, children: list[str]) -> None:
        """Deletes notifications older than CHANGE_EXPIRATION_MS (every broker does; the
        first one wins)."""
        if path == zd.CONFIG_CHANGES_PATH:
            return  # the controller purges /config/changes
        horizon = int(time.time() * 1000) - CHANGE_EXPIRATION_MS
        for child in children:
            stat = self.zk.exists(f"{path}/{child}")
            if stat is not None and stat.ctime_ms < horizon:
                try:
                    self.zk.delete(f"{path}/{child}")
                except NoNodeError:
                    pass

    def _process_acl_changes(self, path: str) -> None:
        watch = self._watch_literal if path == LITERAL_ACL_CHANGES_PATH else self._watch_extended
        for child in self._new_changes(path, ACL_CHANGE_PREFIX, watch):
            got = self.zk.get(f"{path}/{child}")
            if got is None:
                continue
            try:
                pattern = decode_acl_change(path, got[0])
            except (ValueError, KeyError) as e:
                log.warning("ignoring ACL change notification %s/%s: %s", path, child, e)
                continue
            entries = self._read_acls(pattern)[0]
            log.info(
                "ACLs of %s %s %r changed: %d entries",
                pattern.pattern_type.name,
                resource_type_name(pattern.resource_type),
                pattern.name,
                len(entries),
            )
            self._set_acls(pattern, entries)

    def _process_config_changes(self) -> None:
        prefix = zd.CONFIG_CHANGE_PREFIX
        for child in self._new_changes(zd.CONFIG_CHANGES_PATH, prefix, self._watch_config_changes):
            got = self.zk.get(f"{zd.CONFIG_CHANGES_PATH}/{child}")
            if got is None:
                continue
            try:
                entity = zd.decode_config_change(got[0])
            except zd.ZkDataError as e:
                log.warning("ignoring config change %s: %s", child, e)
                continue
            if entity is None or entity[0] not in ENTITY_TYPES:
                continue
            path = f"{entity[0]}/{entity[1]}"
            if not is_entity_path(path):
                continue
            self._set_entity(path, self._read_entity(path))

    def _process_token_changes(self) -> None:
        """Kafka's DelegationTokenManagerZk.TokenChangedNotificationHandler: the named token is
        re-read, kept if present, dropped if not."""
        changes = self._new_changes(
            TOKEN_CHANGES_PATH, TOKEN_CHANGE_PREFIX, self._watch_token_changes
        )
        for child in changes:
            got = self.zk.get(f"{TOKEN_CHANGES_PATH}/{child}")
            if got is None:
                continue
            try:
                token_id = got[0].decode()
            except UnicodeDecodeError as e:
                log.warning("ignoring token change %s: %s", child, e)
                continue
            token = self._read_token(token_id)
            log.info("delegation token %s %s", token_id, "changed" if token else "removed")
            self._set_token(token_id, token)

    # -- cache updates -------------------------------------------------------------------------

    def _set_acls(self, pattern: ResourcePattern, entries: AclSet) -> None:
        with self._lock:
            if entries:
                self._acl_state[pattern] = entries
            else:
                self._acl_state.pop(pattern, None)
            snapshot = dict(self._acl_state)
        self._publish_acls(snapshot)

    def _set_entity(self, path: str, configs: dict[str, str]) -> None:
        with self._lock:
            if configs:
                self._configs[path] = dict(configs)
            else:
                self._configs.pop(path, None)
            snapshot = {k: dict(v) for k, v in self._configs.items()}
        self._publish_entities(snapshot)

    def _set_token(self, token_id: str, token: TokenInformation | None) -> None:
        with self._lock:
            self._token_state.pop(token_id, None)
            if token is not None:
                self._token_state[token.token_id] = token
            snapshot = dict(self._token_state)
        self._publish_tokens(snapshot)

    # -- writes --------------------------------------------------------------------------------

    def _guard(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except (KazooException, KazooTimeoutError) as e:
            raise SecurityStoreError(f"{what}: ZooKeeper is not available: {e!r}") from e

    def update_acls(self, pattern: ResourcePattern, change: Callable[[AclSet], AclSet]) -> AclSet:
        return self._guard("updating ACLs", lambda: self._update_acls(pattern, change))  # type: ignore[no-any-return]

    def _update_acls(self, pattern: ResourcePattern, change: Callable[[AclSet], AclSet]) -> AclSet:
        path = acl_path(pattern)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            current, version = self._read_acls(pattern)
            new = frozenset(change(current))
            if new == current:
                return current
            try:
                if not new:
                    self.zk.delete(path, version)
                elif version >= 0:
                    self.zk.set(path, encode_acls(new), version)
                else:
                    self.zk.create(path, encode_acls(new), makepath=True)
            except (BadVersionError, NoNodeError, NodeExistsError):
                time.sleep(0.1)
                continue
            changes_path, data = encode_acl_change(pattern)
            self.zk.create(f"{changes_path}/{ACL_CHANGE_PREFIX}", data, sequence=True)
            self._set_acls(pattern, new)
            log.info("updated ACLs of %s: %d entries", path, len(new))
            return new
        raise SecurityStoreError(
            f"could not update the ACLs of {path}: changed concurrently {MAX_UPDATE_RETRIES} times"
        )

    def alter_entity_configs(
        self, path: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        return self._guard("altering user/client configs", lambda: self._alter(path, change))  # type: ignore[no-any-return]

    def _alter(
        self, path: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        if not is_entity_path(path):
            raise ValueError(f"not a user, client or ip entity: {path}")
        full = f"{zd.CONFIG_PATH}/{path}"
        for _ in range(MAX_UPDATE_RETRIES + 1):
            got = self.zk.get(full)
            current = zd.decode_entity_config(full, got[0]) if got is not None else {}
            new = {k: v for k, v in change(dict(current)).items() if v is not None}
            if new == current and got is not None:
                return new
            data = zd.encode_entity_config(new)
            try:
                if got is not None:
                    self.zk.set(full, data, got[1].version)
                else:
                    self.zk.create(full, data, makepath=True)
            except (BadVersionError, NoNodeError, NodeExistsError):
                time.sleep(0.05)
                continue
            self.zk.create(
                f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
                zd.encode_config_change(path),
                sequence=True,
            )
            self._set_entity(path, new)
            return new
        raise SecurityStoreError(f"could not update {full}: changed concurrently")

    def read_entity_configs(self, path: str) -> dict[str, str]:
        return self._guard("reading user/client configs", lambda: self._read_entity(path))  # type: ignore[no-any-return]

    def put_token(self, token: TokenInformation) -> None:
        self._guard("storing a delegation token", lambda: self._put_token(token))

    def _put_token(self, token: TokenInformation) -> None:
        """Kafka's KafkaZkClient.setOrCreateDelegationToken, then createTokenChangeNotification."""
        path, data = token_path(token.token_id), encode_token(token)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            try:
                self.zk.set(path, data)
                break
            except NoNodeError:
                pass
            try:
                self.zk.create(path, data, makepath=True)
                break
            except NodeExistsError:
                continue
        else:
            raise SecurityStoreError(f"could not store {path}: changed concurrently")
        self._notify_token(token.token_id)
        self._set_token(token.token_id, token)

    def remove_token(self, token_id: str) -> None:
        self._guard("removing a delegation token", lambda: self._remove_token(token_id))

    def _remove_token(self, token_id: str) -> None:
        """Kafka's KafkaZkClient.deleteDelegationToken, then createTokenChangeNotification."""
        try:
            self.zk.delete(token_path(token_id))
        except NoNodeError:
            pass
        self._notify_token(token_id)
        self._set_token(token_id, None)

    def _notify_token(self, token_id: str) -> None:
        self.zk.create(
            f"{TOKEN_CHANGES_PATH}/{TOKEN_CHANGE_PREFIX}", token_id.encode(), sequence=True
        )
