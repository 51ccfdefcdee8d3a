"""What bounds the network layer's resources: connections (Kafka's ``ConnectionQuotas``) and the
memory held by received requests (Kafka's ``MemoryPool`` behind ``queued.max.request.bytes``).

* :class:`ConnectionQuotas` counts open connections in total and per IP address. The acceptor
  asks :meth:`ConnectionQuotas.try_open` before handing a socket to a processor: over
  ``max.connections.per.ip`` (or its override for that address) the socket is closed at once;
  at ``max.connections`` the acceptor stops accepting until a connection closes (Kafka waits the
  same way), so the limit is never exceeded and nothing already accepted is hurt.
* :class:`RequestMemoryPool` is one budget for the bytes of requests held at once by every
  connection (frames waiting to be handled, large frames arriving). A connection whose read
  would go over the budget stops reading and retries shortly; memory comes back as requests are
  handled. A connection holding nothing may always read (so one request larger than what is
  free still gets in, as Kafka's pool lets one allocation overshoot). A frame's buffer grows
  with the bytes that arrive (Kafka's pool allocates the whole announced size up front
  instead), so connections each holding part of a frame could otherwise wait for one another
  forever once the budget is spent: one of them at a time, the *finisher*, may read on until
  its frame is complete (and its memory comes back once the request is handled).

Thread-safety: both are shared by the acceptor (main loop) and every processor thread; each
method takes the object's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping


class ConnectionQuotas:
    def __init__(
        self,
        *,
        max_connections: int,
        max_connections_per_ip: int,
        overrides: Mapping[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.overrides = dict(overrides or {})
        self._lock = threading.Lock()
        self._total = 0
        self._per_ip: dict[str, int] = {}
        #: called (on any thread) when the total falls below the limit again
        self.on_room: Callable[[], None] | None = None
        #: connections refused because of their address's limit
        self.refused_per_ip = 0

    @property
    def total(self) -> int:
        return self._total

    def at_limit(self) -> bool:
        return self._total >= self.max_connections

    def try_open(self, ip: str) -> bool:
        """Counts a new connection from ``ip``; False (nothing counted) when ``ip`` is at its
        limit."""
        limit = self.overrides.get(ip, self.max_connections_per_ip)
        with self._lock:
            count = self._per_ip.get(ip, 0)
            if count >= limit:
                self.refused_per_ip += 1
                return False
            self._per_ip[ip] = count + 1
            self._total += 1
            return True

    def closed(self, ip: str) -> None:
        with self._lock:
            count = self._per_ip.get(ip, 0) - 1
            if count > 0:
                self._per_ip[ip] = count
            else:
                self._per_ip.pop(ip, None)
            was_full = self._total >= self.max_connections
            self._total -= 1
            room = was_full and self._total < self.max_connections
        if room and self.on_room is not None:
            self.on_room()


class RequestMemoryPool:
    """A byte budget for received requests (``capacity`` < 0: unbounded)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._used = 0
        #: the connection allowed to complete its partly received frame over the budget
        self.finisher: object | None = None

    @property
    def used(self) -> int:
        return self._used

    @property
    def bounded(self) -> bool:
        return self.capacity >= 0

    def update(self, previous: int, current: int) -> None:
        """A connection's holding went from ``previous`` to ``current`` bytes."""
        if previous != current:
            with self._lock:
                self._used += current - previous

    def may_read(self, holding: int, partial: object | None = None) -> bool:
        """Whether a connection holding ``holding`` bytes may read more now. ``partial`` is the
        connection when part of a frame has arrived on it: over the budget, it may read on if
        no other connection is finishing a frame (it then is the :attr:`finisher` until it
        calls :meth:`release`)."""
        if holding == 0 or self._used < self.capacity:
            return True
        if partial is None:
            return False
        with self._lock:
            if self.finisher is None:
                self.finisher = partial
            return self.finisher is partial

    def release(self, reader: object) -> None:
        """``reader`` is no longer finishing a frame (it completed it, stopped reading or
        closed): another connection may."""
        with self._lock:
            if self.finisher is reader:
                self.finisher = None
