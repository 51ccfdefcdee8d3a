"""Kafka's ZooKeeper layout: znode paths and their JSON, exactly as Kafka's ZooKeeper mode writes.

Pure functions, no ZooKeeper client (Kafka's ``ZkData``). Every document is compact JSON
(``separators=(",", ":")``), keys in the order Kafka writes them; timestamps and producer ids are
strings, as in Kafka.

=============================================  ==========  ========================================
path                                           mode        content
=============================================  ==========  ========================================
``/cluster/id``                                persistent  ``{"version":"1","id":"<22 chars>"}``
``/brokers/ids/<id>``                          ephemeral   registration, version 5 (see below)
``/brokers/topics/<t>``                        persistent  ``{"version":3,"partitions":{"0":[1,2]},
                                                           "adding_replicas":{},
                                                           "removing_replicas":{},
                                                           "topic_id":"<22 chars>"}``
``/brokers/topics/<t>/partitions/<p>/state``   persistent  ``{"version":1,"leader":1,
                                                           "leader_epoch":0,"controller_epoch":1,
                                                           "isr":[1,2]}``
``/controller``                                ephemeral   ``{"version":2,"brokerid":1,
                                                           "timestamp":"…",
                                                           "kraftControllerEpoch":-1}``
``/controller_epoch``                          persistent  ``1`` (text)
``/config/<type>/<name>``                      persistent  ``{"version":1,"config":{"k":"v"}}``
``/config/changes/config_change_<10 digits>``  sequential  ``{"version":2,
                                                           "entity_path":"topics/t"}``
``/admin/delete_topics/<t>``                   persistent  no data
``/admin/reassign_partitions``                 persistent  ``{"version":1,"partitions":[
                                                           {"topic":"t","partition":0,
                                                           "replicas":[1,2]}]}``
``/admin/preferred_replica_election``          persistent  ``{"version":1,"partitions":[
                                                           {"topic":"t","partition":0}]}``
``/latest_producer_id_block``                  persistent  ``{"version":1,"broker":1,
                                                           "block_start":"0","block_end":"999"}``
``/feature``                                   persistent  ``{"version":2,"status":1,
                                                           "features":{}}``
``/isr_change_notification/isr_change_<n>``    sequential  ``{"version":1,"partitions":[
                                                           {"topic":"t","partition":0}]}``
``/log_dir_event_notification/<n>``            sequential  ``{"version":1,"broker":1,"event":1}``
``/brokers/offline_replicas/<id>``             ephemeral   ``{"version":1,"broker_epoch":42,
                                                           "partitions":[{"topic":"t",
                                                           "partition":0}]}`` (Odradek's own)
=============================================  ==========  ========================================

A broker registration (``/brokers/ids/<id>``, version 5)::

    {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
     "endpoints":["PLAINTEXT://host:9092"],"jmx_port":-1,"port":9092,"host":"host",
     "timestamp":"1700000000000","version":5}

plus ``"rack"`` when the broker has one; ``host``/``port`` come from the first endpoint whose
security protocol is PLAINTEXT (``null``/``-1`` when there is none).

A log dir failure (KIP-112) is announced as Kafka's ZooKeeper-mode brokers announce it: a
sequential ``log_dir_event_<10 digits>`` under ``/log_dir_event_notification`` naming the broker
(``event`` 1 is Kafka's LogDirFailure, its only event), which the controller deletes once
handled. Kafka's controller then asks the broker which of its replicas are offline (its
LeaderAndIsr answers); Odradek's brokers follow ZooKeeper instead of receiving LeaderAndIsr, so
the broker also keeps the answer in ZooKeeper: ``/brokers/offline_replicas/<id>``, ephemeral
(it goes with the broker's session: a restarted broker starts with none), holding the broker
epoch (its registration's czxid) it was written under and the replicas in its offline log dirs.
Kafka's layout has no such node; Kafka's tools ignore it.

Decoders raise :class:`ZkDataError` (a ``ValueError``) on a document they cannot read.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordination.metadata.view import BrokerInfo, Endpoint, uuid_from_base64, uuid_to_base64

# --- paths -----------------------------------------------------------------------------------

CLUSTER_ID_PATH = "/cluster/id"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS_PATH = "/admin/delete_topics"
#: Kafka's legacy reassignment znode (before KIP-455's API; still honoured in ZooKeeper mode)
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
#: Kafka's legacy preferred replica election znode (kafka-preferred-replica-election.sh)
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
#: Kafka's LogDirEventNotificationSequenceZNode.SequenceNumberPrefix
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
#: Kafka's LogDirEventNotificationSequenceZNode.LogDirFailureEvent (the only event there is)
LOG_DIR_FAILURE_EVENT = 1
#: Odradek's own: each broker's replicas in offline log dirs (ephemeral children by broker id)
OFFLINE_REPLICAS_PATH = "/brokers/offline_replicas"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
FEATURE_PATH = "/feature"
#: Odradek's own: the feature levels finalized with UpdateFeatures (KIP-584). Kafka's ZooKeeper
#: mode keeps them in /feature, but a Kafka 3.9 broker that finds there a level it does not
#: support stops, so Odradek's levels (transaction.version 2) live beside it.
FEATURE_LEVELS_PATH = "/odradek/features"
CONSUMERS_PATH = "/consumers"

CONFIG_TYPE_TOPICS = "topics"
CONFIG_TYPE_BROKERS = "brokers"
#: Kafka's ConfigType.CLIENT_METRICS: ``/config/client-metrics/<subscription>`` (KIP-714)
CONFIG_TYPE_CLIENT_METRICS = "client-metrics"
#: Kafka 4's ConfigType.GROUP: ``/config/groups/<group id>`` (KIP-848's group configs; Kafka
#: keeps them in KRaft only, Odradek where Kafka's ZooKeeper layout would have them)
CONFIG_TYPE_GROUPS = "groups"
#: Kafka's ConfigType.all
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")

#: What Kafka's brokers create at start-up (ZkData.PersistentZkPaths), in that order.
PERSISTENT_PATHS = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    *(f"{CONFIG_PATH}/{t}" for t in CONFIG_TYPES),
)

#: The controller epoch before any controller was elected (the first controller's epoch is 1).
INITIAL_CONTROLLER_EPOCH = 0


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def offline_replicas_path(broker_id: int) -> str:
    return f"{OFFLINE_REPLICAS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def config_entity_path(config_type: str, name: str) -> str:
    return f"{CONFIG_PATH}/{config_type}/{name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


_STATE_PATH = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")


def parse_partition_state_path(path: str) -> tuple[str, int] | None:
    m = _STATE_PATH.match(path)
    return (m.group(1), int(m.group(2))) if m else None


def parse_topic_path(path: str) -> str | None:
    prefix = TOPICS_PATH + "/"
    if path.startswith(prefix) and "/" not in path[len(prefix) :]:
        return path[len(prefix) :]
    return None


def config_change_sequence(child: str) -> int | None:
    """``config_change_0000000042`` -> 42."""
    if not child.startswith(CONFIG_CHANGE_PREFIX):
        return None
    digits = child[len(CONFIG_CHANGE_PREFIX) :]
    return int(digits) if digits.isdigit() else None


# --- JSON ------------------------------------------------------------------------------------


class ZkDataError(ValueError):
    """A znode whose content is not what Kafka writes there."""


def to_json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def from_json(data: bytes | None, what: str) -> Any:
    if not data:
        raise ZkDataError(f"{what}: no data")
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ZkDataError(f"{what}: not JSON: {e}") from None


def _object(data: bytes | None, what: str) -> dict[str, Any]:
    doc = from_json(data, what)
    if not isinstance(doc, dict):
        raise ZkDataError(f"{what}: not a JSON object")
    return doc


def _int(value: Any, what: str) -> int:
    """An integer, also from a string (Kafka writes some numbers as strings)."""
    if isinstance(value, bool):
        raise ZkDataError(f"{what}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise ZkDataError(f"{what}: expected an integer, got {value!r}")


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZkDataError(f"{what}: expected a list, got {value!r}")
    return tuple(_int(v, what) for v in value)


# /cluster/id


def encode_cluster_id(cluster_id: str) -> bytes:
    return to_json({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None) -> str:
    doc = _object(data, CLUSTER_ID_PATH)
    cluster_id = doc.get("id")
    if not isinstance(cluster_id, str) or not cluster_id:
        raise ZkDataError(f"{CLUSTER_ID_PATH}: no id")
    return cluster_id


# /brokers/ids/<id>

BROKER_REGISTRATION_VERSION = 5


def format_address(host: str, port: int) -> str:
    """Kafka's Utils.formatAddress: IPv6 literals in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_ENDPOINT = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:/]*):(-?\d+)$")


def parse_endpoint(text: str) -> Endpoint:
    """``"PLAINTEXT://host:9092"`` (or ``"SSL://[::1]:9093"``) -> Endpoint."""
    m = _ENDPOINT.match(text)
    if not m:
        raise ZkDataError(f"invalid endpoint {text!r}")
    host = m.group(2)
    if host.startswith("["):
        host = host[1:-1]
    return Endpoint(m.group(1).upper(), host, int(m.group(3)))


def encode_broker_registration(
    broker: BrokerInfo,
    *,
    timestamp_ms: int,
    security_protocol_map: Mapping[str, str] | None = None,
    jmx_port: int = -1,
    features: Mapping[str, Mapping[str, int]] | None = None,
) -> bytes:
    protocols = {
        ep.listener: (security_protocol_map or {}).get(ep.listener, ep.listener)
        for ep in broker.endpoints
    }
    plaintext = next((ep for ep in broker.endpoints if protocols[ep.listener] == "PLAINTEXT"), None)
    doc: dict[str, Any] = {
        "features": {k: dict(v) for k, v in (features or {}).items()},
        "listener_security_protocol_map": protocols,
        "endpoints": [
            f"{ep.listener}://{format_address(ep.host, ep.port)}" for ep in broker.endpoints
        ],
        "jmx_port": jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "timestamp": str(timestamp_ms),
    }
    if broker.rack is not None:
        doc["rack"] = broker.rack
    doc["version"] = BROKER_REGISTRATION_VERSION
    return to_json(doc)


def decode_broker_registration(broker_id: int, data: bytes | None) -> BrokerInfo:
    """Any registration version Kafka wrote (1-5)."""
    what = broker_path(broker_id)
    doc = _object(data, what)
    endpoints: list[Endpoint] = []
    raw = doc.get("endpoints")
    if isinstance(raw, list) and raw:
        endpoints = [parse_endpoint(str(e)) for e in raw]
    else:
        host, port = doc.get("host"), doc.get("port")
        if not isinstance(host, str):
            raise ZkDataError(f"{what}: no endpoints")
        endpoints = [Endpoint("PLAINTEXT", host, _int(port, what))]
    rack = doc.get("rack")
    return BrokerInfo(
        broker_id=broker_id,
        endpoints=tuple(endpoints),
        rack=rack if isinstance(rack, str) else None,
    )


# /brokers/topics/<t>

TOPIC_ZNODE_VERSION = 3


@dataclass(frozen=True)
class TopicAssignment:
    """The content of ``/brokers/topics/<t>``."""

    topic_id: uuid.UUID | None
    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]]
    removing_replicas: Mapping[int, tuple[int, ...]]


def encode_topic_assignment(
    topic_id: uuid.UUID | None,
    partitions: Mapping[int, Sequence[int]],
    *,
    adding_replicas: Mapping[int, Sequence[int]] | None = None,
    removing_replicas: Mapping[int, Sequence[int]] | None = None,
) -> bytes:
    doc: dict[str, Any] = {
        "version": TOPIC_ZNODE_VERSION if topic_id is not None else 2,
        "partitions": {str(p): list(r) for p, r in sorted(partitions.items())},
        "adding_replicas": {str(p): list(r) for p, r in sorted((adding_replicas or {}).items())},
        "removing_replicas": {
            str(p): list(r) for p, r in sorted((removing_replicas or {}).items())
        },
    }
    if topic_id is not None:
        doc["topic_id"] = uuid_to_base64(topic_id)
    return to_json(doc)


def _partition_map(value: Any, what: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ZkDataError(f"{what}: expected an object of partitions")
    return {_int(p, what): _int_list(r, what) for p, r in value.items()}


def decode_topic_assignment(topic: str, data: bytes | None) -> TopicAssignment:
    what = topic_path(topic)
    doc = _object(data, what)
    raw_id = doc.get("topic_id")
    topic_id = None
    if isinstance(raw_id, str):
        try:
            topic_id = uuid_from_base64(raw_id)
        except ValueError:
            raise ZkDataError(f"{what}: invalid topic_id {raw_id!r}") from None
    return TopicAssignment(
        topic_id=topic_id,
        partitions=_partition_map(doc.get("partitions"), what),
        adding_replicas=_partition_map(doc.get("adding_replicas"), what),
        removing_replicas=_partition_map(doc.get("removing_replicas"), what),
    )


# /brokers/topics/<t>/partitions/<p>/state


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """A partition state znode, with its ZooKeeper version (Kafka's LeaderAndIsr.partitionEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0


def encode_partition_state(
    leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int
) -> bytes:
    return to_json(
        {
            "version": 1,
            "leader": leader,
            "leader_epoch": leader_epoch,
            "controller_epoch": controller_epoch,
            "isr": list(isr),
        }
    )


def decode_partition_state(
    topic: str, partition: int, data: bytes | None, zk_version: int = 0
) -> LeaderIsrAndControllerEpoch:
    what = partition_state_path(topic, partition)
    doc = _object(data, what)
    return LeaderIsrAndControllerEpoch(
        leader=_int(doc.get("leader"), what),
        leader_epoch=_int(doc.get("leader_epoch"), what),
        isr=_int_list(doc.get("isr"), what),
        controller_epoch=_int(doc.get("controller_epoch"), what),
        zk_version=zk_version,
    )


# /controller, /controller_epoch


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return to_json(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": -1,
        }
    )


def decode_controller(data: bytes | None) -> int:
    """The controller's broker id. (Before Kafka 0.8.2 the node held just the number.)"""
    doc = from_json(data, CONTROLLER_PATH)
    if isinstance(doc, int) and not isinstance(doc, bool):
        return doc
    if not isinstance(doc, dict):
        raise ZkDataError(f"{CONTROLLER_PATH}: not a JSON object")
    return _int(doc.get("brokerid"), CONTROLLER_PATH)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes | None) -> int:
    try:
        return int((data or b"").decode())
    except (UnicodeDecodeError, ValueError):
        raise ZkDataError(f"{CONTROLLER_EPOCH_PATH}: not a number: {data!r}") from None


# /config/<type>/<name>, /config/changes


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    return to_json({"version": 1, "config": dict(config)})


def decode_entity_config(path: str, data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    doc = _object(data, path)
    config = doc.get("config", {})
    if not isinstance(config, dict):
        raise ZkDataError(f"{path}: config is not an object")
    return {str(k): str(v) for k, v in config.items() if v is not None}


def encode_config_change(entity_path: str) -> bytes:
    return to_json({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None) -> tuple[str, str] | None:
    """(entity type, entity name) of a version-2 notification, or None for other versions."""
    doc = _object(data, CONFIG_CHANGES_PATH)
    if doc.get("version") != 2:
        return None
    entity_path = doc.get("entity_path")
    if not isinstance(entity_path, str) or "/" not in entity_path:
        raise ZkDataError(f"{CONFIG_CHANGES_PATH}: invalid entity_path {entity_path!r}")
    entity_type, _, name = entity_path.partition("/")
    return entity_type, name


# /isr_change_notification/isr_change_NNNNNNNNNN


def encode_isr_change_notification(partitions: Sequence[tuple[str, int]]) -> bytes:
    return to_json(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_isr_change_notification(data: bytes | None) -> list[tuple[str, int]]:
    what = ISR_CHANGE_NOTIFICATION_PATH
    doc = _object(data, what)
    entries = doc.get("partitions")
    if not isinstance(entries, list):
        raise ZkDataError(f"{what}: 'partitions' is not a list")
    out = []
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("topic"), str):
            raise ZkDataError(f"{what}: invalid entry {e!r}")
        out.append((e["topic"], _int(e.get("partition"), what)))
    return out


# /log_dir_event_notification/log_dir_event_NNNNNNNNNN


def encode_log_dir_event(broker_id: int) -> bytes:
    """Kafka's LogDirEventNotificationSequenceZNode.encode."""
    return to_json({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None) -> int:
    """The broker a log dir event names."""
    doc = _object(data, LOG_DIR_EVENT_NOTIFICATION_PATH)
    return _int(doc.get("broker"), LOG_DIR_EVENT_NOTIFICATION_PATH)


# /brokers/offline_replicas/<id>

OFFLINE_REPLICAS_VERSION = 1


def encode_offline_replicas(broker_epoch: int, partitions: Sequence[tuple[str, int]]) -> bytes:
    return to_json(
        {
            "version": OFFLINE_REPLICAS_VERSION,
            "broker_epoch": broker_epoch,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)],
        }
    )


def decode_offline_replicas(
    broker_id: int, data: bytes | None
) -> tuple[int, frozenset[tuple[str, int]]]:
    """(broker epoch written under, the replicas in the broker's offline log dirs)."""
    what = offline_replicas_path(broker_id)
    doc = _object(data, what)
    entries = doc.get("partitions")
    if not isinstance(entries, list):
        raise ZkDataError(f"{what}: 'partitions' is not a list")
    out = set()
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("topic"), str):
            raise ZkDataError(f"{what}: invalid entry {e!r}")
        out.add((e["topic"], _int(e.get("partition"), what)))
    return _int(doc.get("broker_epoch"), what), frozenset(out)


# /latest_producer_id_block


def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    return to_json(
        {
            "version": 1,
            "broker": broker_id,
            "block_start": str(block_start),
            "block_end": str(block_end),
        }
    )


def decode_producer_id_block(data: bytes | None) -> tuple[int, int, int] | None:
    """(broker, block_start, block_end), or None when no block was ever allocated."""
    if not data:
        return None
    doc = _object(data, PRODUCER_ID_BLOCK_PATH)
    return (
        _int(doc.get("broker"), PRODUCER_ID_BLOCK_PATH),
        _int(doc.get("block_start"), PRODUCER_ID_BLOCK_PATH),
        _int(doc.get("block_end"), PRODUCER_ID_BLOCK_PATH),
    )


# /feature


def encode_feature_znode(features: Mapping[str, Mapping[str, int]] | None = None) -> bytes:
    """FeatureZNode version 2, status 1 (enabled)."""
    return to_json(
        {"version": 2, "status": 1, "features": {k: dict(v) for k, v in (features or {}).items()}}
    )


# /odradek/features


def encode_feature_levels(levels: Mapping[str, int]) -> bytes:
    return to_json({"version": 1, "features": dict(sorted(levels.items()))})


def feature_levels_epoch(znode_version: int) -> int:
    """ApiVersions' FinalizedFeaturesEpoch of the levels at ``znode_version`` (0: no znode)."""
    return znode_version + 1


def decode_feature_levels(data: bytes | None) -> dict[str, int]:
    doc = _object(data, FEATURE_LEVELS_PATH)
    features = doc.get("features")
    if not isinstance(features, dict):
        raise ZkDataError(f"{FEATURE_LEVELS_PATH}: 'features' is not an object")
    return {str(k): _int(v, FEATURE_LEVELS_PATH) for k, v in features.items()}


# /admin/reassign_partitions, /admin/preferred_replica_election


def encode_reassign_partitions(reassignments: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    return to_json(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)}
                for (t, p), r in sorted(reassignments.items())
            ],
        }
    )


def _partition_entries(data: bytes | None, what: str) -> list[dict[str, Any]]:
    doc = _object(data, what)
    entries = doc.get("partitions")
    if not isinstance(entries, list):
        raise ZkDataError(f"{what}: 'partitions' is not a list")
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("topic"), str):
            raise ZkDataError(f"{what}: invalid entry {e!r}")
    return entries


def decode_reassign_partitions(data: bytes | None) -> dict[tuple[str, int], tuple[int, ...]]:
    what = REASSIGN_PARTITIONS_PATH
    return {
        (e["topic"], _int(e.get("partition"), what)): _int_list(e.get("replicas"), what)
        for e in _partition_entries(data, what)
    }


def encode_preferred_replica_election(partitions: Sequence[tuple[str, int]]) -> bytes:
    return to_json(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_preferred_replica_election(data: bytes | None) -> list[tuple[str, int]]:
    what = PREFERRED_REPLICA_ELECTION_PATH
    return [(e["topic"], _int(e.get("partition"), what)) for e in _partition_entries(data, what)]
