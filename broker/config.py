"""Broker and topic configuration: Kafka's keys, types and defaults, from server.properties.

``BrokerConfig.load(path, overrides)`` reads a Java-properties file (``key=value``, ``#``/``!``
comments, ``\\`` continuations) and ``--override KEY=VALUE`` pairs. Every key is checked against
:data:`BROKER_CONFIGS`: unknown keys are reported (logged, and listed in ``config.unknown``), never
silently ignored; keys Kafka has but Odradek does not act on are accepted and listed in
``config.inert``.

Topic-level configs (:data:`TOPIC_CONFIGS`) map to the broker keys that provide their defaults,
as Kafka's ``LogConfig`` does; DescribeConfigs reports each with its value and source.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.addresses import addresses_of

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A configuration value that cannot be used."""


# --- types -----------------------------------------------------------------------------------

_TYPES = ("int", "long", "short", "double", "boolean", "string", "list", "password", "class")


def parse_value(name: str, kind: str, raw: str | None) -> Any:
    if raw is None:
        return None
    raw = raw.strip()
    try:
        if kind in ("int", "long", "short"):
            return int(raw)
        if kind == "double":
            return float(raw)
        if kind == "boolean":
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        if kind == "list":
            return [item.strip() for item in raw.split(",") if item.strip()]
        return raw
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {name} (expected {kind})") from None


def format_value(kind: str, value: Any) -> str | None:
    """A value as Kafka prints it in DescribeConfigs."""
    if value is None:
        return None
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "list":
        return ",".join(value)
    return str(value)


@dataclass(frozen=True)
class ConfigKey:
    name: str
    kind: str
    default: Any
    doc: str = ""
    #: False for keys Kafka has that Odradek accepts but does not act on
    implemented: bool = True
    #: read-only keys cannot be changed at runtime (DescribeConfigs read_only)
    read_only: bool = True
    sensitive: bool = False


def _k(
    name: str,
    kind: str,
    default: Any,
    doc: str = "",
    *,
    implemented: bool = True,
    read_only: bool = True,
    sensitive: bool = False,
) -> ConfigKey:
    assert kind in _TYPES, kind
    return ConfigKey(name, kind, default, doc, implemented, read_only, sensitive)


# fmt: off
#: Broker keys, with Kafka's defaults except where Odradek's standalone defaults differ (noted).
BROKER_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in [
    _k("broker.id", "int", 0, "Broker id. -1, or unset in cluster mode (Kafka's default is -1): the id in meta.properties, else one generated from ZooKeeper's /brokers/seqid above reserved.broker.max.id and kept in meta.properties; a standalone broker without one is 0."),
    _k("broker.id.generation.enable", "boolean", True, "Generate broker ids (broker.id=-1) from ZooKeeper's /brokers/seqid; configured ids may then not exceed reserved.broker.max.id."),
    _k("reserved.broker.max.id", "int", 1000, "Highest configurable broker id; generated ids start above it."),
    _k("broker.rack", "string", None, "Rack of this broker (rack-aware assignment)."),
    _k("listeners", "list", ["PLAINTEXT://127.0.0.1:9092"], "Ours: 127.0.0.1:9092; Kafka's: PLAINTEXT://:9092."),
    _k("advertised.listeners", "list", None, "Addresses given to clients; default: listeners."),
    _k("listener.security.protocol.map", "string", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    _k("inter.broker.listener.name", "string", None, "Listener brokers use to reach each other (replica fetchers); default: the first advertised listener using security.inter.broker.protocol."),
    _k("security.inter.broker.protocol", "string", "PLAINTEXT", "Security protocol between brokers when inter.broker.listener.name is not set (only one of the two may be set)."),
    _k("log.dirs", "list", None, "Data directories; default: log.dir."),
    _k("log.dir", "string", "./data", "Ours: ./data; Kafka's: /tmp/kafka-logs."),
    _k("num.network.threads", "int", 3, "Processor event loops (threads) that own connections."),
    _k("num.io.threads", "int", 8, implemented=False),
    _k("num.recovery.threads.per.data.dir", "int", 1, "Threads loading and recovering one log dir's partitions at start-up. Ours: 1; Kafka 4's: 2 (loading is mostly Python work here: 10,000 partitions after SIGKILL loaded in 9.2 s with 1 thread, 11.6 s with 2, on 2 busy cores; more threads help when the disk, not the CPU, is the limit)."),
    _k("background.threads", "int", 10, implemented=False),
    _k("queued.max.requests", "int", 500, "Requests a connection may have queued before reads pause."),
    _k("num.partitions", "int", 1),
    _k("max.partitions.per.request", "int", 10000, "Ours (Kafka's KRaft controller refuses batches of more than 10,000 records the same way): partitions one CreateTopics or CreatePartitions request may create, over all its topics; more answer POLICY_VIOLATION for every topic of the request, before any assignment is computed."),
    _k("max.broker.partitions", "int", 100000, "Partition replicas the cluster may hold per live broker (the name of KIP-578's proposal); a topic or partition increase beyond it answers POLICY_VIOLATION. Ours: 100,000; Kafka has no limit."),
    _k("default.replication.factor", "int", 1),
    _k("auto.create.topics.enable", "boolean", True),
    _k("delete.topic.enable", "boolean", True),
    _k("message.max.bytes", "int", 1048588, "Largest record batch accepted (max.message.bytes per topic).", read_only=False),
    _k("socket.request.max.bytes", "int", 104857600),
    _k("socket.send.buffer.bytes", "int", -1, "SO_SNDBUF; -1: the OS default with autotuning. Ours: -1; Kafka's: 102400 (measured 2x slower here, docs/benchmarks.md)."),
    _k("socket.receive.buffer.bytes", "int", -1, "SO_RCVBUF; -1: the OS default with autotuning. Ours: -1; Kafka's: 102400 (measured 2x slower here, docs/benchmarks.md)."),
    _k("socket.listen.backlog.size", "int", 50),
    _k("connections.max.idle.ms", "long", 600000),
    _k("queued.max.request.bytes", "long", 536870912, "Bytes of received requests held at once, over all connections (complete frames waiting and frames arriving); above it connections stop reading until memory is released (one connection at a time may still finish the request it is receiving). Ours: 512 MiB; Kafka's: -1 (unbounded). -1 disables the budget."),
    _k("max.connections", "int", 2147483647, "Connections the broker accepts at once; at the limit it stops accepting until one closes, as Kafka does. The inter-broker listener is exempt when there are others. Also per listener (listener.name.<listener>.max.connections)."),
    _k("max.connections.per.ip", "int", 2147483647, "Connections one IP address may hold; more are closed at once."),
    _k("max.connections.per.ip.overrides", "string", "", "Per-IP (or hostname) limits: 'host:count,host:count'."),
    _k("max.connection.creation.rate", "int", 2147483647, "New connections per second the broker accepts (KIP-612), over quota.window.num samples of quota.window.size.seconds; over it the acceptor waits before accepting more. The inter-broker listener is exempt when there are others. Also per listener; per-IP rates are client quotas (connection_creation_rate of ip entities)."),
    _k("request.timeout.ms", "int", 30000, "How long the broker waits for another broker's answer to a request it sends on its own behalf (KIP-890 verification with a transaction coordinator)."),
    _k("request.receive.timeout.ms", "long", 60000, "Ours (Kafka has no such key): a request whose first bytes arrived must be complete within this time, or the connection is closed (a client trickling bytes cannot hold a frame buffer forever)."),
    _k("telemetry.max.bytes", "int", 1048576, "Largest metrics payload a client may push (KIP-714 PushTelemetry); larger answers TELEMETRY_TOO_LARGE. Pushed metrics are published on the metrics endpoint (see metrics.port)."),
    _k("fetch.max.bytes", "int", 57671680),
    _k("max.request.partition.size.limit", "int", 2000, "Partitions one DescribeTopicPartitions response carries at most (KIP-966); the client's response_partition_limit may ask for fewer, and the rest is paged with its cursor."),
    _k("max.incremental.fetch.session.cache.slots", "int", 1000, "Incremental fetch sessions (KIP-227) the broker keeps; a full fetch asking for a session when the cache is full gets one only by evicting a less valuable session (see min.incremental.fetch.session.eviction.ms). 0: no sessions."),
    _k("min.incremental.fetch.session.eviction.ms", "long", 120000, "Ours (Kafka hard-codes 120000 ms): a fetch session unused this long may be evicted by any new session; a younger one only by a more valuable session (a follower's over a consumer's, then more partitions)."),
    _k("log.segment.bytes", "int", 1073741824, read_only=False),
    _k("log.roll.ms", "long", None, read_only=False),
    _k("log.roll.hours", "int", 168),
    _k("log.roll.jitter.ms", "long", None, "Default of segment.jitter.ms: a random amount, up to this, taken off segment.ms for each new segment, so that partitions do not all roll at once."),
    _k("log.roll.jitter.hours", "int", 0, "log.roll.jitter.ms in hours (when it is not set)."),
    _k("log.retention.ms", "long", None, read_only=False),
    _k("log.retention.minutes", "int", None),
    _k("log.retention.hours", "int", 168),
    _k("log.retention.bytes", "long", -1, read_only=False),
    _k("log.local.retention.bytes", "long", -2, implemented=False),
    _k("log.local.retention.ms", "long", -2, implemented=False),
    _k("log.retention.check.interval.ms", "long", 300000),
    _k("log.flush.interval.messages", "long", LONG_MAX, read_only=False),
    _k("log.flush.interval.ms", "long", None, read_only=False),
    _k("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _k("log.flush.offset.checkpoint.interval.ms", "int", 60000),
    _k("log.flush.start.offset.checkpoint.interval.ms", "int", 60000),
    _k("log.segment.open.files.max", "int", 1000, "Ours: the .log files of segments that take no more appends are opened when read, and at most this many stay open (the least recently opened closes first; reads in progress keep theirs). Kafka keeps every segment's file open, a descriptor per segment."),
    _k("log.index.interval.bytes", "int", 4096, read_only=False),
    _k("log.index.size.max.bytes", "int", 10485760, read_only=False),
    _k("log.preallocate", "boolean", False, read_only=False),
    _k("log.cleanup.policy", "list", ["delete"], read_only=False),
    _k("log.cleaner.enable", "boolean", True),
    _k("log.cleaner.threads", "int", 1, implemented=False),
    _k("log.cleaner.backoff.ms", "long", 15000),
    _k("log.cleaner.delete.retention.ms", "long", 86400000, read_only=False),
    _k("log.cleaner.min.cleanable.ratio", "double", 0.5, read_only=False),
    _k("log.cleaner.min.compaction.lag.ms", "long", 0, read_only=False),
    _k("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, read_only=False),
    _k("log.cleaner.dedupe.buffer.size", "long", 134217728, "Memory for the keys of one cleaning pass (Kafka's key map); a log with more keys is cleaned in several passes."),
    _k("log.segment.delete.delay.ms", "long", 60000, read_only=False),
    _k("log.message.timestamp.type", "string", "CreateTime", read_only=False),
    _k("log.message.timestamp.before.max.ms", "long", LONG_MAX, read_only=False),
    _k("log.message.timestamp.after.max.ms", "long", 3600000, read_only=False),
    _k("compression.type", "string", "producer", read_only=False),
    _k("compression.gzip.level", "int", -1, read_only=False),
    _k("compression.lz4.level", "int", 9, read_only=False),
    _k("compression.zstd.level", "int", 3, read_only=False),
    _k("min.insync.replicas", "int", 1, read_only=False),
    _k("unclean.leader.election.enable", "boolean", False, read_only=False),
    _k("offsets.topic.num.partitions", "int", 50),
    _k("offsets.topic.replication.factor", "short", 3, "Capped at the number of live brokers."),
    _k("offsets.topic.segment.bytes", "int", 104857600),
    _k("offsets.topic.compression.codec", "int", 0),
    _k("offsets.retention.minutes", "int", 10080),
    _k("offsets.retention.check.interval.ms", "long", 600000),
    _k("offsets.commit.timeout.ms", "int", 5000),
    _k("offsets.load.buffer.size", "int", 5242880, implemented=False),
    _k("offset.metadata.max.bytes", "int", 4096),
    _k("group.initial.rebalance.delay.ms", "int", 3000),
    _k("group.min.session.timeout.ms", "int", 6000),
    _k("group.max.session.timeout.ms", "int", 1800000),
    _k("group.max.size", "int", INT_MAX),
    _k("group.coordinator.rebalance.protocols", "list", ["classic", "consumer"], "Group protocols served: classic (JoinGroup...) and consumer (KIP-848 ConsumerGroupHeartbeat); classic cannot be disabled."),
    _k("group.consumer.session.timeout.ms", "int", 45000, "KIP-848 consumer groups: a member that sends no heartbeat for this long is removed."),
    _k("group.consumer.min.session.timeout.ms", "int", 45000, "Lower bound of group.consumer.session.timeout.ms."),
    _k("group.consumer.max.session.timeout.ms", "int", 60000, "Upper bound of group.consumer.session.timeout.ms."),
    _k("group.consumer.heartbeat.interval.ms", "int", 5000, "KIP-848 consumer groups: how often members heartbeat (told to them in every answer)."),
    _k("group.consumer.min.heartbeat.interval.ms", "int", 5000, "Lower bound of group.consumer.heartbeat.interval.ms."),
    _k("group.consumer.max.heartbeat.interval.ms", "int", 15000, "Upper bound of group.consumer.heartbeat.interval.ms (which must stay below the session timeout)."),
    _k("group.consumer.max.size", "int", INT_MAX, "Members a KIP-848 consumer group may have."),
    _k("group.consumer.assignors", "list", ["uniform", "range"], "Server-side assignors of consumer groups, the first the default (uniform, range, or Kafka's class names); a member may ask for one with server_assignor."),
    _k("group.consumer.migration.policy", "string", "bidirectional", "Online conversion between classic and consumer groups: disabled, upgrade, downgrade or bidirectional."),
    _k("transaction.max.timeout.ms", "int", 900000),
    _k("transactional.id.expiration.ms", "int", 604800000),
    _k("transaction.state.log.num.partitions", "int", 50),
    _k(
        "transaction.state.log.replication.factor",
        "short",
        3,
        "Capped at the number of live brokers.",
    ),
    _k("transaction.state.log.segment.bytes", "int", 104857600),
    _k("transaction.state.log.min.isr", "int", 2, "Capped at the topic's replication factor."),
    _k("transaction.state.log.load.buffer.size", "int", 5242880, implemented=False),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000),
    _k("transaction.version", "int", 2, "Odradek's: the level of Kafka's transaction.version feature a new cluster finalizes (ApiVersions v3+), as kafka-storage format --feature sets it for Kafka; kafka-features upgrade/downgrade (UpdateFeatures) finalizes another level for the whole cluster, kept in the metadata store, which then wins over this setting. At 2 (Kafka 4's level for new clusters; KIP-890 part 2) clients that know it (the Java client 4.0+) send no AddPartitionsToTxn or AddOffsetsToTxn: a partition leader adds the partition to the transaction on the producer's first Produce v12+, the group coordinator its offsets partition on TxnOffsetCommit v5, and every EndTxn v5 bumps the producer's epoch. 0 or 1 keep every client on the earlier protocol. Set the same level on every broker of a cluster."),
    _k("add.partitions.to.txn.retry.backoff.ms", "int", 20, "Transaction version 2: how long a partition leader waits before asking the coordinator again to add a partition it refused while ending the producer's last transaction (CONCURRENT_TRANSACTIONS)."),
    _k("add.partitions.to.txn.retry.backoff.max.ms", "int", 100, "Transaction version 2: how long a partition leader keeps asking the coordinator to add a partition (at most request.timeout.ms) before the producer is answered NOT_ENOUGH_REPLICAS and retries on its own."),
    _k("transaction.partition.verification.enable", "boolean", True, "A transactional producer's first batch in a partition is verified with its transaction coordinator before it is appended (KIP-890); dynamic, as in Kafka: off or on at once with odradek config set.", read_only=False),
    _k("producer.id.expiration.ms", "int", 86400000),
    _k("zookeeper.connect", "string", None, "host:port[,host:port...][/chroot]; unset: standalone."),
    _k("zookeeper.session.timeout.ms", "int", 18000),
    _k("zookeeper.connection.timeout.ms", "int", None),
    _k("zookeeper.max.in.flight.requests", "int", 10, implemented=False),
    _k("controlled.shutdown.enable", "boolean", True, "Cluster mode: on SIGTERM the broker asks the controller to move the leadership of its partitions to other in-sync replicas (ControlledShutdown) before it stops."),
    _k("controlled.shutdown.max.retries", "int", 3, "Controlled shutdown requests sent before the broker stops anyway."),
    _k("controlled.shutdown.retry.backoff.ms", "long", 5000, "Wait between controlled shutdown requests."),
    _k("controller.socket.timeout.ms", "int", 30000, "How long a controlled shutdown request waits for the controller's answer."),
    _k("auto.leader.rebalance.enable", "boolean", True, "Cluster mode: the controller moves leadership back to each partition's preferred (first) replica when it is alive and in the ISR, for brokers above leader.imbalance.per.broker.percentage."),
    _k("leader.imbalance.check.interval.seconds", "long", 300, "How often the controller checks the preferred leaders."),
    _k("leader.imbalance.per.broker.percentage", "int", 10, "Share (percent) of a broker's preferred partitions led elsewhere above which the controller elects the preferred leaders."),
    _k("replica.lag.time.max.ms", "long", 30000, "A follower that has not caught up with the leader's log end for this long leaves the ISR."),
    _k("replica.fetch.max.bytes", "int", 1048576, "Bytes a follower asks per partition in one fetch."),
    _k("replica.fetch.response.max.bytes", "int", 10485760, "Bytes a follower asks for in one fetch, over all its partitions."),
    _k("replica.fetch.session.enable", "boolean", True, "Ours (Kafka's followers always do): replica fetchers keep an incremental fetch session (KIP-227) with each leader, so a fetch carries only the partitions whose fetch offset or epochs changed and its answer only the partitions with news; false: every follower fetch is full."),
    _k("replica.fetch.wait.max.ms", "int", 500, "How long a follower's fetch waits at the leader for new data."),
    _k("replica.fetch.min.bytes", "int", 1, "Bytes a follower's fetch waits for at the leader."),
    _k("replica.fetch.backoff.ms", "int", 1000, "How long a follower waits after a fetch error."),
    _k("replica.socket.timeout.ms", "int", 30000, "Socket timeout of followers' connections to leaders."),
    _k("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "How often high watermarks are checkpointed to replication-offset-checkpoint (the file is rewritten only when one of them moved)."),
    _k("num.replica.fetchers", "int", 1, "Fetcher threads per source broker."),
    _k("log.format", "string", "kafka", "Log lines: kafka (Kafka's log4j layout, [time] LEVEL message (logger)) or json (one object per line: time, level, logger, thread, message, exception)."),
    _k("metrics.port", "int", 0, "Port of the Prometheus /metrics endpoint; 0 (default) disables it. Client telemetry (KIP-714: GetTelemetrySubscriptions, PushTelemetry) is advertised only while the endpoint is on, as Kafka advertises it only with a telemetry receiver."),
    _k("metrics.host", "string", "127.0.0.1", "Address the metrics endpoint binds."),
    _k("metric.reporters", "list", [], implemented=False),
    _k("metrics.num.samples", "int", 2, implemented=False),
    _k("metrics.sample.window.ms", "long", 30000, implemented=False),
    # -- security (docs/security.md): every ssl.* and sasl.* key may also be set per listener as
    # listener.name.<listener>.<key>, and the JAAS config per mechanism as
    # listener.name.<listener>.<mechanism>.sasl.jaas.config
    _k("authorizer.class.name", "string", "", "ACL authorizer: kafka.security.authorizer.AclAuthorizer or org.apache.kafka.metadata.authorizer.StandardAuthorizer (both are Odradek's built-in ACL authorizer); empty: every operation is allowed."),
    _k("super.users", "string", None, "Principals allowed everything, ';'-separated (User:admin;User:CN=broker,O=org)."),
    _k("allow.everyone.if.no.acl.found", "boolean", False, "Allow an operation on a resource that has no ACL at all (the authorizer's setting)."),
    _k("principal.builder.class", "class", None, implemented=False),
    _k("sasl.enabled.mechanisms", "list", ["GSSAPI"], "SASL mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (GSSAPI is refused at start-up)."),
    _k("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", "SASL mechanism brokers use with each other on a SASL inter-broker listener."),
    _k("sasl.jaas.config", "password", None, "JAAS login context: PlainLoginModule (username/password for inter-broker use, user_<name>=\"<password>\" for the users it accepts) or ScramLoginModule (username/password).", sensitive=True),
    _k("sasl.plain.users.file", "string", None, "Ours (not Kafka's): a properties file of <user>=<password> lines, accepted by SASL/PLAIN besides the JAAS user_<name> options; re-read when it changes."),
    _k("sasl.server.max.receive.size", "int", 524288, "Largest frame a client may send before it has authenticated."),
    _k("connections.max.reauth.ms", "long", 0, "SASL session lifetime (KIP-368): a client must re-authenticate before it ends or its connection is closed; 0: no limit."),
    _k("delegation.token.secret.key", "password", None, "Secret that signs delegation tokens (KIP-48: a token's HMAC is HmacSHA512 of its id under this key); the same on every broker. Unset or empty: delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).", sensitive=True),
    _k("delegation.token.max.lifetime.ms", "long", 604800000, "Longest a delegation token may live, renewals included (7 days)."),
    _k("delegation.token.expiry.time.ms", "long", 86400000, "How long a delegation token lives until it is renewed, and the longest one renewal gives (1 day)."),
    _k("delegation.token.expiry.check.interval.ms", "long", 3600000, "How often expired delegation tokens are removed."),
    _k("sasl.kerberos.service.name", "string", None, implemented=False),
    _k("sasl.server.callback.handler.class", "class", None, "OAUTHBEARER only (listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class): org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler validates signed tokens against sasl.oauthbearer.jwks.endpoint.url (KIP-768); unset (or Kafka's OAuthBearerUnsecuredValidatorCallbackHandler), unsecured tokens, for development. Other classes stop the start-up."),
    _k("sasl.oauthbearer.jwks.endpoint.url", "string", None, "Where the identity provider's JWKS is: https:// (fetched at start, every sasl.oauthbearer.jwks.endpoint.refresh.ms, and when a token names an unknown key) or file: (read at start)."),
    _k("sasl.oauthbearer.jwks.endpoint.refresh.ms", "long", 3600000, "How often the JWKS is fetched again."),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "long", 100, "How long a refresh of the JWKS whose fetch failed waits before its next try; the wait doubles with each try."),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "long", 10000, "How long a refresh of the JWKS keeps trying before it gives up, keeping the keys already read until the next refresh."),
    _k("sasl.oauthbearer.expected.audience", "list", [], "Audiences a token's aud claim must name one of (empty: not checked)."),
    _k("sasl.oauthbearer.expected.issuer", "string", None, "The iss a token must have (unset: not checked)."),
    _k("sasl.oauthbearer.sub.claim.name", "string", "sub", "The claim naming the principal (User:<its value>)."),
    _k("sasl.oauthbearer.scope.claim.name", "string", "scope", "The claim holding the token's scope."),
    _k("sasl.oauthbearer.clock.skew.seconds", "int", 30, "Clock skew allowed when checking a token's exp and nbf."),
    _k("sasl.login.callback.handler.class", "class", None, implemented=False),
    _k("sasl.login.class", "class", None, implemented=False),
    _k("ssl.keystore.type", "string", "JKS", "PEM is supported (JKS and PKCS12 keystores must be converted to PEM)."),
    _k("ssl.keystore.location", "string", None, "PEM file with the private key and the certificate chain."),
    _k("ssl.keystore.password", "password", None, "Kafka's keystore password; with PEM, unused unless ssl.key.password is unset.", sensitive=True),
    _k("ssl.key.password", "password", None, "Password of an encrypted PEM private key.", sensitive=True),
    _k("ssl.keystore.certificate.chain", "password", None, "Inline PEM certificate chain (with ssl.keystore.key, instead of ssl.keystore.location).", sensitive=True),
    _k("ssl.keystore.key", "password", None, "Inline PEM private key.", sensitive=True),
    _k("ssl.truststore.type", "string", "JKS", "PEM is supported."),
    _k("ssl.truststore.location", "string", None, "PEM file of trusted CA certificates (client certificates are checked against it)."),
    _k("ssl.truststore.password", "password", None, sensitive=True),
    _k("ssl.truststore.certificates", "password", None, "Inline PEM trusted certificates.", sensitive=True),
    _k("ssl.client.auth", "string", "none", "Client certificates: none, requested or required (mutual TLS)."),
    _k("ssl.protocol", "string", "TLSv1.3", "Kafka's SSLContext protocol; the enabled versions come from ssl.enabled.protocols."),
    _k("ssl.enabled.protocols", "list", ["TLSv1.2", "TLSv1.3"], "TLS versions accepted (TLSv1.2, TLSv1.3)."),
    _k("ssl.cipher.suites", "list", [], "Cipher suites (IANA or OpenSSL names); empty: OpenSSL's defaults. As with Java, a TLS version is served only if a suite of it is listed; TLS 1.3 suites all of OpenSSL's or none."),
    _k("ssl.endpoint.identification.algorithm", "string", "https", "Host name verification of the peer's certificate when a broker connects to another (empty: none)."),
    _k("ssl.principal.mapping.rules", "string", "DEFAULT", "Rules mapping a client certificate's distinguished name to a principal name (RULE:pattern/replacement/[LU], DEFAULT)."),
    _k("ssl.keymanager.algorithm", "string", "SunX509", implemented=False),
    _k("ssl.trustmanager.algorithm", "string", "PKIX", implemented=False),
    _k("ssl.secure.random.implementation", "string", None, implemented=False),
    _k("ssl.engine.factory.class", "class", None, implemented=False),
    _k("ssl.provider", "string", None, implemented=False),
    _k("quota.window.num", "int", 11, "Samples kept for client quota rates."),
    _k("quota.window.size.seconds", "int", 1, "Length of one quota sample."),
    _k("client.quota.callback.class", "class", None, implemented=False),
    _k("group.coordinator.new.enable", "boolean", False, implemented=False),
    _k("share.coordinator.state.topic.replication.factor", "short", 3, implemented=False),
    _k("cluster.id", "string", None, "Expected cluster id (checked against meta.properties)."),
]}


@dataclass(frozen=True)
class TopicConfigKey:
    name: str
    kind: str
    #: the broker key whose value is this topic config's default
    broker_key: str | None
    default: Any
    doc: str = ""


#: Topic-level configs, each with the broker key that supplies its default (Kafka's LogConfig).
TOPIC_CONFIGS: dict[str, TopicConfigKey] = {k.name: k for k in [
    TopicConfigKey("cleanup.policy", "list", "log.cleanup.policy", ["delete"]),
    TopicConfigKey("compression.type", "string", "compression.type", "producer"),
    TopicConfigKey("compression.gzip.level", "int", "compression.gzip.level", -1),
    TopicConfigKey("compression.lz4.level", "int", "compression.lz4.level", 9),
    TopicConfigKey("compression.zstd.level", "int", "compression.zstd.level", 3),
    TopicConfigKey("delete.retention.ms", "long", "log.cleaner.delete.retention.ms", 86400000),
    TopicConfigKey("file.delete.delay.ms", "long", "log.segment.delete.delay.ms", 60000),
    TopicConfigKey("flush.messages", "long", "log.flush.interval.messages", LONG_MAX),
    TopicConfigKey("flush.ms", "long", "log.flush.interval.ms", LONG_MAX),
    TopicConfigKey("index.interval.bytes", "int", "log.index.interval.bytes", 4096),
    TopicConfigKey("max.compaction.lag.ms", "long", "log.cleaner.max.compaction.lag.ms", LONG_MAX),
    TopicConfigKey("max.message.bytes", "int", "message.max.bytes", 1048588),
    TopicConfigKey("message.timestamp.after.max.ms", "long", "log.message.timestamp.after.max.ms", 3600000),
    TopicConfigKey("message.timestamp.before.max.ms", "long", "log.message.timestamp.before.max.ms", LONG_MAX),
    TopicConfigKey("message.timestamp.type", "string", "log.message.timestamp.type", "CreateTime"),
    TopicConfigKey("min.cleanable.dirty.ratio", "double", "log.cleaner.min.cleanable.ratio", 0.5),
    TopicConfigKey("min.compaction.lag.ms", "long", "log.cleaner.min.compaction.lag.ms", 0),
    TopicConfigKey("min.insync.replicas", "int", "min.insync.replicas", 1),
    TopicConfigKey("preallocate", "boolean", "log.preallocate", False),
    TopicConfigKey("retention.bytes", "long", "log.retention.bytes", -1),
    TopicConfigKey("retention.ms", "long", "log.retention.ms", 604800000),
    TopicConfigKey("segment.bytes", "int", "log.segment.bytes", 1073741824),
    TopicConfigKey("segment.index.bytes", "int", "log.index.size.max.bytes", 10485760),
    TopicConfigKey("segment.jitter.ms", "long", "log.roll.jitter.ms", 0),
    TopicConfigKey("segment.ms", "long", "log.roll.ms", 604800000),
    TopicConfigKey("unclean.leader.election.enable", "boolean", "unclean.leader.election.enable", False),
    TopicConfigKey("leader.replication.throttled.replicas", "list", None, []),
    TopicConfigKey("follower.replication.throttled.replicas", "list", None, []),
    TopicConfigKey("local.retention.bytes", "long", "log.local.retention.bytes", -2),
    TopicConfigKey("local.retention.ms", "long", "log.local.retention.ms", -2),
    TopicConfigKey("remote.storage.enable", "boolean", None, False),
    TopicConfigKey("remote.log.copy.disable", "boolean", None, False),
    TopicConfigKey("remote.log.delete.on.disable", "boolean", None, False),
]}
# fmt: on

_VALID_CHOICES: dict[str, tuple[str, ...]] = {
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "log.message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "log.format": ("kafka", "json"),
}


#: Topic configs' valid ranges (low, high; None: unbounded), as Kafka's LogConfig defines
#: them (ConfigDef's atLeast/between, and each codec's level validator).
_TOPIC_RANGES: dict[str, tuple[float | None, float | None]] = {
    "segment.bytes": (14, None),
    "segment.ms": (1, None),
    "segment.jitter.ms": (0, None),
    "segment.index.bytes": (4, None),
    "flush.messages": (1, None),
    "flush.ms": (0, None),
    "retention.ms": (-1, None),
    "max.message.bytes": (0, None),
    "index.interval.bytes": (0, None),
    "delete.retention.ms": (0, None),
    "min.compaction.lag.ms": (0, None),
    "max.compaction.lag.ms": (1, None),
    "file.delete.delay.ms": (0, None),
    "min.cleanable.dirty.ratio": (0, 1),
    "min.insync.replicas": (1, None),
    "message.timestamp.before.max.ms": (0, None),
    "message.timestamp.after.max.ms": (0, None),
    "local.retention.ms": (-2, None),
    "local.retention.bytes": (-2, None),
    "compression.lz4.level": (1, 17),
    "compression.zstd.level": (-131072, 22),
}
_THROTTLED_REPLICAS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
_PARTITION_BROKER = re.compile(r"[0-9]+:[0-9]+")


def _check_range(name: str, raw: str, value: Any, *, shown: str | None = None) -> None:
    """Whether topic config ``name``'s ``value`` is in its range; the error names ``shown``
    (a broker key whose default it is) or ``name``."""
    shown = shown or name
    if name == "compression.gzip.level":
        # Kafka's GzipCompression: -1 (the codec's default) or 1 (best speed) to 9
        if value != -1 and not 1 <= value <= 9:
            raise ConfigError(
                f"Invalid value {raw} for configuration {shown}: must be -1 or between 1 and 9"
            )
        return
    low, high = _TOPIC_RANGES.get(name, (None, None))
    if low is not None and value < low:
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"Invalid value {raw} for configuration {shown}: Value must be {bound}")
    if high is not None and value > high:
        raise ConfigError(
            f"Invalid value {raw} for configuration {shown}: Value must be between {low} and {high}"
        )


def _throttled_replicas_valid(value: list[str]) -> bool:
    """Kafka's ThrottledReplicaListValidator: ``*`` alone, or partitionId:brokerId entries."""
    entries = [v.strip() for v in value]
    if entries == ["*"]:
        return True
    return all(_PARTITION_BROKER.fullmatch(e) for e in entries)


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Parses topic config strings; raises ConfigError naming the first bad key or value."""
    parsed: dict[str, Any] = {}
    for name, raw in configs.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if raw is None:
            raise ConfigError(f"Null value not supported for topic config: {name}")
        value = parse_value(name, key.kind, raw)
        choices = _VALID_CHOICES.get(name)
        if choices and value not in choices:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: expected one of {choices}"
            )
        if name == "cleanup.policy":
            for policy in value:
                if policy not in ("delete", "compact"):
                    raise ConfigError(f"Invalid value {raw} for configuration cleanup.policy")
        _check_range(name, raw, value)
        if name in _THROTTLED_REPLICAS and not _throttled_replicas_valid(value):
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: must be the wildcard (*) or a "
                "list of partitionId:brokerId"
            )
        parsed[name] = value
    return parsed


# --- loading ---------------------------------------------------------------------------------


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f"}


def _unescape(value: str) -> str:
    """Java's .properties escapes in a value: ``\\n`` ``\\t`` ``\\r`` ``\\f``, ``\\uXXXX``,
    and a backslash before any other character is that character (so inline PEM values can be
    written with ``\\n``, as Kafka users do)."""
    if "\\" not in value:
        return value
    out = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch != "\\" or i + 1 == len(value):
            out.append(ch)
            i += 1
            continue
        nxt = value[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", value[i + 2 : i + 6]):
            out.append(chr(int(value[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def read_properties(text: str) -> dict[str, str]:
    """Java .properties: key=value or key:value or key value; # and ! comments; \\ continues."""
    props: dict[str, str] = {}
    logical = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip() if not logical else raw_line.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        match = re.match(r"((?:[^\\=:\s]|\\.)+)\s*[=:\s]\s*(.*)$", logical)
        if match:
            key = match.group(1).replace("\\", "")
            props[key] = _unescape(match.group(2).strip())
        elif logical.strip():
            props[logical.strip()] = ""
        logical = ""
    return props


#: Kafka's security protocols (``SecurityProtocol``)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: SASL mechanisms Kafka knows (the broker serves all but GSSAPI)
SASL_MECHANISM_NAMES = frozenset(
    {"GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
)
LISTENER_PREFIX = "listener.name."
#: broker keys a listener may override
_PER_LISTENER_KEY_PREFIXES = ("ssl.", "sasl.", "connections.max.reauth.ms")
#: keys also taken whole per listener (Kafka's ListenerConnectionQuota: KIP-402, KIP-612); they
#: are dynamic per listener too, for one broker or cluster-wide (Kafka's
#: ClusterLevelListenerConfigs)
_PER_LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate"})


def dynamic_listener_key(name: str) -> tuple[str, str] | None:
    """(listener in upper case, key) for ``listener.name.<listener>.max.connections`` and
    ``...max.connection.creation.rate``, the listener-prefixed keys that are dynamic."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    listener, _, key = name[len(LISTENER_PREFIX) :].partition(".")
    if not listener or key not in _PER_LISTENER_KEYS:
        return None
    return listener.upper(), key


#: keys that may also be given per SASL mechanism within a listener
_PER_MECHANISM_KEYS = frozenset(
    {
        "sasl.jaas.config",
        "connections.max.reauth.ms",
        "sasl.server.callback.handler.class",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.clock.skew.seconds",
    }
)


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listener(spec: str) -> Listener:
    match = re.fullmatch(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)", spec.strip())
    if not match:
        raise ConfigError(f"invalid listener {spec!r} (expected NAME://host:port)")
    host = match.group(2).strip("[]")
    return Listener(match.group(1).upper(), host, int(match.group(3)))


@dataclass
class BrokerConfig:
    """Typed broker configuration. ``values`` holds every key of :data:`BROKER_CONFIGS`."""

    values: dict[str, Any]
    #: keys given explicitly (file or override): DescribeConfigs reports them as STATIC_BROKER_CONFIG
    explicit: set[str] = field(default_factory=set)
    unknown: dict[str, str] = field(default_factory=dict)
    inert: list[str] = field(default_factory=list)
    #: the values the broker started with (file, overrides, defaults), under the dynamic ones
    static_values: dict[str, Any] = field(default_factory=dict)
    #: dynamic broker configs in force (strings, as stored): the cluster-wide default and this
    #: broker's own (see :meth:`apply_dynamic`)
    dynamic_default: dict[str, str] = field(default_factory=dict)
    dynamic_broker: dict[str, str] = field(default_factory=dict)
    #: ``listener.name.<listener>.<key>`` settings: listener (upper case) -> key -> parsed value;
    #: the key may be mechanism-prefixed (``scram-sha-256.sasl.jaas.config``). The connection
    #: limits among them may also be dynamic (see :meth:`apply_dynamic`).
    listener_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the ``listener.name.*`` settings of server.properties alone
    static_listener_values: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(
        cls, path: str | Path | None = None, overrides: Iterable[str] | Mapping[str, str] = ()
    ) -> BrokerConfig:
        raw: dict[str, str] = {}
        if path is not None:
            raw.update(read_properties(Path(path).read_text()))
        if isinstance(overrides, Mapping):
            raw.update(overrides)
        else:
            for item in overrides:
                if "=" not in item:
                    raise ConfigError(f"override {item!r} is not KEY=VALUE")
                key, value = item.split("=", 1)
                raw[key.strip()] = value.strip()
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: Mapping[str, str]) -> BrokerConfig:
        values = {name: key.default for name, key in BROKER_CONFIGS.items()}
        config = cls(values=values)
        for name, text in raw.items():
            if name.startswith(LISTENER_PREFIX):
                config._set_listener_value(name, text)
                continue
            key = BROKER_CONFIGS.get(name)
            if key is None:
                config.unknown[name] = text
                log.warning("unknown configuration key %s (ignored)", name)
                continue
            values[name] = parse_value(name, key.kind, text)
            config.explicit.add(name)
            if not key.implemented:
                config.inert.append(name)
                log.info("configuration key %s is accepted but has no effect in Odradek", name)
        config._validate()
        config.static_values = dict(values)
        config.static_listener_values = {
            listener: dict(settings) for listener, settings in config.listener_values.items()
        }
        return config

    def apply_dynamic(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> set[str]:
        """Recomputes :attr:`values` from the static values, the cluster-wide dynamic default
        and this broker's dynamic configs, key by key in Kafka's order of precedence (as
        Kafka's ``DynamicBrokerConfig.updateCurrentConfig`` overrides properties; between
        synonyms such as ``log.retention.ms`` and ``.hours`` the usual rule then picks, the
        finer unit first). Keys that are not dynamic,
        or whose value does not parse, are skipped with a warning. Returns the keys whose value
        changed. Readers see each key's old or new value (one dict assignment per key)."""
        merged = dict(self.static_values)
        listeners = {
            listener: dict(settings) for listener, settings in self.static_listener_values.items()
        }
        listener_changed: set[str] = set()
        for level in (default, per_broker):
            for name, raw in level.items():
                if name in REPLICATION_THROTTLE_CONFIGS:
                    continue  # kept for DescribeConfigs only (see REPLICATION_THROTTLE_CONFIGS)
                per_listener = dynamic_listener_key(name)
                if per_listener is not None:
                    listener, base = per_listener
                    try:
                        value = parse_value(name, BROKER_CONFIGS[base].kind, raw)
                    except ConfigError as e:
                        log.warning("ignoring dynamic broker config %s: %s", name, e)
                        continue
                    listeners.setdefault(listener, {})[base] = value
                    continue
                key = BROKER_CONFIGS.get(name)
                if key is None or name not in DYNAMIC_BROKER_CONFIGS:
                    log.warning("ignoring dynamic broker config %s: not a dynamic key", name)
                    continue
                try:
                    value = parse_value(name, key.kind, raw)
                except ConfigError as e:
                    log.warning("ignoring dynamic broker config %s: %s", name, e)
                    continue
                merged[name] = value
        changed = {k for k, v in merged.items() if self.values.get(k) != v}
        for name in changed:
            self.values[name] = merged[name]
        for listener in set(listeners) | set(self.listener_values):
            old, new = self.listener_values.get(listener, {}), listeners.get(listener, {})
            listener_changed.update(
                f"{LISTENER_PREFIX}{listener.lower()}.{k}"
                for k in set(old) | set(new)
                if old.get(k) != new.get(k)
            )
        if listener_changed:
            self.listener_values = listeners  # one assignment: readers see old or new
        self.dynamic_default = dict(default)
        self.dynamic_broker = dict(per_broker)
        return changed | listener_changed

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def _set_listener_value(self, name: str, text: str) -> None:
        """``listener.name.<listener>.<key>``: a per-listener ssl.*/sasl.* setting (Kafka's
        listener prefix), with an optional SASL mechanism before ``sasl.jaas.config`` and
        ``connections.max.reauth.ms``."""
        listener, _, key = name[len(LISTENER_PREFIX) :].partition(".")
        base = key
        mechanism, _, rest = key.partition(".")
        if mechanism.upper() in SASL_MECHANISM_NAMES and rest in _PER_MECHANISM_KEYS:
            base = rest
            key = f"{mechanism.lower()}.{rest}"
        spec = BROKER_CONFIGS.get(base)
        if (
            not listener
            or spec is None
            or not (base.startswith(_PER_LISTENER_KEY_PREFIXES) or base in _PER_LISTENER_KEYS)
        ):
            self.unknown[name] = text
            log.warning("unknown configuration key %s (ignored)", name)
            return
        value = parse_value(name, spec.kind, text)
        self.listener_values.setdefault(listener.upper(), {})[key] = value
        self.explicit.add(name)

    def for_listener(self, listener: str, key: str, *, mechanism: str | None = None) -> Any:
        """The value of ``key`` for ``listener``: ``listener.name.<listener>.<mechanism>.<key>``
        (when a mechanism is given), then ``listener.name.<listener>.<key>``, then the broker
        key (Kafka's order)."""
        overrides = self.listener_values.get(listener.upper(), {})
        if mechanism is not None:
            scoped = f"{mechanism.lower()}.{key}"
            if scoped in overrides:
                return overrides[scoped]
        if key in overrides:
            return overrides[key]
        return self.values[key]

    def listener_keys(self) -> list[tuple[str, Any, ConfigKey, str]]:
        """Every ``listener.name.*`` setting in force: (full key, value, the key it overrides,
        where it comes from: ``static``, ``default`` (the cluster-wide dynamic default) or
        ``broker`` (this broker's dynamic config))."""
        out = []
        for listener, settings in sorted(self.listener_values.items()):
            for key, value in sorted(settings.items()):
                base = (
                    key.partition(".")[2]
                    if key.split(".", 1)[0].upper() in SASL_MECHANISM_NAMES
                    else key
                )
                name = f"{LISTENER_PREFIX}{listener.lower()}.{key}"
                level = (
                    "broker"
                    if name in self.dynamic_broker
                    else "default"
                    if name in self.dynamic_default
                    else "static"
                )
                out.append((name, value, BROKER_CONFIGS[base], level))
        return out

    # -- derived values ----------------------------------------------------------------------

    def _validate(self) -> None:
        self._validate_group_coordinator()
        if self["num.network.threads"] < 1:
            raise ConfigError("num.network.threads must be >= 1")
        if self["message.max.bytes"] < 0:
            raise ConfigError("message.max.bytes must be >= 0")
        if self["max.connection.creation.rate"] < 0:
            raise ConfigError("max.connection.creation.rate must be >= 0")
        if not 0 <= self["transaction.version"] <= 2:
            raise ConfigError("transaction.version must be 0, 1 or 2")
        for listener, values in self.listener_values.items():
            for key in _PER_LISTENER_KEYS:
                if key in values and int(values[key]) <= 0:
                    raise ConfigError(
                        f"listener.name.{listener.lower()}.{key} must be > 0 (got {values[key]})"
                    )
        for key in (
            "delegation.token.max.lifetime.ms",
            "delegation.token.expiry.time.ms",
            "delegation.token.expiry.check.interval.ms",
        ):
            if self[key] < 1:
                raise ConfigError(
                    f"Invalid value {self[key]} for configuration {key}: Value must be at least 1"
                )
        if self["leader.imbalance.check.interval.seconds"] < 1:
            raise ConfigError("leader.imbalance.check.interval.seconds must be >= 1")
        listeners = self.listeners
        if not listeners:
            raise ConfigError("listeners is empty")
        names = [lst.name for lst in listeners]
        if len(set(names)) != len(names):
            raise ConfigError(f"listener names must be unique: {names}")
        protocols = self.security_protocol_map  # raises ConfigError when malformed
        for lst in listeners:
            if lst.name not in protocols:
                raise ConfigError(
                    f"listener {lst} has no security protocol in listener.security.protocol.map"
                )
        for lst in listeners:
            protocol = protocols[lst.name]
            if protocol not in SECURITY_PROTOCOLS:
                raise ConfigError(
                    f"listener {lst} has security protocol {protocol!r}: expected one of "
                    f"{', '.join(SECURITY_PROTOCOLS)}"
                )
        advertised = self.advertised_listeners
        for adv in advertised:
            if adv.host in ("0.0.0.0", "::"):  # noqa: S104 - checking, not binding
                raise ConfigError(f"advertised listener {adv} must not be a wildcard address")
            if adv.name not in protocols:
                raise ConfigError(
                    f"advertised listener {adv} has no security protocol in "
                    "listener.security.protocol.map"
                )
        if "inter.broker.listener.name" in self.explicit and (
            "security.inter.broker.protocol" in self.explicit
        ):
            raise ConfigError(
                "only one of inter.broker.listener.name and security.inter.broker.protocol "
                "may be set"
            )
        inter = self.inter_broker_listener_name
        if inter not in {a.name for a in advertised}:
            raise ConfigError(
                f"inter.broker.listener.name must be a listener name in advertised.listeners "
                f"(the inter-broker listener is {inter}; advertised: "
                f"{', '.join(a.name for a in advertised)})"
            )
        for listener in self.listener_values:
            if listener not in {lst.name for lst in listeners}:
                log.warning(
                    "listener.name.%s.* settings name no listener in listeners", listener.lower()
                )

    @property
    def inter_broker_listener_name(self) -> str:
        """The listener brokers use with each other (Kafka's rule: inter.broker.listener.name,
        else the listener named after security.inter.broker.protocol, else the first advertised
        listener whose protocol is that one)."""
        named = self["inter.broker.listener.name"]
        if named:
            return str(named).upper()
        protocol = str(self["security.inter.broker.protocol"] or "PLAINTEXT").upper()
        advertised = self.advertised_listeners
        protocols = self.security_protocol_map
        if any(a.name == protocol for a in advertised):
            return protocol
        for adv in advertised:
            if protocols.get(adv.name) == protocol:
                return adv.name
        if "security.inter.broker.protocol" not in self.explicit and advertised:
            return advertised[0].name  # our default: the first listener, whatever it is
        return protocol

    def _validate_group_coordinator(self) -> None:
        """Kafka's GroupCoordinatorConfig checks of the consumer group keys."""
        protocols = [p.strip().lower() for p in self["group.coordinator.rebalance.protocols"]]
        for p in protocols:
            if p not in ("classic", "consumer"):
                raise ConfigError(f"group.coordinator.rebalance.protocols: unknown protocol {p!r}")
        if "classic" not in protocols:
            raise ConfigError("Disabling the 'classic' protocol is not supported.")
        lo, hi = (
            self["group.consumer.min.session.timeout.ms"],
            self["group.consumer.max.session.timeout.ms"],
        )
        session = self["group.consumer.session.timeout.ms"]
        hb_lo, hb_hi = (
            self["group.consumer.min.heartbeat.interval.ms"],
            self["group.consumer.max.heartbeat.interval.ms"],
        )
        heartbeat = self["group.consumer.heartbeat.interval.ms"]
        if lo > hi:
            raise ConfigError(
                "group.consumer.min.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"
            )
        if not lo <= session <= hi:
            raise ConfigError(
                "group.consumer.session.timeout.ms must be between group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms"
            )
        if hb_lo < 1 or hb_lo > hb_hi:
            raise ConfigError(
                "group.consumer.min.heartbeat.interval.ms must be at least 1 and at most group.consumer.max.heartbeat.interval.ms"
            )
        if not hb_lo <= heartbeat <= hb_hi:
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms must be between group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms"
            )
        if heartbeat >= session:
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
            )
        if self["group.consumer.max.size"] < 1:
            raise ConfigError("group.consumer.max.size must be at least 1")
        if self["group.consumer.migration.policy"].lower() not in (
            "disabled",
            "upgrade",
            "downgrade",
            "bidirectional",
        ):
            raise ConfigError(
                "group.consumer.migration.policy must be disabled, upgrade, downgrade or bidirectional"
            )
        assignors = [a.strip() for a in self["group.consumer.assignors"] if a.strip()]
        if not assignors:
            raise ConfigError("group.consumer.assignors must not be empty")
        for a in assignors:
            if a not in ("uniform", "range") and a not in (
                "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
            ):
                raise ConfigError(
                    f"group.consumer.assignors: unknown assignor {a!r} (uniform, range)"
                )

    @property
    def broker_id(self) -> int:
        return int(self["broker.id"])

    @property
    def listeners(self) -> list[Listener]:
        return [parse_listener(s) for s in self["listeners"]]

    @property
    def advertised_listeners(self) -> list[Listener]:
        specs = self["advertised.listeners"]
        if specs:
            return [parse_listener(s) for s in specs]
        out = []
        for lst in self.listeners:
            host = lst.host
            if host in ("", "0.0.0.0", "::"):  # noqa: S104 - checking, not binding
                host = "127.0.0.1" if host != "::" else "::1"
            out.append(Listener(lst.name, host, lst.port))
        return out

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self["log.dirs"] or [self["log.dir"]]
        return [Path(d) for d in dirs]

    @property
    def log_roll_ms(self) -> int:
        ms = self["log.roll.ms"]
        return int(ms) if ms is not None else int(self["log.roll.hours"]) * 3600_000

    @property
    def log_roll_jitter_ms(self) -> int:
        ms = self["log.roll.jitter.ms"]
        return int(ms) if ms is not None else int(self["log.roll.jitter.hours"]) * 3600_000

    @property
    def log_retention_ms(self) -> int:
        if self["log.retention.ms"] is not None:
            return int(self["log.retention.ms"])
        if self["log.retention.minutes"] is not None:
            return int(self["log.retention.minutes"]) * 60_000
        return int(self["log.retention.hours"]) * 3600_000

    @property
    def log_flush_interval_ms(self) -> int:
        ms = self["log.flush.interval.ms"]
        return int(ms) if ms is not None else int(self["log.flush.scheduler.interval.ms"])

    def topic_default(self, name: str) -> Any:
        """The broker-level default of topic config ``name``."""
        key = TOPIC_CONFIGS[name]
        if name == "retention.ms":
            return self.log_retention_ms
        if name == "segment.ms":
            return self.log_roll_ms
        if name == "segment.jitter.ms":
            return self.log_roll_jitter_ms
        if name == "flush.ms":
            return self.log_flush_interval_ms
        if key.broker_key is None:
            return key.default
        value = self.values.get(key.broker_key)
        return key.default if value is None else value

    def topic_config(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Every topic config's effective value given a topic's (parsed) overrides."""
        return {name: overrides.get(name, self.topic_default(name)) for name in TOPIC_CONFIGS}

    @property
    def security_protocol_map(self) -> dict[str, str]:
        """``listener.security.protocol.map`` (``"PLAINTEXT:PLAINTEXT,SSL:SSL"``) as a dict."""
        result: dict[str, str] = {}
        for item in str(self["listener.security.protocol.map"] or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, protocol = item.partition(":")
            if not sep:
                raise ConfigError(f"invalid listener.security.protocol.map entry {item!r}")
            result[name.strip().upper()] = protocol.strip().upper()
        return result

    def security_protocol(self, listener: str) -> str:
        """The security protocol of ``listener`` (Kafka: from the map, else the name itself
        when it is a protocol's name)."""
        protocol = self.security_protocol_map.get(listener.upper())
        if protocol is None:
            raise ConfigError(
                f"listener {listener} has no security protocol in listener.security.protocol.map"
            )
        return protocol


# --- typed sections: what each component reads, checked once at start-up ---------------------


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    """The network layer's keys (Kafka's ``SocketServer`` configs)."""

    num_network_threads: int
    socket_request_max_bytes: int
    queued_max_requests: int
    connections_max_idle_ms: int
    queued_max_request_bytes: int
    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: dict[str, int]
    max_connection_creation_rate: int
    #: ``listener.name.<listener>.max.connections`` and ``...max.connection.creation.rate``
    listener_max_connections: dict[str, int]
    listener_creation_rates: dict[str, int]
    request_receive_timeout_ms: int
    socket_listen_backlog_size: int
    socket_send_buffer_bytes: int
    socket_receive_buffer_bytes: int

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> NetworkConfig:
        return cls(
            num_network_threads=int(config["num.network.threads"]),
            socket_request_max_bytes=int(config["socket.request.max.bytes"]),
            queued_max_requests=int(config["queued.max.requests"]),
            connections_max_idle_ms=int(config["connections.max.idle.ms"]),
            queued_max_request_bytes=int(config["queued.max.request.bytes"]),
            max_connections=int(config["max.connections"]),
            max_connections_per_ip=int(config["max.connections.per.ip"]),
            max_connections_per_ip_overrides=_parse_overrides(
                str(config["max.connections.per.ip.overrides"] or "")
            ),
            max_connection_creation_rate=int(config["max.connection.creation.rate"]),
            listener_max_connections=_per_listener(config, "max.connections"),
            listener_creation_rates=_per_listener(config, "max.connection.creation.rate"),
            request_receive_timeout_ms=int(config["request.receive.timeout.ms"]),
            socket_listen_backlog_size=int(config["socket.listen.backlog.size"]),
            socket_send_buffer_bytes=int(config["socket.send.buffer.bytes"]),
            socket_receive_buffer_bytes=int(config["socket.receive.buffer.bytes"]),
        )


def _per_listener(config: BrokerConfig, key: str) -> dict[str, int]:
    """The listeners that set ``listener.name.<listener>.<key>``, with its value."""
    return {
        listener: int(values[key])
        for listener, values in config.listener_values.items()
        if key in values
    }


@dataclass(frozen=True, slots=True)
class HandlerConfig:
    """The keys request handlers read (Kafka's ``KafkaApis`` reads them from its
    ``KafkaConfig``). Each field is its key with dots as underscores; none of them is dynamic
    (:data:`DYNAMIC_BROKER_CONFIGS`), so the section is read once, at start-up."""

    #: CreateTopics: partitions of a topic created without a count
    num_partitions: int
    #: Metadata: whether a request naming an unknown topic creates it
    auto_create_topics_enable: bool
    #: Fetch: the response's size cap, whatever the client asks
    fetch_max_bytes: int
    #: DescribeTopicPartitions: partitions one response carries at most (KIP-966)
    max_request_partition_size_limit: int
    #: ApiVersions: the client telemetry APIs (KIP-714) are advertised only with a metrics
    #: endpoint (0: none)
    metrics_port: int

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> HandlerConfig:
        return cls(
            num_partitions=int(config["num.partitions"]),
            auto_create_topics_enable=bool(config["auto.create.topics.enable"]),
            fetch_max_bytes=int(config["fetch.max.bytes"]),
            max_request_partition_size_limit=int(config["max.request.partition.size.limit"]),
            metrics_port=int(config["metrics.port"]),
        )


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """The replica manager's keys (Kafka's ``ReplicaManager``, ``ReplicaFetcherManager`` and
    ``ProducerStateManagerConfig`` read them from its ``KafkaConfig``). Each field is its key
    with dots as underscores. Built once, at start-up, after the dynamic broker configs stored
    in the cluster are applied: the two dynamic keys among them, ``num.replica.fetchers`` and
    ``producer.id.expiration.ms``, are in :data:`APPLIED_AT_RESTART` (the fetcher pool and the
    producer states are built once). The topic defaults the replica manager reads (``log.*``,
    ``min.insync.replicas``...) are not here: they are dynamic and read from the live
    :class:`BrokerConfig` on each use."""

    #: a follower that has not caught up for this long leaves the ISR
    replica_lag_time_max_ms: int
    #: fetcher threads per source broker
    num_replica_fetchers: int
    replica_fetch_max_bytes: int
    replica_fetch_response_max_bytes: int
    replica_fetch_wait_max_ms: int
    replica_fetch_min_bytes: int
    replica_fetch_backoff_ms: int
    replica_socket_timeout_ms: int
    #: incremental fetch sessions (KIP-227) with each leader
    replica_fetch_session_enable: bool
    #: idle producers are forgotten after this long
    producer_id_expiration_ms: int
    #: the key as configured (None: not set); the fetchers use it only without inter-broker
    #: security, which otherwise names the listener (:class:`~broker.security.inter_broker.
    #: InterBrokerSecurity`)
    inter_broker_listener_name: str | None

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> ReplicationConfig:
        listener = config["inter.broker.listener.name"]
        return cls(
            replica_lag_time_max_ms=int(config["replica.lag.time.max.ms"]),
            num_replica_fetchers=int(config["num.replica.fetchers"]),
            replica_fetch_max_bytes=int(config["replica.fetch.max.bytes"]),
            replica_fetch_response_max_bytes=int(config["replica.fetch.response.max.bytes"]),
            replica_fetch_wait_max_ms=int(config["replica.fetch.wait.max.ms"]),
            replica_fetch_min_bytes=int(config["replica.fetch.min.bytes"]),
            replica_fetch_backoff_ms=int(config["replica.fetch.backoff.ms"]),
            replica_socket_timeout_ms=int(config["replica.socket.timeout.ms"]),
            replica_fetch_session_enable=bool(config["replica.fetch.session.enable"]),
            producer_id_expiration_ms=int(config["producer.id.expiration.ms"]),
            inter_broker_listener_name=None if listener is None else str(listener),
        )


@dataclass(frozen=True, slots=True)
class TopicAdminConfig:
    """The keys :class:`~broker.admin.TopicAdmin` checks topic creation, growth and deletion
    against (Kafka's controller reads them from its ``KafkaConfig``). Each field is its key with
    dots as underscores; none of them is dynamic, so the section is read once, at start-up."""

    #: partitions one CreateTopics or CreatePartitions request may create, over all its topics
    max_partitions_per_request: int
    #: partition replicas the cluster may hold per live broker
    max_broker_partitions: int
    #: partitions of a topic created without a count
    num_partitions: int
    #: replication factor of a topic created without one
    default_replication_factor: int
    #: whether DeleteTopics deletes
    delete_topic_enable: bool

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> TopicAdminConfig:
        return cls(
            max_partitions_per_request=int(config["max.partitions.per.request"]),
            max_broker_partitions=int(config["max.broker.partitions"]),
            num_partitions=int(config["num.partitions"]),
            default_replication_factor=int(config["default.replication.factor"]),
            delete_topic_enable=bool(config["delete.topic.enable"]),
        )


def _parse_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,host:count``, by client address. A
    host is an IP address or a host name; a name counts for every address it resolves to now
    (Kafka's ``ConnectionQuotas`` resolves it once, with ``InetAddress.getByName``), and an
    address given as such wins over a name resolving to it. A name that does not resolve is
    refused."""
    given: list[tuple[str, int]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        try:
            given.append((host, int(count)))
        except ValueError:
            sep = ""
        if not sep or not host:
            raise ConfigError(f"invalid max.connections.per.ip.overrides entry {item!r}")
    result: dict[str, int] = {}
    names: list[tuple[str, int]] = []
    for host, limit in given:
        try:
            result[ipaddress.ip_address(host).compressed] = limit
        except ValueError:
            names.append((host, limit))
    for host, limit in names:
        try:
            addresses = addresses_of(host)
        except OSError as e:
            raise ConfigError(
                f"max.connections.per.ip.overrides: host {host!r} does not resolve: "
                f"{e.strerror or e}"
            ) from None
        for address in addresses:
            result.setdefault(address, limit)
    return result


@dataclass(frozen=True, slots=True)
class ZooKeeperConfig:
    """Cluster mode's keys (``zookeeper.connect`` empty: standalone)."""

    connect: str
    session_timeout_ms: int
    connection_timeout_ms: int | None
    unclean_leader_election_enable: bool
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_s: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> ZooKeeperConfig:
        timeout = config["zookeeper.connection.timeout.ms"]
        return cls(
            connect=str(config["zookeeper.connect"] or ""),
            session_timeout_ms=int(config["zookeeper.session.timeout.ms"]),
            connection_timeout_ms=int(timeout) if timeout is not None else None,
            unclean_leader_election_enable=bool(config["unclean.leader.election.enable"]),
            auto_leader_rebalance_enable=bool(config["auto.leader.rebalance.enable"]),
            leader_imbalance_check_interval_s=float(
                config["leader.imbalance.check.interval.seconds"]
            ),
            leader_imbalance_per_broker_percentage=int(
                config["leader.imbalance.per.broker.percentage"]
            ),
        )


# --- dynamic broker configs (Kafka's DynamicBrokerConfig) ------------------------------------

#: Broker keys Kafka lets an operator change at runtime (``DynamicBrokerConfig.
#: AllDynamicConfigs``: the log defaults, log cleaner, thread pools, listeners, connection
#: limits, producer id expiration, metric reporters), restricted to the keys Odradek knows.
#: Every other key is read-only: changing it needs server.properties and a restart.
DYNAMIC_BROKER_CONFIGS: frozenset[str] = frozenset(
    {
        # DynamicLogConfig: the broker-level defaults of topic configs, by their preferred key
        # only (Kafka's ServerTopicConfigSynonyms: log.retention.ms, not .minutes or .hours)
        "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms",
        "log.index.size.max.bytes", "log.flush.interval.messages",
        "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms",
        "message.max.bytes",
        "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
        "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
        "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
        "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
        "log.preallocate", "log.message.timestamp.type", "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        # LogCleaner
        "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms",
        # DynamicThreadPool and the socket server
        "num.io.threads", "num.network.threads", "num.replica.fetchers",
        "num.recovery.threads.per.data.dir", "background.threads",
        "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
        "max.connection.creation.rate",
        # DynamicListenerConfig (per broker only)
        "listeners", "advertised.listeners", "listener.security.protocol.map",
        # DynamicProducerStateManagerConfig (ProducerStateManagerConfig's reconfigurable keys:
        # KIP-890's switch included, so an operator can turn verification off at once)
        "producer.id.expiration.ms", "transaction.partition.verification.enable",
        # metric reporters
        "metric.reporters",
    }
)  # fmt: skip

#: Kafka's broker-level replication quota configs (``QuotaConfig``): dynamic only (set on a
#: broker or at the cluster default with IncrementalAlterConfigs, as kafka-reassign-partitions
#: does with ``--throttle`` and undoes on every ``--verify``; never in server.properties), bytes
#: per second, at least 0, and listed by DescribeConfigs only where set. Kafka's replica
#: fetchers throttle reassignment traffic by them; Odradek keeps and reports them but does not
#: throttle replication.
REPLICATION_THROTTLE_CONFIGS: tuple[str, ...] = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)

#: Dynamic keys that only a broker's own entity may set, never the cluster-wide default
#: (Kafka's ``PerBrokerConfigs``: listener configs).
PER_BROKER_CONFIGS: frozenset[str] = frozenset(
    {"listeners", "advertised.listeners", "listener.security.protocol.map"}
)

#: Dynamic keys Odradek stores and reports but applies only at the next start (the thread
#: pools and listeners are built once); DescribeConfigs shows the stored value.
APPLIED_AT_RESTART: frozenset[str] = frozenset(
    {
        "num.io.threads", "num.network.threads", "num.replica.fetchers",
        "num.recovery.threads.per.data.dir", "background.threads", "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size", "listeners", "advertised.listeners",
        "listener.security.protocol.map", "metric.reporters", "producer.id.expiration.ms",
    }
)  # fmt: skip

#: Keys that name one setting in several units, in Kafka's order of precedence
#: (``DynamicBrokerConfig.brokerConfigSynonyms``): DescribeConfigs lists them as each other's
#: synonyms.
BROKER_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """``name`` and the keys that set the same thing, in order of precedence."""
    for group in BROKER_SYNONYMS:
        if name in group:
            return group
    return (name,)


def validate_dynamic_broker_configs(
    configs: Mapping[str, str | None],
    *,
    per_broker: bool,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Checks dynamic broker configs as Kafka's ``DynamicBrokerConfig.validateConfigs`` does:
    known keys, dynamic ones, per-broker keys not at the cluster default, values of the right
    type and in range (a topic default's range is its topic config's, as Kafka checks the log
    config they make), and a thread pool changed by at most double or half its ``current``
    size (the broker's values now; Kafka's ``DynamicThreadPool`` and ``LogCleaner``). Raises
    ConfigError; returns the parsed values."""
    unknown = sorted(
        k
        for k in configs
        if k not in BROKER_CONFIGS
        and k not in REPLICATION_THROTTLE_CONFIGS
        and dynamic_listener_key(k) is None
    )
    if unknown:
        raise ConfigError(f"Unknown broker configs: {unknown}")
    static = sorted(
        k
        for k in configs
        if k not in DYNAMIC_BROKER_CONFIGS
        and k not in REPLICATION_THROTTLE_CONFIGS
        and dynamic_listener_key(k) is None
    )
    if static:
        raise ConfigError(
            f"Cannot update these configs dynamically: {static} (they are read-only: set them "  # noqa: S608 - a message, not SQL
            "in server.properties and restart the broker)"
        )
    if not per_broker:
        only_per_broker = sorted(k for k in configs if k in PER_BROKER_CONFIGS)
        if only_per_broker:
            raise ConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {only_per_broker}"
            )
    parsed: dict[str, Any] = {}
    for name, raw in configs.items():
        if raw is None:
            raise ConfigError(f"Null value not supported for broker config: {name}")
        if name in REPLICATION_THROTTLE_CONFIGS:
            rate = parse_value(name, "long", raw)
            if rate < 0:
                raise ConfigError(f"Invalid value {raw} for configuration {name}: must be >= 0")
            parsed[name] = rate
            continue
        per_listener = dynamic_listener_key(name)
        if per_listener is not None:
            limit = parse_value(name, BROKER_CONFIGS[per_listener[1]].kind, raw)
            if limit <= 0:
                raise ConfigError(f"Invalid value {raw} for configuration {name}: must be > 0")
            parsed[name] = limit
            continue
        key = BROKER_CONFIGS[name]
        value = parse_value(name, key.kind, raw)
        choices = _VALID_CHOICES.get(name)
        if choices and value not in choices:
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: expected one of {choices}"
            )
        if key.kind in ("int", "long") and value < 0 and name not in _NEGATIVE_ALLOWED:
            raise ConfigError(f"Invalid value {raw} for configuration {name}: must be >= 0")
        topic_name = _TOPIC_OF_BROKER_KEY.get(name)
        if topic_name is not None and not (name == "log.retention.ms" and value < 0):
            # (Kafka takes any negative log.retention.ms as -1, unlimited)
            _check_range(topic_name, raw, value, shown=name)
        if name in _THREAD_POOLS:
            _check_thread_pool(name, value, (current or {}).get(name))
        if name == "max.connections.per.ip.overrides":
            _parse_overrides(str(value))
        parsed[name] = value
    if "listeners" in parsed:
        for spec in parsed["listeners"]:
            parse_listener(spec)
    return parsed


#: the broker keys that are topic configs' defaults, with their topic config
_TOPIC_OF_BROKER_KEY = {k.broker_key: k.name for k in TOPIC_CONFIGS.values() if k.broker_key}
#: thread pools resized at runtime, by at most double or half (Kafka's DynamicThreadPool, and
#: the log cleaner's own check)
_THREAD_POOLS = frozenset(
    {
        "num.io.threads",
        "num.network.threads",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "background.threads",
        "log.cleaner.threads",
    }
)


def _check_thread_pool(name: str, value: int, current: int | None) -> None:
    if value < 1:
        raise ConfigError(
            f"Dynamic thread count update validation failed for {name}={value}, value should "
            "be at least 1"
        )
    if current is None or value == current:
        return
    if value < current // 2:
        raise ConfigError(
            f"Dynamic thread count update validation failed for {name}={value}, value should "
            f"be at least half the current value {current}"
        )
    if value > current * 2:
        raise ConfigError(
            f"Dynamic thread count update validation failed for {name}={value}, value should "
            f"not be greater than double the current value {current}"
        )


#: broker keys whose -1 means "unlimited" or "not set"
_NEGATIVE_ALLOWED = frozenset({"log.retention.bytes", "log.retention.ms", "compression.gzip.level"})
