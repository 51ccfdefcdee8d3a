"""How a connection's bytes cross its socket (Kafka's ``TransportLayer``).

A :class:`Transport` is what :class:`~broker.net.connection.Connection` reads from and writes
to. :class:`PlaintextTransport` is the socket itself: its methods *are* the socket's bound
methods, so the plaintext path costs no extra call, and it can hand file regions to the kernel
with ``os.sendfile`` (zero copy, as Kafka's ``PlaintextTransportLayer.transferFrom`` does).

A TLS transport (for the ``SSL`` and ``SASL_SSL`` security protocols) will run Python's
``ssl.MemoryBIO`` on the processor loop: the handshake before the first frame, records
encrypted in user space, and ``supports_sendfile = False`` so the connection reads file regions
into memory before sending them, as Kafka's ``SslTransportLayer`` does.

Thread-safety: a transport belongs to one connection, on one processor loop.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Transport(Protocol):
    """The byte pipe under a connection. Every method is non-blocking: it raises
    ``BlockingIOError`` (or ``InterruptedError``) when it cannot proceed now."""

    #: whether :meth:`sendfile` may be used (False when bytes must be transformed, e.g. TLS)
    supports_sendfile: bool
    #: the socket's file descriptor, for the loop's readiness callbacks
    fd: int

    def recv_into(self, buffer: memoryview) -> int:
        """Reads into ``buffer``; 0 means the peer closed."""
        ...

    def sendmsg(self, buffers: Sequence[Any]) -> int:
        """Writes some of ``buffers`` (gathered); returns the bytes taken."""
        ...

    def sendfile(self, in_fd: int, offset: int, count: int) -> int:
        """Writes ``count`` bytes of file ``in_fd`` from ``offset``; returns the bytes sent."""
        ...

    def close(self) -> None: ...


class PlaintextTransport:
    """The ``PLAINTEXT`` and ``SASL_PLAINTEXT`` transport: the socket, unchanged."""

    supports_sendfile = True

    __slots__ = ("close", "fd", "recv_into", "sendfile", "sendmsg", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        # the socket's own methods, bound once: no wrapper call on the hot path
        self.recv_into: Callable[[memoryview], int] = sock.recv_into
        self.sendmsg: Callable[[Sequence[Any]], int] = sock.sendmsg
        fd = self.fd

        def sendfile(in_fd: int, offset: int, count: int) -> int:
            return os.sendfile(fd, in_fd, offset, count)

        self.sendfile: Callable[[int, int, int], int] = sendfile
        self.close: Callable[[], None] = sock.close
