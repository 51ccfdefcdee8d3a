"""Describing configs as DescribeConfigs and CreateTopics v5+ report them: value, source,
synonyms and type, for topics and brokers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from broker.config import (
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIGS,
    LISTENER_PREFIX,
    REPLICATION_THROTTLE_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigKey,
    broker_synonyms,
    dynamic_listener_key,
    format_value,
)


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


_TYPE_OF = {
    "boolean": ConfigType.BOOLEAN,
    "string": ConfigType.STRING,
    "int": ConfigType.INT,
    "short": ConfigType.SHORT,
    "long": ConfigType.LONG,
    "double": ConfigType.DOUBLE,
    "list": ConfigType.LIST,
    "class": ConfigType.CLASS,
    "password": ConfigType.PASSWORD,
}


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type: what DescribeConfigs and AlterConfigs name."""

    UNKNOWN = 0
    TOPIC = 2
    GROUP = 32
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type: ConfigType
    documentation: str | None = None
    synonyms: list[tuple[str, str | None, ConfigSource]] = field(default_factory=list)


def describe_topic(
    config: BrokerConfig, overrides: Mapping[str, str], keys: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """Every topic config with its synonyms in precedence order (topic override, then its broker
    key's, see :func:`broker_key_synonyms`); the source is the first synonym's, or DEFAULT_CONFIG
    when there is none (Kafka lists no synonym for a config whose broker key has no value)."""
    wanted = set(keys) if keys is not None else None
    entries = []
    for name, key in sorted(TOPIC_CONFIGS.items()):
        if wanted is not None and name not in wanted:
            continue
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        effective = format_value(key.kind, config.topic_default(name))
        if key.broker_key is not None:
            synonyms.extend(broker_key_synonyms(config, key.broker_key))
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        value = overrides.get(name, effective)
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=False,
                sensitive=False,
                type=_TYPE_OF[key.kind],
                documentation=key.doc or None,
                synonyms=synonyms,
            )
        )
    return entries


def broker_key_synonyms(
    config: BrokerConfig, name: str
) -> list[tuple[str, str | None, ConfigSource]]:
    """Where broker key ``name`` (and its synonyms, such as ``log.retention.hours`` for
    ``log.retention.ms``) is set, in Kafka's order of precedence: this broker's dynamic
    config, the cluster-wide default, server.properties, Kafka's default. As Kafka's
    ConfigHelper.configSynonyms, the list starts at the first entry for ``name`` itself: a value
    only a lesser synonym has (the default of ``log.retention.hours``) is not listed for
    ``log.retention.ms``."""
    out: list[tuple[str, str | None, ConfigSource]] = []
    names = broker_synonyms(name)
    for level, source in (
        (config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ):
        out.extend((n, level[n], source) for n in names if n in level)
    for n in names:
        if n in config.explicit:
            key = BROKER_CONFIGS[n]
            out.append(
                (
                    n,
                    format_value(key.kind, config.static_values.get(n)),
                    ConfigSource.STATIC_BROKER_CONFIG,
                )
            )
    for n in names:
        key = BROKER_CONFIGS[n]
        if key.default is not None:
            out.append((n, format_value(key.kind, key.default), ConfigSource.DEFAULT_CONFIG))
    while out and out[0][0] != name:
        out.pop(0)
    return out


_LEVEL_SOURCES = {
    "static": ConfigSource.STATIC_BROKER_CONFIG,
    "default": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    "broker": ConfigSource.DYNAMIC_BROKER_CONFIG,
}


def _static_listener_text(config: BrokerConfig, name: str, key: ConfigKey) -> str | None:
    """A ``listener.name.*`` key's value in server.properties, formatted; None if not set."""
    listener, _, rest = name[len(LISTENER_PREFIX) :].partition(".")
    value = config.static_listener_values.get(listener.upper(), {}).get(rest)
    return None if value is None else format_value(key.kind, value)


def describe_broker(config: BrokerConfig, keys: Iterable[str] | None = None) -> list[ConfigEntry]:
    """This broker's configs: the value in force, its source (the first synonym's, else
    DEFAULT_CONFIG) and its synonyms (:func:`broker_key_synonyms`), as Kafka's ConfigHelper lists
    them; then the ``listener.name.*`` keys given. The values of sensitive keys (passwords,
    JAAS configs, private keys) are never returned, as Kafka hides them."""
    wanted = set(keys) if keys is not None else None
    entries = []
    for name, value, key, level in config.listener_keys():
        if wanted is not None and name not in wanted:
            continue
        shown = None if key.sensitive else format_value(key.kind, value)
        # the levels that set it, the one in force first (Kafka's synonyms)
        levels: list[tuple[str, str | None, ConfigSource]] = [
            (name, text, source)
            for text, source in (
                (config.dynamic_broker.get(name), ConfigSource.DYNAMIC_BROKER_CONFIG),
                (config.dynamic_default.get(name), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (_static_listener_text(config, name, key), ConfigSource.STATIC_BROKER_CONFIG),
            )
            if text is not None
        ]
        entries.append(
            ConfigEntry(
                name=name,
                value=shown,
                source=_LEVEL_SOURCES[level],
                read_only=dynamic_listener_key(name) is None,
                sensitive=key.sensitive,
                type=_TYPE_OF[key.kind],
                documentation=key.doc or None,
                synonyms=levels if not key.sensitive else [(name, None, _LEVEL_SOURCES[level])],
            )
        )
    for name, key in sorted(BROKER_CONFIGS.items()):
        if wanted is not None and name not in wanted:
            continue
        value = None if key.sensitive else format_value(key.kind, config.values.get(name))
        synonyms = broker_key_synonyms(config, name)
        if key.sensitive:
            synonyms = [(n, None, src) for n, _, src in synonyms]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=name not in DYNAMIC_BROKER_CONFIGS,
                sensitive=key.sensitive,
                type=_TYPE_OF[key.kind],
                documentation=key.doc or None,
                synonyms=synonyms,
            )
        )
    entries.extend(_replication_throttles(config, wanted, default_only=False))
    return entries


def _replication_throttles(
    config: BrokerConfig, wanted: set[str] | None, *, default_only: bool
) -> list[ConfigEntry]:
    """The replication throttle rates set on this broker or at the cluster default (Kafka lists
    them only where set, read-only, each with its own synonyms: the broker's value, then the
    default's)."""
    entries = []
    for name in REPLICATION_THROTTLE_CONFIGS:
        if wanted is not None and name not in wanted:
            continue
        levels = [(config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
        if not default_only:
            levels.insert(0, (config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG))
        synonyms: list[tuple[str, str | None, ConfigSource]] = [
            (name, level[name], source) for level, source in levels if name in level
        ]
        if not synonyms:
            continue
        entries.append(
            ConfigEntry(
                name=name,
                value=synonyms[0][1],
                source=synonyms[0][2],
                read_only=True,
                sensitive=False,
                type=ConfigType.LONG,
                synonyms=synonyms,
            )
        )
    return entries


def describe_broker_default(
    config: BrokerConfig, keys: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """The cluster-wide default's entries (a BROKER resource named ""): only the keys set
    there, as Kafka answers."""
    wanted = set(keys) if keys is not None else None
    entries = []
    for name, raw in sorted(config.dynamic_default.items()):
        key = BROKER_CONFIGS.get(name)
        if key is None or (wanted is not None and name not in wanted):
            continue
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=None if key.sensitive else raw,
                source=source,
                read_only=False,
                sensitive=key.sensitive,
                type=_TYPE_OF[key.kind],
                documentation=key.doc or None,
                synonyms=[(name, None if key.sensitive else raw, source)],
            )
        )
    entries.extend(_replication_throttles(config, wanted, default_only=True))
    return entries


def describe_loggers(keys: Iterable[str] | None = None) -> list[ConfigEntry]:
    """This broker's loggers and their levels (a BROKER_LOGGER resource)."""
    from broker import loggers

    names = list(keys) if keys is not None else None
    return [
        ConfigEntry(
            name=name,
            value=level,
            source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
            read_only=False,
            sensitive=False,
            type=ConfigType.STRING,
            synonyms=[],
        )
        for name, level in loggers.describe(names)
    ]
