"""Group configs (KIP-848, Kafka's GroupConfig): a consumer group's own session timeout and
heartbeat interval, over the broker's ``group.consumer.*`` defaults.

Kafka 4 keeps GROUP config resources for any group id, existing or not, and DescribeConfigs
shows every key with the broker's value where the group has none. Kafka's GroupConfig also has
keys for share groups (KIP-932) and streams groups (KIP-1071), which Odradek does not have:
those are unknown keys here (docs/compatibility.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.config import BrokerConfig
from broker.config_describe import ConfigEntry, ConfigSource, ConfigType, broker_key_synonyms
from coordination.errors import InvalidConfig
from coordination.group.config import CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS


@dataclass(frozen=True)
class GroupKey:
    #: the broker config whose value the group takes when it has none of its own
    default: str
    #: the broker configs bounding the group's value, inclusive
    low: str
    high: str


GROUP_CONFIGS: dict[str, GroupKey] = {
    CONSUMER_SESSION_TIMEOUT_MS: GroupKey(
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    CONSUMER_HEARTBEAT_INTERVAL_MS: GroupKey(
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
}


def check_group_key(name: str) -> None:
    if name not in GROUP_CONFIGS:
        raise InvalidConfig(f"Unknown group config name: {name}")


def validate_group_configs(config: BrokerConfig, configs: Mapping[str, str]) -> None:
    """Kafka's GroupConfig.validate: known keys, integers, each within the broker's bounds
    (INVALID_CONFIG with Kafka's messages)."""
    for name, value in configs.items():
        check_group_key(name)
        try:
            number = int(value.strip())
        except ValueError:
            raise InvalidConfig(
                f"Invalid value {value} for configuration {name}: Not a number of type INT"
            ) from None
        key = GROUP_CONFIGS[name]
        low, high = int(config[key.low]), int(config[key.high])
        if not low <= number <= high:
            raise InvalidConfig(f"{name} must be in the range {low} to {high} inclusive.")


def describe_group(
    config: BrokerConfig, overrides: Mapping[str, str], keys: list[str] | None
) -> list[ConfigEntry]:
    """A group's configs: its own (source DYNAMIC_GROUP_CONFIG) or the broker's value, with
    the broker config's synonyms as Kafka 4.4 lists them (where it is set: server.properties,
    STATIC_BROKER_CONFIG, then Kafka's default, DEFAULT_CONFIG); the source of a value the
    group does not set is the first synonym's."""
    out = []
    for name, key in GROUP_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        synonyms = broker_key_synonyms(config, key.default)
        own = overrides.get(name)
        if own is not None:
            value, source = own, ConfigSource.DYNAMIC_GROUP_CONFIG
            synonyms.insert(0, (name, own, source))
        else:
            value = str(config[key.default])
            source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entry = ConfigEntry(name, value, source, read_only=False, sensitive=False,
                            type=ConfigType.INT, synonyms=synonyms)  # fmt: skip
        out.append(entry)
    return out
