"""Metrics: a registry of sources, per-processor request counters, and a Prometheus endpoint.

Components register a source with :meth:`MetricsRegistry.add` (a function returning samples,
called when the endpoint is scraped). Each processor thread owns its own :class:`RequestMetrics`
(no locks on the hot path); :class:`NetworkMetrics` sums them when scraped. Served on
``metrics.port`` (off by default) at ``/metrics``.

Names follow the Prometheus JMX exporter's standard Kafka rules, so dashboards and alerts written
for Kafka work unchanged: an MBean ``kafka.<domain>:type=<Type>,name=<Name>`` is
``kafka_<domain>_<type>_<name>`` in lower case, a meter's count (``...PerSec``) is
``kafka_<domain>_<type>_<name without PerSec>_total``, other key properties are labels (``topic``,
``request``), and a histogram's percentiles are a summary's ``quantile`` lines. Metrics Kafka has
no MBean for keep the ``odradek_`` prefix.

Thread-safety: sources may be added from any thread; scraping runs on the main loop and reads
the per-processor counters without locks (a scrape may see a request counted in one metric and
not yet in another).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Sequence
from typing import Protocol

from protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: Kafka's RequestMetrics time histograms, in the order :meth:`RequestMetrics.record` keeps them
#: (``kafka.network:type=RequestMetrics,name=<metric>,request=<api>``)
TIME_METRICS = (
    "TotalTimeMs",
    "RequestQueueTimeMs",
    "LocalTimeMs",
    "RemoteTimeMs",
    "ThrottleTimeMs",
    "ResponseQueueTimeMs",
    "ResponseSendTimeMs",
)
#: the slots of the two response metrics, recorded by the connection once the bytes are sent
_RESPONSE_QUEUE, _RESPONSE_SEND = 5, 6
#: upper bounds of the time histograms' buckets, ms (one more bucket holds what is above)
BUCKETS_MS = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
    1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
)  # fmt: skip
_BOUNDS_NS = tuple(int(b * 1e6) for b in BUCKETS_MS)
_SUM = len(_BOUNDS_NS) + 1  # a histogram's last slot: the sum of its values, ns
#: the quantiles Kafka's histograms publish (50thPercentile ... 999thPercentile), as the JMX
#: exporter's Kafka rules label them
QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99),
             ("0.999", 0.999))  # fmt: skip
#: Kafka's extra request metric names of a fetch (besides ``Fetch``), as metric keys
FETCH_CONSUMER = -1
FETCH_FOLLOWER = -2
_FETCH_NAMES = {FETCH_CONSUMER: "FetchConsumer", FETCH_FOLLOWER: "FetchFollower"}

#: slots of a topic's counters (Kafka's BrokerTopicMetrics meters), with their metric names
MESSAGES_IN, BYTES_IN, BYTES_OUT, PRODUCE_REQUESTS, FETCH_REQUESTS = range(5)
FAILED_PRODUCE, FAILED_FETCH = 5, 6
TOPIC_METRICS = (
    ("messagesin", "Records appended by producers."),
    ("bytesin", "Bytes of record batches appended by producers."),
    ("bytesout", "Bytes of records sent to consumers (followers excluded)."),
    ("totalproducerequests", "Produce requests, per partition written."),
    ("totalfetchrequests", "Fetch requests, per partition read."),
    ("failedproducerequests", "Partitions of produce requests answered with an error."),
    ("failedfetchrequests", "Partitions of fetch requests answered with an error."),
)


def _new_times() -> list[list[int]]:
    return [[0] * (_SUM + 1) for _ in TIME_METRICS]


def _add(
    hists: list[list[int]], queue_ns: int, local_ns: int, remote_ns: int, throttle_ns: int
) -> None:
    """One request's times into the histograms (unrolled: this runs for every request)."""
    total = queue_ns + local_ns + remote_ns
    h = hists[0]
    h[bisect_left(_BOUNDS_NS, total)] += 1
    h[_SUM] += total
    h = hists[1]
    if queue_ns:
        h[bisect_left(_BOUNDS_NS, queue_ns)] += 1
        h[_SUM] += queue_ns
    else:
        h[0] += 1
    h = hists[2]
    h[bisect_left(_BOUNDS_NS, local_ns)] += 1
    h[_SUM] += local_ns
    h = hists[3]
    if remote_ns:
        h[bisect_left(_BOUNDS_NS, remote_ns)] += 1
        h[_SUM] += remote_ns
    else:
        h[0] += 1
    h = hists[4]
    if throttle_ns:
        h[bisect_left(_BOUNDS_NS, throttle_ns)] += 1
        h[_SUM] += throttle_ns
    else:
        h[0] += 1


class RequestMetrics:
    """One processor's request counters (no locks: only its thread writes them; the endpoint
    sums every processor's when scraped).

    ``requests``: request count by ``api_key << 8 | version`` (Kafka's RequestsPerSec);
    ``times``: per metric key (an API key, or :data:`FETCH_CONSUMER`/:data:`FETCH_FOLLOWER`)
    one histogram per :data:`TIME_METRICS` entry (bucket counts, then the sum in ns);
    ``topics``: per topic the counters of Kafka's BrokerTopicMetrics (:data:`TOPIC_METRICS`);
    ``request_bytes``: per API key, [count, bytes] of the requests received (Kafka's
    RequestMetrics RequestBytes).
    """

    __slots__ = ("request_bytes", "requests", "times", "topics")

    def __init__(self) -> None:
        self.requests: dict[int, int] = {}
        self.times: dict[int, list[list[int]]] = {}
        self.topics: dict[str, list[int]] = {}
        self.request_bytes: dict[int, list[int]] = {}

    def received(self, api_key: int, size: int) -> None:
        """A request of ``size`` bytes arrived (counted before it is handled)."""
        counts = self.request_bytes.get(api_key)
        if counts is None:
            counts = self.request_bytes[api_key] = [0, 0]
        counts[0] += 1
        counts[1] += size

    def record(
        self,
        api_key: int,
        version: int,
        queue_ns: int,
        local_ns: int,
        remote_ns: int,
        throttle_ms: int = 0,
        fetch_key: int = 0,
    ) -> None:
        """One request answered: the time it waited behind the connection's earlier requests,
        spent in its handler, and waiting for other components (purgatory, coordinators)."""
        requests = self.requests
        key = api_key << 8 | version
        requests[key] = requests.get(key, 0) + 1
        hists = self.times.get(api_key)
        if hists is None:
            hists = self.times[api_key] = _new_times()
        throttle_ns = throttle_ms * 1_000_000
        _add(hists, queue_ns, local_ns, remote_ns, throttle_ns)
        if fetch_key:
            key = fetch_key << 8 | version
            requests[key] = requests.get(key, 0) + 1
            hists = self.times.get(fetch_key)
            if hists is None:
                hists = self.times[fetch_key] = _new_times()
            _add(hists, queue_ns, local_ns, remote_ns, throttle_ns)

    def record_response(self, api_key: int, queue_ns: int, send_ns: int) -> None:
        """One response sent: the time it waited behind the connection's earlier responses
        before its first byte could leave (ResponseQueueTimeMs) and the time its bytes took to
        leave (ResponseSendTimeMs), both ending when the socket took the last byte."""
        hists = self.times.get(api_key)
        if hists is None:
            hists = self.times[api_key] = _new_times()
        h = hists[_RESPONSE_QUEUE]
        h[bisect_left(_BOUNDS_NS, queue_ns)] += 1
        h[_SUM] += queue_ns
        h = hists[_RESPONSE_SEND]
        h[bisect_left(_BOUNDS_NS, send_ns)] += 1
        h[_SUM] += send_ns

    def topic(self, name: str) -> list[int]:
        """The topic's counters, to add to (slots :data:`MESSAGES_IN` ... :data:`FAILED_FETCH`)."""
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = [0] * len(TOPIC_METRICS)
        return counters


#: (name, Prometheus type, help, [(suffix and labels, value)]): one line per sample is
#: ``<name><suffix and labels> <value>``
MetricSamples = tuple[str, str, str, list[tuple[str, float]]]
MetricsSource = Callable[[], Iterable[MetricSamples]]


class MetricsRegistry:
    """The broker's metric sources, rendered in Prometheus' text format."""

    def __init__(self) -> None:
        self._sources: list[MetricsSource] = []
        self._lock = threading.Lock()

    def add(self, source: MetricsSource) -> None:
        with self._lock:
            self._sources.append(source)

    def collect(self) -> Iterator[MetricSamples]:
        with self._lock:
            sources = list(self._sources)
        for source in sources:
            yield from source()

    def render(self) -> str:
        lines: list[str] = []
        for name, kind, help_text, samples in self.collect():
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, value in samples:
                lines.append(f"{name}{labels} {value}")
        return "\n".join(lines) + "\n"


def _api_name(key: int) -> str:
    """Kafka's request name (``ApiKeys.name``: ``Produce``, ``ListOffsets``...)."""
    if key in _FETCH_NAMES:
        return _FETCH_NAMES[key]
    if key in ApiKey._value2member_map_:
        return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))
    return str(key)


def label_value(value: str) -> str:
    """A label value escaped as Prometheus' text format wants it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class _ConnectionCounters(Protocol):
    bytes_in: int
    bytes_out: int
    sendfile_bytes: int
    connections_opened: int
    connections_closed: int


class _Connection(Protocol):
    @property
    def decoder(self) -> _Frames: ...


class _Frames(Protocol):
    @property
    def pending_frames(self) -> int: ...


class NetworkStats(Protocol):
    """What :class:`NetworkMetrics` reads of a processor."""

    @property
    def index(self) -> int: ...

    @property
    def metrics(self) -> _ConnectionCounters: ...

    @property
    def request_metrics(self) -> RequestMetrics: ...

    @property
    def connections(self) -> Collection[_Connection]: ...


class _AcceptStats(Protocol):
    @property
    def accept_errors(self) -> int: ...


class _QuotaStats(Protocol):
    @property
    def refused_per_ip(self) -> int: ...
    @property
    def throttled_per_ip(self) -> int: ...
    @property
    def rate_wait_ms(self) -> int: ...


class _PoolStats(Protocol):
    @property
    def used(self) -> int: ...


def _quantile(buckets: Sequence[int], count: int, q: float) -> float:
    """The q-quantile (ms) of a histogram's bucket counts, interpolated inside its bucket."""
    rank = q * count
    seen = 0
    lower = 0.0
    for i, n in enumerate(buckets):
        upper = BUCKETS_MS[i] if i < len(BUCKETS_MS) else BUCKETS_MS[-1]
        if n and seen + n >= rank:
            return lower + (upper - lower) * max(rank - seen, 0.0) / n
        seen += n
        lower = upper
    return lower


class NetworkMetrics:
    """The network and request metrics, summed over the processors when scraped, named as the
    Prometheus JMX exporter's Kafka rules name Kafka's MBeans:

    * ``kafka_network_requestmetrics_requests_total{request,version}`` (RequestsPerSec) and, per
      request name, the summaries ``kafka_network_requestmetrics_<metric>{request,quantile}``
      with ``_count`` and ``_sum`` for :data:`TIME_METRICS`. As Kafka's histograms favour recent
      requests, the quantiles cover the requests of the last ``window_s`` (between this scrape
      and the oldest kept within the window); counts and sums are totals since start;
    * ``kafka_server_brokertopicmetrics_<meter>_total``, once for all topics and once per topic
      (``topic`` label), for topics that still exist;
    * ``kafka_server_socket_server_metrics_*{networkProcessor}`` (bytes, connections),
      ``kafka_network_requestchannel_requestqueuesize``,
      ``kafka_network_socketserver_memorypoolused``;
    * Odradek's own: ``odradek_sendfile_bytes_total``, ``odradek_accept_errors_total``,
      ``odradek_connections_refused_per_ip_total``,
      ``odradek_connections_throttled_per_ip_total``, ``odradek_connection_rate_wait_ms_total``.
    """

    def __init__(
        self,
        processors: Sequence[NetworkStats],
        acceptor: _AcceptStats,
        quotas: _QuotaStats,
        pool: _PoolStats,
        *,
        topics: Callable[[], Container[str]] | None = None,
        window_s: float = 300.0,
    ) -> None:
        self.processors = processors
        self.acceptor = acceptor
        self.quotas = quotas
        self.pool = pool
        self.topics = topics
        self.window_s = window_s
        #: (monotonic time, summed histograms) of earlier scrapes within the window
        self._history: deque[tuple[float, dict[int, list[list[int]]]]] = deque()
        self._lock = threading.Lock()

    def __call__(self) -> list[MetricSamples]:
        processors = self.processors
        requests: dict[int, int] = {}
        times: dict[int, list[list[int]]] = {}
        topics: dict[str, list[int]] = {}
        sizes: dict[int, list[int]] = {}
        for p in processors:
            rm = p.request_metrics
            for k, v in list(rm.requests.items()):
                requests[k] = requests.get(k, 0) + v
            for k, (n, size) in list(rm.request_bytes.items()):
                acc_size = sizes.setdefault(k, [0, 0])
                acc_size[0] += n
                acc_size[1] += size
            for k, hists in list(rm.times.items()):
                acc = times.setdefault(k, _new_times())
                for a, h in zip(acc, hists, strict=True):
                    for i, x in enumerate(list(h)):
                        a[i] += x
            for name, counters in list(rm.topics.items()):
                t = topics.setdefault(name, [0] * len(TOPIC_METRICS))
                for i, x in enumerate(list(counters)):
                    t[i] += x
        baseline = self._baseline(times)
        out: list[MetricSamples] = [
            (
                "kafka_network_requestmetrics_requests_total",
                "counter",
                "Requests answered, by request name and version.",
                [
                    (f'{{request="{_api_name(k >> 8)}",version="{k & 0xFF}"}}', float(v))
                    for k, v in sorted(requests.items())
                ],
            )
        ]
        for m, metric in enumerate(TIME_METRICS):
            samples: list[tuple[str, float]] = []
            for k in sorted(times):
                hist = times[k]
                name = _api_name(k)
                recent = hist[m][:_SUM]
                old = baseline.get(k)
                if old is not None:
                    recent = [a - b for a, b in zip(recent, old[m], strict=False)]
                n = sum(recent)
                for label, q in QUANTILES:
                    value = _quantile(recent, n, q) if n else 0.0
                    samples.append((f'{{request="{name}",quantile="{label}"}}', value))
                samples.append((f'_count{{request="{name}"}}', float(sum(hist[m][:_SUM]))))
                samples.append((f'_sum{{request="{name}"}}', hist[m][_SUM] / 1e6))
            out.append(
                (
                    f"kafka_network_requestmetrics_{metric.lower()}",
                    "summary",
                    f"Kafka's RequestMetrics {metric} (ms), by request name.",
                    samples,
                )
            )
        size_samples: list[tuple[str, float]] = []
        for k in sorted(sizes):
            name = _api_name(k)
            size_samples.append((f'_count{{request="{name}"}}', float(sizes[k][0])))
            size_samples.append((f'_sum{{request="{name}"}}', float(sizes[k][1])))
        out.append(
            (
                "kafka_network_requestmetrics_requestbytes",
                "summary",
                "Kafka's RequestMetrics RequestBytes: bytes of the requests received, by request "
                "name (_sum / _count: the average size).",
                size_samples,
            )
        )
        out.extend(self._topic_samples(topics))
        out.extend(self._socket_samples())
        return out

    def _baseline(self, times: dict[int, list[list[int]]]) -> dict[int, list[list[int]]]:
        """The snapshot the quantiles start from: the oldest scrape within the window, or the
        last one before it (none at the first scrape: everything since start)."""
        now = time.monotonic()
        snapshot = {k: [h[:_SUM] for h in hists] for k, hists in times.items()}
        with self._lock:
            history = self._history
            # the oldest within the window, or the last scrape before it
            while len(history) > 1 and history[0][0] < now - self.window_s:
                history.popleft()
            baseline = history[0][1] if history else {}
            history.append((now, snapshot))
        return baseline

    def _topic_samples(self, topics: dict[str, list[int]]) -> list[MetricSamples]:
        existing = self.topics() if self.topics is not None else None
        names = sorted(t for t in topics if existing is None or t in existing)
        out: list[MetricSamples] = []
        for i, (metric, help_text) in enumerate(TOPIC_METRICS):
            all_topics = float(sum(c[i] for c in topics.values()))
            samples = [("", all_topics)]
            samples.extend((f'{{topic="{label_value(t)}"}}', float(topics[t][i])) for t in names)
            out.append(
                (f"kafka_server_brokertopicmetrics_{metric}_total", "counter", help_text, samples)
            )
        return out

    def _socket_samples(self) -> list[MetricSamples]:
        processors = self.processors

        def per_processor(attr: str) -> list[tuple[str, float]]:
            return [
                (f'{{networkProcessor="{p.index}"}}', float(getattr(p.metrics, attr)))
                for p in processors
            ]

        queued = 0
        for p in processors:
            for conn in list(p.connections):
                queued += conn.decoder.pending_frames
        return [
            (
                "kafka_server_socket_server_metrics_incoming_byte_total",
                "counter",
                "Bytes received from clients, per network processor.",
                per_processor("bytes_in"),
            ),
            (
                "kafka_server_socket_server_metrics_outgoing_byte_total",
                "counter",
                "Bytes sent to clients, per network processor.",
                per_processor("bytes_out"),
            ),
            (
                "kafka_server_socket_server_metrics_connection_count",
                "gauge",
                "Open client connections, per network processor.",
                [
                    (f'{{networkProcessor="{p.index}"}}', float(len(p.connections)))
                    for p in processors
                ],
            ),
            (
                "kafka_server_socket_server_metrics_connection_creation_total",
                "counter",
                "Connections accepted, per network processor.",
                per_processor("connections_opened"),
            ),
            (
                "kafka_server_socket_server_metrics_connection_close_total",
                "counter",
                "Connections closed, per network processor.",
                per_processor("connections_closed"),
            ),
            (
                "kafka_network_requestchannel_requestqueuesize",
                "gauge",
                "Received requests waiting to be handled (behind their connection's earlier ones).",
                [("", float(queued))],
            ),
            (
                "kafka_network_socketserver_memorypoolused",
                "gauge",
                "Bytes of received requests held (queued.max.request.bytes is the budget).",
                [("", float(self.pool.used))],
            ),
            (
                "odradek_sendfile_bytes_total",
                "counter",
                "Bytes sent with sendfile (zero copy).",
                [("", float(sum(p.metrics.sendfile_bytes for p in processors)))],
            ),
            (
                "odradek_accept_errors_total",
                "counter",
                "accept() failures for lack of file descriptors or memory (accepting pauses).",
                [("", float(self.acceptor.accept_errors))],
            ),
            (
                "odradek_connections_refused_per_ip_total",
                "counter",
                "Connections closed at once because their address reached max.connections.per.ip.",
                [("", float(self.quotas.refused_per_ip))],
            ),
            (
                "odradek_connections_throttled_per_ip_total",
                "counter",
                "Connections over their address's connection_creation_rate quota (closed after "
                "their throttle time, unread).",
                [("", float(self.quotas.throttled_per_ip))],
            ),
            (
                "odradek_connection_rate_wait_ms_total",
                "counter",
                "Time the acceptor waited for max.connection.creation.rate, in milliseconds.",
                [("", float(self.quotas.rate_wait_ms))],
            ),
        ]


def process_samples() -> list[MetricSamples]:
    """Prometheus' standard process metrics: CPU seconds (user + system, every thread), open
    file descriptors, resident memory."""
    cpu = time.process_time()
    try:
        fds = float(len(os.listdir("/proc/self/fd")))
    except OSError:
        fds = -1.0
    try:
        with open("/proc/self/statm") as f:
            rss = float(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        rss = -1.0
    return [
        (
            "process_cpu_seconds_total",
            "counter",
            "User and system CPU time of the broker process.",
            [("", cpu)],
        ),
        ("process_open_fds", "gauge", "Open file descriptors.", [("", fds)]),
        ("process_resident_memory_bytes", "gauge", "Resident memory.", [("", rss)]),
    ]


#: a health or readiness probe: (ok, what to say)
Probe = Callable[[], tuple[bool, str]]


def _always() -> tuple[bool, str]:
    return True, "ok"


async def serve_metrics(
    registry: MetricsRegistry,
    host: str,
    port: int,
    *,
    health: Probe = _always,
    ready: Probe = _always,
) -> asyncio.AbstractServer:
    """A minimal HTTP/1.0 server: GET /metrics (Prometheus' text format), /health (the process
    is alive and its loops answer: 200, else 503) and /ready (logs loaded, registered,
    coordinators loaded: 200, else 503), for load balancers and orchestrators."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b"/"
            route = path.split(b"?")[0]
            if route in (b"/metrics", b"/"):
                body = registry.render().encode()
                status = b"200 OK"
            elif route in (b"/health", b"/ready"):
                ok, text = (health if route == b"/health" else ready)()
                body = (text + "\n").encode()
                status = b"200 OK" if ok else b"503 Service Unavailable"
            else:
                body, status = b"not found\n", b"404 Not Found"
            writer.write(
                b"HTTP/1.0 "
                + status
                + b"\r\nContent-Type: text/plain; version=0.0.4\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ConnectionError,
            IndexError,
        ):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(client, host, port)
    log.info("metrics on http://%s:%d/metrics", host, port)
    return server
