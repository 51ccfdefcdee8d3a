"""How a connection's bytes cross its socket (Kafka's ``TransportLayer``).

A :class:`Transport` is what :class:`~broker.net.connection.Connection` reads from and writes
to. :class:`PlaintextTransport` is the socket itself: its methods *are* the socket's bound
methods, so the plaintext path costs no extra call, and it can hand file regions to the kernel
with ``os.sendfile`` (zero copy, as Kafka's ``PlaintextTransportLayer.transferFrom`` does).

:class:`TlsTransport` (the ``SSL`` and ``SASL_SSL`` security protocols) is a non-blocking
``ssl.SSLSocket`` driven by the same loop: the handshake runs in the first reads (and writes),
before any frame; records are encrypted and decrypted in user space, so ``supports_sendfile``
is False and the connection reads file regions into memory before sending them, as Kafka's
``SslTransportLayer`` does (a TLS fetch costs a read and a copy that plaintext does not). It is
``buffered``: OpenSSL may hold decrypted bytes the socket no longer signals
(:meth:`TlsTransport.has_pending`), and a handshake may need to write before it can read on
(:attr:`TlsTransport.want_write`); the connection asks for both only when ``buffered`` is set.

Thread-safety: a transport belongs to one connection, on one processor loop.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import Any, Protocol

#: Largest plaintext handed to one TLS write (many 16 KiB records).
TLS_WRITE_CHUNK = 256 * 1024


class Transport(Protocol):
    """The byte pipe under a connection. Every method is non-blocking: it raises
    ``BlockingIOError`` (or ``InterruptedError``) when it cannot proceed now."""

    #: whether :meth:`sendfile` may be used (False when bytes must be transformed, e.g. TLS)
    supports_sendfile: bool
    #: whether the transport holds bytes of its own (TLS): then the connection also asks
    #: :meth:`has_pending`, :attr:`want_write` and :meth:`flush`
    buffered: bool
    #: the transport must write before it can go on (a TLS handshake step)
    want_write: bool
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

    def has_pending(self) -> bool:
        """Whether received bytes wait inside the transport (not in the socket)."""
        ...

    def flush(self) -> bool:
        """Makes what progress it can on the transport's own writes (a handshake); True when
        none are left."""
        ...


class PlaintextTransport:
    """The ``PLAINTEXT`` and ``SASL_PLAINTEXT`` transport: the socket, unchanged."""

    supports_sendfile = True
    buffered = False
    want_write = False

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

    @staticmethod
    def has_pending() -> bool:
        return False

    @staticmethod
    def flush() -> bool:
        return True


def tls_error_reason(e: BaseException) -> str:
    """What went wrong, as OpenSSL says it (``certificate has expired`` for a refused client
    certificate)."""
    reason = str(getattr(e, "reason", None) or getattr(e, "strerror", None) or e)
    detail = getattr(e, "verify_message", None)
    return f"{reason} ({detail})" if detail else reason


class TlsHandshakeFailed(OSError):
    """The TLS handshake failed (a plaintext client, a refused or expired certificate, garbage):
    the connection is closed and the reason logged."""


class TlsTransport:
    """The ``SSL`` and ``SASL_SSL`` transport: TLS over the socket, in user space.

    ``on_handshake(sslsock)`` is called once the handshake completes (the session takes the
    client certificate's principal from it); ``on_failure(error)`` when it fails.
    """

    supports_sendfile = False
    buffered = True

    def __init__(
        self,
        sock: socket.socket,
        context: ssl.SSLContext,
        *,
        on_handshake: Callable[[ssl.SSLSocket], None] | None = None,
        on_failure: Callable[[Exception], None] | None = None,
    ) -> None:
        sock.setblocking(False)
        self.sock = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        self.fd = self.sock.fileno()
        self.handshake_done = False
        self.want_write = False
        self._retry: bytes | None = None  # a write OpenSSL asked to be repeated as it was
        self._on_handshake = on_handshake
        self._on_failure = on_failure

    def _handshake(self) -> bool:
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            self.want_write = False
            return False
        except ssl.SSLWantWriteError:
            self.want_write = True
            return False
        except (ssl.SSLError, OSError) as e:
            if self._on_failure is not None:
                self._on_failure(e)
            raise TlsHandshakeFailed(f"TLS handshake failed: {tls_error_reason(e)}") from None
        self.handshake_done = True
        self.want_write = False
        if self._on_handshake is not None:
            self._on_handshake(self.sock)
        return True

    def recv_into(self, buffer: memoryview) -> int:
        if not self.handshake_done and not self._handshake():
            raise BlockingIOError
        total = 0
        size = len(buffer)
        sock = self.sock
        while total < size:
            try:
                n = sock.recv_into(buffer[total:])
            except ssl.SSLWantReadError:
                break
            except ssl.SSLWantWriteError:
                # OpenSSL keeps the write it could not make and retries it on the next call
                break
            except ssl.SSLZeroReturnError:
                n = 0
            if n == 0:
                if total:
                    break  # the end of the stream shows on the next read
                return 0
            total += n
        if total == 0:
            raise BlockingIOError
        return total

    def sendmsg(self, buffers: Sequence[Any]) -> int:
        if not self.handshake_done and not self._handshake():
            raise BlockingIOError
        data = self._retry
        if data is None:
            parts = []
            size = 0
            for b in buffers:
                view = memoryview(b).cast("B")
                take = min(len(view), TLS_WRITE_CHUNK - size)
                parts.append(view[:take])
                size += take
                if size >= TLS_WRITE_CHUNK:
                    break
            data = b"".join(parts)
        try:
            n = self.sock.send(data)
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
            self._retry = data
            raise BlockingIOError from None
        self._retry = None
        self.want_write = False
        return n

    def sendfile(self, in_fd: int, offset: int, count: int) -> int:
        raise OSError("sendfile is not possible over TLS")

    def has_pending(self) -> bool:
        return self.handshake_done and self.sock.pending() > 0

    def flush(self) -> bool:
        if not self.handshake_done and self.want_write:
            return self._handshake()
        return True

    def close(self) -> None:
        self.sock.close()
