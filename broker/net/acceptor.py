"""The acceptor (Kafka's ``Acceptor``): listens on the broker's listeners, on the main event loop,
and spreads accepted sockets over the processors, round-robin.

:meth:`Acceptor.bind` binds every listener first (so port 0 resolves to a real port before the
broker advertises anything); :meth:`Acceptor.start` begins accepting once the broker is ready to
serve, so no client is handed to a processor before then (they wait in the listen backlog).

Limits (Kafka's ``ConnectionQuotas``): a connection over ``max.connections.per.ip`` is closed at
once; at ``max.connections`` the acceptor stops accepting until a connection closes. When the
process runs out of file descriptors (EMFILE/ENFILE) or socket memory, accepting pauses for a
growing delay instead of spinning on the listening socket, and the failures are logged once per
interval with a count (and counted in :attr:`Acceptor.accept_errors`).

Thread-safety: owned by the main event loop; :meth:`ConnectionQuotas.closed` (any thread) wakes
it through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass

from broker.net.limits import ConnectionQuotas
from broker.net.processor import Processor, TransportFactory

log = logging.getLogger(__name__)

#: accept() failures that mean "out of a resource": pause rather than spin
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: first and longest pause after such a failure
PAUSE_MIN_S = 0.05
PAUSE_MAX_S = 2.0
#: at most one log line per interval about them
ERROR_LOG_INTERVAL_S = 10.0


@dataclass(frozen=True, slots=True)
class BoundListener:
    """A listening socket and what its connections are (Kafka's ``EndPoint``)."""

    name: str
    security_protocol: str
    sock: socket.socket
    make_transport: TransportFactory

    @property
    def address(self) -> tuple[str, int]:
        bound = self.sock.getsockname()
        return str(bound[0]), int(bound[1])


class Acceptor:
    """Accepts connections on the main loop and spreads them over the processors."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        quotas: ConnectionQuotas,
        backlog: int = 50,
        send_buffer: int = -1,
        receive_buffer: int = -1,
    ) -> None:
        self.loop = loop
        self.processors: Sequence[Processor] = ()
        self.backlog = backlog
        self.send_buffer = send_buffer
        self.receive_buffer = receive_buffer
        self.listeners: list[BoundListener] = []
        self.quotas = quotas
        quotas.on_room = self._on_room
        #: accept() failures for lack of a resource (file descriptors, memory)
        self.accept_errors = 0
        self._accepting = False  # started, and not closed
        self._watching = False  # listening sockets registered with the loop
        self._paused_until = 0.0
        self._resume_pending = False
        self._pause_s = PAUSE_MIN_S
        self._unlogged_errors = 0
        self._last_error_log = 0.0
        self._next = 0

    def bind(
        self,
        name: str,
        host: str,
        port: int,
        *,
        security_protocol: str,
        make_transport: TransportFactory,
    ) -> tuple[str, int]:
        """Binds and listens (without accepting yet); returns the bound (host, port): port 0
        picks a free one."""
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
            sock.bind(address)
            sock.listen(self.backlog)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        bound = BoundListener(name, security_protocol, sock, make_transport)
        self.listeners.append(bound)
        if self._watching:
            self.loop.add_reader(sock.fileno(), self._accept, bound)
        return bound.address

    def start(self, processors: Sequence[Processor]) -> None:
        """Begins accepting on every bound listener, handing connections to ``processors``."""
        self.processors = processors
        self._accepting = True
        self._watch()

    def _watch(self) -> None:
        if self._watching or not self._accepting:
            return
        self._watching = True
        for bound in self.listeners:
            self.loop.add_reader(bound.sock.fileno(), self._accept, bound)

    def _unwatch(self) -> None:
        if not self._watching:
            return
        self._watching = False
        for bound in self.listeners:
            try:
                self.loop.remove_reader(bound.sock.fileno())
            except (ValueError, OSError):
                pass

    def _on_room(self) -> None:
        """A connection closed while at max.connections (any thread)."""
        try:
            self.loop.call_soon_threadsafe(self._resume)
        except RuntimeError:
            pass  # the main loop is closed: the broker is stopping

    def _resume(self) -> None:
        if self.quotas.at_limit():
            return  # max.connections: _on_room resumes once a connection closes
        left = self._paused_until - time.monotonic()
        if left > 0:
            # a pause's timer may fire a little early (the loop's clock is cached, in
            # milliseconds): try again when the pause has really passed, or accepting would
            # stay paused with nothing left to resume it
            if not self._resume_pending:
                self._resume_pending = True
                self.loop.call_later(left, self._resume_after_pause)
            return
        self._watch()

    def _resume_after_pause(self) -> None:
        self._resume_pending = False
        self._resume()

    def _exhausted(self, bound: BoundListener, e: OSError) -> None:
        """Out of descriptors or memory: pause accepting, back off, log once per interval."""
        self.accept_errors += 1
        self._unlogged_errors += 1
        now = time.monotonic()
        if now - self._last_error_log >= ERROR_LOG_INTERVAL_S:
            log.warning(
                "accept failed %d time(s) on %s, last: %s; pausing accepts for %.2f s",
                self._unlogged_errors,
                bound.name,
                e.strerror or e,
                self._pause_s,
            )
            self._unlogged_errors = 0
            self._last_error_log = now
        self._unwatch()
        self._paused_until = now + self._pause_s
        self.loop.call_later(self._pause_s, self._resume)
        self._pause_s = min(self._pause_s * 2, PAUSE_MAX_S)

    def _accept(self, bound: BoundListener) -> None:
        for _ in range(64):
            if self.quotas.at_limit():
                self._unwatch()  # max.connections: wait until one closes
                return
            try:
                conn, peer = bound.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in _EXHAUSTED:
                    self._exhausted(bound, e)
                else:
                    log.warning("accept failed on %s: %s", bound.name, e)
                return
            self._pause_s = PAUSE_MIN_S
            ip = str(peer[0]) if isinstance(peer, tuple) else str(peer)
            if not self.quotas.try_open(ip):
                log.info(
                    "refused a connection from %s on %s: max.connections.per.ip reached",
                    ip,
                    bound.name,
                )
                conn.close()
                continue
            if self.send_buffer > 0:
                try:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
                except OSError:
                    pass
            processor = self.processors[self._next % len(self.processors)]
            self._next += 1
            processor.call(
                processor.adopt,
                conn,
                peer,
                bound.name,
                bound.security_protocol,
                bound.make_transport,
            )

    def close(self) -> None:
        self._unwatch()
        self._accepting = False
        for bound in self.listeners:
            bound.sock.close()
        self.listeners.clear()
