"""A typed layer over kazoo: the few ZooKeeper calls the stores make, with a timeout on each.

Missing nodes come back as None; other ZooKeeper errors raise kazoo exceptions. :class:`Op` and
:meth:`ZkClient.multi` are ZooKeeper's atomic multi-op (``kazoo``'s ``transaction()`` does not
raise: results come back per operation, and :func:`first_failure` finds the one that failed).

Thread-safety: kazoo's client is thread-safe; so is this wrapper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency


@dataclass(frozen=True)
class Stat:
    version: int
    czxid: int
    ephemeral_owner: int
    ctime_ms: int
    num_children: int


def _stat(raw: Any) -> Stat:
    return Stat(
        version=int(raw.version),
        czxid=int(raw.czxid),
        ephemeral_owner=int(raw.ephemeralOwner),
        ctime_ms=int(raw.ctime),
        num_children=int(raw.numChildren),
    )


Watch = Callable[[Any], None]


@dataclass(frozen=True)
class Op:
    """One operation of a ZooKeeper multi-op."""

    kind: str  # "create" | "set" | "delete" | "check"
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False
    sequence: bool = False

    @staticmethod
    def create(path: str, data: bytes = b"", *, ephemeral: bool = False) -> Op:
        return Op("create", path, data, ephemeral=ephemeral)

    @staticmethod
    def set(path: str, data: bytes, version: int = -1) -> Op:
        return Op("set", path, data, version)

    @staticmethod
    def delete(path: str, version: int = -1) -> Op:
        return Op("delete", path, version=version)

    @staticmethod
    def check(path: str, version: int) -> Op:
        return Op("check", path, version=version)


def first_failure(results: Sequence[Any]) -> tuple[int, Exception] | None:
    """The operation that made a multi-op fail (the others report rollbacks), or None."""
    for i, r in enumerate(results):
        if isinstance(r, Exception) and not isinstance(r, RolledBackError | RuntimeInconsistency):
            return i, r
    return None


class ZkClient:
    """The few ZooKeeper calls the store makes, with a timeout on each and typed results.

    Missing nodes come back as None; other ZooKeeper errors raise kazoo exceptions.
    """

    def __init__(self, client: KazooClient, op_timeout_s: float) -> None:
        self.raw = client
        self.op_timeout_s = op_timeout_s

    def _wait(self, result: Any, timeout_s: float | None) -> Any:
        return result.get(timeout=self.op_timeout_s if timeout_s is None else timeout_s)

    @property
    def session_id(self) -> int:
        client_id = self.raw.client_id
        return int(client_id[0]) if client_id else 0

    def get(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> tuple[bytes, Stat] | None:
        try:
            data, stat = self._wait(self.raw.get_async(path, watch), timeout_s)
        except NoNodeError:
            return None
        return (data or b""), _stat(stat)

    def exists(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> Stat | None:
        raw = self._wait(self.raw.exists_async(path, watch), timeout_s)
        return None if raw is None else _stat(raw)

    def children(
        self, path: str, watch: Watch | None = None, *, timeout_s: float | None = None
    ) -> list[str] | None:
        try:
            names = self._wait(self.raw.get_children_async(path, watch), timeout_s)
        except NoNodeError:
            return None
        return [str(n) for n in names]

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
        timeout_s: float | None = None,
    ) -> str:
        """Raises NodeExistsError (or NoNodeError for a missing parent without ``makepath``)."""
        created = self._wait(
            self.raw.create_async(
                path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath
            ),
            timeout_s,
        )
        return str(created)

    def set(
        self, path: str, data: bytes, version: int = -1, *, timeout_s: float | None = None
    ) -> Stat:
        """Raises BadVersionError or NoNodeError."""
        return _stat(self._wait(self.raw.set_async(path, data, version), timeout_s))

    def delete(self, path: str, version: int = -1, *, timeout_s: float | None = None) -> None:
        self._wait(self.raw.delete_async(path, version), timeout_s)

    def ensure_path(self, path: str) -> None:
        """Creates ``path`` and its parents (no data) when missing."""
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if self.exists(sub) is None:
                try:
                    self.create(sub)
                except NodeExistsError:
                    pass

    def multi(self, ops: Sequence[Op], *, timeout_s: float | None = None) -> list[Any]:
        """One atomic multi-op. Returns one result per op: a path (create), a Stat (set), True
        (delete, check) or, when the multi failed, exceptions (see :func:`first_failure`)."""
        txn = self.raw.transaction()
        for op in ops:
            if op.kind == "create":
                txn.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequence)
            elif op.kind == "set":
                txn.set_data(op.path, op.data, op.version)
            elif op.kind == "delete":
                txn.delete(op.path, op.version)
            elif op.kind == "check":
                txn.check(op.path, op.version)
            else:
                raise ValueError(f"unknown multi-op kind {op.kind!r}")
        results = self._wait(txn.commit_async(), timeout_s)
        return [_stat(r) if hasattr(r, "czxid") else r for r in results]


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/kafka"`` -> ``("h1:2181,h2:2181", "/kafka")``; no chroot -> ``""``."""
    hosts, sep, chroot = connect.strip().partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect {connect!r} names no server")
    chroot = ("/" + chroot.strip("/")) if sep and chroot.strip("/") else ""
    return hosts, chroot
