"""The metrics endpoint's names and values: Kafka's MBeans as the Prometheus JMX exporter's
standard Kafka rules name them, summed over processors at scrape time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.metrics import (
    BYTES_IN,
    FETCH_CONSUMER,
    MESSAGES_IN,
    MetricsRegistry,
    NetworkMetrics,
    RequestMetrics,
    _quantile,
    label_value,
)
from broker.net.connection import ConnectionMetrics
from protocol.api_keys import ApiKey


@dataclass
class FakeProcessor:
    index: int
    metrics: ConnectionMetrics = field(default_factory=ConnectionMetrics)
    request_metrics: RequestMetrics = field(default_factory=RequestMetrics)
    connections: set[Any] = field(default_factory=set)


@dataclass
class Counters:
    accept_errors: int = 0
    refused_per_ip: int = 0
    throttled_per_ip: int = 0
    rate_wait_ms: int = 0
    used: int = 0


def render(metrics: NetworkMetrics) -> dict[str, float]:
    registry = MetricsRegistry()
    registry.add(metrics)
    out = {}
    for line in registry.render().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_requests_and_times_are_summed_over_processors_with_kafka_names() -> None:
    procs = [FakeProcessor(0), FakeProcessor(1)]
    ms = 1_000_000
    for p in procs:
        p.request_metrics.record(ApiKey.PRODUCE, 9, 1 * ms, 2 * ms, 0)
        p.request_metrics.record(ApiKey.FETCH, 12, 0, 0, 500 * ms, fetch_key=FETCH_CONSUMER)
        p.metrics.bytes_in += 100
    c = Counters()
    values = render(NetworkMetrics(procs, c, c, c))
    assert values['kafka_network_requestmetrics_requests_total{request="Produce",version="9"}'] == 2
    assert values['kafka_network_requestmetrics_requests_total{request="Fetch",version="12"}'] == 2
    assert (
        values['kafka_network_requestmetrics_requests_total{request="FetchConsumer",version="12"}']
        == 2
    )
    assert values['kafka_network_requestmetrics_totaltimems_count{request="Produce"}'] == 2
    assert values['kafka_network_requestmetrics_totaltimems_sum{request="Produce"}'] == 6.0
    p99 = values['kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}']
    assert 2.5 <= p99 <= 5.0  # 3 ms, in the (2.5, 5] bucket
    assert values['kafka_network_requestmetrics_requestqueuetimems_sum{request="Produce"}'] == 2.0
    assert values['kafka_network_requestmetrics_remotetimems_sum{request="FetchConsumer"}'] == 1000
    for p in procs:
        p.request_metrics.record_response(ApiKey.PRODUCE, 4 * ms, 1 * ms)
    values = render(NetworkMetrics(procs, c, c, c))
    queue = "kafka_network_requestmetrics_responsequeuetimems"
    assert values[queue + '_count{request="Produce"}'] == 2
    assert values[queue + '_sum{request="Produce"}'] == 8.0
    assert values['kafka_network_requestmetrics_responsesendtimems_sum{request="Produce"}'] == 2.0
    incoming = "kafka_server_socket_server_metrics_incoming_byte_total"
    assert values[incoming + '{networkProcessor="0"}'] == 100
    assert values[incoming + '{networkProcessor="1"}'] == 100


def test_topic_metrics_have_an_all_topics_series_and_skip_deleted_topics() -> None:
    procs = [FakeProcessor(0), FakeProcessor(1)]
    for p in procs:
        for topic in ("a", "gone"):
            counters = p.request_metrics.topic(topic)
            counters[MESSAGES_IN] += 10
            counters[BYTES_IN] += 1000
    c = Counters()
    values = render(NetworkMetrics(procs, c, c, c, topics=lambda: {"a"}))
    assert values["kafka_server_brokertopicmetrics_messagesin_total"] == 40
    assert values['kafka_server_brokertopicmetrics_messagesin_total{topic="a"}'] == 20
    assert values['kafka_server_brokertopicmetrics_bytesin_total{topic="a"}'] == 2000
    assert 'kafka_server_brokertopicmetrics_messagesin_total{topic="gone"}' not in values
    assert values["kafka_server_brokertopicmetrics_bytesout_total"] == 0


def test_quantiles_cover_the_requests_since_the_oldest_scrape_in_the_window() -> None:
    proc = FakeProcessor(0)
    c = Counters()
    metrics = NetworkMetrics([proc], c, c, c, window_s=0.0)
    for _ in range(100):
        proc.request_metrics.record(ApiKey.METADATA, 12, 0, 20_000_000, 0)  # 20 ms
    first = render(metrics)
    assert (
        10
        < first[
            'kafka_network_requestmetrics_localtimems{request="Metadata",quantile="0.5"}'.replace(
                '0.5"', '0.50"'
            )
        ]
        <= 25
    )
    for _ in range(100):
        proc.request_metrics.record(ApiKey.METADATA, 12, 0, 200_000, 0)  # 0.2 ms
    second = render(metrics)
    # the window (0 s) keeps only the previous scrape: the slow requests are behind it
    assert (
        second['kafka_network_requestmetrics_localtimems{request="Metadata",quantile="0.99"}']
        <= 0.25
    )
    assert second['kafka_network_requestmetrics_localtimems_count{request="Metadata"}'] == 200


def test_quantile_interpolates_inside_its_bucket() -> None:
    # 10 values in the (0.05, 0.1] ms bucket
    buckets = [0, 10] + [0] * 17
    assert abs(_quantile(buckets, 10, 0.5) - 0.075) < 1e-9
    assert _quantile([0] * 18 + [5], 5, 0.99) == 30000.0  # above the last bound


def test_label_values_are_escaped() -> None:
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
