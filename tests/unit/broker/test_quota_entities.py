"""AlterClientQuotas' checks of an entity and a value, as Kafka's ZkAdminManager makes them
(the differential corpus's edge/client-quota-refusals compares the answers with Kafka's)."""

from __future__ import annotations

import pytest

from broker.handlers._quotas import InvalidQuota, entity_to_path
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
    ],
)
def test_entities_kafka_refuses(components: list[tuple[str, str | None]]) -> None:
    with pytest.raises(InvalidQuota):
        entity_to_path(components)


def test_default_entities_are_named_by_none() -> None:
    assert entity_to_path([("user", None), ("client-id", None)])
    assert entity_to_path([("client-id", "c")])


@pytest.mark.parametrize(
    ("key", "value", "stored"),
    [
        ("producer_byte_rate", 1024.0, "1024"),
        ("producer_byte_rate", 0.0, "0"),
        ("consumer_byte_rate", -5.0, None),
        ("consumer_byte_rate", 1.5, None),
        ("request_percentage", -1.0, "-1.0"),
        ("controller_mutation_rate", 2.5, "2.5"),
        ("connection_creation_rate", 5.0, None),
    ],
)
def test_quota_values(key: str, value: float, stored: str | None) -> None:
    if stored is None:
        with pytest.raises(InvalidQuota):
            _value(key, value)
    else:
        assert _value(key, value) == stored
