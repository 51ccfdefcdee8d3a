"""The client metrics manager (KIP-714) against Kafka's ClientMetricsManager rules: subscription
configs and matching, instance ids and subscription ids, push timing, errors in Kafka's order,
and the Prometheus series (gauges, delta sums added up, labels, expiry)."""

from __future__ import annotations

import uuid
from types import MappingProxyType
from typing import Any

import pytest

from broker.telemetry import (
    ALL_METRICS,
    ClientMetricsManager,
    parse_subscription,
)
from coordination.errors import InvalidConfig, InvalidRequest
from protocol import otlp
from protocol.error_codes import ErrorCode
from protocol.otlp import DataPoint, Metric, ResourceMetrics
from protocol.records import compression


class Clock:
    def __init__(self) -> None:
        self.ms = 10_000_000

    def __call__(self) -> int:
        return self.ms


ATTRS: dict[str, str | None] = {
    "client_id": "app-1",
    "client_software_name": "librdkafka",
    "client_software_version": "2.16.0",
    "client_source_address": "127.0.0.1",
    "client_source_port": "40000",
}


def manager(subs: dict[str, dict[str, str]]) -> tuple[ClientMetricsManager, Clock, dict[str, Any]]:
    clock = Clock()
    box: dict[str, Any] = {"subs": MappingProxyType(subs)}
    return (
        ClientMetricsManager(lambda: box["subs"], telemetry_max_bytes=10_000, clock_ms=clock),
        clock,
        box,
    )


def payload(value: float, *, delta_sum: float = 1.0) -> bytes:
    return otlp.encode_metrics_data(
        [
            ResourceMetrics(
                (("group_id", "g1"),),
                (
                    Metric(
                        "org.apache.kafka.consumer.poll.idle.ratio.avg",
                        otlp.GAUGE,
                        (DataPoint((("node.id", "3"),), value),),
                    ),
                    Metric(
                        "org.apache.kafka.consumer.connection.creation.total",
                        otlp.SUM,
                        (DataPoint((), delta_sum),),
                        monotonic=True,
                        temporality=otlp.TEMPORALITY_DELTA,
                    ),
                ),
            )
        ]
    )


def test_subscription_configs_are_checked_as_kafka_does() -> None:
    sub = parse_subscription(
        "s", {"metrics": "a.b, c", "interval.ms": "1000", "match": "client_id=app-.*"}
    )
    assert sub.metrics == {"a.b", "c"} and sub.interval_ms == 1000
    with pytest.raises(InvalidRequest, match="empty"):
        parse_subscription("", {})
    with pytest.raises(InvalidRequest, match="Unknown client metrics configuration"):
        parse_subscription("s", {"color": "red"})
    with pytest.raises(InvalidRequest, match="between 100 and 3600000"):
        parse_subscription("s", {"interval.ms": "99"})
    for bad in ("client_id", "nobody=x", "client_id=(", "a=b=c"):
        with pytest.raises(InvalidConfig, match="Illegal client matching pattern"):
            parse_subscription("s", {"match": bad})


def test_matching_union_of_metrics_and_smallest_interval() -> None:
    m, _, _ = manager(
        {
            "a": {"metrics": "org.apache.kafka.consumer.", "interval.ms": "60000"},
            "b": {
                "metrics": "org.apache.kafka.producer.",
                "interval.ms": "2000",
                "match": "client_software_name=librdkafka,client_id=app-\\d",
            },
            "c": {"metrics": "*", "match": "client_id=other"},
        }
    )
    got = m.get_subscriptions(uuid.UUID(int=0), ATTRS)
    assert got.error == ErrorCode.NONE and got.instance_id.int != 0
    assert got.metrics == ("org.apache.kafka.consumer.", "org.apache.kafka.producer.")
    assert got.push_interval_ms == 2000
    other = m.get_subscriptions(uuid.UUID(int=0), dict(ATTRS, client_id="other"))
    assert other.metrics == (ALL_METRICS,)
    assert other.subscription_id != got.subscription_id
    nobody, _, _ = manager({})
    assert nobody.get_subscriptions(uuid.UUID(int=0), ATTRS).metrics == ()


def test_get_and_push_timing_and_errors_in_kafkas_order() -> None:
    m, clock, box = manager({"all": {"metrics": "*", "interval.ms": "1000"}})
    got = m.get_subscriptions(uuid.UUID(int=0), ATTRS)
    iid, sid = got.instance_id, got.subscription_id
    # another Get before the interval: throttled
    assert m.get_subscriptions(iid, ATTRS).error == ErrorCode.THROTTLING_QUOTA_EXCEEDED

    def push(**kw: Any) -> ErrorCode:
        args: dict[str, Any] = {
            "subscription_id": sid,
            "terminating": False,
            "compression_type": 0,
            "payload": payload(0.5),
        }
        args.update(kw)
        return m.push(iid, ATTRS, **args)

    assert push() == ErrorCode.NONE  # the first push after a Get may come early
    assert push() == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.ms += 1000
    assert push(subscription_id=sid + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    # after an unknown subscription id, a Get is answered at once; but as in Kafka 4 it does
    # not count as the last request, so a push right after it is still early
    clock.ms += 1
    assert m.get_subscriptions(iid, ATTRS).error == ErrorCode.NONE
    clock.ms += 1
    assert push() == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.ms += 1000
    assert push(compression_type=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    clock.ms += 1000
    assert push(payload=b"x" * 10_001) == ErrorCode.TELEMETRY_TOO_LARGE
    clock.ms += 1000
    assert push(payload=b"\x0a\x05") == ErrorCode.INVALID_RECORD
    clock.ms += 1000
    assert (
        push(
            compression_type=compression.ZSTD,
            payload=compression.compress(compression.ZSTD, payload(0.5)),
        )
        == ErrorCode.NONE
    )
    # a changed subscription: the instance is re-evaluated, the old id is unknown
    box["subs"] = MappingProxyType({"all": {"metrics": "*", "interval.ms": "2000"}})
    clock.ms += 1000
    assert push() == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    again = m.get_subscriptions(iid, ATTRS)
    assert again.error == ErrorCode.NONE and again.push_interval_ms == 2000
    sid = again.subscription_id
    assert push(terminating=True) == ErrorCode.NONE
    clock.ms += 5000
    assert push() == ErrorCode.INVALID_REQUEST  # nothing after the terminating push
    assert (
        m.push(
            uuid.UUID(int=0),
            ATTRS,
            subscription_id=0,
            terminating=False,
            compression_type=0,
            payload=b"",
        )
        == ErrorCode.INVALID_REQUEST
    )


def test_series_labels_deltas_and_expiry() -> None:
    m, clock, _ = manager({"all": {"metrics": "*", "interval.ms": "1000"}})
    got = m.get_subscriptions(uuid.UUID(int=0), ATTRS)
    for value in (0.25, 0.75):
        err = m.push(
            got.instance_id,
            ATTRS,
            subscription_id=got.subscription_id,
            terminating=False,
            compression_type=0,
            payload=payload(value, delta_sum=2),
        )
        assert err == ErrorCode.NONE
        clock.ms += 1000
    samples = {name: (kind, rows) for name, kind, _, rows in m.samples()}
    labels = (
        f'{{client_id="app-1",client_instance_id="{got.instance_id}",group_id="g1",node_id="3"}}'
    )
    assert samples["org_apache_kafka_consumer_poll_idle_ratio_avg"] == ("gauge", [(labels, 0.75)])
    kind, rows = samples["org_apache_kafka_consumer_connection_creation_total"]
    assert kind == "counter" and rows[0][1] == 4.0  # deltas added up
    assert samples["odradek_client_telemetry_instances"][1] == [("", 1.0)]
    clock.ms += 60_001
    names = [name for name, *_ in m.samples()]
    assert "org_apache_kafka_consumer_poll_idle_ratio_avg" not in names
