"""A network thread (Kafka's ``Processor``): one uvloop event loop owning a fixed set of
connections for their whole life.

The acceptor hands each accepted socket to a processor with :meth:`Processor.adopt` (through
:meth:`Processor.call`, thread-safe); the processor wraps it in a transport and a session and
drives it. Requests are handled on this loop; a request that has to wait (a long-polling fetch,
a JoinGroup) waits here without blocking the loop's other connections.

Thread-safety: :meth:`call` and :meth:`stop` may be called from any thread; everything else runs
on the processor's own thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvloop

from broker.metrics import RequestMetrics
from broker.net.connection import Connection, ConnectionMetrics, RequestChannel
from broker.net.limits import ConnectionQuotas, RequestMemoryPool
from broker.net.session import Session
from broker.net.transport import PlaintextTransport, Transport

log = logging.getLogger(__name__)

#: Makes a transport for an accepted socket and its session (one per listener: plaintext, or
#: TLS with the listener's context; a TLS transport sets the session's principal from the
#: client certificate once its handshake completes).
TransportFactory = Callable[[socket.socket, Session], Transport]


def plaintext(sock: socket.socket, session: Session) -> Transport:
    return PlaintextTransport(sock)


class Processor(threading.Thread):
    """A network thread: one uvloop event loop that owns a fixed set of connections."""

    def __init__(
        self,
        index: int,
        channel: RequestChannel,
        *,
        max_request_bytes: int,
        queued_max_requests: int,
        idle_timeout_ms: int,
        receive_timeout_ms: int,
        memory_pool: RequestMemoryPool,
        quotas: ConnectionQuotas,
        max_unauthenticated_request_bytes: int = 524288,
        on_refused: Callable[[Connection, str], None] | None = None,
    ) -> None:
        super().__init__(name=f"processor-{index}", daemon=True)
        self.index = index
        self.channel = channel
        self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        self.connections: set[Connection] = set()
        self.metrics = ConnectionMetrics()
        self.request_metrics = RequestMetrics()
        self.max_request_bytes = max_request_bytes
        #: frames a client may send before it authenticated (sasl.server.max.receive.size)
        self.max_unauthenticated_request_bytes = max_unauthenticated_request_bytes
        self.queued_max_requests = queued_max_requests
        self.idle_timeout_s = idle_timeout_ms / 1000
        self.receive_timeout_s = receive_timeout_ms / 1000
        self.memory_pool = memory_pool
        self.quotas = quotas
        #: told of connections closed for what their client sent (Connection.refuse)
        self.on_refused = on_refused
        #: set from the loop once it runs (not Thread's own ``_started``, which this would shadow)
        self._loop_running = threading.Event()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._loop_running.set)
        self.loop.call_later(1.0, self._close_stalled)
        try:
            self.loop.run_forever()
        finally:
            for conn in list(self.connections):
                conn.close("broker shutting down", level=logging.DEBUG)
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def start_and_wait(self) -> None:
        self.start()
        self._loop_running.wait()

    @property
    def stopped(self) -> bool:
        """Its loop ran and the thread has ended (False before it is started)."""
        return self._loop_running.is_set() and not self.is_alive()

    def adopt(
        self,
        sock: socket.socket,
        peer: Any,
        listener: str,
        security_protocol: str,
        make_transport: TransportFactory = plaintext,
    ) -> None:
        """Called on this processor's loop with a freshly accepted socket."""
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        address = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else (str(peer), 0)
        session = Session.accepted(listener, security_protocol, address)
        try:
            conn = Connection(
                self.loop,
                make_transport(sock, session),
                session,
                self.channel,
                self.metrics,
                self.request_metrics,
                max_request_bytes=self.max_request_bytes,
                queued_max_requests=self.queued_max_requests,
                memory_pool=self.memory_pool,
                on_close=self._closed,
                on_refused=self.on_refused,
            )
        except OSError as e:
            log.warning("could not take a connection from %s: %s", address, e)
            sock.close()
            self.quotas.closed(address[0], listener)
            return
        if not session.authenticated:
            # until the SASL exchange completes, frames are small (Kafka's
            # sasl.server.max.receive.size); the SASL handlers restore the limit
            conn.decoder.max_frame_bytes = min(
                self.max_request_bytes, self.max_unauthenticated_request_bytes
            )
        self.connections.add(conn)
        self.metrics.connections_opened += 1

    @property
    def busy(self) -> bool:
        """Whether any connection has a request in flight or unsent response bytes (read from
        another thread as a hint: the set is copied first)."""
        return any(c.busy for c in list(self.connections))

    def stop_taking_requests(self, reason: str) -> concurrent.futures.Future[None]:
        """Reads no more requests on any connection (thread-safe): an idle connection closes
        now, one with a request in flight once its responses are sent. The future is done once
        the processor's loop has done it (at once if the loop no longer runs)."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.is_alive():
            done.set_result(None)
            return done

        def apply() -> None:
            try:
                for conn in list(self.connections):
                    if conn.busy:
                        conn.close_after_responses(reason)
                    else:
                        conn.close(reason)
            finally:
                done.set_result(None)

        self.call(apply)
        return done

    def _closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.quotas.closed(conn.session.client_host, conn.session.listener)

    def _close_stalled(self) -> None:
        """Closes connections idle longer than ``connections.max.idle.ms``, those whose
        request has been arriving for longer than ``request.receive.timeout.ms``, and, over
        ``max.connections``, the least recently used (:meth:`_close_excess`)."""
        now = time.monotonic()
        idle_limit = now - self.idle_timeout_s if self.idle_timeout_s > 0 else -1.0
        partial_limit = now - self.receive_timeout_s if self.receive_timeout_s > 0 else -1.0
        for conn in list(self.connections):
            if conn.partial_since and conn.reading and conn.partial_since < partial_limit:
                conn.close(
                    f"a request did not arrive whole within {self.receive_timeout_s:g} s "
                    "(request.receive.timeout.ms)"
                )
            elif conn.last_active < idle_limit and not conn.busy:
                conn.close("idle longer than connections.max.idle.ms")
        timeouts = [t for t in (self.idle_timeout_s, self.receive_timeout_s) if t > 0] or [50.0]
        delay = min(max(min(timeouts) / 10, 0.05), 5.0)
        if self._close_excess():
            delay = 0.05  # until the broker is back within max.connections
        self.loop.call_later(delay, self._close_stalled)

    def _close_excess(self) -> bool:
        """Over ``max.connections`` (lowered at runtime below the connections open), closes
        this processor's least recently used connection on a listener other than the
        protected one, as Kafka's processors close one per poll (``closeExcessConnections``);
        True if it closed one."""
        quotas = self.quotas
        if quotas.total <= quotas.max_connections:
            return False
        protected = quotas.protected_listener
        candidates = [c for c in self.connections if c.session.listener != protected]
        if not candidates:
            return False
        min(candidates, key=lambda c: c.last_active).close(
            f"over max.connections ({quotas.max_connections}): the least recently used "
            "connection closes"
        )
        return True

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Runs ``fn(*args)`` on this processor's loop (thread-safe)."""
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 5.0) -> None:
        if self.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.join(timeout)
