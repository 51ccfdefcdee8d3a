"""protocol.otlp: MetricsData written and read back, protobuf rules (unknown fields skipped,
packed fields of other kinds ignored), and bad bytes answered with OtlpError only."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import otlp
from protocol.otlp import DataPoint, Metric, OtlpError, ResourceMetrics

SAMPLE = [
    ResourceMetrics(
        (("client_rack", "r1"), ("group_id", "g")),
        (
            Metric(
                "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
                otlp.GAUGE,
                (DataPoint((("node_id", "0"),), 1.5, 2000, 1000),),
            ),
            Metric(
                "org.apache.kafka.consumer.connection.creation.total",
                otlp.SUM,
                (DataPoint((), 3.0, 2000, 1000),),
                monotonic=True,
                temporality=otlp.TEMPORALITY_DELTA,
            ),
            Metric(
                "org.apache.kafka.producer.record.size",
                otlp.HISTOGRAM,
                (DataPoint((("topic", "t"),), 250.0, 2000, 1000, 4),),
                temporality=otlp.TEMPORALITY_CUMULATIVE,
            ),
        ),
    )
]


def test_round_trip() -> None:
    data = otlp.encode_metrics_data(SAMPLE)
    got, skipped = otlp.decode_metrics_data(data)
    assert got == SAMPLE and skipped == 0


def test_unknown_fields_and_kinds_are_skipped() -> None:
    data = bytearray(otlp.encode_metrics_data(SAMPLE))
    # an unknown varint field (number 15) and a 32-bit field (14) at the top level
    data += bytes([15 << 3 | 0, 0x96, 0x01, 14 << 3 | 5]) + struct.pack("<I", 7)
    got, _ = otlp.decode_metrics_data(bytes(data))
    assert got == SAMPLE
    # a summary (Metric field 11) is counted, not decoded
    summary = bytes([1 << 3 | 2, 1, ord("s"), 11 << 3 | 2, 0])
    scope = bytes([2 << 3 | 2, len(summary)]) + summary
    rm = bytes([2 << 3 | 2, len(scope)]) + scope
    got, skipped = otlp.decode_metrics_data(bytes([1 << 3 | 2, len(rm)]) + rm)
    assert got == [ResourceMetrics((), ())] and skipped == 1


def test_a_data_point_budget() -> None:
    with pytest.raises(OtlpError, match="too many data points"):
        otlp.decode_metrics_data(otlp.encode_metrics_data(SAMPLE), max_points=2)


@pytest.mark.parametrize(
    "payload",
    [b"\x0a", b"\x0a\x05\x01", b"\x0b", b"\x00", b"\x0a\x02\x12\x80", b"\xff" * 11],
)
def test_malformed(payload: bytes) -> None:
    with pytest.raises(OtlpError):
        otlp.decode_metrics_data(payload)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_decode_or_raise_otlp_error(data: bytes) -> None:
    try:
        otlp.decode_metrics_data(data)
    except OtlpError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 400))
def test_truncations_of_a_real_payload(cut: int) -> None:
    data = otlp.encode_metrics_data(SAMPLE)
    try:
        otlp.decode_metrics_data(data[: min(cut, len(data))])
    except OtlpError:
        pass
