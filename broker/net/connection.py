"""One client connection: frames in, responses out in request order, with backpressure.

A :class:`Connection` is a non-blocking socket driven by ``add_reader``/``add_writer`` on its
processor's loop, not an asyncio transport, because asyncio transports cannot ``sendfile`` under
uvloop. It feeds received bytes to a :class:`~protocol.frames.FrameDecoder` (receiving large
frames in place), hands whole frames to its :class:`RequestChannel` one at a time (responses
therefore leave in request order, as Kafka's processors ensure by muting a channel while a
request is in flight), coalesces the responses of one read into one ``sendmsg``, and writes file
regions with ``sendfile`` when its :class:`~broker.net.transport.Transport` allows it, resuming
on EAGAIN.

Backpressure, in one place (:meth:`Connection._apply_backpressure`): reading pauses while
``queued.max.requests`` frames wait, while more than :data:`HIGH_WATER_BYTES` of response bytes
are unsent (resuming below :data:`LOW_WATER_BYTES`), or while the broker-wide budget of request
memory (:class:`~broker.net.limits.RequestMemoryPool`) is spent. The response check runs after
every request handled, not once per read: a client that pipelines requests and never reads its
responses holds at most the high-water mark plus one response. Over the memory budget, a
connection that has part of a frame may still be let to finish it, one connection at a time
(the pool's finisher), so connections each holding part of a frame never wait for one another
forever. A request whose first bytes
arrived must complete within ``request.receive.timeout.ms`` (:attr:`Connection.partial_since`;
the processor closes late ones).

Thread-safety: a connection is owned by its processor's loop and never touched from other
threads.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from broker.metrics import RequestMetrics
from broker.net.limits import RequestMemoryPool
from broker.net.session import Session
from broker.net.transport import Transport
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
#: How soon a connection paused by the request-memory budget looks again.
MEMORY_RETRY_S = 0.01


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


#: A response: buffers and file regions to send in order, or None for no response.
Response = list[Any] | None


class Deferred:
    """A request whose effects are done (its records appended, its write made) but whose answer
    comes later (an acks=all produce waiting for the ISR): the connection goes on with the next
    requests meanwhile, and sends the answers in request order. An awaitable returned bare is a
    request still being handled: the connection waits for it before the next one."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Response]) -> None:
        self.awaitable = awaitable


HandleResult = Response | Awaitable[Response] | Deferred


class RequestChannel(Protocol):
    """What a connection hands its frames to (the broker's dispatcher)."""

    def handle(self, conn: Connection, frame: memoryview) -> HandleResult: ...


class CloseConnection(Exception):
    """Raised while handling a request to close the connection without a response (e.g. a
    failed acks=0 produce, a malformed request). The message is logged as the reason."""


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


class Connection:
    """One client connection, owned by one processor loop (never touched from other threads)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: Transport,
        session: Session,
        channel: RequestChannel,
        metrics: ConnectionMetrics,
        request_metrics: RequestMetrics,
        *,
        max_request_bytes: int,
        queued_max_requests: int,
        memory_pool: RequestMemoryPool,
        on_close: Callable[[Connection], None],
        on_refused: Callable[[Connection, str], None] | None = None,
    ) -> None:
        self.loop = loop
        self.transport = transport
        self.fd = transport.fd
        self.session = session
        self.channel = channel
        self.decoder = FrameDecoder(max_request_bytes)
        self.max_request_bytes = max_request_bytes
        self.queued_max_requests = queued_max_requests
        self.metrics = metrics
        self.request_metrics = request_metrics
        self.last_active = time.monotonic()
        #: when the last read returned bytes (time.monotonic_ns)
        self.read_ns = time.monotonic_ns()
        #: when the request now arriving began to arrive (0.0: none is partly received)
        self.partial_since = 0.0
        self.closed = False
        self._on_close = on_close
        #: told when the connection is closed for what the client sent (a frame over the
        #: limit, a request the broker refuses), before it closes: the broker's audit trail
        self._on_refused = on_refused
        self._pool = memory_pool
        self._held = 0  # request bytes this connection holds in the pool
        self._memory_retry = False
        self._out: deque[Any] = deque()
        self._out_bytes = 0  # unsent bytes held in memory (file regions excluded)
        self._busy = False  # a request is being handled asynchronously
        self._reading = False
        self._writing = False
        self._task: asyncio.Future[Response] | None = None
        #: answers not sent yet, in request order, while some are still awaited: the parts of
        #: an answer, or the future that gives them
        self._answers: deque[list[Any] | asyncio.Future[Response]] = deque()
        self._deferred = 0  # Deferred answers awaited
        #: the API key of each answer in ``_answers``, in the same order
        self._answer_keys: deque[int] = deque()
        #: response bytes queued and sent since the connection opened, and per queued response
        #: (bytes queued once it is, API key, when it was queued): Kafka's ResponseQueueTimeMs
        #: and ResponseSendTimeMs
        self._queued_total = 0
        self._sent_total = 0
        self._marks: deque[tuple[int, int, int]] = deque()
        self._last_sent_ns = 0
        #: TLS: the transport holds bytes and handshake writes of its own
        self._buffered = transport.buffered
        #: why the connection closes once its queued responses are sent (None: it stays open)
        self._closing: str | None = None
        #: a throttled client's channel is muted until then (KIP-219), monotonic seconds
        self._muted_until = 0.0
        self._start_reading()

    def __repr__(self) -> str:
        return f"<Connection {self.peer} on {self.session.listener}>"

    @property
    def peer(self) -> tuple[str, int]:
        return self.session.peer

    @property
    def reading(self) -> bool:
        """Whether the connection reads now (False while backpressure holds it)."""
        return self._reading

    @property
    def busy(self) -> bool:
        """Whether a request is being handled or response bytes are waiting to leave."""
        return self._busy or bool(self._out) or bool(self._answers)

    # -- reading -----------------------------------------------------------------------------

    def _start_reading(self) -> None:
        if not self._reading and not self.closed:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True
            if self.partial_since:
                # the time we did not read is not the client's: its clock starts again
                self.partial_since = time.monotonic()
            if self._buffered and self.transport.has_pending():
                self.loop.call_soon(self._read_pending)

    def _read_pending(self) -> None:
        """Reads bytes a TLS transport holds (the socket will not signal them)."""
        if self._reading and not self.closed:
            self._on_readable()

    def _stop_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _on_readable(self) -> None:
        decoder = self.decoder
        try:
            buf = decoder.get_buffer()
            n = self.transport.recv_into(buf)
            del buf
        except (BlockingIOError, InterruptedError):
            if self._buffered and self.transport.want_write:
                self._want_write()  # a TLS handshake step waits to be written
            return
        except OSError as e:
            self.close(f"receive failed: {e}")
            return
        except MemoryError:
            # no memory for the frame arriving (a large frame's buffer grows as its bytes do):
            # this connection goes, the loop and every other connection go on
            self.close("no memory to receive a request", level=logging.WARNING)
            return
        if n == 0:
            self.close("closed by peer", level=logging.DEBUG)
            return
        self.metrics.bytes_in += n
        # the frames completed by this read arrived now (their RequestQueueTimeMs starts here)
        self.read_ns = read_ns = time.monotonic_ns()
        now = self.last_active = read_ns / 1e9
        try:
            decoder.buffer_updated(n)
        except FrameTooLarge as e:
            self.refuse(f"refused a frame: {e} (socket.request.max.bytes)")
            return
        except MemoryError:
            # the frame's buffer could not be made: the decoder's state is unknown, so the
            # stream cannot go on
            self.close("no memory to receive a request", level=logging.WARNING)
            return
        if decoder.buffered_bytes:
            if not self.partial_since:
                self.partial_since = now
        else:
            self.partial_since = 0.0
        self._pump()
        self._flush()
        if self._buffered and self._reading and self.transport.has_pending():
            self.loop.call_soon(self._read_pending)

    # -- requests ----------------------------------------------------------------------------

    def _pump(self) -> None:
        """Handles queued frames in order until one has to wait or none are left."""
        channel = self.channel
        decoder = self.decoder
        answers = self._answers
        while (
            not self._busy
            and not self.closed
            and self._closing is None
            and self._out_bytes <= HIGH_WATER_BYTES
            and self._deferred < self.queued_max_requests
            and not self._muted_until
        ):
            # the check runs before every request: the rest waits until the client reads
            frame = decoder.next_frame()
            if frame is None:
                break
            try:
                result = channel.handle(self, frame)
            except CloseConnection as e:
                self.refuse(str(e) or "closed by request handler")
                return
            except Exception as e:  # a bug: the request has no answer, so the stream is lost
                log.exception("%r: handling a request failed", self)
                self.close(f"request failed: {type(e).__name__}: {e}")
                return
            if result is None:
                continue
            api_key = frame[0] << 8 | frame[1] if len(frame) > 1 else -1
            if isinstance(result, list):
                if answers:
                    answers.append(result)  # behind an answer still awaited
                    self._answer_keys.append(api_key)
                else:
                    self._queue(result, api_key)
                continue
            if isinstance(result, Deferred):
                self._deferred += 1
                task = asyncio.ensure_future(result.awaitable, loop=self.loop)
                answers.append(task)
                self._answer_keys.append(api_key)
                task.add_done_callback(self._deferred_done)
                continue
            self._busy = True
            task = asyncio.ensure_future(result, loop=self.loop)
            self._task = task
            answers.append(task)
            self._answer_keys.append(api_key)
            task.add_done_callback(self._request_done)
        self._account()
        self._apply_backpressure()

    def _request_done(self, task: asyncio.Future[Response]) -> None:
        self._busy = False
        self._task = None
        self._answered()

    def _deferred_done(self, task: asyncio.Future[Response]) -> None:
        self._deferred -= 1
        self._answered()

    def _answered(self) -> None:
        """Sends the answers now known, in request order, and handles the next requests."""
        if self.closed:
            return
        answers = self._answers
        while answers:
            head = answers[0]
            if isinstance(head, list):
                answers.popleft()
                self._queue(head, self._answer_keys.popleft())
                continue
            if not head.done():
                break
            answers.popleft()
            api_key = self._answer_keys.popleft()
            if head.cancelled():
                self.close("a request was cancelled")
                return
            exc = head.exception()
            if exc is not None:
                if isinstance(exc, CloseConnection):
                    self.refuse(str(exc) or type(exc).__name__)
                else:
                    log.error("%r: request failed", self, exc_info=exc)
                    self.close(str(exc) or type(exc).__name__)
                return
            parts = head.result()
            if parts is not None:
                self._queue(parts, api_key)
        self._pump()
        self._flush()

    # -- writing -----------------------------------------------------------------------------

    def _queue(self, parts: Sequence[Any], api_key: int) -> None:
        out = self._out
        zero_copy = self.transport.supports_sendfile
        queued = 0
        for part in parts:
            if isinstance(part, FileRegion):
                if not part.length:
                    continue
                if zero_copy:
                    out.append(part)
                    queued += part.length
                    continue
                # a transport that transforms bytes (TLS) cannot sendfile: read the region
                part = os.pread(part.fd, part.length, part.position)
            n = len(part)
            if n:
                out.append(part)
                self._out_bytes += n
                queued += n
        self._queued_total += queued
        self._marks.append((self._queued_total, api_key, time.monotonic_ns()))

    def _responses_sent(self) -> None:
        """Records the response metrics of the responses whose last byte the socket took: a
        response's first byte could leave once the previous response had left (or when it was
        queued, if later)."""
        now = time.monotonic_ns()
        marks = self._marks
        sent = self._sent_total
        last = self._last_sent_ns
        record = self.request_metrics.record_response
        while marks and marks[0][0] <= sent:
            _, api_key, queued = marks.popleft()
            start = queued if queued > last else last
            record(api_key, start - queued, now - start)
            last = now
        self._last_sent_ns = last

    def _flush(self) -> None:
        """Sends what it can now; waits for writability when the socket is full."""
        out = self._out
        transport = self.transport
        if self._buffered and not transport.flush():
            self._want_write()
            return
        while out:
            head = out[0]
            if isinstance(head, FileRegion):
                try:
                    sent = transport.sendfile(
                        head.fd, head.position, min(head.length, SENDFILE_CHUNK)
                    )
                except (BlockingIOError, InterruptedError):
                    if self._marks:
                        self._responses_sent()
                    self._want_write()
                    return
                except OSError as e:
                    self.close(f"sendfile failed: {e}")
                    return
                if sent == 0:
                    self.close("sendfile sent nothing: the file is shorter than the region")
                    return
                self.metrics.bytes_out += sent
                self.metrics.sendfile_bytes += sent
                self._sent_total += sent
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
                sent = transport.sendmsg(batch)
            except (BlockingIOError, InterruptedError):
                if self._marks:
                    self._responses_sent()
                self._want_write()
                return
            except OSError as e:
                self.close(f"send failed: {e}")
                return
            self.metrics.bytes_out += sent
            self._out_bytes -= sent
            self._sent_total += sent
            while sent:
                item = out[0]
                n = len(item)
                if sent >= n:
                    out.popleft()
                    sent -= n
                else:
                    out[0] = memoryview(item).cast("B")[sent:]
                    sent = 0
        if self._marks:
            self._responses_sent()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        if self._closing is not None:
            if not self._busy and not self._answers:
                self.close(self._closing)
            return
        if (
            self.decoder.pending_frames
            and not self._busy
            and self._out_bytes <= LOW_WATER_BYTES
            and not self.closed
        ):
            # frames left waiting by the response high-water mark: handle them now
            self.loop.call_soon(self._resume)
        self._apply_backpressure()

    def _resume(self) -> None:
        if not self.closed and not self._busy and not self._muted_until:
            self._pump()
            self._flush()

    def _want_write(self) -> None:
        if not self._writing and not self.closed:
            self.loop.add_writer(self.fd, self._on_writable)
            self._writing = True
        self._apply_backpressure()

    def _on_writable(self) -> None:
        self.last_active = time.monotonic()
        self._flush()

    def _account(self) -> None:
        """Tells the request-memory pool what this connection holds now."""
        held = self.decoder.held_bytes
        if held != self._held:
            self._pool.update(self._held, held)
            self._held = held

    def _apply_backpressure(self) -> None:
        if self.closed:
            return
        waiting = self.decoder.pending_frames
        if (
            self._out_bytes > HIGH_WATER_BYTES
            or waiting >= self.queued_max_requests
            or self._closing is not None
            or self._muted_until
        ):
            self._stop_reading()
        elif self._out_bytes <= LOW_WATER_BYTES and waiting < self.queued_max_requests:
            pool = self._pool
            if pool.bounded and not pool.may_read(
                self._held, self if self.decoder.buffered_bytes else None
            ):
                self._stop_reading()
                if not self._memory_retry:
                    self._memory_retry = True
                    self.loop.call_later(MEMORY_RETRY_S, self._retry_memory)
            else:
                self._start_reading()
        if self._pool.finisher is self and not (self._reading and self.decoder.buffered_bytes):
            # its frame is complete, or it stopped reading: another connection may finish one
            self._pool.release(self)

    # -- throttling and closing after a response --------------------------------------------

    def mute(self, throttle_ms: int) -> None:
        """Stops reading requests for ``throttle_ms`` (a client over its quota, KIP-219): the
        response already queued still leaves."""
        if throttle_ms <= 0 or self.closed:
            return
        until = time.monotonic() + throttle_ms / 1000
        if until > self._muted_until:
            self._muted_until = until
            self.loop.call_later(throttle_ms / 1000, self._unmute)
        self._apply_backpressure()

    def _unmute(self) -> None:
        if self.closed or not self._muted_until:
            return
        remaining = self._muted_until - time.monotonic()
        if remaining > 0.0005:  # a later mute, or the timer fired early
            self.loop.call_later(remaining, self._unmute)
            return
        self._muted_until = 0.0
        # requests that arrived meanwhile are handled now, one at a time as usual
        self._resume()
        self._apply_backpressure()

    def _still_muted(self) -> bool:
        return time.monotonic() < self._muted_until

    @property
    def muted(self) -> bool:
        return bool(self._muted_until) and time.monotonic() < self._muted_until

    def close_after_responses(self, reason: str) -> None:
        """Reads nothing more and closes once the responses queued now are sent (a failed SASL
        authentication is answered, then the connection closes, as Kafka does)."""
        if self._closing is None and not self.closed:
            self._closing = reason
            self._stop_reading()

    def _retry_memory(self) -> None:
        self._memory_retry = False
        self._apply_backpressure()

    # -- closing -----------------------------------------------------------------------------

    def refuse(self, reason: str) -> None:
        """Closes the connection because of what the client sent; the broker's ``on_refused``
        hears of it first, unless the connection was already closing after an answered failure
        (a failed SASL authentication, logged where it failed)."""
        if self.closed:
            return
        if self._on_refused is not None and self._closing is None:
            self._on_refused(self, reason)
        self.close(reason)

    def close(self, reason: str = "", *, level: int = logging.INFO) -> None:
        if self.closed:
            return
        self.closed = True
        if reason:
            host, port = self.peer
            log.log(
                level,
                "closing connection from %s:%d on listener %s: %s",
                host,
                port,
                self.session.listener,
                reason,
            )
        self._stop_reading()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        for answer in self._answers:
            if not isinstance(answer, list) and not answer.done():
                answer.cancel()
        self._answers.clear()
        self._answer_keys.clear()
        self._marks.clear()
        self._task = None
        self._out.clear()
        self._pool.update(self._held, 0)
        self._held = 0
        self._pool.release(self)
        try:
            self.transport.close()
        except OSError:
            pass
        self.metrics.connections_closed += 1
        self._on_close(self)
