"""The embedded security store: ACLs, SCRAM credentials, quotas and delegation tokens of a
standalone broker.

On disk: one JSON document, ``<log dir>/odradek-security.json``, beside the embedded metadata
file::

    {"version": 1,
     "acls": [{"resource_type": "Topic", "pattern_type": "PREFIXED", "name": "orders-",
               "acls": {"version": 1, "acls": [{"principal": "User:alice", ...}]}}],
     "configs": {"users/alice": {"SCRAM-SHA-256": "salt=...,stored_key=...,...",
                                 "producer_byte_rate": "1048576"}},
     "tokens": {"<token id>": {"version": 3, "owner": "User%3Aalice", ...}}}

each pattern's ``acls`` in Kafka's ``AclEntry`` JSON, each entity under its ZooKeeper-style path,
each delegation token under its id in Kafka's ``DelegationTokenInfoZNode`` JSON (a document
without ``tokens``, written before tokens were kept, has none).
Every change writes a new file and renames it over the old one (after fsync): a crash leaves the
old or the new document. The file holds credentials (salted, never passwords): it is created
readable by its owner only.

Thread-safety: writes serialise on a lock; snapshots are published after each write, listeners
called on the writer's thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordination.metadata.security import (
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
    parse_resource_type,
    pascal_case,
    resource_type_name,
)
from protocol.acl import PatternType
from storage.files import write_atomically

log = logging.getLogger(__name__)

FILE_NAME = "odradek-security.json"
FORMAT_VERSION = 1


class EmbeddedSecurityStore(SecurityStore):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._lock = threading.Lock()
        self._acl_state: dict[ResourcePattern, AclSet] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._token_state: dict[str, TokenInformation] = {}

    def start(self) -> None:
        with self._lock:
            if self.path.exists():
                self._load()
        self._publish_acls(self._acl_state)
        self._publish_entities(self._configs)
        self._publish_tokens(self._token_state)
        log.info(
            "security store: %d ACL resource patterns, %d user/client entities, "
            "%d delegation tokens (%s)",
            len(self._acl_state),
            len(self._configs),
            len(self._token_state),
            self.path,
        )

    def stop(self) -> None:
        pass

    def _load(self) -> None:
        doc = json.loads(self.path.read_text())
        if doc.get("version") != FORMAT_VERSION:
            raise RuntimeError(
                f"{self.path}: unsupported security store format {doc.get('version')}"
            )
        for item in doc.get("acls", []):
            try:
                pattern = ResourcePattern(
                    parse_resource_type(item["resource_type"]),
                    str(item["name"]),
                    PatternType[str(item["pattern_type"]).upper()],
                )
                entries = decode_acls(json.dumps(item["acls"]).encode())
            except (KeyError, ValueError, AclDataError) as e:
                log.warning("%s: ignoring an unreadable ACL entry: %s", self.path, e)
                continue
            if entries:
                self._acl_state[pattern] = entries
        for path, configs in doc.get("configs", {}).items():
            self._configs[str(path)] = {str(k): str(v) for k, v in configs.items()}
        for token_id, token_doc in doc.get("tokens", {}).items():
            try:
                token = decode_token(json.dumps(token_doc).encode())
            except TokenDataError as e:
                log.warning(
                    "%s: ignoring unreadable delegation token %s: %s", self.path, token_id, e
                )
                continue
            self._token_state[token.token_id] = token

    def _document(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "acls": [
                {
                    "resource_type": resource_type_name(p.resource_type),
                    "pattern_type": pascal_case(p.pattern_type.name).upper(),
                    "name": p.name,
                    "acls": json.loads(encode_acls(entries)),
                }
                for p, entries in sorted(self._acl_state.items())
            ],
            "configs": {k: dict(sorted(v.items())) for k, v in sorted(self._configs.items())},
            "tokens": {
                token_id: json.loads(encode_token(token))
                for token_id, token in sorted(self._token_state.items())
            },
        }

    def _save(self) -> None:
        data = json.dumps(self._document(), indent=1).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, data)
            os.chmod(self.path, 0o600)
        except OSError as e:
            log.error("cannot write %s: %s", self.path, e)
            raise SecurityStoreError(
                f"cannot write the security store: {e.strerror or e}"
            ) from None

    def update_acls(self, pattern: ResourcePattern, change: Callable[[AclSet], AclSet]) -> AclSet:
        with self._lock:
            current = self._acl_state.get(pattern, frozenset())
            new = frozenset(change(current))
            if new == current:
                return current
            old_state = dict(self._acl_state)
            if new:
                self._acl_state[pattern] = new
            else:
                self._acl_state.pop(pattern, None)
            try:
                self._save()
            except SecurityStoreError:
                self._acl_state = old_state
                raise
            snapshot = dict(self._acl_state)
        self._publish_acls(snapshot)
        return new

    def alter_entity_configs(
        self, path: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        with self._lock:
            current = dict(self._configs.get(path, {}))
            new = {k: v for k, v in change(dict(current)).items() if v is not None}
            if new == current:
                return new
            old_configs = {k: dict(v) for k, v in self._configs.items()}
            if new:
                self._configs[path] = new
            else:
                self._configs.pop(path, None)
            try:
                self._save()
            except SecurityStoreError:
                self._configs = old_configs
                raise
            snapshot = {k: dict(v) for k, v in self._configs.items()}
        self._publish_entities(snapshot)
        return new

    def read_entity_configs(self, path: str) -> dict[str, str]:
        with self._lock:
            return dict(self._configs.get(path, {}))

    def put_token(self, token: TokenInformation) -> None:
        self._set_token(token.token_id, token)

    def remove_token(self, token_id: str) -> None:
        self._set_token(token_id, None)

    def _set_token(self, token_id: str, token: TokenInformation | None) -> None:
        """Stores ``token`` (None: removes it); nothing is written when nothing changes."""
        with self._lock:
            if self._token_state.get(token_id) == token:
                return
            old_tokens = dict(self._token_state)
            if token is None:
                del self._token_state[token_id]
            else:
                self._token_state[token_id] = token
            try:
                self._save()
            except SecurityStoreError:
                self._token_state = old_tokens
                raise
            snapshot = dict(self._token_state)
        self._publish_tokens(snapshot)
