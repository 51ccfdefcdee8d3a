"""OpenTelemetry metrics as Kafka clients push them (KIP-714's PushTelemetry payload): a
protobuf ``opentelemetry.proto.metrics.v1.MetricsData``, decoded by hand for the subset clients
send, and encoded (for tests and tools).

What is read (OTLP's ``metrics.proto``, ``common.proto`` and ``resource.proto``, field numbers
as published there):

* ``MetricsData.resource_metrics`` (1) -> ``ResourceMetrics``: ``resource`` (1: attributes,
  field 1) and ``scope_metrics`` (2) -> ``ScopeMetrics.metrics`` (2);
* ``Metric``: ``name`` (1), ``description`` (2), ``unit`` (3) and one of ``gauge`` (5), ``sum``
  (7: ``is_monotonic`` 3, ``aggregation_temporality`` 2), ``histogram`` (9); summaries and
  exponential histograms are counted and skipped;
* ``NumberDataPoint``: ``attributes`` (7), ``start_time_unix_nano`` (2), ``time_unix_nano``
  (3), ``as_double`` (4) or ``as_int`` (6); ``HistogramDataPoint``: ``attributes`` (9), times,
  ``count`` (4), ``sum`` (5);
* ``KeyValue`` (``key`` 1, ``value`` 2) with an ``AnyValue`` string, bool, int or double (other
  kinds are rendered as their bytes' hex).

Unknown fields are skipped, as protobuf requires. Malformed bytes (a truncated varint or field, a
wire type that does not fit, more than ``max_points`` data points) raise :class:`OtlpError`,
a :class:`~protocol.errors.RemoteProtocolError` answered with INVALID_RECORD. Sans-IO.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from protocol.errors import RemoteProtocolError

#: aggregation temporality (OTLP's AggregationTemporality)
TEMPORALITY_UNSPECIFIED = 0
TEMPORALITY_DELTA = 1
TEMPORALITY_CUMULATIVE = 2

GAUGE = "gauge"
SUM = "sum"
HISTOGRAM = "histogram"

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_DOUBLE = struct.Struct("<d")
_U64 = struct.Struct("<Q")
_I64S = struct.Struct("<q")

Attributes = tuple[tuple[str, str], ...]


class OtlpError(RemoteProtocolError):
    """A PushTelemetry payload that is not a readable MetricsData."""

    error_code = 87  # INVALID_RECORD


class DataPoint(NamedTuple):
    attributes: Attributes
    #: the number (gauge, sum) or, for a histogram, the sum of its observations
    value: float
    time_unix_nano: int = 0
    start_time_unix_nano: int = 0
    #: a histogram's observation count (0 for numbers)
    observations: int = 0


class Metric(NamedTuple):
    name: str
    kind: str
    points: tuple[DataPoint, ...]
    description: str = ""
    unit: str = ""
    monotonic: bool = False
    temporality: int = TEMPORALITY_UNSPECIFIED


class ResourceMetrics(NamedTuple):
    resource: Attributes
    metrics: tuple[Metric, ...]


# -- reading ---------------------------------------------------------------------------------------


def _varint(data: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise OtlpError("truncated or overlong varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(data: memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or payload start, payload end) of each field."""
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise OtlpError("field number 0")
        if wire == _VARINT:
            value, pos = _varint(data, pos, end)
            yield number, wire, value, pos
        elif wire == _I64:
            if pos + 8 > end:
                raise OtlpError("truncated 64-bit field")
            yield number, wire, pos, pos + 8
            pos += 8
        elif wire == _LEN:
            length, pos = _varint(data, pos, end)
            if pos + length > end:
                raise OtlpError("truncated length-delimited field")
            yield number, wire, pos, pos + length
            pos += length
        elif wire == _I32:
            if pos + 4 > end:
                raise OtlpError("truncated 32-bit field")
            yield number, wire, pos, pos + 4
            pos += 4
        else:
            raise OtlpError(f"unsupported wire type {wire}")


def _expect(wire: int, wanted: int, what: str) -> None:
    if wire != wanted:
        raise OtlpError(f"{what}: wire type {wire}, expected {wanted}")


def _string(data: memoryview, start: int, end: int) -> str:
    try:
        return bytes(data[start:end]).decode()
    except UnicodeDecodeError:
        raise OtlpError("a string is not UTF-8") from None


def _any_value(data: memoryview, start: int, end: int) -> str:
    for number, wire, a, b in _fields(data, start, end):
        if number == 1 and wire == _LEN:
            return _string(data, a, b)
        if number == 2 and wire == _VARINT:
            return "true" if a else "false"
        if number == 3 and wire == _VARINT:
            return str(a - (1 << 64) if a >= 1 << 63 else a)
        if number == 4 and wire == _I64:
            return repr(_DOUBLE.unpack_from(data, a)[0])
        if wire == _LEN:
            return bytes(data[a:b]).hex()
    return ""


def _key_value(data: memoryview, start: int, end: int) -> tuple[str, str]:
    key = value = ""
    for number, wire, a, b in _fields(data, start, end):
        if number == 1:
            _expect(wire, _LEN, "KeyValue.key")
            key = _string(data, a, b)
        elif number == 2:
            _expect(wire, _LEN, "KeyValue.value")
            value = _any_value(data, a, b)
    return key, value


class _Budget:
    __slots__ = ("left",)

    def __init__(self, points: int) -> None:
        self.left = points

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise OtlpError("too many data points")


def _number_point(data: memoryview, start: int, end: int, histogram: bool) -> DataPoint:
    attrs: list[tuple[str, str]] = []
    value = 0.0
    count = 0
    t = t0 = 0
    attributes_field = 9 if histogram else 7
    for number, wire, a, b in _fields(data, start, end):
        if number == attributes_field and wire == _LEN:
            attrs.append(_key_value(data, a, b))
        elif number == 2 and wire == _I64:
            t0 = _U64.unpack_from(data, a)[0]
        elif number == 3 and wire == _I64:
            t = _U64.unpack_from(data, a)[0]
        elif not histogram and number == 4 and wire == _I64:
            value = _DOUBLE.unpack_from(data, a)[0]
        elif not histogram and number == 6 and wire == _I64:
            value = float(_I64S.unpack_from(data, a)[0])
        elif histogram and number == 4 and wire == _I64:
            count = _U64.unpack_from(data, a)[0]
        elif histogram and number == 5 and wire == _I64:
            value = _DOUBLE.unpack_from(data, a)[0]
    return DataPoint(tuple(attrs), value, t, t0, count)


def _metric(data: memoryview, start: int, end: int, budget: _Budget) -> Metric | None:
    name = description = unit = ""
    kind = ""
    monotonic = False
    temporality = TEMPORALITY_UNSPECIFIED
    points: list[DataPoint] = []
    for number, wire, a, b in _fields(data, start, end):
        if number == 1:
            _expect(wire, _LEN, "Metric.name")
            name = _string(data, a, b)
        elif number == 2 and wire == _LEN:
            description = _string(data, a, b)
        elif number == 3 and wire == _LEN:
            unit = _string(data, a, b)
        elif number in (5, 7, 9):
            _expect(wire, _LEN, "Metric data")
            kind = {5: GAUGE, 7: SUM, 9: HISTOGRAM}[number]
            for n2, w2, a2, b2 in _fields(data, a, b):
                if n2 == 1 and w2 == _LEN:
                    budget.take()
                    points.append(_number_point(data, a2, b2, kind == HISTOGRAM))
                elif n2 == 2 and w2 == _VARINT and kind != GAUGE:
                    temporality = a2
                elif n2 == 3 and w2 == _VARINT and kind == SUM:
                    monotonic = bool(a2)
        elif number in (10, 11):
            kind = "unsupported"
    if not kind or kind == "unsupported":
        return None
    return Metric(name, kind, tuple(points), description, unit, monotonic, temporality)


def decode_metrics_data(
    payload: bytes | bytearray | memoryview, *, max_points: int = 100_000
) -> tuple[list[ResourceMetrics], int]:
    """The resources and their metrics in ``payload``, and how many metrics were skipped
    (kinds not read here). Raises :class:`OtlpError` for malformed bytes."""
    data = memoryview(payload).cast("B")
    budget = _Budget(max_points)
    out = []
    skipped = 0
    for number, wire, a, b in _fields(data, 0, len(data)):
        if number != 1:
            continue
        _expect(wire, _LEN, "MetricsData.resource_metrics")
        resource: list[tuple[str, str]] = []
        metrics: list[Metric] = []
        for n2, w2, a2, b2 in _fields(data, a, b):
            if n2 == 1 and w2 == _LEN:
                for n3, w3, a3, b3 in _fields(data, a2, b2):
                    if n3 == 1 and w3 == _LEN:
                        resource.append(_key_value(data, a3, b3))
            elif n2 == 2 and w2 == _LEN:
                for n3, w3, a3, b3 in _fields(data, a2, b2):
                    if n3 == 2 and w3 == _LEN:
                        m = _metric(data, a3, b3, budget)
                        if m is None:
                            skipped += 1
                        else:
                            metrics.append(m)
        out.append(ResourceMetrics(tuple(resource), tuple(metrics)))
    return out, skipped


# -- writing -------------------------------------------------------------------------------------


def _put_varint(out: bytearray, value: int) -> None:
    value &= (1 << 64) - 1
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_len(out: bytearray, number: int, payload: bytes | bytearray) -> None:
    _put_varint(out, number << 3 | _LEN)
    _put_varint(out, len(payload))
    out += payload


def _put_fixed64(out: bytearray, number: int, raw: bytes) -> None:
    _put_varint(out, number << 3 | _I64)
    out += raw


def _kv(key: str, value: str) -> bytes:
    any_value = bytearray()
    _put_len(any_value, 1, value.encode())
    kv = bytearray()
    _put_len(kv, 1, key.encode())
    _put_len(kv, 2, any_value)
    return bytes(kv)


def encode_metrics_data(resources: Sequence[ResourceMetrics]) -> bytes:
    """A MetricsData protobuf of ``resources`` (one scope each), as clients write it."""
    out = bytearray()
    for res in resources:
        rm = bytearray()
        resource = bytearray()
        for k, v in res.resource:
            _put_len(resource, 1, _kv(k, v))
        _put_len(rm, 1, resource)
        scope = bytearray()
        for m in res.metrics:
            body = bytearray()
            _put_len(body, 1, m.name.encode())
            if m.description:
                _put_len(body, 2, m.description.encode())
            if m.unit:
                _put_len(body, 3, m.unit.encode())
            data = bytearray()
            histogram = m.kind == HISTOGRAM
            for p in m.points:
                point = bytearray()
                for k, v in p.attributes:
                    _put_len(point, 9 if histogram else 7, _kv(k, v))
                _put_fixed64(point, 2, _U64.pack(p.start_time_unix_nano))
                _put_fixed64(point, 3, _U64.pack(p.time_unix_nano))
                if histogram:
                    _put_fixed64(point, 4, _U64.pack(p.observations))
                    _put_fixed64(point, 5, _DOUBLE.pack(p.value))
                else:
                    _put_fixed64(point, 4, _DOUBLE.pack(p.value))
                _put_len(data, 1, point)
            if m.kind != GAUGE:
                _put_varint(data, 2 << 3 | _VARINT)
                _put_varint(data, m.temporality)
            if m.kind == SUM:
                _put_varint(data, 3 << 3 | _VARINT)
                _put_varint(data, int(m.monotonic))
            _put_len(body, {GAUGE: 5, SUM: 7, HISTOGRAM: 9}[m.kind], data)
            _put_len(scope, 2, body)
        _put_len(rm, 2, scope)
        _put_len(out, 1, rm)
    return bytes(out)
