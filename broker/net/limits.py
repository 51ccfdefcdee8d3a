"""What bounds the network layer's resources: connections (Kafka's ``ConnectionQuotas``) and the
memory held by received requests (Kafka's ``MemoryPool`` behind ``queued.max.request.bytes``).

* :class:`ConnectionQuotas` counts open connections in total, per IP address and per listener.
  The acceptor asks :meth:`ConnectionQuotas.try_open` before handing a socket to a processor:
  over ``max.connections.per.ip`` (or its override for that address) the socket is closed at
  once; at ``max.connections``, or at a listener's own
  ``listener.name.<listener>.max.connections``, the acceptor stops accepting on the listeners
  concerned until a connection closes (Kafka waits the same way), so the limit is never
  exceeded and nothing already accepted is hurt. The inter-broker listener, when the broker has
  others, is exempt from the broker-wide limits (Kafka's protected listener), so replication
  goes on when clients take every connection.
  It also measures connection creation rates (KIP-612), over ``quota.window.num`` samples of
  ``quota.window.size.seconds`` as Kafka's quotas do: the broker's and each listener's
  (``max.connection.creation.rate``, also per listener: over it, the acceptor waits before
  accepting more, :meth:`ConnectionQuotas.record_connection`) and each IP address's (the
  ``connection_creation_rate`` quota of an ``ip`` entity or the default one: a connection over
  it is throttled, :meth:`ConnectionQuotas.record_ip`, and the acceptor closes it once the
  throttle time has passed, without reading from it). A throttle is at most one window.
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
method takes the object's lock, except the connection rates'
(:meth:`ConnectionQuotas.record_connection`, :meth:`ConnectionQuotas.record_ip`), which only the
acceptor calls; the security store's thread replaces the ip rates whole
(:meth:`ConnectionQuotas.set_ip_rates`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from broker.rates import SampledRate

#: Kafka's default of every connection limit and connection creation rate (Integer.MAX_VALUE):
#: none
UNLIMITED = 2**31 - 1
#: IP sensors idle this long are dropped once there are many (Kafka expires them after an hour)
_SENSOR_EXPIRATION_MS = 3600 * 1000


class ConnectionQuotas:
    def __init__(
        self,
        *,
        max_connections: int,
        max_connections_per_ip: int,
        overrides: Mapping[str, int] | None = None,
        max_connection_creation_rate: int = UNLIMITED,
        listener_max_connections: Mapping[str, int] | None = None,
        listener_creation_rates: Mapping[str, int] | None = None,
        samples: int = 11,
        window_seconds: int = 1,
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.overrides = dict(overrides or {})
        #: ``max.connection.creation.rate`` (connections per second, every listener but the
        #: protected one)
        self.max_connection_creation_rate = max_connection_creation_rate
        #: ``listener.name.<listener>.max.connections`` and ``...max.connection.creation.rate``
        self.listener_max_connections = dict(listener_max_connections or {})
        self.listener_creation_rates = dict(listener_creation_rates or {})
        #: the inter-broker listener when the broker has others (Kafka's protected listener):
        #: exempt from the broker-wide max.connections and max.connection.creation.rate
        self.protected_listener: str | None = None
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._broker_rate: SampledRate | None = None
        self._listener_rates: dict[str, SampledRate] = {}
        #: ``connection_creation_rate`` of the default ip entity and of each address
        self._default_ip_rate = UNLIMITED
        self._ip_rates: Mapping[str, int] = {}
        self._ip_sensors: dict[str, SampledRate] = {}
        #: connections throttled by their address's connection rate quota
        self.throttled_per_ip = 0
        #: how long the acceptor waited for the connection creation rates, in total (ms)
        self.rate_wait_ms = 0
        self._lock = threading.Lock()
        self._total = 0
        self._per_ip: dict[str, int] = {}
        self._per_listener: dict[str, int] = {}
        #: called (on any thread) when a connection closes while a listener had no slot
        self.on_room: Callable[[], None] | None = None
        #: connections refused because of their address's limit
        self.refused_per_ip = 0

    @property
    def total(self) -> int:
        return self._total

    def slot_available(self, listener: str) -> bool:
        """Whether ``listener`` may accept a connection now (Kafka's
        ``connectionSlotAvailable``): under its own max.connections, and under the broker's
        unless it is the protected listener."""
        if self._per_listener.get(listener, 0) >= self.listener_max_connections.get(
            listener, UNLIMITED
        ):
            return False
        return listener == self.protected_listener or self._total < self.max_connections

    def try_open(self, ip: str, listener: str = "") -> bool:
        """Counts a new connection from ``ip`` on ``listener``; False (nothing counted) when
        ``ip`` is at its limit."""
        limit = self.overrides.get(ip, self.max_connections_per_ip)
        with self._lock:
            count = self._per_ip.get(ip, 0)
            if count >= limit:
                self.refused_per_ip += 1
                return False
            self._per_ip[ip] = count + 1
            self._per_listener[listener] = self._per_listener.get(listener, 0) + 1
            self._total += 1
            return True

    def set_ip_rates(self, default: int | None, per_ip: Mapping[str, int]) -> None:
        """The ``connection_creation_rate`` quotas of ip entities: the default entity's (None:
        none) and each address's (Kafka's ``updateIpConnectionRateQuota``)."""
        with self._lock:
            self._default_ip_rate = UNLIMITED if default is None else default
            self._ip_rates = dict(per_ip)

    def ip_rate(self, ip: str) -> int:
        """The connection creation rate allowed to ``ip`` (:data:`UNLIMITED`: none)."""
        return self._ip_rates.get(ip, self._default_ip_rate)

    def record_connection(self, listener: str, now_ms: int) -> int:
        """Records a connection about to be accepted on ``listener`` against
        ``max.connection.creation.rate`` (but on the protected listener) and the listener's
        own rate; returns how long (ms) the acceptor should wait before accepting it (0: at
        once), the longer of the two, as Kafka's ``ConnectionQuotas.waitForConnectionSlot``
        waits."""
        wait = 0
        if listener != self.protected_listener:
            limit = self.max_connection_creation_rate
            if limit < UNLIMITED:
                if self._broker_rate is None:
                    self._broker_rate = SampledRate(self.samples, self.window_ms, now_ms)
                wait = self._broker_rate.record_within(1.0, now_ms, limit, self.window_ms)
        limit = self.listener_creation_rates.get(listener, UNLIMITED)
        if limit < UNLIMITED:
            sensor = self._listener_rates.get(listener)
            if sensor is None:
                sensor = SampledRate(self.samples, self.window_ms, now_ms)
                self._listener_rates[listener] = sensor
            wait = max(wait, sensor.record_within(1.0, now_ms, limit, self.window_ms))
        self.rate_wait_ms += wait
        return wait

    def record_ip(self, ip: str, listener: str, now_ms: int) -> int:
        """Records a new connection from ``ip`` against its connection rate quota; returns 0,
        or how long (ms) the connection is throttled, after which the acceptor closes it. A
        throttled connection is taken back out of the address's rate and out of those
        :meth:`record_connection` recorded it in (Kafka's ``recordIpConnectionMaybeThrottle``)."""
        limit = self.ip_rate(ip)
        if limit >= UNLIMITED:
            return 0
        sensor = self._ip_sensor(ip, now_ms)
        throttle = sensor.record_within(1.0, now_ms, limit, self.window_ms)
        if throttle:
            counted = [sensor, self._listener_rates.get(listener)]
            if (
                listener != self.protected_listener
                and self.max_connection_creation_rate < UNLIMITED
            ):
                counted.append(self._broker_rate)
            for rate in counted:
                if rate is not None:
                    rate.take_back(1.0, now_ms)
            self.throttled_per_ip += 1
        return throttle

    def _ip_sensor(self, ip: str, now_ms: int) -> SampledRate:
        sensors = self._ip_sensors
        sensor = sensors.get(ip)
        if sensor is None:
            if len(sensors) > 10_000:
                horizon = now_ms - _SENSOR_EXPIRATION_MS
                for key, old in list(sensors.items()):
                    if old.last_record_ms < horizon:
                        del sensors[key]
            sensor = sensors[ip] = SampledRate(self.samples, self.window_ms, now_ms)
        return sensor

    def closed(self, ip: str, listener: str = "") -> None:
        with self._lock:
            count = self._per_ip.get(ip, 0) - 1
            if count > 0:
                self._per_ip[ip] = count
            else:
                self._per_ip.pop(ip, None)
            on_listener = self._per_listener.get(listener, 0)
            if on_listener > 1:
                self._per_listener[listener] = on_listener - 1
            else:
                self._per_listener.pop(listener, None)
            was_full = self._total >= self.max_connections or on_listener >= (
                self.listener_max_connections.get(listener, UNLIMITED)
            )
            self._total -= 1
        if was_full and self.on_room is not None:
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
