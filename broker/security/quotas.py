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

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from broker.addresses import addresses_of
from broker.metrics import MetricSamples
from broker.rates import SampledRate
from coordination.metadata.security import (
    CONSUMER_BYTE_RATE,
    DEFAULT_ENTITY,
    IP_CONNECTION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    EntityConfigs,
    parse_ip_entity_path,
    sanitize,
)

log = logging.getLogger(__name__)

#: sensors idle longer than this are dropped (Kafka's InactiveSensorExpirationTimeSeconds)
SENSOR_EXPIRATION_MS = 3600 * 1000


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
        self._sensors: dict[tuple[str, str], SampledRate] = {}
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

    def _sensor(self, key: tuple[str, str], now_ms: int) -> SampledRate:
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
                    sensor = self._sensors[key] = SampledRate(self.samples, self.window_ms, now_ms)
        return sensor

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Records ``value`` for the client; returns the throttle time in ms (0: within its
        quota, or it has none)."""
        match = self._match(user, client_id)
        if match is None:
            return 0
        sensor = self._sensor(match.key, now_ms)
        return sensor.record_within(value, now_ms, match.limit, self.cap_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Takes back a value recorded for a response that is not sent (a throttled fetch)."""
        match = self._match(user, client_id)
        if match is None:
            return
        self._sensor(match.key, now_ms).take_back(value, now_ms)

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


def ip_connection_rates(entities: EntityConfigs) -> tuple[int | None, dict[str, int]]:
    """The ``connection_creation_rate`` quotas of ip entities (KIP-612): the default entity's
    (None: none) and each address's. An entity named by a host name applies to the address it
    resolves to, as Kafka's ``IpConfigHandler`` resolves it (``InetAddress.getByName``); one
    that does not resolve is left out, with a warning. Addresses are in the form the acceptor
    sees a peer's (``ipaddress``'s compressed form)."""
    default: int | None = None
    per_ip: dict[str, int] = {}
    for path, configs in entities.items():
        parsed = parse_ip_entity_path(path)
        raw = configs.get(IP_CONNECTION_RATE)
        if parsed is None or raw is None:
            continue
        try:
            rate = int(float(raw))
        except ValueError:
            log.warning("ignoring the unreadable %s of %s: %r", IP_CONNECTION_RATE, path, raw)
            continue
        (name,) = parsed
        if name is None:
            default = rate
            continue
        try:
            per_ip[addresses_of(name)[0]] = rate
        except OSError as e:
            log.warning("ignoring the %s quota of %s: %s", IP_CONNECTION_RATE, name, e)
    return default, per_ip
