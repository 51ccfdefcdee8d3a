"""A small blocking Kafka client for the Spark connector: just what a source and a sink need.

It speaks the Kafka protocol through :mod:`protocol` (request/response schemas and codecs) over
plain blocking sockets, which suits Spark's Python workers: one task at a time per process, no
event loop. What it does:

* bootstrap from ``host:port[,host:port...]``, then talk to the brokers the cluster advertises;
* negotiate versions with ApiVersions, per broker (it works against any Kafka-compatible broker);
* Metadata (leaders per partition; topic lists for patterns), ListOffsets (earliest, latest, by
  timestamp), Fetch, Produce and InitProducerId;
* retry what Kafka calls retriable (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, timeouts, a
  dropped connection...) after refreshing metadata, until ``default.api.timeout.ms`` passes.

Connections are opened lazily, on first use, and kept for reuse. :func:`shared_client` keeps one
client per configuration per process (Spark reuses Python workers, so later tasks find their
connections open), and notices a fork so a child never shares its parent's sockets. Nothing
depends on :meth:`KafkaClient.close` being called: Spark kills its workers without warning.

Not thread-safe: one client per thread (Spark runs one task at a time per Python worker).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from protocol.api_keys import ApiKey
from protocol.client import ClientConnection, UnsupportedApi, exchange_api_versions
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_offsets import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
T = TypeVar("T")

#: The versions this client can speak, per API. The upper bounds stop where requests switch to
#: topic ids (Fetch 13, Produce 13), which a name-based client does not need.
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.METADATA: (1, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.FETCH: (4, 12),
    ApiKey.PRODUCE: (3, 12),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
}

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

#: Partition-level errors after which fresh metadata (a new leader) may help.
_REFRESH_METADATA = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.NOT_CONTROLLER,
    }
)


# --- errors --------------------------------------------------------------------------------------


class KafkaClientError(Exception):
    """Base of the client's errors."""


class BrokerUnavailable(KafkaClientError):
    """No broker could be reached (or a connection broke) before the deadline."""


class KafkaErrorResponse(KafkaClientError):
    """A broker answered with a Kafka error code that retrying did not cure."""

    def __init__(self, code: int, what: str, detail: str | None = None) -> None:
        self.code = ErrorCode.of(code)
        text = f"{what}: {self.code.name} ({int(code)})"
        if detail:
            text += f": {detail}"
        elif self.code.message:
            text += f": {self.code.message}"
        super().__init__(text)


class TopicNotFound(KafkaClientError):
    """A topic does not exist (and this client never asks for it to be created)."""

    def __init__(self, topics: Iterable[str]) -> None:
        self.topics = sorted(topics)
        names = ", ".join(repr(t) for t in self.topics)
        super().__init__(f"topic(s) {names} do not exist")


class UnsupportedBroker(KafkaClientError):
    """The broker supports no version of an API this client needs."""


# --- configuration -------------------------------------------------------------------------------


def parse_bootstrap_servers(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port[,host:port...]`` (an IPv6 host in brackets) as (host, port) pairs."""
    servers = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("["):
            host, sep, rest = item[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
            if not sep:
                raise ValueError(f"bad bootstrap server {item!r}")
        else:
            host, _, port_text = item.rpartition(":")
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        servers.append((host, int(port_text)))
    if not servers:
        raise ValueError("no bootstrap servers given")
    return tuple(servers)


@dataclass(frozen=True)
class ClientConfig:
    """What a client needs; hashable and picklable (it travels to Spark executors)."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = "odradek-spark"
    #: one request's timeout (a Fetch's max wait is added to it)
    request_timeout_ms: int = 30_000
    #: how long an operation keeps retrying retriable errors (Kafka's default.api.timeout.ms)
    default_api_timeout_ms: int = 60_000
    connection_setup_timeout_ms: int = 10_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    metadata_max_age_ms: int = 300_000
    max_frame_bytes: int = 256 * 1024 * 1024

    @classmethod
    def from_bootstrap(cls, bootstrap: str, **kwargs: Any) -> ClientConfig:
        return cls(bootstrap_servers=parse_bootstrap_servers(bootstrap), **kwargs)


class Backoff:
    """The wait between retries: ``retry.backoff.ms``, doubled after each failure up to
    ``retry.backoff.max.ms`` (as Kafka's clients do, without their jitter; a ``retry.backoff.ms``
    above the maximum gives the maximum throughout). :meth:`reset` after a success."""

    def __init__(self, config: ClientConfig) -> None:
        self.max_s = config.retry_backoff_max_ms / 1000
        self.initial_s = min(config.retry_backoff_ms / 1000, self.max_s)
        self.delay_s = self.initial_s

    def next_delay_s(self) -> float:
        """The wait before the next retry; the one after will be twice as long (up to the max)."""
        delay = self.delay_s
        self.delay_s = min(delay * 2, self.max_s)
        return delay

    def sleep(self) -> None:
        time.sleep(self.next_delay_s())

    def reset(self) -> None:
        self.delay_s = self.initial_s


# --- one broker connection -----------------------------------------------------------------------


class BrokerConnection:
    """A blocking connection to one broker, with its negotiated API versions.

    The protocol state (correlation ids, pipelining, version negotiation, framing) is
    :class:`protocol.client.ClientConnection`'s; this class owns the socket, the timeouts and
    the reconnection. Requests may be pipelined: :meth:`send` several, then :meth:`receive` them
    in the same order (Kafka answers in request order). Any socket or decoding failure closes
    the connection and raises :class:`BrokerUnavailable`; the next use reconnects.
    """

    def __init__(self, host: str, port: int, config: ClientConfig, node_id: int = -1) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config
        self._sock: socket.socket | None = None
        self._protocol = self._new_protocol()
        #: responses read ahead of the one asked for (several arrived in one read)
        self._ready: dict[int, Any] = {}

    def _new_protocol(self) -> ClientConnection:
        return ClientConnection(
            CLIENT_VERSIONS,
            client_id=self.config.client_id,
            max_response_bytes=self.config.max_frame_bytes,
        )

    def __repr__(self) -> str:
        return f"BrokerConnection(node {self.node_id} at {self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def in_flight(self) -> int:
        return self._protocol.in_flight + len(self._ready)

    @property
    def versions(self) -> dict[int, tuple[int, int]]:
        """The broker's version ranges from ApiVersions."""
        return self._protocol.peer_versions

    def connect(self) -> None:
        if self._sock is not None:
            return
        timeout = self.config.connection_setup_timeout_ms / 1000
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as e:
            raise BrokerUnavailable(f"cannot connect to {self.host}:{self.port}: {e}") from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.config.request_timeout_ms / 1000)
        self._sock = sock
        self._protocol = self._new_protocol()
        self._ready.clear()
        try:
            self._negotiate()
        except BaseException:
            self.close()
            raise

    def _negotiate(self) -> None:
        body = exchange_api_versions(self.request, "odradek-spark", "0.1.0")
        if body.error_code != ErrorCode.NONE:
            raise KafkaErrorResponse(body.error_code, f"ApiVersions from {self.host}:{self.port}")
        self._protocol.apply_api_versions(body)

    def version_for(self, api_key: int, *, required: bool = True) -> int:
        """The highest version both sides speak (-1 if none and not ``required``)."""
        try:
            return self._protocol.version_for(api_key)
        except UnsupportedApi as e:
            if required:
                raise UnsupportedBroker(f"broker {self.host}:{self.port}: {e}") from None
            return -1

    def send(self, body: Any, version: int | None = None, *, expect_response: bool = True) -> int:
        """Writes one request; returns its correlation id."""
        if self._sock is None:
            self.connect()
        sock = self._sock
        assert sock is not None
        if version is None:
            version = self.version_for(body.api_key)
        cid, frame = self._protocol.send(body, version, expect_response=expect_response)
        try:
            sock.sendall(frame)
        except OSError as e:
            self.close()
            raise BrokerUnavailable(f"sending to {self.host}:{self.port} failed: {e}") from e
        return cid

    def receive(self, correlation_id: int, *, timeout_s: float | None = None) -> Any:
        """The response to ``correlation_id``, which must be the oldest request still pending
        (responses come in request order)."""
        if correlation_id in self._ready:
            return self._ready.pop(correlation_id)
        if self._ready or self._protocol.in_flight == 0:
            raise KafkaClientError(f"response {correlation_id} is not the next one due")
        sock = self._sock
        assert sock is not None
        protocol = self._protocol
        try:
            if timeout_s is not None:
                sock.settimeout(timeout_s)
            while True:
                # received straight into the protocol's buffers: a large response is read into
                # its own buffer, never copied again
                buf = protocol.get_buffer()
                n = sock.recv_into(buf)
                del buf
                if n == 0:
                    raise EOFError("connection closed by the broker")
                for response in protocol.buffer_updated(n):
                    self._ready[response.correlation_id] = response.body
                if correlation_id in self._ready:
                    return self._ready.pop(correlation_id)
                if self._ready:
                    raise KafkaClientError(f"response {correlation_id} is not the next one due")
        except (OSError, ProtocolError, EOFError) as e:
            self.close()
            raise BrokerUnavailable(
                f"reading response {correlation_id} from {self.host}:{self.port}: {e}"
            ) from e
        finally:
            if timeout_s is not None and self._sock is not None:
                self._sock.settimeout(self.config.request_timeout_ms / 1000)

    def request(
        self, body: Any, version: int | None = None, *, timeout_s: float | None = None
    ) -> Any:
        return self.receive(self.send(body, version), timeout_s=timeout_s)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._protocol.fail_in_flight()
        self._ready.clear()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


# --- cluster metadata ----------------------------------------------------------------------------


@dataclass
class PartitionInfo:
    leader: int
    leader_epoch: int = -1
    error: int = 0


@dataclass
class TopicInfo:
    name: str
    error: int = 0
    internal: bool = False
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


@dataclass
class ClusterMetadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None


# --- fetch results -------------------------------------------------------------------------------


@dataclass
class FetchedPartition:
    """One partition of a Fetch response: its records stay a view into the response frame."""

    topic: str
    partition: int
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]]  # (producer id, first offset)
    records: memoryview


@dataclass
class PendingFetch:
    connection: BrokerConnection
    correlation_id: int
    topic: str
    partition: int
    timeout_s: float


# --- the client ----------------------------------------------------------------------------------


class KafkaClient:
    """Cluster-level operations with metadata-driven routing and retries."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.metadata = ClusterMetadata()
        self._metadata_at = 0.0
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap: list[BrokerConnection] = [
            BrokerConnection(host, port, config) for host, port in config.bootstrap_servers
        ]
        self._next_bootstrap = 0

    def __repr__(self) -> str:
        return f"KafkaClient({self.config.bootstrap_servers})"

    # -- connections --------------------------------------------------------------------------

    def connection(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        address = self.metadata.brokers.get(node_id)
        if address is None:
            raise BrokerUnavailable(f"broker {node_id} is not in the cluster metadata")
        if conn is not None and (conn.host, conn.port) != address:
            conn.close()
            conn = None
        if conn is None:
            conn = BrokerConnection(address[0], address[1], self.config, node_id)
            self._connections[node_id] = conn
        if not conn.connected:
            conn.connect()
        return conn

    def any_connection(self) -> BrokerConnection:
        """A connected broker: a known one if possible, else a bootstrap server."""
        errors: list[str] = []
        for conn in self._connections.values():
            if conn.connected and not conn.in_flight:
                return conn
        candidates = list(self._bootstrap[self._next_bootstrap :])
        candidates += self._bootstrap[: self._next_bootstrap]
        candidates += [c for c in self._connections.values() if not c.connected]
        for conn in candidates:
            try:
                conn.connect()
                return conn
            except (BrokerUnavailable, KafkaErrorResponse, UnsupportedBroker) as e:
                errors.append(str(e))
                self._next_bootstrap = (self._next_bootstrap + 1) % len(self._bootstrap)
        raise BrokerUnavailable("no broker reachable: " + "; ".join(errors))

    def close(self) -> None:
        for conn in list(self._connections.values()) + self._bootstrap:
            conn.close()
        self._connections.clear()

    # -- retries ------------------------------------------------------------------------------

    def backoff(self) -> Backoff:
        """A fresh :class:`Backoff` for one operation's retries, from this client's config."""
        return Backoff(self.config)

    def retrying(
        self, what: str, attempt: Callable[[], T], *, deadline_s: float | None = None
    ) -> T:
        """Runs ``attempt`` until it returns, retrying :class:`_Retry` and connection failures
        with backoff and a metadata refresh, until the API timeout."""
        deadline = time.monotonic() + (
            deadline_s if deadline_s is not None else self.config.default_api_timeout_ms / 1000
        )
        backoff = self.backoff()
        last: Exception | None = None
        while True:
            try:
                return attempt()
            except (_Retry, BrokerUnavailable) as e:
                last = e
            delay = backoff.next_delay_s()
            if time.monotonic() + delay > deadline:
                if isinstance(last, _Retry) and last.error is not None:
                    raise last.error from None
                raise BrokerUnavailable(f"{what}: gave up after retries: {last}") from last
            log.debug("%s: retrying after %s", what, last)
            time.sleep(delay)
            self._metadata_at = 0.0

    # -- metadata -----------------------------------------------------------------------------

    def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Fresh metadata for ``topics`` (all topics if None); merged into :attr:`metadata`."""
        names = None if topics is None else sorted(set(topics))

        def attempt() -> ClusterMetadata:
            conn = self.any_connection()
            version = conn.version_for(ApiKey.METADATA)
            request = MetadataRequest(
                topics=None if names is None else [MetadataRequestTopic(name=n) for n in names],
                allow_auto_topic_creation=False,
            )
            body = conn.request(request, version)
            return self._apply_metadata(body, names)

        return self.retrying("Metadata", attempt)

    def _apply_metadata(self, body: Any, names: list[str] | None) -> ClusterMetadata:
        md = self.metadata
        md.brokers = {b.node_id: (b.host, b.port) for b in body.brokers}
        md.controller_id = body.controller_id
        md.cluster_id = body.cluster_id
        if names is None:
            md.topics = {}
        for t in body.topics:
            if t.name is None:
                continue
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                md.topics.pop(t.name, None)
                continue
            info = TopicInfo(t.name, t.error_code, t.is_internal)
            for p in t.partitions:
                # A leaderless partition (an election, an offline broker) stays listed with
                # leader -1: operations on it retry (leader_for), the others go ahead.
                leader = p.leader_id if p.leader_id in md.brokers else -1
                info.partitions[p.partition_index] = PartitionInfo(
                    leader, p.leader_epoch, p.error_code
                )
            md.topics[t.name] = info
        self._metadata_at = time.monotonic()
        return md

    def ensure_metadata(self, topics: Iterable[str]) -> ClusterMetadata:
        wanted = set(topics)
        stale = time.monotonic() - self._metadata_at > self.config.metadata_max_age_ms / 1000
        if stale or not wanted <= self.metadata.topics.keys():
            self.refresh_metadata(wanted)
        return self.metadata

    def list_topics(self) -> dict[str, TopicInfo]:
        """Every topic the cluster has (internal topics included), with partitions."""
        return dict(self.refresh_metadata(None).topics)

    def partitions_for(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Partition ids per existing topic (missing topics are left out), from fresh
        metadata."""
        topics = list(topics)
        if not topics:
            return {}
        md = self.refresh_metadata(topics)
        return {t: sorted(md.topics[t].partitions) for t in topics if t in md.topics}

    def leader_for(self, topic: str, partition: int) -> int:
        info = self.metadata.topics.get(topic)
        p = info.partitions.get(partition) if info is not None else None
        if p is None or p.leader < 0:
            raise _Retry(
                KafkaErrorResponse(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if p is None
                    else ErrorCode.LEADER_NOT_AVAILABLE,
                    f"{topic}-{partition}",
                )
            )
        return p.leader

    def _by_leader(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        tps = list(tps)
        self.ensure_metadata({t for t, _ in tps})
        groups: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            groups.setdefault(self.leader_for(*tp), []).append(tp)
        return groups

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = True,
        timeout_ms: int = 30_000,
    ) -> bool:
        """Creates a topic through the controller (-1: the broker's defaults). Returns False if
        it existed already (and ``exist_ok``). Neither source nor sink creates topics; this is
        for tools such as examples/pageviews/produce.py."""

        def attempt() -> bool:
            md = self.refresh_metadata([name])
            if name in md.topics:
                if exist_ok:
                    return False
                raise KafkaErrorResponse(ErrorCode.TOPIC_ALREADY_EXISTS, f"CreateTopics {name}")
            node = md.controller_id if md.controller_id in md.brokers else None
            conn = self.connection(node) if node is not None else self.any_connection()
            request = CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name=name,
                        num_partitions=partitions,
                        replication_factor=replication_factor,
                        assignments=[],
                        configs=[
                            CreatableTopicConfig(name=k, value=v)
                            for k, v in (configs or {}).items()
                        ],
                    )
                ],
                timeout_ms=timeout_ms,
            )
            body = conn.request(request)
            for t in body.topics:
                if t.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and exist_ok:
                    return False
                if t.error_code != ErrorCode.NONE:
                    if ErrorCode.of(t.error_code) in (ErrorCode.NOT_CONTROLLER,):
                        raise _Retry(KafkaErrorResponse(t.error_code, f"CreateTopics {name}"))
                    raise KafkaErrorResponse(t.error_code, f"CreateTopics {name}", t.error_message)
            return True

        return self.retrying("CreateTopics", attempt)

    # -- offsets ------------------------------------------------------------------------------

    def list_offsets(
        self,
        timestamps: Mapping[TopicPartition, int],
        *,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, timestamp) per partition for a timestamp or the sentinels -1 (latest: the
        high watermark, or the last stable offset under read_committed) and -2 (earliest). An
        offset of -1 means no record at or after that timestamp."""
        remaining = dict(timestamps)
        result: dict[TopicPartition, tuple[int, int]] = {}
        if not remaining:
            return result

        def attempt() -> dict[TopicPartition, tuple[int, int]]:
            retry: _Retry | None = None
            for node, tps in self._by_leader(remaining).items():
                conn = self.connection(node)
                version = conn.version_for(ApiKey.LIST_OFFSETS)
                if version < 2 and isolation_level != READ_UNCOMMITTED:
                    raise UnsupportedBroker("read_committed needs ListOffsets v2")
                topics: dict[str, list[Any]] = {}
                for topic, partition in tps:
                    topics.setdefault(topic, []).append(
                        ListOffsetsPartition(
                            partition_index=partition, timestamp=remaining[(topic, partition)]
                        )
                    )
                request = ListOffsetsRequest(
                    replica_id=CONSUMER_REPLICA_ID,
                    isolation_level=isolation_level,
                    topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
                )
                body = conn.request(request, version)
                for t in body.topics:
                    for p in t.partitions:
                        tp = (t.name, p.partition_index)
                        if tp not in remaining:
                            continue
                        if p.error_code == ErrorCode.NONE:
                            result[tp] = (p.offset, p.timestamp)
                            del remaining[tp]
                        else:
                            error = _check_retriable(p.error_code, f"ListOffsets {tp[0]}-{tp[1]}")
                            retry = retry or error
            if remaining:
                raise retry or _Retry(
                    KafkaErrorResponse(-1, f"ListOffsets: no answer for {sorted(remaining)}")
                )
            return result

        return self.retrying("ListOffsets", attempt)

    def earliest_offsets(
        self, tps: Iterable[TopicPartition], *, isolation_level: int = READ_UNCOMMITTED
    ) -> dict[TopicPartition, int]:
        got = self.list_offsets(
            dict.fromkeys(tps, EARLIEST_TIMESTAMP), isolation_level=isolation_level
        )
        return {tp: offset for tp, (offset, _) in got.items()}

    def latest_offsets(
        self, tps: Iterable[TopicPartition], *, isolation_level: int = READ_UNCOMMITTED
    ) -> dict[TopicPartition, int]:
        got = self.list_offsets(
            dict.fromkeys(tps, LATEST_TIMESTAMP), isolation_level=isolation_level
        )
        return {tp: offset for tp, (offset, _) in got.items()}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], *, isolation_level: int = READ_UNCOMMITTED
    ) -> dict[TopicPartition, int | None]:
        """The earliest offset whose timestamp is >= the given one, or None if there is none."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp {ts} for {tp[0]}-{tp[1]} is negative")
        got = self.list_offsets(timestamps, isolation_level=isolation_level)
        return {tp: (offset if offset >= 0 else None) for tp, (offset, _) in got.items()}

    # -- fetch --------------------------------------------------------------------------------

    def send_fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> PendingFetch:
        """Sends a sessionless Fetch for one partition to its leader (answer with
        :meth:`receive_fetch`). Raises :class:`_Retry` when the leader is unknown."""
        self.ensure_metadata([topic])
        conn = self.connection(self.leader_for(topic, partition))
        version = conn.version_for(ApiKey.FETCH)
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=isolation_level,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        cid = conn.send(request, version)
        timeout_s = (self.config.request_timeout_ms + max_wait_ms) / 1000
        return PendingFetch(conn, cid, topic, partition, timeout_s)

    def receive_fetch(self, pending: PendingFetch) -> FetchedPartition:
        body = pending.connection.receive(pending.correlation_id, timeout_s=pending.timeout_s)
        if body.error_code:
            raise KafkaErrorResponse(body.error_code, "Fetch")
        for t in body.responses:
            if t.topic != pending.topic:
                continue
            for p in t.partitions:
                if p.partition_index != pending.partition:
                    continue
                records = p.records
                if records is None:
                    records = memoryview(b"")
                elif not isinstance(records, memoryview):
                    records = memoryview(records)
                return FetchedPartition(
                    pending.topic,
                    pending.partition,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                    [(a.producer_id, a.first_offset) for a in (p.aborted_transactions or [])],
                    records,
                )
        raise BrokerUnavailable(
            f"Fetch response has no {pending.topic}-{pending.partition}; dropping the connection"
        )

    def forget_pending(self, pending: PendingFetch) -> None:
        """Abandons an unanswered request: its connection is closed (the stream is out of
        step)."""
        if pending.connection.in_flight:
            pending.connection.close()

    # -- produce ------------------------------------------------------------------------------

    def init_producer_id(self, *, transaction_timeout_ms: int = 60_000) -> tuple[int, int] | None:
        """(producer id, epoch) for an idempotent producer, or None when the broker does not
        offer InitProducerId."""

        def attempt() -> tuple[int, int] | None:
            conn = self.any_connection()
            version = conn.version_for(ApiKey.INIT_PRODUCER_ID, required=False)
            if version < 0:
                return None
            body = conn.request(
                InitProducerIdRequest(
                    transactional_id=None, transaction_timeout_ms=transaction_timeout_ms
                ),
                version,
            )
            if body.error_code != ErrorCode.NONE:
                raise _check_retriable(body.error_code, "InitProducerId")
            return body.producer_id, body.producer_epoch

        return self.retrying("InitProducerId", attempt)

    def send_produce(
        self,
        node_id: int,
        batches: Mapping[TopicPartition, bytes],
        *,
        acks: int,
        timeout_ms: int,
    ) -> tuple[BrokerConnection, int, bool]:
        """Sends one Produce request with one batch per partition to broker ``node_id``.
        Returns (connection, correlation id, whether a response is expected)."""
        conn = self.connection(node_id)
        version = conn.version_for(ApiKey.PRODUCE)
        topics: dict[str, list[Any]] = {}
        for (topic, partition), batch in batches.items():
            topics.setdefault(topic, []).append(
                PartitionProduceData(index=partition, records=batch)
            )
        request = ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout_ms=timeout_ms,
            topic_data=[TopicProduceData(name=t, partition_data=ps) for t, ps in topics.items()],
        )
        expect = acks != 0
        cid = conn.send(request, version, expect_response=expect)
        return conn, cid, expect

    def receive_produce(self, conn: BrokerConnection, cid: int) -> dict[TopicPartition, Any]:
        body = conn.receive(cid)
        out: dict[TopicPartition, Any] = {}
        for t in body.responses:
            for p in t.partition_responses:
                out[(t.name, p.index)] = p
        return out


class _Retry(Exception):
    """Internal: the attempt failed in a way that a retry may cure."""

    def __init__(self, error: Exception | None) -> None:
        super().__init__(str(error) if error else "retry")
        self.error = error


def _check_retriable(code: int, what: str) -> _Retry:
    """A :class:`_Retry` for a retriable error code; raises the error for any other."""
    error = KafkaErrorResponse(code, what)
    if is_retriable(code):
        return _Retry(error)
    raise error


def is_retriable(code: int) -> bool:
    member = ErrorCode.of(code)
    return member in _REFRESH_METADATA or member.retriable


# --- per-process sharing -------------------------------------------------------------------------

_SHARED: dict[ClientConfig, KafkaClient] = {}
_SHARED_PID = os.getpid()


def shared_client(config: ClientConfig) -> KafkaClient:
    """The client for ``config`` in this process, created on first use (connections too).

    After a fork the inherited clients are dropped, never used: their sockets belong to the
    parent."""
    global _SHARED_PID
    pid = os.getpid()
    if pid != _SHARED_PID:
        _SHARED.clear()
        _SHARED_PID = pid
    client = _SHARED.get(config)
    if client is None:
        client = _SHARED[config] = KafkaClient(config)
    return client
