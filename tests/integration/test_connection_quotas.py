"""Connection creation rates (KIP-612) on a real broker: an ip entity's
``connection_creation_rate`` quota throttles new connections from that address (accepted, never
answered, closed after the throttle time) while other addresses connect as before; the default
ip entity covers addresses without a quota of their own; ``max.connection.creation.rate`` makes
the acceptor wait, and every connection is served in the end.

Each connection comes from a loopback address of its own (127.0.0.2, 127.0.0.3: the source
address of the socket), so the quotas under test never slow the test's own admin requests
from 127.0.0.1. With Kafka's default windows (11 samples of 1 s, a rate measured over at least
10 s), a rate of 1 per second lets a burst of 10 connections through at once and throttles the
next ones: the counts below rely on that, not on timing."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from protocol.headers import encode_request
from tests.integration.broker_process import BrokerProcess
from tests.support.client_quotas import describe_quota, set_quota
from tests.support.metrics import scrape
from tests.support.raw_client import (
    answered_from,
    api_versions,
    call,
    connect,
    is_closed,
    read_frame,
)
from tests.support.waiting import wait_for
from tests.support.zookeeper import free_port

RATE = 1  # connections per second
#: what a rate of RATE lets through at once: the rate is counted over at least 10 windows
BURST = 10 * RATE


def broker_with_metrics(fresh_broker: Callable[..., BrokerProcess], **overrides: str):
    port = free_port()
    return fresh_broker(**{"metrics.port": str(port), **overrides}), port


def test_an_address_over_its_connection_rate_quota_is_throttled_and_others_are_not(
    fresh_broker,
):
    broker, metrics_port = broker_with_metrics(fresh_broker)
    boot = broker.bootstrap
    set_quota(boot, [("ip", "127.0.0.2")], "connection_creation_rate", RATE)
    assert describe_quota(boot, "ip", "127.0.0.2") == [
        ("127.0.0.2", "connection_creation_rate", float(RATE))
    ]

    results = [answered_from(boot, "127.0.0.2") for _ in range(BURST + 10)]
    throttled = results.count(False)
    # the burst is answered; then connections are throttled (the rate stays at the quota, so
    # at most one in a second gets through while the loop runs)
    assert results[:BURST] == [True] * BURST, results
    assert throttled >= 1, results
    # another address has no quota
    assert all(answered_from(boot, "127.0.0.3") for _ in range(BURST + 10))
    samples = scrape(metrics_port)
    assert samples["odradek_connections_throttled_per_ip_total"] == throttled

    # the quota removed: the address connects again at once
    set_quota(boot, [("ip", "127.0.0.2")], "connection_creation_rate", None)
    assert describe_quota(boot, "ip", "127.0.0.2") == []
    assert all(answered_from(boot, "127.0.0.2") for _ in range(5))


def test_the_default_ip_quota_covers_addresses_without_one_of_their_own(fresh_broker):
    broker, _ = broker_with_metrics(fresh_broker)
    boot = broker.bootstrap
    # the test's own address is exempt from the default with a quota of its own
    set_quota(boot, [("ip", "127.0.0.1")], "connection_creation_rate", 100_000)
    set_quota(boot, [("ip", None)], "connection_creation_rate", RATE)

    results = [answered_from(boot, "127.0.0.3") for _ in range(BURST + 10)]
    assert results[:BURST] == [True] * BURST, results
    assert results.count(False) >= 1, results
    assert all(answered_from(boot, "127.0.0.1") for _ in range(BURST + 10))


def test_over_the_broker_connection_rate_the_acceptor_waits_and_serves_everyone(fresh_broker):
    broker, metrics_port = broker_with_metrics(
        fresh_broker, **{"max.connection.creation.rate": str(RATE * 2)}
    )
    boot = broker.bootstrap
    # every connection is answered: over the rate they wait in the listen backlog
    assert all(answered_from(boot, "127.0.0.2") for _ in range(BURST * 2 + 5))
    assert scrape(metrics_port)["odradek_connection_rate_wait_ms_total"] > 0


def test_the_broker_connection_rate_is_a_dynamic_broker_config(fresh_broker):
    broker, metrics_port = broker_with_metrics(fresh_broker)
    boot = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    resource = ConfigResource(
        ResourceType.BROKER,
        "0",
        incremental_configs=[
            ConfigEntry(
                "max.connection.creation.rate",
                str(RATE),
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    assert all(answered_from(boot, "127.0.0.2") for _ in range(BURST + 3))
    assert scrape(metrics_port)["odradek_connection_rate_wait_ms_total"] > 0


def test_listener_limits_and_the_inter_broker_listener_beyond_max_connections(fresh_broker):
    """``listener.name.<listener>.max.connections`` bounds one listener; at the broker's
    ``max.connections`` the inter-broker listener still accepts (Kafka's protected listener,
    KIP-402), so replication goes on when clients hold every connection, and the broker then
    closes the least recently used client connections until it is back within the limit. A
    client over a limit waits in the listen backlog and is served once a connection closes."""
    broker = fresh_broker(
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0,REPLICATION://127.0.0.1:0",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,REPLICATION:PLAINTEXT"
            ),
            "inter.broker.listener.name": "REPLICATION",
            "max.connections": "3",
            "listener.name.external.max.connections": "1",
        }
    )
    external = connect(broker.address("EXTERNAL"))
    call(external, api_versions(), 0)
    # EXTERNAL is at its own limit: the next one waits, PLAINTEXT still takes connections
    waiting = connect(broker.address("EXTERNAL"))
    waiting.sendall(encode_request(api_versions(), 0, 5))
    oldest = connect(broker.address("PLAINTEXT"))
    call(oldest, api_versions(), 0)
    waiting.settimeout(1.0)
    with pytest.raises(TimeoutError):
        read_frame(waiting)
    # the EXTERNAL connection closes: the waiting one is served
    external.close()
    waiting.settimeout(30)
    assert read_frame(waiting)[:4] == struct.pack(">i", 5)
    # the broker at max.connections (3): PLAINTEXT waits, REPLICATION does not
    newest = connect(broker.address("PLAINTEXT"))
    call(newest, api_versions(), 0)
    also_waiting = connect(broker.address("PLAINTEXT"))
    also_waiting.sendall(encode_request(api_versions(), 0, 6))
    replication = [connect(broker.address("REPLICATION")) for _ in range(2)]
    for sock in replication:
        assert call(sock, api_versions(), 0).error_code == 0
    # 5 connections for 3: client connections are closed (each network thread closes its
    # least recently used) until the broker is back within max.connections
    clients = (waiting, oldest, newest)
    wait_for(
        lambda: sum(is_closed(sock, timeout=0.05) for sock in clients) >= 2,
        "two client connections closed",
        timeout=30,
    )
    # below max.connections again: the waiting client is served
    for sock in replication:
        sock.close()
    also_waiting.settimeout(30)
    assert read_frame(also_waiting)[:4] == struct.pack(">i", 6)
    for sock in (*clients, also_waiting):
        sock.close()


def test_a_listener_limit_is_a_dynamic_broker_config(fresh_broker):
    """``listener.name.<listener>.max.connections`` set at runtime bounds that listener from
    then on; deleted, the listener is unbounded again and the waiting client is served."""
    broker = fresh_broker(
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
        }
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    key = "listener.name.external.max.connections"

    def alter(operation: AlterConfigOpType, value: str) -> None:
        resource = ConfigResource(
            ResourceType.BROKER,
            "0",
            incremental_configs=[ConfigEntry(key, value, incremental_operation=operation)],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)

    alter(AlterConfigOpType.SET, "1")
    first = connect(broker.address("EXTERNAL"))
    wait_for(lambda: call(first, api_versions(), 0).error_code == 0, "the first connection served")
    waiting = connect(broker.address("EXTERNAL"))
    waiting.sendall(encode_request(api_versions(), 0, 7))
    waiting.settimeout(1.0)
    with pytest.raises(TimeoutError):
        read_frame(waiting)
    alter(AlterConfigOpType.DELETE, "")
    waiting.settimeout(30)
    assert read_frame(waiting)[:4] == struct.pack(">i", 7)
    first.close()
    waiting.close()
