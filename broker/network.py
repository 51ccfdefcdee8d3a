"""The network layer (seed 000 §5.1): one acceptor, N processors, zero-copy sends.

* :class:`Acceptor` listens on the broker's listeners (on the main event loop) and hands each
  accepted socket to a :class:`Processor`, round-robin.
* A :class:`Processor` is a thread running its own uvloop event loop; it owns its connections for
  their whole life.
* A :class:`Connection` is a non-blocking socket driven by ``add_reader``/``add_writer``, not an
  asyncio transport, because transports cannot ``sendfile`` under uvloop. It feeds received bytes
  to a :class:`~protocol.frames.FrameDecoder` (receiving large frames in place), hands whole frames
  to the :class:`RequestChannel` one at a time (responses therefore leave in request order, as
  Kafka's processors do by muting a connection while a request is in flight), coalesces the
  responses of one read into one ``sendmsg``, and writes file regions with ``os.sendfile``,
  resuming on EAGAIN.

Backpressure: reading pauses while more than ``queued.max.requests`` frames wait or more than
:data:`HIGH_WATER_BYTES` of response bytes are unsent, and resumes below :data:`LOW_WATER_BYTES`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import uvloop

from broker.metrics import RequestMetrics
from protocol.errors import FrameTooLarge
from protocol.frames import FrameDecoder

log = logging.getLogger(__name__)

#: Unsent response bytes above which a connection stops reading requests.
HIGH_WATER_BYTES = 4 * 1024 * 1024
LOW_WATER_BYTES = 1 * 1024 * 1024
#: Buffers per sendmsg call (Linux IOV_MAX is 1024).
MAX_IOV = 512
#: Largest chunk handed to one sendfile call.
SENDFILE_CHUNK = 8 * 1024 * 1024
_RETRY = (errno.EAGAIN, errno.EWOULDBLOCK)


class FileRegion:
    """Part of a file to send with ``sendfile``; ``len()`` is its length.

    ``owner`` keeps whatever holds the file descriptor open (a storage segment) alive until the
    bytes are sent.
    """

    __slots__ = ("fd", "length", "owner", "position")

    def __init__(self, fd: int, position: int, length: int, owner: object = None) -> None:
        self.fd = fd
        self.position = position
        self.length = length
        self.owner = owner

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, length={self.length})"


Response = list[Any] | None
HandleResult = Response | Awaitable[Response]


class RequestChannel(Protocol):
    """What a connection hands its frames to (the broker's dispatcher)."""

    def handle(self, conn: Connection, frame: memoryview) -> HandleResult: ...


class ConnectionMetrics:
    """Per-processor counters (each processor has its own: no locks, exact counts)."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "connections_closed",
        "connections_opened",
        "sendfile_bytes",
    )

    def __init__(self) -> None:
        self.bytes_in = 0
        self.bytes_out = 0
        self.sendfile_bytes = 0
        self.connections_opened = 0
        self.connections_closed = 0


class CloseConnection(Exception):
    """Raised by a handler to close the connection without a response (e.g. acks=0 errors)."""


class Connection:
    """One client connection, owned by one processor loop (never touched from other threads)."""

    def __init__(
        self,
        processor: Processor,
        sock: socket.socket,
        peer: Any,
        listener: str,
        *,
        max_request_bytes: int,
        queued_max_requests: int,
    ) -> None:
        self.processor = processor
        self.loop = processor.loop
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.listener = listener
        self.decoder = FrameDecoder(max_request_bytes)
        self.queued_max_requests = queued_max_requests
        self.metrics = processor.metrics
        self.last_active = time.monotonic()
        self.closed = False
        self._out: deque[Any] = deque()
        self._out_bytes = 0  # unsent bytes held in memory (file regions excluded)
        self._busy = False  # a request is being handled asynchronously
        self._reading = False
        self._writing = False
        self._task: asyncio.Future[Response] | None = None
        self._start_reading()

    def __repr__(self) -> str:
        return f"<Connection {self.peer} on {self.listener}>"

    # -- reading -----------------------------------------------------------------------------

    def _start_reading(self) -> None:
        if not self._reading and not self.closed:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    def _stop_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _on_readable(self) -> None:
        decoder = self.decoder
        try:
            buf = decoder.get_buffer()
            n = self.sock.recv_into(buf)
            del buf
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"receive failed: {e}")
            return
        if n == 0:
            self.close("closed by peer", level=logging.DEBUG)
            return
        self.metrics.bytes_in += n
        self.last_active = time.monotonic()
        try:
            decoder.buffer_updated(n)
        except FrameTooLarge as e:
            self.close(f"refused a frame: {e} (socket.request.max.bytes)")
            return
        self._pump()
        self._flush()

    # -- requests ----------------------------------------------------------------------------

    def _pump(self) -> None:
        """Handles queued frames in order until one has to wait or none are left."""
        channel = self.processor.channel
        decoder = self.decoder
        while not self._busy and not self.closed:
            frame = decoder.next_frame()
            if frame is None:
                break
            try:
                result = channel.handle(self, frame)
            except CloseConnection as e:
                self.close(str(e) or "closed by request handler")
                return
            if result is None:
                continue
            if isinstance(result, list):
                self._queue(result)
                continue
            self._busy = True
            task = asyncio.ensure_future(result, loop=self.loop)
            self._task = task
            task.add_done_callback(self._request_done)
        self._apply_backpressure()

    def _request_done(self, task: asyncio.Future[Response]) -> None:
        self._busy = False
        self._task = None
        if self.closed or task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            if not isinstance(exc, CloseConnection):
                log.error("%r: request failed", self, exc_info=exc)
            self.close(str(exc) or type(exc).__name__)
            return
        parts = task.result()
        if parts is not None:
            self._queue(parts)
        self._pump()
        self._flush()

    # -- writing -----------------------------------------------------------------------------

    def _queue(self, parts: Sequence[Any]) -> None:
        out = self._out
        for part in parts:
            if isinstance(part, FileRegion):
                if part.length:
                    out.append(part)
            else:
                n = len(part)
                if n:
                    out.append(part)
                    self._out_bytes += n

    def _flush(self) -> None:
        """Sends what it can now; waits for writability when the socket is full."""
        out = self._out
        sock = self.sock
        while out:
            head = out[0]
            if isinstance(head, FileRegion):
                try:
                    sent = os.sendfile(
                        self.fd, head.fd, head.position, min(head.length, SENDFILE_CHUNK)
                    )
                except OSError as e:
                    if e.errno in _RETRY:
                        self._want_write()
                        return
                    self.close(f"sendfile failed: {e}")
                    return
                if sent == 0:
                    self.close("sendfile sent nothing: the file is shorter than the region")
                    return
                self.metrics.bytes_out += sent
                self.metrics.sendfile_bytes += sent
                head.position += sent
                head.length -= sent
                if head.length == 0:
                    out.popleft()
                continue
            batch: list[Any] = []
            for item in out:
                if isinstance(item, FileRegion) or len(batch) == MAX_IOV:
                    break
                batch.append(item)
            try:
                sent = sock.sendmsg(batch)
            except (BlockingIOError, InterruptedError):
                self._want_write()
                return
            except OSError as e:
                self.close(f"send failed: {e}")
                return
            self.metrics.bytes_out += sent
            self._out_bytes -= sent
            while sent:
                item = out[0]
                n = len(item)
                if sent >= n:
                    out.popleft()
                    sent -= n
                else:
                    out[0] = memoryview(item).cast("B")[sent:]
                    sent = 0
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        self._apply_backpressure()

    def _want_write(self) -> None:
        if not self._writing and not self.closed:
            self.loop.add_writer(self.fd, self._on_writable)
            self._writing = True
        self._apply_backpressure()

    def _on_writable(self) -> None:
        self.last_active = time.monotonic()
        self._flush()

    def _apply_backpressure(self) -> None:
        if self.closed:
            return
        waiting = self.decoder.pending_frames
        if self._out_bytes > HIGH_WATER_BYTES or waiting >= self.queued_max_requests:
            self._stop_reading()
        elif self._out_bytes <= LOW_WATER_BYTES and waiting < self.queued_max_requests:
            self._start_reading()

    # -- closing -----------------------------------------------------------------------------

    def close(self, reason: str = "", *, level: int = logging.INFO) -> None:
        if self.closed:
            return
        self.closed = True
        if reason:
            log.log(level, "closing connection from %s: %s", self.peer, reason)
        self._stop_reading()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._out.clear()
        try:
            self.sock.close()
        except OSError:
            pass
        self.metrics.connections_closed += 1
        self.processor.connections.discard(self)


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
    ) -> None:
        super().__init__(name=f"processor-{index}", daemon=True)
        self.index = index
        self.channel = channel
        self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        self.connections: set[Connection] = set()
        self.metrics = ConnectionMetrics()
        self.request_metrics = RequestMetrics()
        self.max_request_bytes = max_request_bytes
        self.queued_max_requests = queued_max_requests
        self.idle_timeout_s = idle_timeout_ms / 1000
        self._started = threading.Event()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        self.loop.call_later(1.0, self._close_idle)
        try:
            self.loop.run_forever()
        finally:
            for conn in list(self.connections):
                conn.close("broker shutting down", level=logging.DEBUG)
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def start_and_wait(self) -> None:
        self.start()
        self._started.wait()

    def adopt(self, sock: socket.socket, peer: Any, listener: str) -> None:
        """Called on this processor's loop with a freshly accepted socket."""
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        conn = Connection(
            self,
            sock,
            peer,
            listener,
            max_request_bytes=self.max_request_bytes,
            queued_max_requests=self.queued_max_requests,
        )
        self.connections.add(conn)
        self.metrics.connections_opened += 1

    def _close_idle(self) -> None:
        if self.idle_timeout_s > 0:
            limit = time.monotonic() - self.idle_timeout_s
            for conn in list(self.connections):
                if conn.last_active < limit and not conn._busy:
                    conn.close("idle longer than connections.max.idle.ms")
        self.loop.call_later(min(max(self.idle_timeout_s / 10, 0.05), 5.0), self._close_idle)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Runs ``fn(*args)`` on this processor's loop (thread-safe)."""
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 5.0) -> None:
        if self.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.join(timeout)


class Acceptor:
    """Accepts connections on the main loop and spreads them over the processors."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        processors: Sequence[Processor],
        *,
        backlog: int = 50,
        send_buffer: int = -1,
        receive_buffer: int = -1,
    ) -> None:
        self.loop = loop
        self.processors = processors
        self.backlog = backlog
        self.send_buffer = send_buffer
        self.receive_buffer = receive_buffer
        self.sockets: list[tuple[socket.socket, str]] = []
        self._next = 0

    def listen(self, listener: str, host: str, port: int) -> tuple[str, int]:
        """Binds and listens; returns the bound (host, port) (port 0 picks a free one)."""
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
        sock.bind(address)
        sock.listen(self.backlog)
        sock.setblocking(False)
        self.sockets.append((sock, listener))
        self.loop.add_reader(sock.fileno(), self._accept, sock, listener)
        bound = sock.getsockname()
        return str(bound[0]), int(bound[1])

    def _accept(self, sock: socket.socket, listener: str) -> None:
        for _ in range(64):
            try:
                conn, peer = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("accept failed on %s: %s", listener, e)
                return
            if self.send_buffer > 0:
                try:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
                except OSError:
                    pass
            processor = self.processors[self._next % len(self.processors)]
            self._next += 1
            processor.call(processor.adopt, conn, peer, listener)

    def close(self) -> None:
        for sock, _ in self.sockets:
            try:
                self.loop.remove_reader(sock.fileno())
            except (ValueError, OSError):
                pass
            sock.close()
        self.sockets.clear()
