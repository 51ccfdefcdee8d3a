"""The broker's id at start-up (Kafka's ``KafkaServer.getOrGenerateBrokerId``).

* ``broker.id`` set (>= 0): used; the log dirs' ``meta.properties`` must agree.
* ``broker.id=-1``, or not set at all in cluster mode (Kafka's default is -1; Odradek's 0 is for
  a standalone broker): the id stored in ``meta.properties``, else, with
  ``broker.id.generation.enable``, a new one from ZooKeeper's ``/brokers/seqid``:
  ``reserved.broker.max.id`` + its sequence number (1001, 1002... by default). It is written to
  every log dir's ``meta.properties`` at once, so the broker keeps it across restarts.
* Standalone with ``broker.id=-1`` or unset: the stored id, else 0.

With generation enabled, a configured id may not exceed ``reserved.broker.max.id`` (ids above it
are the generated ones), as Kafka requires.
"""

from __future__ import annotations

import logging

from broker.config import BrokerConfig, ConfigError, ZooKeeperConfig
from storage.checkpoint import MetaProperties, read_meta_properties, write_meta_properties
from storage.files import META_PROPERTIES

log = logging.getLogger(__name__)


def stored_broker_id(config: BrokerConfig) -> int | None:
    """The id every log dir's ``meta.properties`` names (ConfigError when they disagree)."""
    ids = {}
    for d in config.log_dirs:
        meta = read_meta_properties(d / META_PROPERTIES)
        if meta is not None and meta.broker_id is not None:
            ids[str(d)] = meta.broker_id
    if len(set(ids.values())) > 1:
        raise ConfigError(
            "Failed to match broker.id across log.dirs: meta.properties name "
            + ", ".join(f"{i} in {d}" for d, i in sorted(ids.items()))
        )
    return next(iter(ids.values()), None)


def resolve_broker_id(config: BrokerConfig) -> int:
    """This broker's id (see the module's rules); a generated one is kept in ``meta.properties``.
    Raises ConfigError (a message for the operator) or a ZooKeeper start-up error."""
    cluster = bool(config["zookeeper.connect"])
    configured = int(config["broker.id"])
    if "broker.id" not in config.explicit:
        configured = -1  # Kafka's default
    generation = bool(config["broker.id.generation.enable"])
    reserved = int(config["reserved.broker.max.id"])
    stored = stored_broker_id(config)
    if configured < -1:
        raise ConfigError(f"broker.id must be >= -1, not {configured}")
    if configured >= 0:
        if generation and configured > reserved:
            raise ConfigError(
                f"broker.id {configured} is above reserved.broker.max.id ({reserved}): ids above "
                "it are generated (broker.id.generation.enable); set broker.id=-1 or raise "
                "reserved.broker.max.id"
            )
        if stored is not None and stored != configured:
            raise ConfigError(
                f"Configured broker.id {configured} doesn't match stored broker.id {stored} in "
                "meta.properties. If you moved your data, make sure your configured broker.id "
                "matches. If you intend to create a new broker, you should remove all data in "
                "your data directories (log.dirs)."
            )
        return configured
    if stored is not None:
        return stored
    if not cluster:
        return 0
    if not generation:
        raise ConfigError(
            "broker.id must be set (>= 0) when broker.id.generation.enable is false and no "
            "meta.properties names one"
        )
    from coordination.zk.registration import generate_broker_sequence_id

    zk = ZooKeeperConfig.from_broker(config)
    timeout_ms = zk.connection_timeout_ms or zk.session_timeout_ms
    broker_id = reserved + generate_broker_sequence_id(
        zk.connect, session_timeout_ms=zk.session_timeout_ms, timeout_s=timeout_ms / 1000
    )
    for d in config.log_dirs:
        path = d / META_PROPERTIES
        meta = read_meta_properties(path)
        cluster_id = meta.cluster_id if meta is not None else None
        write_meta_properties(path, MetaProperties(broker_id, cluster_id))
    log.info("generated broker.id %d from ZooKeeper's /brokers/seqid", broker_id)
    return broker_id
