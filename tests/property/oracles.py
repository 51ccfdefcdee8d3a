"""Test-only oracles: other projects' codecs for the same Kafka messages.

An oracle answers, for an (api key, version, kind), with an :class:`OracleCodec`: a function that
decodes a message body (no header, no size prefix) with the oracle's classes and encodes the
result again with the oracle's classes, and the value constraints the oracle needs (see
:func:`kio_overrides`). The oracles are

- ``kio``: kio's generated entities (Kafka 4.x message definitions), read and written with
  ``kio.serial.entity_reader`` / ``entity_writer`` in a worker process (kio_worker.py);
- ``kafka-python``: kafka-python 3's JSON-driven ``ApiMessage`` classes (the same Kafka 4.x
  definitions), for every version up to the JSON's last: kafka-python also encodes the versions
  below the JSON's validVersions with them (for old brokers), and the JSON still says in which
  versions each field exists;
- ``kafka-python-old``: kafka-python's hand-written ``kafka.protocol.old`` classes, for the
  versions they define (an independent description, and the only other one of the versions
  Kafka 4 dropped, such as Produce 0-2 and Fetch 0-3).

Nothing here is imported by the project itself; the oracles are development dependencies.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime
import enum
import importlib
import io
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import strategies as st

from protocol.codegen import INLINE_RECORDS_MAX
from protocol.primitives import ZERO_UUID
from protocol.schema import BYTES, RECORDS, STRING, UUID, ArrayOf, Field, Primitive, Struct
from tests.property.kio_worker import KioWorker, OracleRejected
from tests.property.strategies import Overrides

KIO = "kio"
KAFKA_PYTHON = "kafka-python"
KAFKA_PYTHON_OLD = "kafka-python-old"
ORACLES = (KIO, KAFKA_PYTHON, KAFKA_PYTHON_OLD)


@dataclass(frozen=True)
class OracleCodec:
    oracle: str
    #: the oracle's class, for messages
    their_name: str
    #: bytes -> the oracle's value -> bytes again
    round_trip: Callable[[bytes], bytes]
    #: constraints on our drawn values that keep them inside what the oracle can represent
    overrides: Overrides = field(default_factory=dict)


class OracleMismatch(OracleRejected):
    """The oracle did not consume exactly the bytes it was given."""


# --- long values -----------------------------------------------------------------------------

# strategies.py draws short strings and blobs. Now and then take long ones instead, so lengths
# need two varint bytes (compact lengths >= 127) and record blobs leave our encoder as separate
# buffers (longer than protocol.codegen.INLINE_RECORDS_MAX).
_LONG: dict[Primitive, st.SearchStrategy[Any]] = {
    STRING: st.text(min_size=127, max_size=160),
    BYTES: st.binary(min_size=127, max_size=300),
    RECORDS: st.binary(min_size=INLINE_RECORDS_MAX + 1, max_size=INLINE_RECORDS_MAX + 200),
}
_SHORT: dict[Primitive, st.SearchStrategy[Any]] = {
    STRING: st.text(max_size=12),
    BYTES: st.binary(max_size=12),
    RECORDS: st.binary(max_size=40),
}


def long_value_overrides(cls: type[Struct], version: int) -> Overrides:
    """For every string, bytes and records field of ``cls`` at ``version``: mostly short values,
    one draw in four a long one."""
    out: dict[tuple[type[Struct], str], st.SearchStrategy[Any]] = {}
    seen: set[type[Struct]] = set()

    def walk(cls: type[Struct]) -> None:
        seen.add(cls)
        for fl in cls.__fields__:
            if version not in fl.versions:
                continue
            t = fl.type.element if isinstance(fl.type, ArrayOf) else fl.type
            if isinstance(t, type) and issubclass(t, Struct):
                if t not in seen:
                    walk(t)
            elif isinstance(t, Primitive) and t in _LONG:
                out[(cls, fl.name)] = st.one_of(_SHORT[t], _SHORT[t], _SHORT[t], _LONG[t])

    walk(cls)
    return out


# --- kio ---------------------------------------------------------------------------------------


@cache
def _kio_error_codes() -> tuple[int, ...]:
    from kio.schema.errors import ErrorCode

    return tuple(sorted(int(code) for code in ErrorCode))


# A datetime_i64 must be a non-negative millisecond timestamp that datetime can hold
# (year <= 9999). kio reads a timedelta_i64 into a timedelta through microseconds in an int64
# (|ms| >= 2**53 overflows) and writes it back through a float (|ms| >= 2**52 loses the last
# millisecond), so timedelta_i64 values stay within 2**50 ms (35 000 years).
_MAX_DATETIME_MS = 253402300799999
_MAX_TIMEDELTA_MS = 2**50


def _kio_leaf(kafka_type: str, optional: bool) -> st.SearchStrategy[Any] | None:
    """Constraints for kio's typed primitives (kio models these as enums, timedeltas and
    datetimes, and refuses values those cannot hold); None for types kio takes as they come."""
    if kafka_type == "error_code":
        # kio decodes error codes into its ErrorCode enum and raises on an unknown code.
        return st.sampled_from(_kio_error_codes())
    if kafka_type == "datetime_i64":
        # kio refuses negative timestamps; a nullable one maps -1 to None.
        stamps = st.integers(0, _MAX_DATETIME_MS)
        return st.one_of(st.just(-1), stamps) if optional else stamps
    if kafka_type == "timedelta_i64":
        return st.integers(-_MAX_TIMEDELTA_MS, _MAX_TIMEDELTA_MS)
    # timedelta_i32: every int32 fits in a timedelta, and kio takes negative ones.
    return None


def _kio_pairs(
    ours: type[Struct], theirs: type, version: int, flexible: bool
) -> Iterator[tuple[type[Struct], Field, dataclasses.Field[Any]]]:
    """Our fields with kio's, recursively: untagged ones by position, tagged ones by tag.
    Yields (our struct class, our field, kio's field)."""
    from kio.serial._introspect import EntityField, EntityTupleField, classify_field

    our_fields = [fl for fl in ours.__fields__ if version in fl.versions]
    their_fields = dataclasses.fields(theirs)
    pairs = list(
        zip(
            [fl for fl in our_fields if not fl.is_tagged(version, flexible)],
            [tf for tf in their_fields if "tag" not in tf.metadata],
            strict=False,
        )
    )
    their_tagged = {tf.metadata["tag"]: tf for tf in their_fields if "tag" in tf.metadata}
    for fl in our_fields:
        if fl.is_tagged(version, flexible) and fl.tag in their_tagged:
            pairs.append((fl, their_tagged[fl.tag]))
    for fl, tf in pairs:
        yield ours, fl, tf
        t = fl.type.element if isinstance(fl.type, ArrayOf) else fl.type
        kind = classify_field(tf)
        if isinstance(t, type) and isinstance(kind, EntityField | EntityTupleField):
            yield from _kio_pairs(t, kind.type_, version, flexible)


def kio_overrides(ours: type[Struct], theirs: type, version: int, flexible: bool) -> Overrides:
    """The value constraints kio's typed fields need, for our fields."""
    from kio.serial._introspect import is_optional

    out: dict[tuple[type[Struct], str], st.SearchStrategy[Any]] = {}
    for cls, fl, tf in _kio_pairs(ours, theirs, version, flexible):
        t = fl.type.element if isinstance(fl.type, ArrayOf) else fl.type
        if isinstance(t, Primitive):
            leaf = _kio_leaf(tf.metadata.get("kafka_type", ""), is_optional(tf))
            if leaf is not None:
                out[(cls, fl.name)] = leaf
    return out


def _plain_kio_value(value: Any) -> Any:
    """kio's typed value as the plain value our schemas use."""
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [_plain_kio_value(v) for v in value]
    return value


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def kio_default_mismatches(
    ours: type[Struct], theirs: type, version: int, flexible: bool
) -> list[str]:
    """Fields of primitive types (or arrays of them) whose default differs from kio's explicit
    default (or, for tagged fields, kio's implicit one). A tagged field's default decides
    whether it is written at all, so a different default changes the bytes."""
    from kio.serial._implicit_defaults import get_tagged_field_default

    out = []
    for cls, fl, tf in _kio_pairs(ours, theirs, version, flexible):
        if isinstance(fl.type, type):  # a struct: its fields are compared one by one
            continue
        if tf.default is not dataclasses.MISSING:
            theirs_default = tf.default
        elif "tag" in tf.metadata:
            theirs_default = get_tagged_field_default(tf)
        else:
            continue
        ours_default = fl.make_default()
        theirs_plain = _plain_kio_value(theirs_default)
        if theirs_plain is None and fl.type is UUID:
            theirs_plain = ZERO_UUID  # kio reads the all-zero UUID as None
        if theirs_plain is None and tf.metadata.get("kafka_type") == "datetime_i64":
            theirs_plain = -1  # kio reads a -1 timestamp as None
        if ours_default != theirs_plain:
            out.append(
                f"{cls.__name__}.{fl.name}: ours {ours_default!r}, kio's {tf.name} {theirs_plain!r}"
            )
    return out


_KIO_WORKER = KioWorker()
atexit.register(_KIO_WORKER.close)


def kio_codec(api_key: int, version: int, kind: str) -> tuple[type, Callable[[bytes], bytes]]:
    """kio's entity class and round trip (run in a worker process; see kio_worker.py), or
    LookupError."""
    from kio.index import KioIndexError, load_request_schema, load_response_schema

    load = load_request_schema if kind == "request" else load_response_schema
    try:
        cls = load(api_key, version)
    except KioIndexError as e:
        raise LookupError(str(e)) from None

    def round_trip(wire: bytes) -> bytes:
        return _KIO_WORKER.round_trip(api_key, version, kind, wire)

    return cls, round_trip


# --- kafka-python (JSON-driven classes) --------------------------------------------------------


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


@cache
def _kafka_python_classes() -> dict[tuple[int, str], type]:
    from kafka.protocol.api_message import ApiMessage

    for package in ("admin", "consumer", "metadata", "producer", "sasl"):
        module = importlib.import_module(f"kafka.protocol.{package}")
        for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
            importlib.import_module(f"kafka.protocol.{package}.{info.name}")
    classes: dict[tuple[int, str], type] = {}
    for cls in _subclasses(ApiMessage):
        if cls._class_version is not None:  # a per-version wrapper, not a message class
            continue
        classes[(cls.API_KEY, cls.type)] = cls
    return classes


def kafka_python_codec(
    api_key: int, version: int, kind: str
) -> tuple[str, Callable[[bytes], bytes]]:
    """kafka-python's JSON-driven class (its name) and round trip, or LookupError."""
    from kafka.protocol.api_message import ApiMessage

    cls = _kafka_python_classes().get((api_key, kind))
    if cls is None:
        raise LookupError(f"kafka-python has no {kind} class for api key {api_key}")
    # kafka-python encodes every version from 0 up with these classes (it asks the broker which
    # version to use), including those below the Kafka 4 JSON's validVersions: the JSON still
    # states each field's versions from 0 (e.g. ProduceResponse's log_append_time_ms "2+").
    lo, hi = cls._valid_versions
    if not 0 <= version <= hi:
        raise LookupError(f"kafka-python's {cls.__name__} JSON stops at v{hi}")
    name = cls.__name__ if version >= lo else f"{cls.__name__} (below its JSON's {lo}-{hi})"
    # ApiMessage's decode and encode, not the subclass's: some subclasses add client-side rules
    # on top of the codec (ApiVersionsResponse.decode reads a v0 body whenever the error code is
    # non-zero; DeleteTopicsRequest.encode fills topic_names from topics). The oracle is the
    # plain codec for a vN body.
    decode = ApiMessage.decode.__func__  # type: ignore[attr-defined]
    encode = ApiMessage.encode

    def round_trip(wire: bytes) -> bytes:
        value = decode(cls, wire, version=version)
        # A body decoded without its header has no _header slot set, and encode(version=...)
        # reads it (AttributeError: _header).
        value._header = None
        return bytes(encode(value, version=version))

    return name, round_trip


# --- kafka-python's hand-written old classes ---------------------------------------------------


@cache
def _kafka_python_old_classes() -> dict[tuple[int, int, str], type]:
    import kafka.protocol.old as old
    from kafka.protocol.old.api import Request, Response

    classes: dict[tuple[int, int, str], type] = {}
    for info in pkgutil.iter_modules(old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for value in vars(module).values():
            if not (isinstance(value, type) and issubclass(value, Request | Response)):
                continue
            key, ver = getattr(value, "API_KEY", None), getattr(value, "API_VERSION", None)
            if isinstance(key, int) and isinstance(ver, int):
                kind = "request" if issubclass(value, Request) else "response"
                classes[(key, ver, kind)] = value
    return classes


def kafka_python_old_codec(
    api_key: int, version: int, kind: str
) -> tuple[str, Callable[[bytes], bytes]]:
    """kafka-python's hand-written ``kafka.protocol.old`` class (its name) and round trip, or
    LookupError."""
    cls = _kafka_python_old_classes().get((api_key, version, kind))
    if cls is None:
        raise LookupError(f"kafka.protocol.old has no {kind} v{version} for api key {api_key}")

    def round_trip(wire: bytes) -> bytes:
        data = io.BytesIO(wire)
        value = cls(*cls.SCHEMA.decode(data))
        if data.tell() != len(wire):
            raise OracleMismatch(f"kafka-python-old read {data.tell()} of {len(wire)} bytes")
        return bytes(value.encode())

    return cls.__name__, round_trip


# --- lookup ------------------------------------------------------------------------------------


def oracle_codec(
    oracle: str, ours: type[Struct], api_key: int, version: int, kind: str, flexible: bool
) -> OracleCodec:
    """The oracle's codec for (api_key, version, kind); LookupError when it has none."""
    if oracle == KIO:
        cls, round_trip = kio_codec(api_key, version, kind)
        overrides = kio_overrides(ours, cls, version, flexible)
        return OracleCodec(oracle, cls.__name__, round_trip, overrides)
    if oracle == KAFKA_PYTHON:
        return OracleCodec(oracle, *kafka_python_codec(api_key, version, kind))
    if oracle == KAFKA_PYTHON_OLD:
        return OracleCodec(oracle, *kafka_python_old_codec(api_key, version, kind))
    raise ValueError(f"unknown oracle {oracle!r}")
