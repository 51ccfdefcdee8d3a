"""Metrics: per-processor request counters and a Prometheus text endpoint.

Each processor thread owns its own :class:`RequestMetrics` (no locks on the hot path); the
endpoint sums them when scraped. Served on ``metrics.port`` (off by default) at ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)

#: latency histogram bucket upper bounds, seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BUCKETS_NS = tuple(int(b * 1e9) for b in BUCKETS)


class RequestMetrics:
    """Counts and latency histograms per API key, for one processor."""

    __slots__ = ("buckets", "count", "total_ns")

    def __init__(self) -> None:
        self.count: dict[int, int] = {}
        self.total_ns: dict[int, int] = {}
        self.buckets: dict[int, list[int]] = {}

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


def _api_name(key: int) -> str:
    return ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)


def render(broker: Broker) -> str:
    """The Prometheus text exposition of the broker's metrics."""
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: Iterable[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lines.append(f"{name}{labels} {value}")

    procs = broker.processors
    counts: dict[int, int] = {}
    totals: dict[int, int] = {}
    buckets: dict[int, list[int]] = {}
    for p in procs:
        rm = p.request_metrics
        for k, v in list(rm.count.items()):
            counts[k] = counts.get(k, 0) + v
        for k, v in list(rm.total_ns.items()):
            totals[k] = totals.get(k, 0) + v
        for k, b in list(rm.buckets.items()):
            acc = buckets.setdefault(k, [0] * len(b))
            for i, x in enumerate(b):
                acc[i] += x
    metric(
        "odradek_requests_total",
        "counter",
        "Requests handled, by API.",
        ((f'{{api="{_api_name(k)}"}}', v) for k, v in sorted(counts.items())),
    )
    lines.append("# HELP odradek_request_latency_seconds Request handling time, by API.")
    lines.append("# TYPE odradek_request_latency_seconds histogram")
    for k in sorted(buckets):
        api = _api_name(k)
        cumulative = 0
        for bound, n in zip((*BUCKETS, float("inf")), buckets[k], strict=True):
            cumulative += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            lines.append(
                f'odradek_request_latency_seconds_bucket{{api="{api}",le="{le}"}} {cumulative}'
            )
        lines.append(f'odradek_request_latency_seconds_sum{{api="{api}"}} {totals.get(k, 0) / 1e9}')
        lines.append(f'odradek_request_latency_seconds_count{{api="{api}"}} {counts.get(k, 0)}')

    def total(attr: str) -> int:
        return sum(getattr(p.metrics, attr) for p in procs)

    metric(
        "odradek_network_bytes_in_total",
        "counter",
        "Bytes received from clients.",
        [("", total("bytes_in"))],
    )
    metric(
        "odradek_network_bytes_out_total",
        "counter",
        "Bytes sent to clients.",
        [("", total("bytes_out"))],
    )
    metric(
        "odradek_sendfile_bytes_total",
        "counter",
        "Bytes sent with sendfile (zero copy).",
        [("", total("sendfile_bytes"))],
    )
    metric(
        "odradek_connections",
        "gauge",
        "Open client connections.",
        [("", sum(len(p.connections) for p in procs))],
    )
    for name, kind, help_text, samples in broker.extra_metrics():
        metric(name, kind, help_text, samples)
    return "\n".join(lines) + "\n"


async def serve_metrics(broker: Broker, host: str, port: int) -> asyncio.AbstractServer:
    """A minimal HTTP/1.0 server for GET /metrics."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b"/"
            if path.split(b"?")[0] in (b"/metrics", b"/"):
                body = render(broker).encode()
                status = b"200 OK"
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


MetricSamples = tuple[str, str, str, list[tuple[str, float]]]
