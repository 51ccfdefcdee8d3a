"""A blocking Kafka admin client for the ``odradek`` command line, over :mod:`protocol.client`.

It speaks only the Kafka protocol (ApiVersions negotiation per broker, then whichever version
both sides know), so the same commands work against Odradek and against any Kafka cluster.
Requests go where Kafka's own admin client sends them: topic and config changes, leader
elections and partition reassignments to the controller (any broker when the cluster names
none), offsets and fetches to partition leaders, group
requests to the group's coordinator (FindCoordinator), broker configs and log directories to
the broker they name.

Errors: a Kafka error code that a retry cannot cure raises :class:`KafkaError` (its ``code``
is the :class:`~protocol.error_codes.ErrorCode`); retriable ones (a leader or coordinator
moving, a coordinator still loading) are retried with a fresh lookup until ``timeout_s``
passes; an unreachable cluster raises :class:`Unreachable`. A failed authentication (SASL
credentials refused, a mechanism the broker does not offer, a certificate that does not verify)
is final at once, as Kafka's clients treat an ``AuthenticationException``: another broker or
another try would refuse the same credentials.

Not thread-safe: one client per thread (the CLI has one).
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cli.security import Security
from protocol.api_keys import ApiKey
from protocol.client import ClientConnection, UnsupportedApi, exchange_api_versions
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.scram import SaslClient, ScramError

T = TypeVar("T")
TopicPartition = tuple[str, int]

#: The versions this client speaks. Upper bounds stop before requests name topics by id
#: (Fetch 13, Produce 13, OffsetCommit/OffsetFetch 10): the command line names topics.
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (1, 12),
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.FIND_COORDINATOR: (1, 3),
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 7),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 5),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.CREATE_DELEGATION_TOKEN: (1, 3),
    ApiKey.RENEW_DELEGATION_TOKEN: (1, 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (1, 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (1, 3),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
}

#: Errors after which a fresh lookup (metadata, coordinator) and a retry may succeed.
RETRY_AFTER_LOOKUP = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


class ClientError(Exception):
    """Base of the client's errors; the message is for the operator."""


class Unreachable(ClientError):
    """No broker answered (or a connection broke) before the deadline."""


class KafkaError(ClientError):
    """A broker answered with an error code."""

    def __init__(self, code: int, what: str, message: str | None = None) -> None:
        self.code = ErrorCode.of(code)
        self.what = what
        self.detail = message
        text = f"{what}: {self.code.name}"
        detail = message or self.code.message
        if detail:
            text += f" ({detail})"
        super().__init__(text)


class _Retry(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def check(code: int, what: str, message: str | None = None) -> None:
    """Raises for a non-zero error code: retriable ones as a retry, others as KafkaError."""
    if code == ErrorCode.NONE:
        return
    error = KafkaError(code, what, message)
    if error.code in RETRY_AFTER_LOOKUP:
        raise _Retry(error)
    raise error


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` (IPv6 hosts in brackets)."""
    servers = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":")
        else:
            host, _, port = item.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClientError(f"bootstrap server {item!r} is not HOST:PORT")
        servers.append((host, int(port)))
    if not servers:
        raise ClientError("no bootstrap server given")
    return servers


class Connection:
    """A blocking connection to one broker, with its negotiated versions."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        timeout_s: float,
        security: Security | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security or Security()
        self._sock: socket.socket | None = None
        self._protocol = ClientConnection(CLIENT_VERSIONS, client_id=client_id)

    def __repr__(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        if self._sock is not None:
            return
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as e:
            raise Unreachable(f"cannot connect to {self}: {e.strerror or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        context = self.security.ssl_context
        if context is not None:
            try:
                sock = context.wrap_socket(sock, server_hostname=self.host)
            except ssl.SSLCertVerificationError as e:
                sock.close()
                raise ClientError(f"TLS with {self} failed: {e.verify_message or e}") from None
            except (OSError, ssl.SSLError) as e:
                sock.close()
                raise Unreachable(f"TLS with {self} failed: {e}") from None
        self._sock = sock
        self._protocol = ClientConnection(CLIENT_VERSIONS, client_id=self.client_id)
        try:
            body = exchange_api_versions(self.request, "odradek-cli", "0.1.0")
            self._protocol.apply_api_versions(body)
            if self.security.sasl:
                self._authenticate()
        except BaseException:
            self.close()
            raise

    def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the exchange is done."""
        from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
        from protocol.messages.sasl_handshake import SaslHandshakeRequest

        sec = self.security
        assert sec.mechanism is not None and sec.username is not None
        answer = self.request(SaslHandshakeRequest(mechanism=sec.mechanism), 1)
        if answer.error_code:
            raise KafkaError(
                answer.error_code,
                f"SASL/{sec.mechanism} with {self}",
                f"the broker offers {', '.join(answer.mechanisms)}",
            )
        sasl = SaslClient(sec.mechanism, sec.username, sec.password or "")
        token: bytes | None = sasl.first()
        version = self._protocol.version_for(ApiKey.SASL_AUTHENTICATE)
        while token is not None:
            reply = self.request(SaslAuthenticateRequest(auth_bytes=token), version)
            if reply.error_code:
                raise KafkaError(
                    reply.error_code, f"authenticating with {self}", reply.error_message
                )
            try:
                token = sasl.step(bytes(reply.auth_bytes))
            except ScramError as e:
                raise ClientError(f"authenticating with {self}: SCRAM: {e}") from None

    def supports(self, api_key: int) -> bool:
        self.connect()
        return self._protocol.supports(api_key)

    def version(self, api_key: int) -> int:
        self.connect()
        try:
            return self._protocol.version_for(api_key)
        except UnsupportedApi as e:
            raise ClientError(f"broker {self}: {e}") from None

    def send(self, body: Any, version: int | None = None, *, expect_response: bool = True) -> int:
        self.connect()
        assert self._sock is not None
        if version is None:
            version = self.version(body.api_key)
        cid, frame = self._protocol.send(body, version, expect_response=expect_response)
        try:
            self._sock.sendall(frame)
        except OSError as e:
            self.close()
            raise Unreachable(f"sending to {self} failed: {e}") from None
        return cid

    def receive(self, timeout_s: float | None = None) -> Any:
        """The oldest pending response's body."""
        sock = self._sock
        assert sock is not None
        sock.settimeout(timeout_s if timeout_s is not None else self.timeout_s)
        try:
            while True:
                buf = self._protocol.get_buffer()
                n = sock.recv_into(buf)
                del buf
                if n == 0:
                    raise EOFError("the broker closed the connection")
                responses = self._protocol.buffer_updated(n)
                if responses:
                    assert len(responses) == 1, "one request in flight at a time"
                    return responses[0].body
        except (OSError, EOFError, ProtocolError) as e:
            self.close()
            raise Unreachable(f"reading from {self}: {e}") from None

    def request(
        self, body: Any, version: int | None = None, *, timeout_s: float | None = None
    ) -> Any:
        self.send(body, version)
        return self.receive(timeout_s)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._protocol.fail_in_flight()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


@dataclass
class PartitionMeta:
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    error: int = 0


@dataclass
class TopicMeta:
    name: str
    topic_id: str
    internal: bool
    error: int
    partitions: dict[int, PartitionMeta] = field(default_factory=dict)


@dataclass
class BrokerMeta:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass
class ClusterMeta:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerMeta] = field(default_factory=dict)
    topics: dict[str, TopicMeta] = field(default_factory=dict)


class AdminClient:
    """Cluster-level requests, routed and retried as Kafka's admin client does."""

    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "odradek-cli",
        timeout_s: float = 30.0,
        security: Security | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security or Security()
        self.cluster = ClusterMeta()
        self._nodes: dict[int, Connection] = {}
        self._seeds = [
            Connection(h, p, client_id=client_id, timeout_s=timeout_s, security=self.security)
            for h, p in self.bootstrap
        ]
        self._coordinators: dict[str, int] = {}

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in [*self._nodes.values(), *self._seeds]:
            conn.close()

    # -- connections ---------------------------------------------------------------------------

    def any(self) -> Connection:
        errors = []
        for conn in [*self._nodes.values(), *self._seeds]:
            try:
                conn.connect()
                return conn
            except Unreachable as e:
                errors.append(str(e))
        raise Unreachable("no broker reachable: " + "; ".join(errors))

    def node(self, node_id: int) -> Connection:
        conn = self._nodes.get(node_id)
        broker = self.cluster.brokers.get(node_id)
        if broker is None:
            self.metadata([])
            broker = self.cluster.brokers.get(node_id)
            if broker is None:
                raise ClientError(f"broker {node_id} is not in the cluster")
        if conn is None or (conn.host, conn.port) != (broker.host, broker.port):
            if conn is not None:
                conn.close()
            conn = Connection(
                broker.host,
                broker.port,
                client_id=self.client_id,
                timeout_s=self.timeout_s,
                security=self.security,
            )
            self._nodes[node_id] = conn
        return conn

    def controller(self) -> Connection:
        """The controller when the cluster names a live one (where Kafka's admin client sends
        topic changes), else any broker."""
        if self.cluster.controller_id < 0:
            self.metadata([])
        cid = self.cluster.controller_id
        return self.node(cid) if cid in self.cluster.brokers else self.any()

    def retrying(self, what: str, attempt: Callable[[], T]) -> T:
        """Runs ``attempt`` until it returns, retrying after fresh lookups, until the timeout."""
        deadline = time.monotonic() + self.timeout_s
        delay = 0.1
        while True:
            try:
                return attempt()
            except _Retry as e:
                last: Exception = e.error
            except Unreachable as e:
                last = e
            if time.monotonic() + delay > deadline:
                if isinstance(last, KafkaError):
                    raise last
                raise Unreachable(f"{what}: {last}")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            self._coordinators.clear()
            self.cluster.controller_id = -1

    # -- metadata ------------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMeta:
        """Fresh metadata for ``topics`` (None: every topic; []: brokers only)."""
        from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

        names = None if topics is None else sorted(set(topics))

        def attempt() -> ClusterMeta:
            conn = self.any()
            body = conn.request(
                MetadataRequest(
                    topics=None if names is None else [MetadataRequestTopic(name=n) for n in names],
                    allow_auto_topic_creation=False,
                )
            )
            md = ClusterMeta(cluster_id=body.cluster_id, controller_id=body.controller_id)
            md.brokers = {
                b.node_id: BrokerMeta(b.node_id, b.host, b.port, b.rack) for b in body.brokers
            }
            for t in body.topics:
                if t.name is None:
                    continue
                topic = TopicMeta(t.name, str(t.topic_id), t.is_internal, t.error_code)
                for p in t.partitions:
                    topic.partitions[p.partition_index] = PartitionMeta(
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch,
                        list(p.replica_nodes),
                        list(p.isr_nodes),
                        list(p.offline_replicas or []),
                        p.error_code,
                    )
                md.topics[t.name] = topic
            return md

        md = self.retrying("Metadata", attempt)
        if names is None:
            self.cluster = md
        else:
            self.cluster.cluster_id = md.cluster_id
            self.cluster.controller_id = md.controller_id
            self.cluster.brokers = md.brokers
            self.cluster.topics.update(md.topics)
        return md

    def topic(self, name: str) -> TopicMeta:
        """A topic's metadata; KafkaError UNKNOWN_TOPIC_OR_PARTITION when it does not exist."""
        md = self.metadata([name])
        topic = md.topics.get(name)
        if topic is None or topic.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name}")
        if topic.error:
            raise KafkaError(topic.error, f"topic {name}")
        return topic

    def by_leader(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        tps = list(tps)
        md = self.metadata({t for t, _ in tps})
        out: dict[int, list[TopicPartition]] = {}
        for t, p in tps:
            topic = md.topics.get(t)
            part = topic.partitions.get(p) if topic is not None else None
            if part is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{t}-{p}")
            if part.leader < 0 or part.leader not in md.brokers:
                raise _Retry(KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{t}-{p}"))
            out.setdefault(part.leader, []).append((t, p))
        return out

    # -- offsets -------------------------------------------------------------------------------

    def list_offsets(
        self, timestamps: Mapping[TopicPartition, int], *, isolation_level: int = 0
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, timestamp) per partition for a timestamp, -1 (latest) or -2 (earliest)."""
        from protocol.messages.list_offsets import (
            ListOffsetsPartition,
            ListOffsetsRequest,
            ListOffsetsTopic,
        )

        result: dict[TopicPartition, tuple[int, int]] = {}

        def attempt() -> dict[TopicPartition, tuple[int, int]]:
            remaining = {tp: ts for tp, ts in timestamps.items() if tp not in result}
            for node, tps in self.by_leader(remaining).items():
                topics: dict[str, list[Any]] = {}
                for t, p in tps:
                    topics.setdefault(t, []).append(
                        ListOffsetsPartition(partition_index=p, timestamp=remaining[(t, p)])
                    )
                body = self.node(node).request(
                    ListOffsetsRequest(
                        replica_id=-1,
                        isolation_level=isolation_level,
                        topics=[
                            ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()
                        ],
                    )
                )
                for t in body.topics:
                    for p in t.partitions:
                        check(p.error_code, f"ListOffsets {t.name}-{p.partition_index}")
                        result[(t.name, p.partition_index)] = (p.offset, p.timestamp)
            return result

        return self.retrying("ListOffsets", attempt)

    # -- groups --------------------------------------------------------------------------------

    def coordinator(self, group: str) -> Connection:
        from protocol.messages.find_coordinator import FindCoordinatorRequest

        node = self._coordinators.get(group)
        if node is None:
            body = self.any().request(FindCoordinatorRequest(key=group, key_type=0))
            check(body.error_code, f"FindCoordinator {group}", body.error_message)
            node = self._coordinators[group] = body.node_id
            if node not in self.cluster.brokers:
                self.metadata([])
        return self.node(node)

    def group_request(self, group: str, what: str, make: Callable[[Connection], T]) -> T:
        """``make(coordinator connection)``, retried when the coordinator moves or loads."""
        return self.retrying(what, lambda: make(self.coordinator(group)))

    def list_groups(self) -> list[Any]:
        """Every group of every broker (ListGroups is answered per coordinator)."""
        from protocol.messages.list_groups import ListGroupsRequest

        groups: dict[str, Any] = {}

        def list_on(node: int) -> Any:
            return self.retrying("ListGroups", lambda: self.node(node).request(ListGroupsRequest()))

        for node in sorted(self.metadata([]).brokers):
            body = list_on(node)
            check(body.error_code, "ListGroups")
            for g in body.groups:
                groups[g.group_id] = g
        return [groups[g] for g in sorted(groups)]

    def describe_group(self, group: str) -> Any:
        from protocol.messages.describe_groups import DescribeGroupsRequest

        def make(conn: Connection) -> Any:
            body = conn.request(DescribeGroupsRequest(groups=[group]))
            described = body.groups[0]
            check(described.error_code, f"DescribeGroups {group}", described.error_message)
            return described

        return self.group_request(group, "DescribeGroups", make)

    def committed_offsets(self, group: str) -> dict[TopicPartition, tuple[int, str | None]]:
        """(offset, metadata) of every partition the group committed."""
        from protocol.messages.offset_fetch import OffsetFetchRequest

        def make(conn: Connection) -> dict[TopicPartition, tuple[int, str | None]]:
            body = conn.request(OffsetFetchRequest(group_id=group, topics=None))
            check(body.error_code, f"OffsetFetch {group}")
            out = {}
            for t in body.topics:
                for p in t.partitions:
                    check(p.error_code, f"OffsetFetch {group} {t.name}-{p.partition_index}")
                    if p.committed_offset >= 0:
                        out[(t.name, p.partition_index)] = (p.committed_offset, p.metadata)
            return out

        return self.group_request(group, "OffsetFetch", make)

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commits offsets outside any generation (as kafka-consumer-groups' reset does): the
        group must have no active members, or the coordinator refuses."""
        from protocol.messages.offset_commit import (
            OffsetCommitRequest,
            OffsetCommitRequestPartition,
            OffsetCommitRequestTopic,
        )

        topics: dict[str, list[Any]] = {}
        for (t, p), offset in sorted(offsets.items()):
            topics.setdefault(t, []).append(
                OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=offset, committed_metadata=""
                )
            )
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time_ms=-1,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )

        def make(conn: Connection) -> None:
            body = conn.request(request)
            for t in body.topics:
                for p in t.partitions:
                    check(p.error_code, f"OffsetCommit {group} {t.name}-{p.partition_index}")

        self.group_request(group, "OffsetCommit", make)

    def delete_group(self, group: str) -> None:
        from protocol.messages.delete_groups import DeleteGroupsRequest

        def make(conn: Connection) -> None:
            body = conn.request(DeleteGroupsRequest(groups_names=[group]))
            for r in body.results:
                check(r.error_code, f"DeleteGroups {group}")

        self.group_request(group, "DeleteGroups", make)

    # -- topics --------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        validate_only: bool = False,
    ) -> Any:
        from protocol.messages.create_topics import (
            CreatableTopic,
            CreatableTopicConfig,
            CreateTopicsRequest,
        )

        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    assignments=[],
                    configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
                )
            ],
            timeout_ms=int(self.timeout_s * 1000),
            validate_only=validate_only,
        )

        def attempt() -> Any:
            result = self.controller().request(request).topics[0]
            check(result.error_code, f"CreateTopics {name}", result.error_message)
            return result

        return self.retrying("CreateTopics", attempt)

    def delete_topic(self, name: str) -> None:
        from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState

        def attempt() -> None:
            conn = self.controller()
            version = conn.version(ApiKey.DELETE_TOPICS)
            request = DeleteTopicsRequest(
                topic_names=[name],
                topics=[DeleteTopicState(name=name)],
                timeout_ms=int(self.timeout_s * 1000),
            )
            for r in conn.request(request, version).responses:
                check(r.error_code, f"DeleteTopics {name}", r.error_message)

        self.retrying("DeleteTopics", attempt)

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> None:
        from protocol.messages.create_partitions import (
            CreatePartitionsRequest,
            CreatePartitionsTopic,
        )

        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)],
            timeout_ms=int(self.timeout_s * 1000),
            validate_only=validate_only,
        )

        def attempt() -> None:
            for r in self.controller().request(request).results:
                check(r.error_code, f"CreatePartitions {name}", r.error_message)

        self.retrying("CreatePartitions", attempt)

    # -- configs -------------------------------------------------------------------------------

    def describe_configs(
        self,
        resource_type: int,
        name: str,
        keys: list[str] | None = None,
        *,
        node: int | None = None,
    ) -> list[Any]:
        """A resource's config entries (with synonyms and documentation where the broker gives
        them). Broker resources are asked of the broker they name (``node``)."""
        from protocol.messages.describe_configs import (
            DescribeConfigsRequest,
            DescribeConfigsResource,
        )

        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=keys
                )
            ],
            include_synonyms=True,
            include_documentation=True,
        )

        def attempt() -> list[Any]:
            conn = self.node(node) if node is not None else self.any()
            result = conn.request(request).results[0]
            check(result.error_code, f"DescribeConfigs {name or '<default>'}", result.error_message)
            return list(result.configs)

        return self.retrying("DescribeConfigs", attempt)

    def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        ops: list[tuple[str, int, str | None]],
        *,
        node: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """(key, operation, value) changes: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT."""
        from protocol.messages.incremental_alter_configs import (
            AlterableConfig,
            AlterConfigsResource,
            IncrementalAlterConfigsRequest,
        )

        request = IncrementalAlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[
                        AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops
                    ],
                )
            ],
            validate_only=validate_only,
        )

        def attempt() -> None:
            conn = self.node(node) if node is not None else self.controller()
            for r in conn.request(request).responses:
                check(
                    r.error_code, f"IncrementalAlterConfigs {name or '<default>'}", r.error_message
                )

        self.retrying("IncrementalAlterConfigs", attempt)

    # -- cluster -------------------------------------------------------------------------------

    def describe_cluster(self) -> Any:
        """DescribeCluster where the broker has it (Kafka 2.8+), else built from Metadata."""
        from protocol.messages.describe_cluster import DescribeClusterRequest

        conn = self.any()
        if conn.supports(ApiKey.DESCRIBE_CLUSTER):
            body = self.retrying("DescribeCluster", lambda: conn.request(DescribeClusterRequest()))
            check(body.error_code, "DescribeCluster", body.error_message)
            return body
        return None

    def describe_log_dirs(self, node: int, topics: list[str] | None = None) -> Any:
        from protocol.messages.describe_log_dirs import (
            DescribableLogDirTopic,
            DescribeLogDirsRequest,
        )

        md = self.metadata(topics or None)
        request_topics = None
        if topics:
            request_topics = [
                DescribableLogDirTopic(topic=t, partitions=sorted(md.topics[t].partitions))
                for t in topics
                if t in md.topics
            ]
        body = self.retrying(
            "DescribeLogDirs",
            lambda: self.node(node).request(DescribeLogDirsRequest(topics=request_topics)),
        )
        check(body.error_code, f"DescribeLogDirs on broker {node}")
        return body

    def alter_replica_log_dir(self, node: int, topic: str, partition: int, path: str) -> None:
        from protocol.messages.alter_replica_log_dirs import (
            AlterReplicaLogDir,
            AlterReplicaLogDirsRequest,
            AlterReplicaLogDirTopic,
        )

        request = AlterReplicaLogDirsRequest(
            dirs=[
                AlterReplicaLogDir(
                    path=path,
                    topics=[AlterReplicaLogDirTopic(name=topic, partitions=[partition])],
                )
            ]
        )
        body = self.node(node).request(request)
        for t in body.results:
            for p in t.partitions:
                check(p.error_code, f"AlterReplicaLogDirs {t.topic_name}-{p.partition_index}")

    # -- replicas: leader elections (KIP-183, KIP-460) and reassignments (KIP-455) --------------

    def elect_leaders(
        self, election_type: int, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """ElectLeaders (0 preferred, 1 unclean) of ``partitions`` (None: every partition, and
        the controller leaves out those that needed no election), sent to the controller as
        Kafka's admin client does: (error, message) per partition, ``NONE`` where a leader was
        elected. A broker that is not the controller answers NOT_CONTROLLER (per partition, as
        Kafka's ZooKeeper-mode brokers do): the controller is looked up again and asked."""
        from protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions

        topics: dict[str, list[int]] | None = None
        if partitions is not None:
            topics = {}
            for t, p in partitions:
                topics.setdefault(t, []).append(p)
        request = ElectLeadersRequest(
            election_type=election_type,
            topic_partitions=None
            if topics is None
            else [TopicPartitions(topic=t, partitions=ps) for t, ps in topics.items()],
            timeout_ms=int(self.timeout_s * 1000),
        )

        def attempt() -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
            conn = self.controller()
            version = conn.version(ApiKey.ELECT_LEADERS)
            if version < 1 and election_type != 0:
                raise ClientError(f"broker {conn} knows only preferred leader elections")
            body = conn.request(request, version, timeout_s=self.timeout_s + 5)
            check(body.error_code, "ElectLeaders")
            out: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
            for r in body.replica_election_results:
                for p in r.partition_result:
                    code = ErrorCode.of(p.error_code)
                    if code == ErrorCode.NOT_CONTROLLER:
                        raise _Retry(KafkaError(code, f"ElectLeaders {r.topic}-{p.partition_id}"))
                    out[(r.topic, p.partition_id)] = (code, p.error_message)
            return out

        return self.retrying("ElectLeaders", attempt)

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments to the controller: each partition's target replicas, or
        None to cancel its reassignment. (error, message) per partition."""
        from protocol.messages.alter_partition_reassignments import (
            AlterPartitionReassignmentsRequest,
            ReassignablePartition,
            ReassignableTopic,
        )

        topics: dict[str, list[Any]] = {}
        for (t, p), replicas in sorted(targets.items()):
            topics.setdefault(t, []).append(
                ReassignablePartition(partition_index=p, replicas=replicas)
            )
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=int(self.timeout_s * 1000),
            topics=[ReassignableTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )

        def attempt() -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
            body = self.controller().request(request, timeout_s=self.timeout_s + 5)
            check(body.error_code, "AlterPartitionReassignments", body.error_message)
            return {
                (t.name, p.partition_index): (ErrorCode.of(p.error_code), p.error_message)
                for t in body.responses
                for p in t.partitions
            }

        return self.retrying("AlterPartitionReassignments", attempt)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        """The ongoing reassignments (of ``partitions`` only, when given), from the controller:
        (replicas, adding, removing) per partition, the replicas being the target ones followed
        by the original ones while the partition moves."""
        from protocol.messages.list_partition_reassignments import (
            ListPartitionReassignmentsRequest,
            ListPartitionReassignmentsTopics,
        )

        topics: dict[str, list[int]] | None = None
        if partitions is not None:
            topics = {}
            for t, p in sorted(partitions):
                topics.setdefault(t, []).append(p)
        request = ListPartitionReassignmentsRequest(
            timeout_ms=int(self.timeout_s * 1000),
            topics=None
            if topics is None
            else [
                ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                for t, ps in topics.items()
            ],
        )

        def attempt() -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
            body = self.controller().request(request)
            check(body.error_code, "ListPartitionReassignments", body.error_message)
            return {
                (t.name, p.partition_index): (
                    list(p.replicas),
                    list(p.adding_replicas),
                    list(p.removing_replicas),
                )
                for t in body.topics
                for p in t.partitions
            }

        return self.retrying("ListPartitionReassignments", attempt)


class SecurityAdmin:
    """ACLs, SCRAM users, client quotas, transactions and KIP-848 group descriptions: requests
    Kafka's admin client sends to any broker (the controller for changes) or to a coordinator."""

    def __init__(self, client: AdminClient) -> None:
        self.client = client

    # -- ACLs (KIP-140) ------------------------------------------------------------------------

    def create_acls(self, creations: list[Any]) -> list[Any]:
        from protocol.messages.create_acls import CreateAclsRequest

        body = self.client.controller().request(CreateAclsRequest(creations=creations))
        return list(body.results)

    def describe_acls(self, acl_filter: Any) -> list[Any]:
        body = self.client.any().request(acl_filter)
        check(body.error_code, "DescribeAcls", body.error_message)
        return list(body.resources)

    def delete_acls(self, filters: list[Any]) -> list[Any]:
        from protocol.messages.delete_acls import DeleteAclsRequest

        body = self.client.controller().request(DeleteAclsRequest(filters=filters))
        return list(body.filter_results)

    # -- SCRAM users (KIP-554) -----------------------------------------------------------------

    def describe_users(self, users: list[str] | None) -> Any:
        from protocol.messages.describe_user_scram_credentials import (
            DescribeUserScramCredentialsRequest,
            ScramUserName,
        )

        request = DescribeUserScramCredentialsRequest(
            users=[ScramUserName(name=u) for u in users] if users else None
        )
        body = self.client.any().request(request)
        check(body.error_code, "DescribeUserScramCredentials", body.error_message)
        return body

    def alter_users(self, upsertions: list[Any], deletions: list[Any]) -> list[Any]:
        from protocol.messages.alter_user_scram_credentials import (
            AlterUserScramCredentialsRequest,
        )

        body = self.client.controller().request(
            AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)
        )
        return list(body.results)

    # -- delegation tokens (KIP-48) -----------------------------------------------------------

    def create_token(
        self,
        renewers: list[tuple[str, str]],
        owner: tuple[str, str] | None,
        max_lifetime_ms: int,
    ) -> Any:
        """A token of ``owner`` ((type, name); None: the caller) that ``renewers`` may renew."""
        from protocol.messages.create_delegation_token import (
            CreatableRenewers,
            CreateDelegationTokenRequest,
        )

        request = CreateDelegationTokenRequest(
            owner_principal_type=owner[0] if owner else None,
            owner_principal_name=owner[1] if owner else None,
            renewers=[CreatableRenewers(principal_type=k, principal_name=n) for k, n in renewers],
            max_lifetime_ms=max_lifetime_ms,
        )
        body = self.client.any().request(request)
        check(body.error_code, "CreateDelegationToken")
        return body

    def describe_tokens(self, owners: list[tuple[str, str]] | None) -> list[Any]:
        """The tokens of ``owners`` (None: every token the caller may see)."""
        from protocol.messages.describe_delegation_token import (
            DescribeDelegationTokenOwner,
            DescribeDelegationTokenRequest,
        )

        request = DescribeDelegationTokenRequest(
            owners=None
            if owners is None
            else [
                DescribeDelegationTokenOwner(principal_type=k, principal_name=n) for k, n in owners
            ]
        )
        body = self.client.any().request(request)
        check(body.error_code, "DescribeDelegationToken")
        return list(body.tokens)

    def renew_token(self, hmac: bytes, period_ms: int) -> int:
        from protocol.messages.renew_delegation_token import RenewDelegationTokenRequest

        body = self.client.any().request(
            RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=period_ms)
        )
        check(body.error_code, "RenewDelegationToken")
        return int(body.expiry_timestamp_ms)

    def expire_token(self, hmac: bytes, period_ms: int) -> int:
        from protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest

        body = self.client.any().request(
            ExpireDelegationTokenRequest(hmac=hmac, expiry_time_period_ms=period_ms)
        )
        check(body.error_code, "ExpireDelegationToken")
        return int(body.expiry_timestamp_ms)

    # -- client quotas (KIP-546) ---------------------------------------------------------------

    def describe_quotas(self, components: list[Any], strict: bool) -> list[Any]:
        from protocol.messages.describe_client_quotas import DescribeClientQuotasRequest

        body = self.client.any().request(
            DescribeClientQuotasRequest(components=components, strict=strict)
        )
        check(body.error_code, "DescribeClientQuotas", body.error_message)
        return list(body.entries or [])

    def alter_quotas(self, entries: list[Any], validate_only: bool) -> list[Any]:
        from protocol.messages.alter_client_quotas import AlterClientQuotasRequest

        body = self.client.controller().request(
            AlterClientQuotasRequest(entries=entries, validate_only=validate_only)
        )
        return list(body.entries)

    # -- transactions (KIP-664) ----------------------------------------------------------------

    def list_transactions(
        self, states: list[str], producer_ids: list[int], pattern: str | None = None
    ) -> list[Any]:
        """Every broker's transactions (each answers for the ids it coordinates); ``pattern``:
        only the transactional ids it matches (ListTransactions v2, KIP-1152)."""
        from protocol.messages.list_transactions import ListTransactionsRequest

        def ask(node: int) -> Any:
            conn = self.client.node(node)
            version = conn.version(ApiKey.LIST_TRANSACTIONS)
            if pattern and version < 2:
                raise ClientError(
                    f"broker {node} speaks ListTransactions v{version}: a transactional id "
                    "pattern needs v2 (KIP-1152)"
                )
            return conn.request(
                ListTransactionsRequest(
                    state_filters=states,
                    producer_id_filters=producer_ids,
                    duration_filter=-1,
                    transactional_id_pattern=pattern or None,
                ),
                version,
            )

        out = []
        for node in sorted(self.client.metadata([]).brokers):
            body = self.client.retrying("ListTransactions", lambda n=node: ask(n))  # type: ignore[misc]
            check(body.error_code, "ListTransactions")
            out.extend(body.transaction_states)
        return out

    def describe_transaction(self, transactional_id: str) -> Any:
        from protocol.messages.describe_transactions import DescribeTransactionsRequest
        from protocol.messages.find_coordinator import FindCoordinatorRequest

        def attempt() -> Any:
            found = self.client.any().request(
                FindCoordinatorRequest(key=transactional_id, key_type=1)
            )
            check(found.error_code, f"FindCoordinator {transactional_id}", found.error_message)
            body = self.client.node(found.node_id).request(
                DescribeTransactionsRequest(transactional_ids=[transactional_id])
            )
            state = body.transaction_states[0]
            check(state.error_code, f"DescribeTransactions {transactional_id}")
            return state

        return self.client.retrying("DescribeTransactions", attempt)

    def describe_producers(self, topic: str, partitions: list[int]) -> dict[int, Any]:
        """Each partition's answer, from its leader."""
        from protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest

        out: dict[int, Any] = {}
        for leader, tps in self.client.by_leader([(topic, p) for p in partitions]).items():
            body = self.client.node(leader).request(
                DescribeProducersRequest(
                    topics=[TopicRequest(name=topic, partition_indexes=[p for _, p in tps])]
                )
            )
            for t in body.topics:
                for p in t.partitions:
                    out[p.partition_index] = p
        return out

    # -- KIP-848 consumer groups ---------------------------------------------------------------

    def consumer_group_describe(self, group: str) -> Any | None:
        """ConsumerGroupDescribe of ``group``; None when it is not a KIP-848 consumer group (a
        classic group: GROUP_ID_NOT_FOUND) or the coordinator does not know the API."""
        from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest

        def make(conn: Connection) -> Any | None:
            if not conn.supports(ApiKey.CONSUMER_GROUP_DESCRIBE):
                return None
            body = conn.request(
                ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False)
            )
            described = body.groups[0]
            if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                return None
            check(described.error_code, f"ConsumerGroupDescribe {group}", described.error_message)
            return described

        return self.client.group_request(group, "ConsumerGroupDescribe", make)
