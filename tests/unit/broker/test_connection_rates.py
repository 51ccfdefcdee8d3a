"""Connection creation rates (KIP-612): the rate arithmetic of
:class:`broker.net.limits.ConnectionQuotas` on a given clock, and the ip entities' quotas as the
security store holds them."""

from __future__ import annotations

from broker.handlers._quotas import IP, entity_to_path, path_to_entity, quota_keys
from broker.net.limits import UNLIMITED, ConnectionQuotas
from broker.security.quotas import ip_connection_rates
from coordination.metadata.security import IP_CONNECTION_RATE, ip_entity_path, is_entity_path


def quotas(**kwargs: int) -> ConnectionQuotas:
    return ConnectionQuotas(max_connections=UNLIMITED, max_connections_per_ip=UNLIMITED, **kwargs)


def test_an_address_gets_its_burst_then_is_throttled_for_at_most_a_window() -> None:
    q = quotas()
    q.set_ip_rates(None, {"10.0.0.1": 2})
    now = 1_000_000
    # a rate spans at least 10 windows of 1 s: 20 connections at once are within 2/s
    assert [q.record_ip("10.0.0.1", "CLIENTS", now) for _ in range(20)] == [0] * 20
    throttle = q.record_ip("10.0.0.1", "CLIENTS", now)
    assert 0 < throttle <= 1000
    assert q.throttled_per_ip == 1
    # the throttled connection was taken back out: 10.6 s later the window is 10.6 s and one
    # more is within 2/s (21 connections; with the throttled one it would be 22, over)
    assert q.record_ip("10.0.0.1", "CLIENTS", now + 10_600) == 0
    # another address has no quota
    assert all(q.record_ip("10.0.0.2", "CLIENTS", now) == 0 for _ in range(100))


def test_the_default_rate_covers_addresses_without_their_own() -> None:
    q = quotas()
    q.set_ip_rates(1, {"10.0.0.1": 100})
    now = 5_000
    assert [q.record_ip("10.0.0.9", "CLIENTS", now) for _ in range(10)] == [0] * 10
    assert q.record_ip("10.0.0.9", "CLIENTS", now) > 0
    assert all(q.record_ip("10.0.0.1", "CLIENTS", now) == 0 for _ in range(100))
    q.set_ip_rates(None, {})
    assert q.record_ip("10.0.0.9", "CLIENTS", now) == 0


def test_the_broker_rate_makes_the_acceptor_wait_and_throttled_ips_do_not_count() -> None:
    q = quotas(max_connection_creation_rate=3)
    q.set_ip_rates(None, {"10.0.0.1": 1})
    now = 0
    for _ in range(10):
        assert q.record_connection("CLIENTS", now) == 0
        assert q.record_ip("10.0.0.1", "CLIENTS", now) == 0
    # the 11th from 10.0.0.1 is throttled: it is taken back out of the broker's rate too
    for _ in range(5):
        assert q.record_connection("CLIENTS", now) == 0
        assert q.record_ip("10.0.0.1", "CLIENTS", now) > 0
    assert [q.record_connection("CLIENTS", now) for _ in range(20)] == [0] * 20
    wait = q.record_connection("CLIENTS", now)
    assert 0 < wait <= 1000
    assert q.rate_wait_ms == wait
    # unlimited (Kafka's default): nothing is measured
    assert quotas().record_connection("CLIENTS", now) == 0


def test_a_listener_has_its_own_rate_and_the_protected_listener_is_exempt() -> None:
    q = quotas(max_connection_creation_rate=1, listener_creation_rates={"REPLICATION": 2})
    q.protected_listener = "REPLICATION"
    now = 0
    # the protected listener: only its own rate (2/s: 20 at once), not the broker's (1/s)
    assert [q.record_connection("REPLICATION", now) for _ in range(20)] == [0] * 20
    assert q.record_connection("REPLICATION", now) > 0
    # another listener: the broker's rate, which the protected listener did not use
    assert [q.record_connection("CLIENTS", now) for _ in range(10)] == [0] * 10
    assert q.record_connection("CLIENTS", now) > 0


def test_slots_per_listener_and_the_protected_listener_beyond_max_connections() -> None:
    q = ConnectionQuotas(
        max_connections=2,
        max_connections_per_ip=100,
        listener_max_connections={"EXTERNAL": 1},
    )
    q.protected_listener = "REPLICATION"
    rooms: list[bool] = []
    q.on_room = lambda: rooms.append(True)
    assert q.try_open("10.0.0.1", "EXTERNAL")
    # EXTERNAL is at its own limit, CLIENTS is not
    assert not q.slot_available("EXTERNAL") and q.slot_available("CLIENTS")
    assert q.try_open("10.0.0.2", "CLIENTS")
    # the broker is at max.connections: only the protected listener has a slot
    assert not q.slot_available("CLIENTS") and q.slot_available("REPLICATION")
    assert q.try_open("10.0.0.3", "REPLICATION")
    q.closed("10.0.0.3", "REPLICATION")
    assert rooms == [True]  # (the total was over max.connections)
    q.closed("10.0.0.1", "EXTERNAL")
    assert q.slot_available("EXTERNAL") and len(rooms) == 2


def test_ip_entities_paths_and_keys() -> None:
    assert entity_to_path([(IP, "10.0.0.1")]) == ip_entity_path("10.0.0.1") == "ips/10.0.0.1"
    assert entity_to_path([(IP, None)]) == "ips/<default>"
    assert path_to_entity("ips/::1") == {IP: "::1"}
    assert path_to_entity("ips/<default>") == {IP: None}
    assert quota_keys("ips/10.0.0.1") == {IP_CONNECTION_RATE: "INT"}
    assert IP_CONNECTION_RATE not in quota_keys("users/alice")
    assert is_entity_path("ips/localhost") and not is_entity_path("ips/a/b")


def test_ip_rates_from_the_entity_configs_resolve_host_names() -> None:
    default, per_ip = ip_connection_rates(
        {
            "ips/<default>": {IP_CONNECTION_RATE: "50"},
            "ips/10.0.0.1": {IP_CONNECTION_RATE: "5"},
            "ips/0:0:0:0:0:0:0:2": {IP_CONNECTION_RATE: "6"},
            "ips/localhost": {IP_CONNECTION_RATE: "7"},
            "ips/no-such-host.invalid": {IP_CONNECTION_RATE: "8"},
            "users/alice": {"producer_byte_rate": "1024"},
        }
    )
    assert default == 50
    # addresses in the form the acceptor sees a peer's; a host name by its address; one that
    # does not resolve is left out
    assert per_ip["10.0.0.1"] == 5
    assert per_ip["::2"] == 6
    assert per_ip[next(a for a in per_ip if a in ("127.0.0.1", "::1"))] == 7
    assert len(per_ip) == 3
