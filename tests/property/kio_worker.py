"""kio's round trip in a child process.

kio's reader is native code that trusts lengths on the wire: bytes it does not expect (a schema
disagreement, which is exactly what the oracle tests look for) can make it allocate tens of
gigabytes and abort the whole process. So the oracle tests run it in a worker process, and a crash
there fails one test with the bytes that caused it instead of killing the test run.
"""

from __future__ import annotations

import io
import multiprocessing
from multiprocessing.connection import Connection
from typing import Any


class OracleCrashed(AssertionError):
    """The oracle's process died on the bytes it was given."""


class OracleRejected(AssertionError):
    """The oracle raised on the bytes it was given."""


def kio_round_trip(api_key: int, version: int, kind: str, wire: bytes) -> bytes:
    """Read ``wire`` with kio's entity class for (api_key, version, kind), write it again."""
    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer

    cls = (load_request_schema if kind == "request" else load_response_schema)(api_key, version)
    entity, size = entity_reader(cls)(wire, 0)
    if size != len(wire):
        raise ValueError(f"kio read {size} of {len(wire)} bytes")
    out = io.BytesIO()
    entity_writer(cls)(out, entity)
    return out.getvalue()


def _serve(conn: Connection) -> None:
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", kio_round_trip(*request)))
        except Exception as e:  # every failure goes back to the test, as a message
            conn.send(("error", f"{type(e).__name__}: {e}"))


class KioWorker:
    """One child process that answers kio round trips; restarted after a crash."""

    def __init__(self) -> None:
        self._process: Any = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child,), daemon=True, name="kio-oracle")
        process.start()
        child.close()
        self._process, self._conn = process, parent
        return parent

    def round_trip(self, api_key: int, version: int, kind: str, wire: bytes) -> bytes:
        conn = self._conn if self._process is not None and self._process.is_alive() else None
        if conn is None:
            conn = self._start()
        try:
            conn.send((api_key, version, kind, wire))
            status, payload = conn.recv()
        except (EOFError, OSError):
            self._process.join(timeout=10)
            code = self._process.exitcode
            self._process = self._conn = None
            raise OracleCrashed(
                f"kio's process died (exit code {code}) reading {len(wire)} bytes: {wire.hex()}"
            ) from None
        if status == "ok":
            return bytes(payload)
        raise OracleRejected(f"kio: {payload}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join(timeout=10)
        self._process = self._conn = None
