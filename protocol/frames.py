"""Splits a byte stream into Kafka frames (a big-endian int32 size, then that many bytes).

Sans-IO: the decoder owns buffers, never sockets. Two ways to give it bytes:

* ``feed(data)`` copies ``data`` in (simple; used by tests and clients);
* ``get_buffer()`` / ``buffer_updated(n)`` lets the caller receive straight into the decoder's
  memory, as :class:`asyncio.BufferedProtocol` does. Small frames are parsed out of a reusable
  scratch buffer; a large frame gets a buffer of its own as soon as its size is known, and the
  rest of it is received in place.

Memory follows the bytes that actually arrive, never the size a peer announces: a large frame's
buffer starts at :data:`DIRECT_FRAME_INITIAL` (or twice what has arrived) and doubles as it
fills, up to the announced size, so four bytes of size prefix cannot pin more than that initial
buffer (Kafka allocates the whole announced size); a frame larger than the initial buffer is
copied about once more in all, while growing.

Every frame yielded is a ``memoryview`` over a ``bytearray`` that belongs to that frame alone, so
views into it (a Produce request's records) stay valid and writable after later reads.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator

from protocol.errors import FrameTooLarge

_SIZE = struct.Struct(">i")

#: Frames at least this big that are not yet complete are received into their own buffer.
DIRECT_FRAME_MIN = 16 * 1024
#: The first size of such a buffer; it doubles as bytes arrive. 1 MiB holds a produce request of
#: librdkafka's default batch size whole (each growth costs an allocation, zeroing and a copy),
#: and a size prefix alone pins no more than this (the broker's request memory budget bounds
#: the sum).
DIRECT_FRAME_INITIAL = 1024 * 1024


class FrameDecoder:
    """Feed bytes, iterate whole frames. Raises :class:`FrameTooLarge` for a size prefix above
    ``max_frame_bytes`` or below zero; the stream cannot be resynchronised after that."""

    def __init__(self, max_frame_bytes: int, *, scratch_bytes: int = 64 * 1024) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._scratch = bytearray(max(scratch_bytes, 2 * DIRECT_FRAME_MIN))
        self._start = 0  # first unparsed byte in scratch
        self._end = 0  # end of received bytes in scratch
        self._frame: bytearray | None = None  # a large frame being received in place
        self._frame_size = 0  # its announced size (its buffer may still be smaller)
        self._filled = 0
        self._frames: deque[memoryview] = deque()
        self._frames_bytes = 0

    # -- receiving ---------------------------------------------------------------------------

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Memory for the next bytes; report how many were written with :meth:`buffer_updated`."""
        frame = self._frame
        if frame is not None:
            if self._filled == len(frame):
                frame = self._grow_frame()
            return memoryview(frame)[self._filled :]
        if self._end == len(self._scratch):
            self._make_room()
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == self._frame_size:
                self._append_frame(memoryview(self._frame))
                self._frame = None
                self._filled = 0
            return
        self._end += nbytes
        self._parse()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        while view:
            buf = self.get_buffer(len(view))
            n = min(len(buf), len(view))
            buf[:n] = view[:n]
            view = view[n:]
            self.buffer_updated(n)

    # -- frames ------------------------------------------------------------------------------

    def next_frame(self) -> memoryview | None:
        """The oldest complete frame not yet taken, or None."""
        if not self._frames:
            return None
        frame = self._frames.popleft()
        self._frames_bytes -= len(frame)
        return frame

    def __iter__(self) -> Iterator[memoryview]:
        while self._frames:
            frame = self.next_frame()
            assert frame is not None
            yield frame

    def _append_frame(self, frame: memoryview) -> None:
        self._frames.append(frame)
        self._frames_bytes += len(frame)

    @property
    def pending_frames(self) -> int:
        return len(self._frames)

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return self._end - self._start + self._filled

    @property
    def held_bytes(self) -> int:
        """Memory held for requests: complete frames not yet taken, and the buffer of a large
        frame being received (the fixed scratch buffer is not counted)."""
        frame = self._frame
        return self._frames_bytes + (len(frame) if frame is not None else 0)

    # -- internals ---------------------------------------------------------------------------

    def _parse(self) -> None:
        scratch = self._scratch
        start, end = self._start, self._end
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(scratch, start)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameTooLarge(size, self.max_frame_bytes)
            body = start + 4
            if end - body >= size:
                self._append_frame(memoryview(scratch[body : body + size]))
                start = body + size
                continue
            if size >= DIRECT_FRAME_MIN or size + 4 > len(scratch):
                have = end - body
                frame = bytearray(min(size, max(DIRECT_FRAME_INITIAL, 2 * have)))
                frame[:have] = scratch[body:end]
                self._frame = frame
                self._frame_size = size
                self._filled = have
                start = end
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end

    def _grow_frame(self) -> bytearray:
        """A bigger buffer for the large frame being received (a copy: views of the old one may
        still be alive in the caller)."""
        old = self._frame
        assert old is not None
        bigger = bytearray(min(self._frame_size, 2 * len(old)))
        bigger[: self._filled] = old
        self._frame = bigger
        return bigger

    def _make_room(self) -> None:
        """Moves the unparsed tail to the front of scratch (never resizes a buffer in use)."""
        start, end = self._start, self._end
        if start > 0:
            pending = end - start
            self._scratch[:pending] = self._scratch[start:end]
            self._start, self._end = 0, pending
        else:
            bigger = bytearray(len(self._scratch) * 2)
            bigger[:end] = self._scratch[:end]
            self._scratch = bigger
