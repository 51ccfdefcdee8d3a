"""coordination.metadata.assign_replicas: Kafka's AdminUtils assignment, rack-unaware and aware."""

from __future__ import annotations

from collections import Counter

import pytest

from coordination.errors import InvalidReplicationFactor
from coordination.metadata.assignment import assign_replicas
from coordination.metadata.view import BrokerInfo, Endpoint


def brokers(racks: dict[int, str | None]) -> list[BrokerInfo]:
    return [
        BrokerInfo(i, (Endpoint("PLAINTEXT", "h", 9000 + i),), rack=r) for i, r in racks.items()
    ]


def test_rack_unaware_matches_kafka() -> None:
    # Kafka's documented example (AdminUtils): 5 brokers, 10 partitions, RF 3, start 0, shift 0
    got = assign_replicas(brokers(dict.fromkeys(range(5))), 10, 3, start_index=0, replica_shift=0)
    assert got == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
        [3, 4, 0],
        [4, 0, 1],
        [0, 2, 3],
        [1, 3, 4],
        [2, 4, 0],
        [3, 0, 1],
        [4, 1, 2],
    ]


def test_leaders_spread_evenly() -> None:
    got = assign_replicas(brokers({1: None, 2: None, 3: None}), 9, 2, start_index=2)
    assert Counter(r[0] for r in got) == {1: 3, 2: 3, 3: 3}
    assert all(len(set(r)) == 2 for r in got)


@pytest.mark.parametrize("start", range(6))
@pytest.mark.parametrize("shift", range(6))
def test_rack_aware_uses_every_rack(start: int, shift: int) -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    got = assign_replicas(brokers(racks), 12, 3, start_index=start, replica_shift=shift)
    for replicas in got:
        assert len(set(replicas)) == 3
        assert {racks[r] for r in replicas} == {"a", "b", "c"}
    assert Counter(r[0] for r in got) == dict.fromkeys(racks, 2)


def test_rack_aware_with_more_replicas_than_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    for replicas in assign_replicas(brokers(racks), 8, 3, start_index=1, replica_shift=3):
        assert len(set(replicas)) == 3
        assert {racks[r] for r in replicas} == {"a", "b"}


def test_too_few_brokers() -> None:
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas(brokers({1: None}), 1, 2)
