"""The connector's options, parsed and checked once, at query start, with clear messages.

The names and meanings are those of Spark's built-in Kafka source and sink
(https://spark.apache.org/docs/latest/streaming/structured-streaming-kafka-integration.html), so a
job written for ``format("kafka")`` moves over by changing the format name. Spark hands a data
source its options in a case-insensitive map with lower-cased keys; this module lower-cases them
too, so it can be used directly. ``kafka.``-prefixed options configure the client; the ones a
Kafka consumer or producer would reject or that make no sense here fail loudly, unknown ones are
ignored (Kafka's clients only log those).

Everything here is pure: no network, no Spark. Errors raise :class:`OptionError` (a ValueError),
which Spark reports as the query's failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import UnsupportedCompression
from protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from protocol.records.compression import CompressionType
from spark_connector.client import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ClientConfig,
    parse_bootstrap_servers,
)

TopicPartition = tuple[str, int]


class OptionError(ValueError):
    """A missing, malformed or conflicting option."""


# --- small parsers -------------------------------------------------------------------------------


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    value = str(text).strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise OptionError(f"option '{key}' must be 'true' or 'false', not {text!r}")


def _int(
    options: Mapping[str, str], key: str, default: int | None, *, minimum: int | None = 1
) -> int | None:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise OptionError(f"option '{key}' must be an integer, not {text!r}") from None
    if minimum is not None and value < minimum:
        raise OptionError(f"option '{key}' must be at least {minimum}, not {value}")
    return value


_DURATION = re.compile(r"^\s*(-?\d+)\s*([a-z]*)\s*$")
_DURATION_MS = {
    "": 1.0,
    "ms": 1.0,
    "us": 0.001,
    "s": 1000.0,
    "m": 60_000.0,
    "min": 60_000.0,
    "h": 3_600_000.0,
    "d": 86_400_000.0,
}


def parse_duration_ms(text: str, key: str = "duration") -> int:
    """Spark's time strings (``500ms``, ``10s``, ``15m``, ``1h``, ``2d``; a bare number is ms)."""
    m = _DURATION.match(str(text).lower())
    if not m or m.group(2) not in _DURATION_MS:
        raise OptionError(
            f"option '{key}' is not a duration like '15m', '10s' or '500ms': {text!r}"
        )
    value = int(m.group(1))
    if value < 0:
        raise OptionError(f"option '{key}' must not be negative: {text!r}")
    return int(value * _DURATION_MS[m.group(2)])


def _json_object(text: str, key: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise OptionError(f"option '{key}' is not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise OptionError(f"option '{key}' must be a JSON object, not {text!r}")
    return value


def parse_partition_map(text: str, key: str) -> dict[TopicPartition, int]:
    """``{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}`` as {(topic, partition): number}."""
    result: dict[TopicPartition, int] = {}
    for topic, partitions in _json_object(text, key).items():
        if not isinstance(partitions, dict):
            raise OptionError(
                f"option '{key}': the value for topic {topic!r} must be an object of "
                f'partition -> number, like {{"0": 23}}'
            )
        for partition, number in partitions.items():
            try:
                p = int(partition)
            except ValueError:
                raise OptionError(
                    f"option '{key}': partition {partition!r} of topic {topic!r} is not a number"
                ) from None
            if isinstance(number, bool) or not isinstance(number, int):
                raise OptionError(
                    f"option '{key}': {topic}-{p} must map to an integer, not {number!r}"
                )
            result[(topic, p)] = number
    if not result:
        raise OptionError(f"option '{key}' names no partitions: {text!r}")
    return result


def parse_assign(text: str) -> tuple[TopicPartition, ...]:
    """``{"topicA":[0,1],"topicB":[2,4]}``."""
    tps: list[TopicPartition] = []
    for topic, partitions in _json_object(text, "assign").items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in partitions
        ):
            raise OptionError(
                f"option 'assign': topic {topic!r} must map to a list of partition numbers"
            )
        tps.extend((topic, p) for p in partitions)
    if not tps:
        raise OptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{text}'"
        )
    return tuple(sorted(set(tps)))


# --- what to read --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    """Exactly one of ``subscribe``, ``subscribePattern`` or ``assign``."""

    kind: str  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribePattern":
            assert self.pattern is not None
            return re.fullmatch(self.pattern, topic) is not None
        if self.kind == "subscribe":
            return topic in self.topics
        return any(t == topic for t, _ in self.assigned)

    def describe(self) -> str:
        if self.kind == "subscribePattern":
            return f"subscribePattern {self.pattern!r}"
        if self.kind == "subscribe":
            return f"subscribe {','.join(self.topics)}"
        return "assign " + ",".join(f"{t}-{p}" for t, p in self.assigned)


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or end: ``earliest``, ``latest``, per-partition offsets (with -2/-1),
    one timestamp for every partition, or per-partition timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp: int | None = None

    @property
    def offset_map(self) -> dict[TopicPartition, int]:
        return dict(self.offsets)


EARLIEST_SPEC = OffsetSpec("earliest")
LATEST_SPEC = OffsetSpec("latest")


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's Kafka source writes them: {"topic": {"partition": offset}}, with topics
    and partitions in sorted string order (Spark compares offsets as text, so the same offsets
    must always give the same JSON)."""
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, {})[str(partition)] = int(offset)
    return {t: {p: by_topic[t][p] for p in sorted(by_topic[t])} for t in sorted(by_topic)}


def offsets_from_json(value: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """The reverse of :func:`offsets_to_json` (also accepts a JSON string)."""
    if isinstance(value, str):
        value = json.loads(value)
    out: dict[TopicPartition, int] = {}
    for topic, partitions in value.items():
        for partition, offset in partitions.items():
            out[(topic, int(partition))] = int(offset)
    return out


@dataclass(frozen=True)
class FetchSettings:
    max_partition_fetch_bytes: int = 8 * 1024 * 1024
    fetch_max_wait_ms: int = 500
    check_crcs: bool = True
    #: how long one read keeps retrying a partition that answers nothing or errors
    poll_timeout_ms: int = 120_000
    isolation_level: int = READ_UNCOMMITTED


@dataclass(frozen=True)
class SourceOptions:
    client: ClientConfig
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None
    starting_timestamp_strategy: str = "error"
    ending_timestamp_given: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    fetch: FetchSettings = field(default_factory=FetchSettings)

    @property
    def isolation_level(self) -> int:
        return self.fetch.isolation_level


# --- kafka.* options -----------------------------------------------------------------------------

_REJECTED_CONSUMER = {
    "auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or 'latest' "
    "instead",
    "key.deserializer": "keys are always returned as binary; cast or parse the 'key' column",
    "value.deserializer": "values are always returned as binary; cast or parse the 'value' column",
    "enable.auto.commit": "the source commits no offsets to Kafka; Spark's checkpoint holds them",
    "interceptor.classes": "Kafka client interceptors are Java classes",
}
_REJECTED_PRODUCER = {
    "key.serializer": "keys are written as binary (a string key column is UTF-8 encoded)",
    "value.serializer": "values are written as binary (a string value column is UTF-8 encoded)",
    "interceptor.classes": "Kafka client interceptors are Java classes",
    "transactional.id": "the sink is an idempotent, at-least-once producer, not a transactional "
    "one",
}


def _kafka_params(options: Mapping[str, str]) -> dict[str, str]:
    return {k[len("kafka.") :]: str(v) for k, v in options.items() if k.startswith("kafka.")}


def _client_config(options: Mapping[str, str], role: str) -> ClientConfig:
    params = _kafka_params(options)
    bootstrap = params.get("bootstrap.servers")
    if not bootstrap or not bootstrap.strip():
        raise OptionError(
            f"Option 'kafka.bootstrap.servers' must be specified for configuring the {role}"
        )
    try:
        servers = parse_bootstrap_servers(bootstrap)
    except ValueError as e:
        raise OptionError(f"option 'kafka.bootstrap.servers': {e}") from None
    protocol = params.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol != "PLAINTEXT":
        raise OptionError(
            f"option 'kafka.security.protocol' is {protocol}: the odradek connector speaks "
            "PLAINTEXT only"
        )
    if any(k.startswith(("sasl.", "ssl.")) for k in params):
        raise OptionError("SASL and SSL options are not supported by the odradek connector")
    timeouts: dict[str, Any] = {}
    for key, attr in (
        ("request.timeout.ms", "request_timeout_ms"),
        ("default.api.timeout.ms", "default_api_timeout_ms"),
        ("socket.connection.setup.timeout.ms", "connection_setup_timeout_ms"),
        ("retry.backoff.ms", "retry_backoff_ms"),
        ("retry.backoff.max.ms", "retry_backoff_max_ms"),
        ("metadata.max.age.ms", "metadata_max_age_ms"),
    ):
        value = _int(options, f"kafka.{key}", None)
        if value is not None:
            timeouts[attr] = value
    client_id = params.get("client.id", f"odradek-spark-{role.split()[-1]}")
    return ClientConfig(bootstrap_servers=servers, client_id=client_id, **timeouts)


# --- source --------------------------------------------------------------------------------------


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in options]
    if not given:
        raise OptionError(
            "One of the following options must be specified for the odradek source: "
            "subscribe, subscribePattern, assign"
        )
    if len(given) > 1:
        raise OptionError(
            "Only one of the following options can be specified for the odradek source: "
            f"subscribe, subscribePattern, assign (got {', '.join(given)})"
        )
    kind = given[0]
    text = str(options[kind])
    if kind == "subscribe":
        topics = tuple(sorted({t.strip() for t in text.split(",") if t.strip()}))
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{text}'"
            )
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        if not text.strip():
            raise OptionError(
                "Pattern to subscribe is empty as specified value for option "
                f"'subscribePattern' is '{text}'"
            )
        try:
            re.compile(text)
        except re.error as e:
            raise OptionError(f"option 'subscribePattern' is not a valid regex: {e}") from None
        return Subscription("subscribePattern", pattern=text)
    return Subscription("assign", assigned=parse_assign(text))


def _offset_spec(options: Mapping[str, str], which: str) -> tuple[OffsetSpec | None, bool]:
    """(spec, given by timestamp) for ``which`` = "starting" or "ending"; None if not given.

    Precedence as in Spark: ``<which>Timestamp``, then ``<which>OffsetsByTimestamp``, then
    ``<which>Offsets``."""
    ts_key = f"{which}timestamp"
    by_ts_key = f"{which}offsetsbytimestamp"
    offsets_key = f"{which}offsets"
    if ts_key in options:
        ts = _int(options, ts_key, None, minimum=0)
        return OffsetSpec("timestamp", timestamp=ts), True
    if by_ts_key in options:
        mapping = parse_partition_map(str(options[by_ts_key]), f"{which}OffsetsByTimestamp")
        for tp, ts in mapping.items():
            if ts < 0:
                raise OptionError(
                    f"option '{which}OffsetsByTimestamp': timestamp {ts} for {tp[0]}-{tp[1]} "
                    "is negative"
                )
        return OffsetSpec("timestamps", offsets=tuple(sorted(mapping.items()))), True
    if offsets_key not in options:
        return None, False
    text = str(options[offsets_key]).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower()), False
    mapping = parse_partition_map(text, f"{which}Offsets")
    for tp, offset in mapping.items():
        if offset < EARLIEST_TIMESTAMP:  # -2 earliest and -1 latest, as in ListOffsets
            raise OptionError(
                f"option '{which}Offsets': offset {offset} for {tp[0]}-{tp[1]} is invalid "
                "(use -2 for earliest, -1 for latest)"
            )
    return OffsetSpec("offsets", offsets=tuple(sorted(mapping.items()))), False


def parse_source_options(raw: Mapping[str, Any], *, streaming: bool) -> SourceOptions:
    """Checks and parses a source's options; raises :class:`OptionError`."""
    options = {str(k).lower(): str(v) for k, v in raw.items()}
    params = _kafka_params(options)
    for key, why in _REJECTED_CONSUMER.items():
        if key in params:
            raise OptionError(f"Kafka option '{key}' is not supported: {why}")
    client = _client_config(options, "source")
    subscription = _subscription(options)

    starting, _ = _offset_spec(options, "starting")
    ending, ending_by_ts = _offset_spec(options, "ending")
    if streaming:
        if ending is not None:
            raise OptionError(
                "ending offsets (endingOffsets, endingTimestamp, endingOffsetsByTimestamp) are "
                "not valid in streaming queries"
            )
        starting = starting or LATEST_SPEC
    else:
        starting = starting or EARLIEST_SPEC
        ending = ending or LATEST_SPEC
        if starting.kind == "latest":
            raise OptionError("startingOffsets can't be latest for batch queries")
        if ending.kind == "earliest":
            raise OptionError("endingOffsets can't be earliest for batch queries")
        for (t, p), offset in starting.offsets if starting.kind == "offsets" else ():
            if offset == LATEST_TIMESTAMP:
                raise OptionError(
                    f"startingOffsets for {t}-{p} can't be latest (-1) for batch queries"
                )
        for (t, p), offset in ending.offsets if ending.kind == "offsets" else ():
            if offset == EARLIEST_TIMESTAMP:
                raise OptionError(
                    f"endingOffsets for {t}-{p} can't be earliest (-2) for batch queries"
                )
    if subscription.kind == "assign":
        assigned = set(subscription.assigned)
        for spec, name in ((starting, "starting"), (ending, "ending")):
            if spec is not None and spec.kind in ("offsets", "timestamps"):
                extra = set(spec.offset_map) - assigned
                if extra:
                    listed = ", ".join(f"{t}-{p}" for t, p in sorted(extra))
                    raise OptionError(f"{name} offsets name partitions not assigned: {listed}")

    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            "option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', not "
            f"{strategy!r}"
        )

    isolation_text = params.get("isolation.level", "read_uncommitted").strip().lower()
    if isolation_text not in ("read_uncommitted", "read_committed"):
        raise OptionError(
            "option 'kafka.isolation.level' must be 'read_uncommitted' or 'read_committed', "
            f"not {isolation_text!r}"
        )
    # One Fetch asks for one partition, so the smaller of the two limits bounds it.
    fetch_bytes = min(
        _int(options, "kafka.max.partition.fetch.bytes", None) or 1 << 62,
        _int(options, "kafka.fetch.max.bytes", None) or 1 << 62,
    )
    fetch = FetchSettings(
        max_partition_fetch_bytes=fetch_bytes
        if fetch_bytes < 1 << 62
        else FetchSettings.max_partition_fetch_bytes,
        fetch_max_wait_ms=_int(options, "kafka.fetch.max.wait.ms", 500, minimum=0) or 0,
        check_crcs=_bool(options, "kafka.check.crcs", True),
        poll_timeout_ms=_int(options, "kafkaconsumer.polltimeoutms", 120_000) or 120_000,
        isolation_level=READ_COMMITTED if isolation_text == "read_committed" else READ_UNCOMMITTED,
    )

    max_per_trigger = _int(options, "maxoffsetspertrigger", None)
    min_per_trigger = _int(options, "minoffsetspertrigger", None)
    delay_text = options.get("maxtriggerdelay")
    delay_ms = parse_duration_ms(delay_text, "maxTriggerDelay") if delay_text else 15 * 60_000
    # Accepted for compatibility (docs/spark.md) and checked, but nothing uses them: offsets are
    # looked up with the client's own retries.
    _int(options, "fetchoffset.numretries", None, minimum=0)
    _int(options, "fetchoffset.retryintervalms", None, minimum=0)
    if (
        max_per_trigger is not None
        and min_per_trigger is not None
        and min_per_trigger > max_per_trigger
    ):
        raise OptionError(
            f"minOffsetsPerTrigger ({min_per_trigger}) is above maxOffsetsPerTrigger "
            f"({max_per_trigger})"
        )

    return SourceOptions(
        client=client,
        subscription=subscription,
        starting=starting,
        ending=ending,
        starting_timestamp_strategy=strategy,
        ending_timestamp_given=ending_by_ts,
        max_offsets_per_trigger=max_per_trigger if streaming else None,
        min_offsets_per_trigger=min_per_trigger if streaming else None,
        max_trigger_delay_ms=delay_ms,
        min_partitions=_int(options, "minpartitions", None),
        max_records_per_partition=_int(options, "maxrecordsperpartition", None),
        fail_on_data_loss=_bool(options, "failondataloss", True),
        include_headers=_bool(options, "includeheaders", False),
        fetch=fetch,
    )


# --- sink ----------------------------------------------------------------------------------------


_ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}


@dataclass(frozen=True)
class SinkOptions:
    client: ClientConfig
    topic: str | None
    acks: int = -1
    idempotence: bool = True
    #: whether the user asked for idempotence explicitly (then a broker without it is an error)
    idempotence_required: bool = False
    compression: int = 0
    #: below the broker's default message.max.bytes (1 MiB) with room to spare
    batch_size: int = 512 * 1024
    max_request_size: int = 8 * 1024 * 1024
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000


def parse_sink_options(raw: Mapping[str, Any]) -> SinkOptions:
    """Checks and parses a sink's options; raises :class:`OptionError`."""
    options = {str(k).lower(): str(v) for k, v in raw.items()}
    params = _kafka_params(options)
    for key, why in _REJECTED_PRODUCER.items():
        if key in params:
            raise OptionError(f"Kafka option '{key}' is not supported: {why}")
    client = _client_config(options, "sink")
    topic = options.get("topic")
    if topic is not None:
        topic = topic.strip()
        if not topic:
            raise OptionError("option 'topic' is empty")
    acks_text = params.get("acks", "all").strip().lower()
    if acks_text not in _ACKS:
        raise OptionError(f"option 'kafka.acks' must be all, -1, 0 or 1, not {acks_text!r}")
    acks = _ACKS[acks_text]
    explicit = "enable.idempotence" in params
    idempotence = _bool(options, "kafka.enable.idempotence", True)
    if idempotence and acks != -1:
        if explicit:
            raise OptionError(
                "an idempotent producer (kafka.enable.idempotence=true) needs kafka.acks=all"
            )
        idempotence = False  # as Kafka's producer does when acks conflicts with the default
    codec_text = params.get("compression.type", "none").strip().lower()
    try:
        codec = int(CompressionType.from_name(codec_text))
    except UnsupportedCompression:
        raise OptionError(
            "option 'kafka.compression.type' must be none, gzip, snappy, lz4 or zstd, not "
            f"{codec_text!r}"
        ) from None
    return SinkOptions(
        client=client,
        topic=topic,
        acks=acks,
        idempotence=idempotence,
        idempotence_required=explicit and idempotence,
        compression=codec,
        batch_size=_int(options, "kafka.batch.size", 512 * 1024) or 512 * 1024,
        max_request_size=_int(options, "kafka.max.request.size", 8 * 1024 * 1024)
        or 8 * 1024 * 1024,
        delivery_timeout_ms=_int(options, "kafka.delivery.timeout.ms", 120_000) or 120_000,
        request_timeout_ms=_int(options, "kafka.request.timeout.ms", 30_000) or 30_000,
    )
