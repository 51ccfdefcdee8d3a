"""Why a broker cannot join a ZooKeeper cluster. Start-up stops with one of these (the process
exits non-zero); kept free of kazoo so that the broker can catch them without importing it."""

from __future__ import annotations


class ZooKeeperStartupError(RuntimeError):
    """The broker cannot join the cluster; start-up stops and the process exits non-zero."""


class ZooKeeperUnavailable(ZooKeeperStartupError):
    """No connection to ZooKeeper within ``zookeeper.connection.timeout.ms``."""


class BrokerIdInUse(ZooKeeperStartupError):
    """``/brokers/ids/<id>`` is held by another live session (another broker, or this broker's
    previous process whose session ZooKeeper has not yet expired)."""


class InconsistentClusterId(ZooKeeperStartupError):
    """``/cluster/id`` names another cluster than the one this broker (its configuration or its
    log dirs' ``meta.properties``) belongs to."""
