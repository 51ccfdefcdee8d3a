"""Client telemetry (KIP-714; Kafka's ``ClientMetricsManager``): subscriptions, client instances,
pushed metrics, and their exposition on the broker's Prometheus endpoint.

**Subscriptions** are CLIENT_METRICS config resources (IncrementalAlterConfigs, as Kafka's
``kafka-client-metrics.sh`` writes them), kept by the metadata store
(``ClusterView.client_metrics``): ``metrics`` (metric name prefixes; ``*`` is every metric),
``interval.ms`` (push interval, 100 ms to 1 hour, default 5 minutes) and ``match`` (``key=regex``
selectors on ``client_instance_id``, ``client_id``, ``client_software_name``,
``client_software_version``, ``client_source_address``, ``client_source_port``; none matches
every client).

**GetTelemetrySubscriptions** gives a new client an instance id and, for each client, the union of
the metrics of the subscriptions it matches and the smallest interval among them, with the
compression types accepted (zstd, lz4, gzip, snappy, as Kafka) and ``telemetry.max.bytes``. The
instance is re-evaluated when the subscriptions change. A request sooner than the push interval
since the last one is THROTTLING_QUOTA_EXCEEDED, except after an UNKNOWN_SUBSCRIPTION_ID or
UNSUPPORTED_COMPRESSION_TYPE (as Kafka 4 allows; Kafka 3.x meant to and never did), and such an
early request does not count as the last one: a push right after it is still early, as in
Kafka.

**PushTelemetry**, checked in Kafka's order: after a terminating push, INVALID_REQUEST; sooner
than the interval (the first push after a Get may come early: clients add jitter),
THROTTLING_QUOTA_EXCEEDED; another subscription id, UNKNOWN_SUBSCRIPTION_ID; a compression type
that does not exist, UNSUPPORTED_COMPRESSION_TYPE; more than ``telemetry.max.bytes``,
TELEMETRY_TOO_LARGE. The payload is decompressed and decoded (:mod:`protocol.otlp`); bytes that
cannot be read are INVALID_RECORD.

**Exposition** (Kafka has a receiver plugin interface; this broker is its own receiver): each
pushed metric becomes a Prometheus series named after the OTLP name (``.`` and other characters
become ``_``), labelled ``client_id`` and ``client_instance_id`` and with the client's resource
and data-point attributes. Gauges keep the last value; sums are counters (deltas, which the
subscription asks for, are added up; cumulative sums are taken as they are), non-monotonic sums
gauges; histograms give ``_count`` and ``_sum``. A client instance and its series go away when
it has not been heard from for max(60 s, 3 push intervals), as Kafka's instance cache expires;
at most 16,384 instances are kept (the least recently heard from go first).

Thread-safety: one lock; every method may be called from any thread.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from broker.metrics import MetricSamples
from coordination.errors import InvalidConfig, InvalidRequest
from protocol import otlp
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.records import compression

log = logging.getLogger(__name__)

SUBSCRIPTION_METRICS = "metrics"
PUSH_INTERVAL_MS = "interval.ms"
CLIENT_MATCH_PATTERN = "match"
CONFIG_NAMES = (SUBSCRIPTION_METRICS, PUSH_INTERVAL_MS, CLIENT_MATCH_PATTERN)
ALL_METRICS = "*"
MATCH_PARAMS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3_600_000
#: Kafka's order: zstd, lz4, gzip, snappy
ACCEPTED_COMPRESSION = (
    compression.ZSTD,
    compression.LZ4,
    compression.GZIP,
    compression.SNAPPY,
)
CACHE_EXPIRY_MS = 60_000
CACHE_MAX_INSTANCES = 16384
#: data points one push may carry (a bound on what one client can make the broker keep)
MAX_POINTS_PER_PUSH = 20_000

_NAME_BAD = re.compile(r"[^a-zA-Z0-9_:]")
_LABEL_BAD = re.compile(r"[^a-zA-Z0-9_]")


class Subscription(NamedTuple):
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: tuple[tuple[str, re.Pattern[str]], ...]


def _list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """A subscription's configs, checked as Kafka's ``ClientMetricsConfigs.validate`` does:
    INVALID_REQUEST for an empty name, an unknown key or an interval out of range,
    INVALID_CONFIG for a bad ``match`` pattern."""
    if not name:
        raise InvalidRequest("Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_NAMES:
            raise InvalidRequest(f"Unknown client metrics configuration: {key}")
    interval = DEFAULT_INTERVAL_MS
    if PUSH_INTERVAL_MS in configs:
        try:
            interval = int(configs[PUSH_INTERVAL_MS])
        except ValueError:
            raise InvalidConfig(
                f"Invalid value {configs[PUSH_INTERVAL_MS]} for configuration "
                f"{PUSH_INTERVAL_MS}: Not a number of type INT"
            ) from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise InvalidRequest(
                f"Invalid value {interval} for {PUSH_INTERVAL_MS}, interval must be between "
                f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)"
            )
    match = []
    for pattern in _list(configs.get(CLIENT_MATCH_PATTERN, "")):
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in MATCH_PARAMS:
            raise InvalidConfig(f"Illegal client matching pattern: {pattern}")
        try:
            match.append((parts[0].strip(), re.compile(parts[1].strip())))
        except re.error:
            raise InvalidConfig(f"Illegal client matching pattern: {pattern}") from None
    metrics = frozenset(_list(configs.get(SUBSCRIPTION_METRICS, "")))
    return Subscription(name, metrics, interval, tuple(match))


@dataclass
class _Series:
    kind: str  # Prometheus type
    value: float


@dataclass
class ClientInstance:
    """One client instance: who it is, its subscription, and its series."""

    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    metrics: list[str]
    push_interval_ms: int
    #: the subscriptions' version this instance was evaluated against
    version: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    last_seen_ms: int = 0
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    #: (Prometheus name, labels) -> series
    series: dict[tuple[str, tuple[tuple[str, str], ...]], _Series] = field(default_factory=dict)

    @property
    def expiry_ms(self) -> int:
        return max(CACHE_EXPIRY_MS, 3 * self.push_interval_ms)


class GetResult(NamedTuple):
    error: ErrorCode
    instance_id: uuid.UUID
    subscription_id: int = 0
    push_interval_ms: int = 0
    metrics: tuple[str, ...] = ()


class ClientMetricsManager:
    """See the module docstring. ``subscriptions`` reads the current subscription configs (the
    metadata store's view); ``clock_ms`` is for tests."""

    def __init__(
        self,
        subscriptions: Callable[[], Mapping[str, Mapping[str, str]]],
        *,
        telemetry_max_bytes: int,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._configs = subscriptions
        self.telemetry_max_bytes = telemetry_max_bytes
        self._clock_ms = clock_ms or (lambda: time.monotonic_ns() // 1_000_000)
        self._lock = threading.Lock()
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self._seen_configs: Mapping[str, Mapping[str, str]] | None = None
        self._parsed: list[Subscription] = []
        self._version = 0
        #: pushes by answer, for the broker's own metrics
        self.pushes: dict[str, int] = {}
        #: pushed metrics of kinds not exposed (summaries, exponential histograms)
        self.skipped_metrics = 0

    # -- subscriptions -------------------------------------------------------------------------

    def _subscriptions(self) -> tuple[list[Subscription], int]:
        """The parsed subscriptions and their version (bumped when the configs change)."""
        configs = self._configs()
        if configs is not self._seen_configs:
            parsed = []
            for name, values in sorted(configs.items()):
                try:
                    parsed.append(parse_subscription(name, values))
                except (InvalidRequest, InvalidConfig) as e:
                    log.warning("ignoring client metrics subscription %s: %s", name, e)
            if self._seen_configs is None or parsed != self._parsed:
                self._version += 1
            self._seen_configs = configs
            self._parsed = parsed
        return self._parsed, self._version

    @staticmethod
    def _matches(sub: Subscription, attributes: Mapping[str, str | None]) -> bool:
        for key, pattern in sub.match:
            value = attributes.get(key)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True

    def _evaluate(
        self, instance_id: uuid.UUID, attributes: dict[str, str | None], now: int
    ) -> ClientInstance:
        subs, version = self._subscriptions()
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        every = False
        for sub in subs:
            if self._matches(sub, attributes):
                every = every or ALL_METRICS in sub.metrics
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        if every:
            metrics = {ALL_METRICS}
        ordered = sorted(metrics)
        # Kafka: a CRC of the metrics and the interval, XORed with the instance id's hash
        crc = zlib.crc32(f"{ordered}{interval}".encode())
        hashed = (instance_id.int >> 64) ^ (instance_id.int & (1 << 64) - 1)
        hashed = (hashed >> 32) ^ (hashed & 0xFFFFFFFF)
        sub_id = (crc ^ hashed) & 0xFFFFFFFF
        if sub_id >= 1 << 31:
            sub_id -= 1 << 32
        return ClientInstance(instance_id, attributes, sub_id, ordered, interval, version)

    # -- requests ------------------------------------------------------------------------------

    def _instance(
        self, instance_id: uuid.UUID, attributes: dict[str, str | None], now: int
    ) -> ClientInstance:
        """The cached instance (re-evaluated if the subscriptions changed), or a new one."""
        self._expire(now)
        instance = self._instances.get(instance_id)
        _, version = self._subscriptions()
        if instance is None or instance.version < version:
            old = instance
            instance = self._evaluate(
                instance_id, attributes if old is None else old.attributes, now
            )
            if old is not None:
                instance.series = old.series
            self._instances[instance_id] = instance
            while len(self._instances) > CACHE_MAX_INSTANCES:
                self._instances.popitem(last=False)
        self._instances.move_to_end(instance_id)
        instance.last_seen_ms = now
        return instance

    def get_subscriptions(
        self, instance_id: uuid.UUID, attributes: dict[str, str | None]
    ) -> GetResult:
        """GetTelemetrySubscriptions. ``attributes``: the client's match attributes but for its
        instance id (``client_id``, software name and version, source address and port)."""
        now = self._clock_ms()
        with self._lock:
            if instance_id.int == 0:
                instance_id = uuid.uuid4()
                while instance_id in self._instances:
                    instance_id = uuid.uuid4()
            attrs = dict(attributes, client_instance_id=str(instance_id))
            instance = self._instance(instance_id, attrs, now)
            last = max(instance.last_get_ms, instance.last_push_ms)
            retry_allowed = instance.last_error in (
                ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            )
            early = bool(last) and now - last < instance.push_interval_ms
            if early and not retry_allowed:
                return GetResult(ErrorCode.THROTTLING_QUOTA_EXCEEDED, instance_id)
            if not early:
                # as Kafka's ClientMetricsInstance: an early request let through after an
                # error leaves the time of the last one as it was, so the push that follows
                # it is still early
                instance.last_get_ms = now
            instance.last_error = ErrorCode.NONE
            return GetResult(
                ErrorCode.NONE,
                instance_id,
                instance.subscription_id,
                instance.push_interval_ms,
                tuple(instance.metrics),
            )

    def push(
        self,
        instance_id: uuid.UUID,
        attributes: dict[str, str | None],
        *,
        subscription_id: int,
        terminating: bool,
        compression_type: int,
        payload: bytes,
    ) -> ErrorCode:
        """PushTelemetry: the answer's error code (NONE when the metrics were taken)."""
        if instance_id.int == 0:
            self._count("INVALID_REQUEST")
            return ErrorCode.INVALID_REQUEST
        now = self._clock_ms()
        with self._lock:
            attrs = dict(attributes, client_instance_id=str(instance_id))
            instance = self._instance(instance_id, attrs, now)
            error = self._check_push(instance, subscription_id, terminating, compression_type,
                                     payload, now)  # fmt: skip
            instance.terminating = instance.terminating or terminating
            if error != ErrorCode.NONE:
                instance.last_error = error
                self._count(error.name)
                return error
        try:
            data = compression.decompress(
                compression_type, payload, max_bytes=max(self.telemetry_max_bytes * 64, 1 << 20)
            )
            resources, skipped = otlp.decode_metrics_data(data, max_points=MAX_POINTS_PER_PUSH)
        except RemoteProtocolError as e:
            log.debug("unreadable telemetry from client instance %s: %s", instance_id, e)
            with self._lock:
                instance.last_error = ErrorCode.INVALID_RECORD
            self._count("INVALID_RECORD")
            return ErrorCode.INVALID_RECORD
        with self._lock:
            self._apply(instance, resources)
            instance.last_error = ErrorCode.NONE
            self.skipped_metrics += skipped
        self._count("NONE")
        return ErrorCode.NONE

    def _check_push(
        self,
        instance: ClientInstance,
        subscription_id: int,
        terminating: bool,
        compression_type: int,
        payload: bytes,
        now: int,
    ) -> ErrorCode:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        accept = instance.last_get_ms > instance.last_push_ms or (
            now - instance.last_push_ms >= instance.push_interval_ms
        )
        if accept:
            instance.last_push_ms = now
        elif not terminating:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if subscription_id != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if not compression.NONE <= compression_type <= compression.ZSTD:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if len(payload) > self.telemetry_max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    def _count(self, answer: str) -> None:
        self.pushes[answer] = self.pushes.get(answer, 0) + 1

    # -- series --------------------------------------------------------------------------------

    def _apply(self, instance: ClientInstance, resources: list[otlp.ResourceMetrics]) -> None:
        base = (
            ("client_id", instance.attributes.get("client_id") or ""),
            ("client_instance_id", str(instance.instance_id)),
        )
        series = instance.series
        for res in resources:
            resource_labels = tuple((_label(k), v) for k, v in res.resource)
            for metric in res.metrics:
                name = _metric_name(metric.name)
                if not name:
                    continue
                for point in metric.points:
                    labels = _labels(base, resource_labels, point.attributes)
                    if metric.kind == otlp.HISTOGRAM:
                        self._set(series, f"{name}_count", labels, "counter", point.observations,
                                  metric.temporality == otlp.TEMPORALITY_DELTA)  # fmt: skip
                        self._set(series, f"{name}_sum", labels, "counter", point.value,
                                  metric.temporality == otlp.TEMPORALITY_DELTA)  # fmt: skip
                    elif metric.kind == otlp.SUM and metric.monotonic:
                        total = name if name.endswith("_total") else f"{name}_total"
                        self._set(series, total, labels, "counter", point.value,
                                  metric.temporality == otlp.TEMPORALITY_DELTA)  # fmt: skip
                    else:
                        self._set(series, name, labels, "gauge", point.value, False)

    @staticmethod
    def _set(
        series: dict[tuple[str, tuple[tuple[str, str], ...]], _Series],
        name: str,
        labels: tuple[tuple[str, str], ...],
        kind: str,
        value: float,
        delta: bool,
    ) -> None:
        key = (name, labels)
        s = series.get(key)
        if s is None:
            series[key] = _Series(kind, value)
        elif delta:
            s.value += value
        else:
            s.value = value

    def _expire(self, now: int) -> None:
        while self._instances:
            oldest = next(iter(self._instances.values()))
            if now - oldest.last_seen_ms <= oldest.expiry_ms:
                break
            self._instances.popitem(last=False)

    @property
    def instances(self) -> int:
        return len(self._instances)

    def samples(self) -> list[MetricSamples]:
        """Every client's series, grouped by name, and the broker's own telemetry counters."""
        now = self._clock_ms()
        with self._lock:
            self._expire(now)
            by_name: dict[str, tuple[str, list[tuple[str, float]]]] = {}
            for instance in self._instances.values():
                for (name, labels), s in instance.series.items():
                    entry = by_name.get(name)
                    if entry is None:
                        entry = by_name[name] = (s.kind, [])
                    elif entry[0] != s.kind:
                        continue  # one name, two types (two clients disagree): keep the first
                    entry[1].append((_render(labels), s.value))
            pushes = sorted(self.pushes.items())
            instances = len(self._instances)
        out: list[MetricSamples] = [
            (
                "odradek_client_telemetry_instances",
                "gauge",
                "Client instances with telemetry (KIP-714) this broker knows.",
                [("", float(instances))],
            ),
            (
                "odradek_client_telemetry_pushes_total",
                "counter",
                "PushTelemetry requests, by answer.",
                [(f'{{error="{e}"}}', float(n)) for e, n in pushes],
            ),
            (
                "odradek_client_telemetry_skipped_metrics_total",
                "counter",
                "Pushed metrics of kinds not exposed (summaries, exponential histograms).",
                [("", float(self.skipped_metrics))],
            ),
        ]
        for name, (kind, samples) in sorted(by_name.items()):
            out.append((name, kind, "Pushed by clients (KIP-714 client telemetry).", samples))
        return out


def _metric_name(name: str) -> str:
    cleaned = _NAME_BAD.sub("_", name)
    if cleaned and cleaned[0].isdigit():
        cleaned = "_" + cleaned
    return cleaned


def _label(key: str) -> str:
    cleaned = _LABEL_BAD.sub("_", key)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "_" + cleaned
    return cleaned


def _labels(
    base: tuple[tuple[str, str], ...],
    resource: tuple[tuple[str, str], ...],
    point: tuple[tuple[str, str], ...],
) -> tuple[tuple[str, str], ...]:
    """The series' labels: the client's identity first (never overridden), then resource and
    point attributes."""
    out = dict(base)
    for k, v in resource:
        out.setdefault(k, v)
    for k, v in point:
        out.setdefault(_label(k), v)
    return tuple(sorted(out.items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _render(labels: tuple[tuple[str, str], ...]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"
