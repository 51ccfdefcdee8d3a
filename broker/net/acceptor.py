"""The acceptor (Kafka's ``Acceptor``): listens on the broker's listeners, on the main event loop,
and spreads accepted sockets over the processors, round-robin.

:meth:`Acceptor.bind` binds every listener first (so port 0 resolves to a real port before the
broker advertises anything); :meth:`Acceptor.start` begins accepting once the broker is ready to
serve, so no client is handed to a processor before then (they wait in the listen backlog).

Limits (Kafka's ``ConnectionQuotas``): a connection over ``max.connections.per.ip`` is closed at
once; at ``max.connections`` (or a listener's own) the acceptor stops accepting on the
listeners concerned until a connection closes. Over ``max.connection.creation.rate`` (or a
listener's own) the acceptor holds the connection it just accepted and stops accepting on that
listener until the rate is back within it. The inter-broker listener is exempt from the
broker-wide limits when there are others, as in Kafka. A connection over its address's
``connection_creation_rate`` quota is neither handed to a processor nor read: it is closed once
its throttle time has passed, as Kafka's acceptor delays closing it, so that a client
reconnecting in a loop is slowed. When the process runs out of file descriptors (EMFILE/ENFILE)
or socket memory, accepting pauses for a growing delay instead of spinning on the listening
socket, and the failures are logged once per interval with a count (and counted in
:attr:`Acceptor.accept_errors`).

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


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


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


@dataclass(slots=True)
class _Held:
    """A connection accepted over a connection creation rate, waiting to be admitted."""

    conn: socket.socket
    peer: object
    bound: BoundListener
    #: its wait is over
    ready: bool = False


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
        #: listeners whose sockets are registered with the loop
        self._watched: set[str] = set()
        self._paused_until = 0.0
        self._resume_pending = False
        self._pause_s = PAUSE_MIN_S
        self._unlogged_errors = 0
        self._last_error_log = 0.0
        self._next = 0
        #: per listener, a connection accepted over a connection creation rate, waiting to be
        #: admitted (its listener accepts no other meanwhile): it is admitted once its wait is
        #: over (:class:`_Held` ``ready``) and its listener has a connection slot
        self._held: dict[str, _Held] = {}
        #: connections over their address's rate quota, each closed when its timer fires
        self._throttled: dict[socket.socket, asyncio.TimerHandle] = {}

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
        if self._watched:
            self._watch()
        return bound.address

    def start(self, processors: Sequence[Processor]) -> None:
        """Begins accepting on every bound listener, handing connections to ``processors``."""
        self.processors = processors
        self._accepting = True
        self._watch()

    @property
    def watching(self) -> bool:
        """Whether any listener is accepting."""
        return bool(self._watched)

    def _watch(self) -> None:
        """Watches every listener with a connection slot (the others wait for :meth:`_on_room`)."""
        if not self._accepting:
            return
        for bound in self.listeners:
            name = bound.name
            if (
                name not in self._watched
                and name not in self._held
                and (self.quotas.slot_available(name))
            ):
                self._watched.add(name)
                self.loop.add_reader(bound.sock.fileno(), self._accept, bound)

    def _unwatch(self, only: BoundListener | None = None) -> None:
        for bound in self.listeners if only is None else (only,):
            if bound.name in self._watched:
                self._watched.discard(bound.name)
                try:
                    self.loop.remove_reader(bound.sock.fileno())
                except (ValueError, OSError):
                    pass

    def _on_room(self) -> None:
        """A connection closed while a listener had no slot (any thread)."""
        try:
            self.loop.call_soon_threadsafe(self._resume)
        except RuntimeError:
            pass  # the main loop is closed: the broker is stopping

    def _resume(self) -> None:
        """Accepting again where there is a slot, once a pause has passed (a listener without
        a slot is resumed by :meth:`_on_room` once a connection closes)."""
        left = self._paused_until - time.monotonic()
        if left > 0:
            # a pause's timer may fire a little early (the loop's clock is cached, in
            # milliseconds): try again when the pause has really passed, or accepting would
            # stay paused with nothing left to resume it
            if not self._resume_pending:
                self._resume_pending = True
                self.loop.call_later(left, self._resume_after_pause)
            return
        self._admit_ready()
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
            if not self.quotas.slot_available(bound.name):
                self._unwatch(bound)  # max.connections: wait until one closes
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
            wait_ms = self.quotas.record_connection(bound.name, _now_ms())
            if wait_ms:
                # over a connection creation rate: this connection waits, and so does the
                # listener's backlog (Kafka's acceptor thread of the listener blocks the same
                # way); the other listeners go on
                self._unwatch(bound)
                held = self._held[bound.name] = _Held(conn, peer, bound)
                self.loop.call_later(wait_ms / 1000, self._wait_over, held)
                return
            self._admit(conn, peer, bound)

    def _wait_over(self, held: _Held) -> None:
        held.ready = True
        self._resume()

    def _admit_ready(self) -> None:
        """Admits the held connections whose wait is over, where their listener has a slot (as
        Kafka's acceptor waits for both), so that the broker never goes over its limits."""
        for name, held in list(self._held.items()):
            if held.ready and self._accepting and self.quotas.slot_available(name):
                del self._held[name]
                self._admit(held.conn, held.peer, held.bound)

    def _admit(self, conn: socket.socket, peer: object, bound: BoundListener) -> None:
        """The address's limits, then a processor."""
        ip = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        throttle_ms = self.quotas.record_ip(ip, bound.name, _now_ms())
        if throttle_ms:
            log.debug(
                "throttled a connection from %s on %s for %d ms: connection_creation_rate "
                "quota reached; it is closed then",
                ip,
                bound.name,
                throttle_ms,
            )
            self._throttled[conn] = self.loop.call_later(
                throttle_ms / 1000, self._close_throttled, conn
            )
            return
        if not self.quotas.try_open(ip, bound.name):
            log.info(
                "refused a connection from %s on %s: max.connections.per.ip reached",
                ip,
                bound.name,
            )
            conn.close()
            return
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

    def _close_throttled(self, conn: socket.socket) -> None:
        self._throttled.pop(conn, None)
        conn.close()

    def close(self) -> None:
        self._unwatch()
        self._accepting = False
        for held in self._held.values():
            held.conn.close()
        self._held.clear()
        for conn, timer in list(self._throttled.items()):
            timer.cancel()
            conn.close()
        self._throttled.clear()
        for bound in self.listeners:
            bound.sock.close()
        self.listeners.clear()
