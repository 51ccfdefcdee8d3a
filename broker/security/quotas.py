"""Client quotas (Kafka's ``ClientQuotaManager`` and ``ClientRequestQuotaManager``, KIP-13,
KIP-55, KIP-124, KIP-219).

Quotas are entity configs in the security store (ZooKeeper's ``/config/users`` and
``/config/clients``, or the embedded file), set with AlterClientQuotas or Kafka's
``kafka-configs.sh``: ``producer_byte_rate`` and ``consumer_byte_rate`` (bytes per second) and
``request_percentage`` (percent of one network thread's time). A client's quota is the most
specific entity that has one, in Kafka's order: user+client-id, user+default client-id, user,
default user+client-id, default user+default client-id, default user, client-id, default
client-id. Clients sharing the matched entity share its budget; a default entity gives each
user (or client id) a budget of its own.

Rates are Kafka's: samples of ``quota.window.size.seconds`` (1 s), ``quota.window.num`` (11) of
them, and a rate measured over at least ``quota.window.num - 1`` windows (so a short burst is not
throttled, a sustained excess is). When a produce (its request bytes), a fetch (its response
bytes) or a request's handling time takes the rate over the quota, the throttle time is the time
that brings the rate back to it, ``(rate - quota) / quota * window``; the response carries it in
``throttle_time_ms`` and the broker stops reading from the connection for that long (KIP-219).
A throttled fetch answers without data (its bytes are not counted). Request-time throttles are
capped at one window.

Thread-safety: records come from every processor thread; each sensor has a lock, the quota table
is an immutable snapshot replaced on change.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from broker.metrics import MetricSamples
from coordination.metadata.security import (
    CONSUMER_BYTE_RATE,
    DEFAULT_ENTITY,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    EntityConfigs,
    sanitize,
)

#: sensors idle longer than this are dropped (Kafka's InactiveSensorExpirationTimeSeconds)
SENSOR_EXPIRATION_MS = 3600 * 1000


class _Rate:
    """Kafka's ``Rate`` over a ``SampledStat``: ``samples`` windows of ``window_ms``."""

    __slots__ = ("last_record_ms", "lock", "samples", "slots", "window_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self.slots = max(2, samples)
        self.window_ms = window_ms
        #: [start_ms, value] per sample, oldest first
        self.samples: list[list[float]] = [[float(now_ms), 0.0]]
        self.lock = threading.Lock()
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        horizon = now_ms - self.slots * self.window_ms
        kept = [s for s in self.samples if s[0] >= horizon]
        self.samples = kept or [[float(now_ms), 0.0]]

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        current = self.samples[-1]
        if now_ms - current[0] >= self.window_ms:
            current = [float(now_ms), 0.0]
            self.samples.append(current)
            if len(self.samples) > self.slots:
                del self.samples[0]
        current[1] += value
        self.last_record_ms = now_ms

    def window_size_ms(self, now_ms: int) -> float:
        total = now_ms - self.samples[0][0]
        full = int(total // self.window_ms)
        minimum = self.slots - 1
        if full < minimum:
            total += (minimum - full) * self.window_ms
        return max(total, 1.0)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        return sum(s[1] for s in self.samples) / (self.window_size_ms(now_ms) / 1000)

    def _rate_at(self, t_ms: float) -> float:
        """The rate :meth:`measure` would give at ``t_ms`` if nothing more were recorded."""
        horizon = t_ms - self.slots * self.window_ms
        kept = [s for s in self.samples if s[0] >= horizon]
        if not kept:
            return 0.0
        elapsed = t_ms - kept[0][0]
        full = int(elapsed // self.window_ms)
        if full < self.slots - 1:
            elapsed += (self.slots - 1 - full) * self.window_ms
        return sum(s[1] for s in kept) / (max(elapsed, 1.0) / 1000)

    def time_to_quota_ms(self, now_ms: int, limit: float) -> float:
        """How long until the rate is back within ``limit`` if nothing more is recorded:
        the first time, in steps of a twentieth of a window, at which :meth:`measure` would
        be within the quota (the samples that made the excess expire, the window grows).
        Kafka's ``QuotaUtils.throttleTime`` estimates the same time as
        ``(rate - limit) / limit * window``, which assumes the window keeps growing; it does
        not once it is full, and a client throttled that way goes on at more than its quota
        for as long as an early burst stays in the window."""
        step = self.window_ms / 20
        t = float(now_ms)
        end = now_ms + (self.slots + 1) * self.window_ms
        while t < end:
            if self._rate_at(t) <= limit:
                return t - now_ms
            t += step
        return float(self.slots * self.window_ms)


@dataclass(frozen=True)
class _Match:
    """The entity a client's quota comes from: its sensor key and its limit."""

    key: tuple[str, str]
    limit: float


class ClientQuotaManager:
    """One kind of quota (produce, fetch or request)."""

    def __init__(
        self, quota_key: str, *, samples: int, window_seconds: int, cap_ms: int | None = None
    ) -> None:
        self.quota_key = quota_key
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self.cap_ms = cap_ms
        self._limits: Mapping[str, float] = MappingProxyType({})
        self._sensors: dict[tuple[str, str], _Rate] = {}
        self._sensors_lock = threading.Lock()
        self._resolved: dict[tuple[str, str], _Match | None] = {}
        #: total throttle time handed out, milliseconds (a metric)
        self.throttle_ms_total = 0
        self.throttled_responses = 0

    @property
    def enabled(self) -> bool:
        return bool(self._limits)

    def update(self, entities: EntityConfigs) -> None:
        limits = {}
        for path, configs in entities.items():
            raw = configs.get(self.quota_key)
            if raw is None:
                continue
            try:
                limits[path] = float(raw)
            except ValueError:
                continue
        self._limits = MappingProxyType(limits)
        self._resolved = {}

    def _resolve(self, user: str, client_id: str) -> _Match | None:
        """Kafka's DefaultQuotaCallback order (user and client id sanitized as in the paths)."""
        limits = self._limits
        u, c, d = sanitize(user), sanitize(client_id), DEFAULT_ENTITY
        candidates = (
            (f"users/{u}/clients/{c}", (user, client_id)),
            (f"users/{u}/clients/{d}", (user, client_id)),
            (f"users/{u}", (user, "")),
            (f"users/{d}/clients/{c}", (user, client_id)),
            (f"users/{d}/clients/{d}", (user, client_id)),
            (f"users/{d}", (user, "")),
            (f"clients/{c}", ("", client_id)),
            (f"clients/{d}", ("", client_id)),
        )
        for path, key in candidates:
            limit = limits.get(path)
            if limit is not None:
                return _Match(key, limit)
        return None

    def _match(self, user: str, client_id: str) -> _Match | None:
        resolved = self._resolved
        key = (user, client_id)
        if key in resolved:
            return resolved[key]
        match = self._resolve(user, client_id)
        if len(resolved) > 100_000:
            resolved.clear()
        resolved[key] = match
        return match

    def _sensor(self, key: tuple[str, str], now_ms: int) -> _Rate:
        sensor = self._sensors.get(key)
        if sensor is None:
            with self._sensors_lock:
                sensor = self._sensors.get(key)
                if sensor is None:
                    if len(self._sensors) > 10_000:
                        horizon = now_ms - SENSOR_EXPIRATION_MS
                        for k, s in list(self._sensors.items()):
                            if s.last_record_ms < horizon:
                                del self._sensors[k]
                    sensor = self._sensors[key] = _Rate(self.samples, self.window_ms, now_ms)
        return sensor

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Records ``value`` for the client; returns the throttle time in ms (0: within its
        quota, or it has none)."""
        match = self._match(user, client_id)
        if match is None:
            return 0
        sensor = self._sensor(match.key, now_ms)
        with sensor.lock:
            sensor.record(value, now_ms)
            rate = sensor.measure(now_ms)
            if rate <= match.limit:
                return 0
            throttle = sensor.time_to_quota_ms(now_ms, match.limit)
        ms = round(throttle)
        if self.cap_ms is not None:
            ms = min(ms, self.cap_ms)
        return max(ms, 0)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Takes back a value recorded for a response that is not sent (a throttled fetch)."""
        match = self._match(user, client_id)
        if match is None:
            return
        sensor = self._sensor(match.key, now_ms)
        with sensor.lock:
            sensor.record(-value, now_ms)

    def throttled(self, ms: int) -> None:
        self.throttle_ms_total += ms
        self.throttled_responses += 1


class QuotaManagers:
    """The broker's three client quotas, following the security store's entity configs."""

    def __init__(self, *, samples: int = 11, window_seconds: int = 1) -> None:
        self.produce = ClientQuotaManager(
            PRODUCER_BYTE_RATE, samples=samples, window_seconds=window_seconds
        )
        self.fetch = ClientQuotaManager(
            CONSUMER_BYTE_RATE, samples=samples, window_seconds=window_seconds
        )
        self.request = ClientQuotaManager(
            REQUEST_PERCENTAGE,
            samples=samples,
            window_seconds=window_seconds,
            cap_ms=window_seconds * 1000,
        )

    def update(self, entities: EntityConfigs) -> None:
        for m in (self.produce, self.fetch, self.request):
            m.update(entities)

    def samples(self) -> Iterable[MetricSamples]:
        managers = (("produce", self.produce), ("fetch", self.fetch), ("request", self.request))
        return [
            (
                "odradek_quota_throttle_time_ms_total",
                "counter",
                "Throttle time given to clients over their quota, by quota type.",
                [(f'{{quota="{name}"}}', float(m.throttle_ms_total)) for name, m in managers],
            ),
            (
                "odradek_quota_throttled_responses_total",
                "counter",
                "Responses that carried a throttle time, by quota type.",
                [(f'{{quota="{name}"}}', float(m.throttled_responses)) for name, m in managers],
            ),
        ]
