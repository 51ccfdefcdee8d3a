"""A group's configs as DescribeConfigs shows them (KIP-848, Kafka's GroupConfig): the group's
own value, or the broker's, with the broker key's synonyms where Kafka 4.4 lists them (asked of
Kafka 4.4: a ``group.consumer.session.timeout.ms`` in server.properties is the value's source,
STATIC_BROKER_CONFIG, before Kafka's default)."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.config_describe import ConfigSource
from broker.group_configs import describe_group

STATIC = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT = ConfigSource.DEFAULT_CONFIG
GROUP = ConfigSource.DYNAMIC_GROUP_CONFIG
KEY = "group.consumer.session.timeout.ms"


def _session_timeout(config: BrokerConfig, overrides: dict[str, str]) -> tuple:  # type: ignore[type-arg]
    (entry,) = describe_group(config, overrides, ["consumer.session.timeout.ms"])
    return entry.value, entry.source, entry.synonyms


def test_the_brokers_default() -> None:
    config = BrokerConfig.from_dict({})
    assert _session_timeout(config, {}) == ("45000", DEFAULT, [(KEY, "45000", DEFAULT)])


def test_the_brokers_static_value_is_the_source() -> None:
    config = BrokerConfig.from_dict({KEY: "50000"})
    assert _session_timeout(config, {}) == (
        "50000",
        STATIC,
        [(KEY, "50000", STATIC), (KEY, "45000", DEFAULT)],
    )


def test_the_groups_own_value_comes_first() -> None:
    config = BrokerConfig.from_dict({KEY: "50000"})
    own = {"consumer.session.timeout.ms": "55000"}
    assert _session_timeout(config, own) == (
        "55000",
        GROUP,
        [
            ("consumer.session.timeout.ms", "55000", GROUP),
            (KEY, "50000", STATIC),
            (KEY, "45000", DEFAULT),
        ],
    )
