"""AlterClientQuotas' checks of an entity and a value, as Kafka's ZkAdminManager makes them
(the differential corpus's edge/client-quota-refusals compares the answers with Kafka's)."""

from __future__ import annotations

import pytest

from broker.handlers._quotas import IP_QUOTA_KEYS, USER_QUOTA_KEYS, InvalidQuota, entity_to_path
from broker.handlers.alter_client_quotas import _value


@pytest.mark.parametrize(
    "components",
    [
        [("user", "")],
        [("client-id", "")],
        [("user", "u"), ("client-id", "")],
        [],
        [("group", "g")],
        [("user", "u"), ("user", "v")],
        [("ip", "127.0.0.1"), ("user", "u")],
        [("ip", "no-such-host.invalid")],
    ],
)
def test_entities_kafka_refuses(components: list[tuple[str, str | None]]) -> None:
    with pytest.raises(InvalidQuota):
        entity_to_path(components)


def test_default_entities_are_named_by_none() -> None:
    assert entity_to_path([("user", None), ("client-id", None)])
    assert entity_to_path([("client-id", "c")])


@pytest.mark.parametrize(
    ("keys", "key", "value", "stored"),
    [
        (USER_QUOTA_KEYS, "producer_byte_rate", 1024.0, "1024"),
        (USER_QUOTA_KEYS, "producer_byte_rate", 0.0, "0"),
        (USER_QUOTA_KEYS, "consumer_byte_rate", -5.0, None),
        (USER_QUOTA_KEYS, "consumer_byte_rate", 1.5, None),
        (USER_QUOTA_KEYS, "request_percentage", -1.0, "-1.0"),
        (USER_QUOTA_KEYS, "controller_mutation_rate", 2.5, "2.5"),
        (USER_QUOTA_KEYS, "connection_creation_rate", 5.0, None),
        # an ip entity's only key, an INT (KIP-612)
        (IP_QUOTA_KEYS, "connection_creation_rate", 5.0, "5"),
        (IP_QUOTA_KEYS, "connection_creation_rate", 0.0, "0"),
        (IP_QUOTA_KEYS, "connection_creation_rate", 2.5, None),
        (IP_QUOTA_KEYS, "connection_creation_rate", -3.0, None),
        (IP_QUOTA_KEYS, "connection_creation_rate", 2.0**31, None),
        (IP_QUOTA_KEYS, "producer_byte_rate", 5.0, None),
    ],
)
def test_quota_values(keys: dict[str, str], key: str, value: float, stored: str | None) -> None:
    if stored is None:
        with pytest.raises(InvalidQuota):
            _value(keys, key, value)
    else:
        assert _value(keys, key, value) == stored
