"""Describing configs as DescribeConfigs and CreateTopics v5+ report them: value, source,
synonyms and type, for topics and brokers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from broker.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, format_value


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


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
    """Every topic config with its synonyms in precedence order (topic override, static broker
    key, default); the value and source are the first synonym's."""
    wanted = set(keys) if keys is not None else None
    entries = []
    for name, key in sorted(TOPIC_CONFIGS.items()):
        if wanted is not None and name not in wanted:
            continue
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        effective = format_value(key.kind, config.topic_default(name))
        if key.broker_key is not None and key.broker_key in config.explicit:
            synonyms.append((key.broker_key, effective, ConfigSource.STATIC_BROKER_CONFIG))
            synonyms.append(
                (key.broker_key, format_value(key.kind, key.default), ConfigSource.DEFAULT_CONFIG)
            )
        else:
            synonyms.append((key.broker_key or name, effective, ConfigSource.DEFAULT_CONFIG))
        _, value, source = synonyms[0]
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


def describe_broker(config: BrokerConfig, keys: Iterable[str] | None = None) -> list[ConfigEntry]:
    wanted = set(keys) if keys is not None else None
    entries = []
    for name, key in sorted(BROKER_CONFIGS.items()):
        if wanted is not None and name not in wanted:
            continue
        value = None if key.sensitive else format_value(key.kind, config.values.get(name))
        source = (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in config.explicit
            else ConfigSource.DEFAULT_CONFIG
        )
        synonyms = [(name, value, source)]
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=key.read_only,
                sensitive=key.sensitive,
                type=_TYPE_OF[key.kind],
                documentation=key.doc or None,
                synonyms=synonyms,
            )
        )
    return entries
