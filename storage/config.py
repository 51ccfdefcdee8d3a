"""Log configuration: Kafka's topic-level keys (LogConfig) and the log manager's broker keys.

A :class:`LogConfig` is immutable; a topic config change builds a new one
(``config.with_overrides({...})``) and :meth:`storage.manager.LogManager.update_config` swaps it
into every log of the topic (one attribute assignment, so readers and appenders see either the
old or the new config, never a mix).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from storage.util import LONG_MAX

CLEANUP_POLICY_DELETE: Final = "delete"
CLEANUP_POLICY_COMPACT: Final = "compact"

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"


def _policy(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        items: Iterable[Any] = value.split(",")
    elif isinstance(value, Iterable):
        items = value
    else:
        raise ValueError(f"cleanup.policy must be a list or a comma-separated string: {value!r}")
    policy = frozenset(str(p).strip().lower() for p in items if str(p).strip())
    unknown = policy - {CLEANUP_POLICY_DELETE, CLEANUP_POLICY_COMPACT}
    if unknown:
        raise ValueError(f"unknown cleanup.policy {sorted(unknown)}")
    return policy


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(f"expected true or false: {value!r}")
        return value.strip().lower() == "true"
    return bool(value)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's log settings, with Kafka's defaults. Attribute names are the topic keys with
    dots as underscores; :data:`TOPIC_KEYS` maps the keys (``segment.bytes``) to attributes.

    On-disk format: none (topic configs live in the metadata store). Crash: nothing.
    Thread-safety: immutable; a change replaces the whole object on the log."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = field(default=frozenset({CLEANUP_POLICY_DELETE}))
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = CREATE_TIME
    preallocate: bool = False

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError(f"segment.bytes must be >= 14, got {self.segment_bytes}")
        if self.segment_index_bytes < 12:
            raise ValueError(f"segment.index.bytes must be >= 12, got {self.segment_index_bytes}")
        if self.index_interval_bytes < 0:
            raise ValueError("index.interval.bytes must be >= 0")
        if self.message_timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"unknown message.timestamp.type {self.message_timestamp_type!r}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be within [0, 1]")

    @property
    def compact(self) -> bool:
        return CLEANUP_POLICY_COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, base: LogConfig | None = None) -> LogConfig:
        """A config from Kafka topic keys (``{"segment.bytes": 1024, "cleanup.policy": "compact"}``)
        over ``base`` (default: Kafka's defaults). Values may be strings or parsed values; keys
        that are not log settings (``compression.type``, ``min.insync.replicas``, ...) are
        ignored, since the broker owns them."""
        changes: dict[str, Any] = {}
        for key, raw in values.items():
            attr = TOPIC_KEYS.get(key)
            if attr is None or raw is None:
                continue
            changes[attr] = _parse(attr, raw)
        return dataclasses.replace(base if base is not None else cls(), **changes)

    def with_overrides(self, overrides: Mapping[str, Any]) -> LogConfig:
        """This config with a topic's overrides (Kafka topic keys) applied."""
        return LogConfig.from_mapping(overrides, base=self)

    def to_mapping(self) -> dict[str, Any]:
        """Kafka topic keys -> values (cleanup.policy as a sorted list)."""
        out: dict[str, Any] = {}
        for key, attr in TOPIC_KEYS.items():
            value = getattr(self, attr)
            out[key] = sorted(value) if isinstance(value, frozenset) else value
        return out


#: Kafka topic config key -> LogConfig attribute.
TOPIC_KEYS: Final[dict[str, str]] = {
    f.name.replace("_", "."): f.name for f in dataclasses.fields(LogConfig)
}

#: Broker key that supplies each topic key's default (``log.segment.bytes`` for
#: ``segment.bytes``); used by :meth:`LogConfig.from_broker_mapping`.
BROKER_KEYS: Final[dict[str, str]] = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.preallocate": "preallocate",
}


def _parse(attr: str, raw: Any) -> Any:
    if attr == "cleanup_policy":
        return _policy(raw)
    if attr == "preallocate":
        return _bool(raw)
    if attr == "min_cleanable_dirty_ratio":
        return float(raw)
    if attr == "message_timestamp_type":
        return str(raw)
    return int(raw)


def log_config_from_broker(values: Mapping[str, Any]) -> LogConfig:
    """The default LogConfig from broker keys (``log.segment.bytes``, ``log.retention.hours``...),
    with Kafka's precedence for the ms/minutes/hours variants."""
    topic: dict[str, Any] = {}
    for broker_key, topic_key in BROKER_KEYS.items():
        if values.get(broker_key) is not None:
            topic[topic_key] = values[broker_key]
    if values.get("log.roll.ms") is None and values.get("log.roll.hours") is not None:
        topic["segment.ms"] = int(values["log.roll.hours"]) * 3600_000
    if values.get("log.roll.jitter.ms") is None and values.get("log.roll.jitter.hours") is not None:
        topic["segment.jitter.ms"] = int(values["log.roll.jitter.hours"]) * 3600_000
    if values.get("log.retention.ms") is None:
        if values.get("log.retention.minutes") is not None:
            topic["retention.ms"] = int(values["log.retention.minutes"]) * 60_000
        elif values.get("log.retention.hours") is not None:
            topic["retention.ms"] = int(values["log.retention.hours"]) * 3600_000
    return LogConfig.from_mapping(topic)


@dataclass(frozen=True, slots=True)
class LogManagerConfig:
    """Broker-wide intervals of the log manager's periodic work (Kafka's broker keys).
    Immutable; nothing on disk."""

    #: ``log.retention.check.interval.ms``
    retention_check_interval_ms: int = 300_000
    #: ``log.flush.offset.checkpoint.interval.ms``
    recovery_point_checkpoint_interval_ms: int = 60_000
    #: ``log.flush.start.offset.checkpoint.interval.ms``
    log_start_offset_checkpoint_interval_ms: int = 60_000
    #: ``replica.high.watermark.checkpoint.interval.ms``
    high_watermark_checkpoint_interval_ms: int = 5_000
    #: ``log.cleaner.enable``
    cleaner_enable: bool = True
    #: ``log.cleaner.backoff.ms``: pause between cleaning passes when nothing was cleanable
    cleaner_backoff_ms: int = 15_000
    #: ``log.cleaner.dedupe.buffer.size``: bytes of key map one cleaning pass may use. Kafka
    #: counts 24 bytes per entry (a 16-byte key hash and an 8-byte offset); our map keeps the
    #: keys themselves, so an entry counts its key's length plus
    #: :data:`storage.cleaner.MAP_ENTRY_OVERHEAD` (96) bytes
    cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    #: ``log.segment.open.files.max`` (ours): files of segments taking no appends kept open
    segment_open_files_max: int = 1000
    #: ``num.recovery.threads.per.data.dir``: threads loading (recovering) one dir's logs
    recovery_threads_per_data_dir: int = 1

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LogManagerConfig:
        keys = {
            "log.retention.check.interval.ms": "retention_check_interval_ms",
            "log.flush.offset.checkpoint.interval.ms": "recovery_point_checkpoint_interval_ms",
            "log.flush.start.offset.checkpoint.interval.ms": (
                "log_start_offset_checkpoint_interval_ms"
            ),
            "replica.high.watermark.checkpoint.interval.ms": (
                "high_watermark_checkpoint_interval_ms"
            ),
            "log.cleaner.enable": "cleaner_enable",
            "log.cleaner.backoff.ms": "cleaner_backoff_ms",
            "log.cleaner.dedupe.buffer.size": "cleaner_dedupe_buffer_size",
            "log.segment.open.files.max": "segment_open_files_max",
            "num.recovery.threads.per.data.dir": "recovery_threads_per_data_dir",
        }
        changes: dict[str, Any] = {}
        for key, attr in keys.items():
            if values.get(key) is None:
                continue
            changes[attr] = _bool(values[key]) if attr == "cleaner_enable" else int(values[key])
        return cls(**changes)
