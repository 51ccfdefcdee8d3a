"""A broker's place in the cluster's ZooKeeper: the chroot, the cluster id, and the broker's
ephemeral registration (Kafka's ``KafkaZkClient.registerBroker`` and ``getOrCreateClusterId``).

* :func:`ensure_chroot` creates a missing chroot with a client that has none, as Kafka does.
* :meth:`BrokerRegistration.cluster_id` reads ``/cluster/id`` or creates it (first broker); it
  refuses to join when it differs from the configured ``cluster.id`` or from the log dirs'
  ``meta.properties`` (:class:`~coordination.zk.errors.InconsistentClusterId`).
* :func:`generate_broker_sequence_id` hands out ``broker.id``s (``broker.id=-1``) from
  ``/brokers/seqid``'s version, as Kafka does.
* :meth:`BrokerRegistration.register` creates ``/brokers/ids/<id>`` EPHEMERAL in one multi-op
  (create + set data); a node owned by another session is
  :class:`~coordination.zk.errors.BrokerIdInUse`. The node's czxid is the broker epoch.

Thread-safety: used by the store's start-up and then only by its worker thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from coordination.metadata.view import BrokerInfo, random_kafka_uuid, uuid_to_base64
from coordination.zk import data as zd
from coordination.zk.client import Op, Stat, ZkClient, first_failure, split_connect
from coordination.zk.errors import (
    BrokerIdInUse,
    InconsistentClusterId,
    ZooKeeperStartupError,
    ZooKeeperUnavailable,
)

log = logging.getLogger(__name__)


def ensure_chroot(hosts: str, chroot: str, *, session_timeout_ms: int, timeout_s: float) -> None:
    """Kafka creates a missing chroot path with a client that has no chroot."""
    client = KazooClient(hosts=hosts, timeout=session_timeout_ms / 1000)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        raise ZooKeeperUnavailable(
            f"could not connect to ZooKeeper at {hosts} within {int(timeout_s * 1000)} ms "
            "(zookeeper.connection.timeout.ms)"
        ) from None
    try:
        ZkClient(client, max(timeout_s, 10.0)).ensure_path(chroot)
    finally:
        client.stop()
        client.close()


class BrokerRegistration:
    """This broker's cluster id check and ephemeral registration."""

    def __init__(
        self,
        zk: ZkClient,
        broker: BrokerInfo,
        *,
        connect: str,
        session_timeout_ms: int,
        security_protocol_map: Mapping[str, str],
        jmx_port: int = -1,
    ) -> None:
        self.zk = zk
        self.broker = broker
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        self.security_protocol_map = dict(security_protocol_map)
        self.jmx_port = jmx_port
        #: the session that made the current registration (0: none yet)
        self.registered_session = 0
        #: the registration's czxid (Kafka's broker epoch); -1 before registering
        self.broker_epoch = -1

    def cluster_id(self, *, expected: str | None, stored: str | None) -> str:
        """``/cluster/id``, created when missing; InconsistentClusterId when it is not the
        configured (``expected``) or the log dirs' (``stored``) cluster id."""
        got = self.zk.get(zd.CLUSTER_ID_PATH)
        if got is None:
            new_id = expected or uuid_to_base64(random_kafka_uuid())
            try:
                self.zk.create(zd.CLUSTER_ID_PATH, zd.encode_cluster_id(new_id), makepath=True)
                log.info("created cluster id %s in ZooKeeper", new_id)
            except NodeExistsError:
                pass
            got = self.zk.get(zd.CLUSTER_ID_PATH)
            if got is None:
                raise ZooKeeperStartupError(f"{zd.CLUSTER_ID_PATH} vanished while being read")
        cluster_id = zd.decode_cluster_id(got[0])
        if expected and expected != cluster_id:
            raise InconsistentClusterId(
                f"The cluster id {cluster_id} in ZooKeeper ({self.connect}{zd.CLUSTER_ID_PATH}) "
                f"does not match this broker's cluster id {expected}. The broker is trying to "
                "join the wrong cluster: zookeeper.connect may be wrong."
            )
        if stored and stored != cluster_id:
            raise InconsistentClusterId(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored} in "
                "meta.properties. The broker is trying to join the wrong cluster. Configured "
                "zookeeper.connect may be wrong."
            )
        return cluster_id

    def check_cluster_id(self, cluster_id: str) -> None:
        """A ZooKeeper that was wiped or swapped for another cluster's must not be applied: its
        (lack of) topics would make this broker delete its logs."""
        got = self.zk.get(zd.CLUSTER_ID_PATH)
        found = None if got is None else zd.decode_cluster_id(got[0])
        if found != cluster_id:
            raise InconsistentClusterId(
                f"ZooKeeper ({self.connect}) now holds cluster id {found}, but broker "
                f"{self.broker.broker_id} belongs to cluster {cluster_id}: ignoring ZooKeeper's "
                "state until this is resolved"
            )

    @property
    def stale(self) -> bool:
        """Whether the session changed since the registration (it expired and was replaced)."""
        return self.registered_session != self.zk.session_id

    def register(self) -> None:
        """Creates ``/brokers/ids/<id>`` (create + set data in one multi-op, as Kafka does)."""
        broker_id = self.broker.broker_id
        path = zd.broker_path(broker_id)
        data = zd.encode_broker_registration(
            self.broker,
            timestamp_ms=int(time.time() * 1000),
            security_protocol_map=self.security_protocol_map,
            jmx_port=self.jmx_port,
        )
        session = self.zk.session_id
        results = self.zk.multi([Op.create(path, data, ephemeral=True), Op.set(path, data)])
        failure = first_failure(results)
        if failure is None:
            stat = results[1]
            assert isinstance(stat, Stat)
            self.broker_epoch = stat.czxid
        elif isinstance(failure[1], NodeExistsError):
            got = self.zk.get(path)
            if got is None:  # the other session just ended: try again
                return self.register()
            stat = got[1]
            if stat.ephemeral_owner != session:
                raise BrokerIdInUse(
                    f"broker.id {broker_id} is already registered in ZooKeeper "
                    f"({self.connect}{path}) by another session (0x{stat.ephemeral_owner:x}, "
                    f"ours 0x{session:x}): another broker runs with this id. Choose another "
                    "broker.id, or, if this broker was just restarted after a crash, wait "
                    f"for ZooKeeper to expire the old session "
                    f"(zookeeper.session.timeout.ms={self.session_timeout_ms})."
                )
            self.broker_epoch = stat.czxid
        else:
            raise failure[1]
        self.registered_session = session
        log.info("registered %s (broker epoch %d)", path, self.broker_epoch)


def generate_broker_sequence_id(connect: str, *, session_timeout_ms: int, timeout_s: float) -> int:
    """Kafka's ``KafkaZkClient.generateBrokerSequenceId``: an unconditional write of
    ``/brokers/seqid`` (created when missing), whose new version is the sequence number (1, 2,
    ...); the broker's id is ``reserved.broker.max.id`` plus it."""
    hosts, chroot = split_connect(connect)
    if chroot:
        ensure_chroot(hosts, chroot, session_timeout_ms=session_timeout_ms, timeout_s=timeout_s)
    client = KazooClient(hosts=hosts + chroot, timeout=session_timeout_ms / 1000)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        raise ZooKeeperUnavailable(
            f"could not connect to ZooKeeper at {connect} within {int(timeout_s * 1000)} ms "
            "(zookeeper.connection.timeout.ms)"
        ) from None
    try:
        zk = ZkClient(client, max(timeout_s, 10.0))
        try:
            stat = zk.set(zd.BROKER_SEQUENCE_ID_PATH, b"")
        except NoNodeError:
            zk.ensure_path(zd.BROKER_SEQUENCE_ID_PATH)
            stat = zk.set(zd.BROKER_SEQUENCE_ID_PATH, b"")
        return int(stat.version)
    finally:
        client.stop()
        client.close()
