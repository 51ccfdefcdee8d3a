"""Metrics: a registry of sources, per-processor request counters, and a Prometheus endpoint.

Components register a source with :meth:`MetricsRegistry.add` (a function returning samples,
called when the endpoint is scraped). Each processor thread owns its own :class:`RequestMetrics`
(no locks on the hot path); :func:`network_samples` sums them when scraped. Served on
``metrics.port`` (off by default) at ``/metrics``.

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
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol

from protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

#: latency histogram bucket upper bounds, seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BUCKETS_NS = tuple(int(b * 1e9) for b in BUCKETS)


class RequestMetrics:
    """Counts, request sizes and latency histograms per API key, for one processor."""

    __slots__ = ("buckets", "count", "request_bytes", "total_ns")

    def __init__(self) -> None:
        self.count: dict[int, int] = {}
        self.total_ns: dict[int, int] = {}
        self.buckets: dict[int, list[int]] = {}
        #: bytes of the requests received (Kafka's RequestMetrics RequestBytes), by API key
        self.request_bytes: dict[int, int] = {}

    def received(self, api_key: int, size: int) -> None:
        self.request_bytes[api_key] = self.request_bytes.get(api_key, 0) + size

    def record(self, api_key: int, elapsed_ns: int) -> None:
        self.count[api_key] = self.count.get(api_key, 0) + 1
        self.total_ns[api_key] = self.total_ns.get(api_key, 0) + elapsed_ns
        b = self.buckets.get(api_key)
        if b is None:
            b = self.buckets[api_key] = [0] * (len(_BUCKETS_NS) + 1)
        for i, bound in enumerate(_BUCKETS_NS):
            if elapsed_ns <= bound:
                b[i] += 1
                break
        else:
            b[-1] += 1


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
    return ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)


class _ConnectionCounters(Protocol):
    bytes_in: int
    bytes_out: int
    sendfile_bytes: int


class NetworkStats(Protocol):
    """What :func:`network_samples` reads of a processor."""

    @property
    def metrics(self) -> _ConnectionCounters: ...

    @property
    def request_metrics(self) -> RequestMetrics: ...

    @property
    def connections(self) -> Collection[object]: ...


class _AcceptStats(Protocol):
    @property
    def accept_errors(self) -> int: ...


class _QuotaStats(Protocol):
    @property
    def refused_per_ip(self) -> int: ...


class _PoolStats(Protocol):
    @property
    def used(self) -> int: ...


def network_samples(
    processors: Sequence[NetworkStats],
    acceptor: _AcceptStats,
    quotas: _QuotaStats,
    pool: _PoolStats,
) -> list[MetricSamples]:
    """Requests by API (count and latency histogram), bytes in and out, connections, accept
    failures, refused connections and request memory held."""
    counts: dict[int, int] = {}
    totals: dict[int, int] = {}
    sizes: dict[int, int] = {}
    buckets: dict[int, list[int]] = {}
    for p in processors:
        rm = p.request_metrics
        for k, v in list(rm.count.items()):
            counts[k] = counts.get(k, 0) + v
        for k, v in list(rm.request_bytes.items()):
            sizes[k] = sizes.get(k, 0) + v
        for k, v in list(rm.total_ns.items()):
            totals[k] = totals.get(k, 0) + v
        for k, b in list(rm.buckets.items()):
            acc = buckets.setdefault(k, [0] * len(b))
            for i, x in enumerate(b):
                acc[i] += x
    latency: list[tuple[str, float]] = []
    for k in sorted(buckets):
        api = _api_name(k)
        cumulative = 0
        for bound, n in zip((*BUCKETS, float("inf")), buckets[k], strict=True):
            cumulative += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            latency.append((f'_bucket{{api="{api}",le="{le}"}}', cumulative))
        latency.append((f'_sum{{api="{api}"}}', totals.get(k, 0) / 1e9))
        latency.append((f'_count{{api="{api}"}}', counts.get(k, 0)))

    def total(attr: str) -> float:
        return float(sum(getattr(p.metrics, attr) for p in processors))

    return [
        (
            "odradek_requests_total",
            "counter",
            "Requests handled, by API.",
            [(f'{{api="{_api_name(k)}"}}', v) for k, v in sorted(counts.items())],
        ),
        (
            "odradek_request_bytes_total",
            "counter",
            "Bytes of requests received, by API (with odradek_requests_total: the average size).",
            [(f'{{api="{_api_name(k)}"}}', float(v)) for k, v in sorted(sizes.items())],
        ),
        (
            "odradek_request_latency_seconds",
            "histogram",
            "Request handling time, by API.",
            latency,
        ),
        (
            "odradek_network_bytes_in_total",
            "counter",
            "Bytes received from clients.",
            [("", total("bytes_in"))],
        ),
        (
            "odradek_network_bytes_out_total",
            "counter",
            "Bytes sent to clients.",
            [("", total("bytes_out"))],
        ),
        (
            "odradek_sendfile_bytes_total",
            "counter",
            "Bytes sent with sendfile (zero copy).",
            [("", total("sendfile_bytes"))],
        ),
        (
            "odradek_connections",
            "gauge",
            "Open client connections.",
            [("", float(sum(len(p.connections) for p in processors)))],
        ),
        (
            "odradek_accept_errors_total",
            "counter",
            "accept() failures for lack of file descriptors or memory (accepting pauses).",
            [("", float(acceptor.accept_errors))],
        ),
        (
            "odradek_connections_refused_per_ip_total",
            "counter",
            "Connections closed at once because their address reached max.connections.per.ip.",
            [("", float(quotas.refused_per_ip))],
        ),
        (
            "odradek_request_memory_bytes",
            "gauge",
            "Bytes of received requests held (queued.max.request.bytes is the budget).",
            [("", float(pool.used))],
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
