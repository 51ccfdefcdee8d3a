"""The acceptor (Kafka's ``Acceptor``): listens on the broker's listeners, on the main event loop,
and spreads accepted sockets over the processors, round-robin.

:meth:`Acceptor.bind` binds every listener first (so port 0 resolves to a real port before the
broker advertises anything); :meth:`Acceptor.start` begins accepting once the broker is ready to
serve, so no client is handed to a processor before then (they wait in the listen backlog).

Thread-safety: owned by the main event loop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from broker.net.processor import Processor, TransportFactory

log = logging.getLogger(__name__)


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
        self._accepting = False
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
        if self._accepting:
            self._watch(bound)
        return bound.address

    def start(self, processors: Sequence[Processor]) -> None:
        """Begins accepting on every bound listener, handing connections to ``processors``."""
        self.processors = processors
        self._accepting = True
        for bound in self.listeners:
            self._watch(bound)

    def _watch(self, bound: BoundListener) -> None:
        self.loop.add_reader(bound.sock.fileno(), self._accept, bound)

    def _accept(self, bound: BoundListener) -> None:
        for _ in range(64):
            try:
                conn, peer = bound.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("accept failed on %s: %s", bound.name, e)
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

    def close(self) -> None:
        for bound in self.listeners:
            try:
                self.loop.remove_reader(bound.sock.fileno())
            except (ValueError, OSError):
                pass
            bound.sock.close()
        self.listeners.clear()
        self._accepting = False
