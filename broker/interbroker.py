"""Connections from this broker to another (Kafka's ``NetworkClient``): the blocking
:class:`InterBrokerConnection` (as Kafka's ``BrokerBlockingSender`` uses it) for replica
fetchers and the controlled-shutdown request, and the asyncio :class:`AsyncInterBrokerLink` for
work on the main loop (transaction markers, KIP-890 verification), both through the
inter-broker listener's TLS and SASL (:class:`~broker.security.inter_broker.InterBrokerSecurity`).

The protocol state (correlation ids, version negotiation, framing, response decoding) is
:class:`protocol.client.ClientConnection`'s; this class owns the socket, its timeouts, and the
choice of the other broker's endpoint for the inter-broker listener. Any socket or decoding
failure closes the connection and raises :class:`InterBrokerUnavailable`; the next call
reconnects.

Thread-safety: an InterBrokerConnection is used by one thread at a time (each fetcher owns its
connections); an AsyncInterBrokerLink by one event loop.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from broker.security.inter_broker import InterBrokerAuthenticationError, InterBrokerSecurity
from coordination.metadata.view import BrokerInfo, ClusterView, Endpoint
from protocol.api_keys import ApiKey
from protocol.client import (
    ClientConnection,
    UnsupportedApi,
    api_versions_request,
    exchange_api_versions,
)
from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.messages import SCHEMAS

#: Every API a broker may ask of another, with every version our schemas know.
INTER_BROKER_VERSIONS = {
    int(key): (schema.valid_versions.lo, schema.valid_versions.hi)
    for key, schema in SCHEMAS.items()
}


class InterBrokerUnavailable(Exception):
    """The other broker cannot be reached, or the connection broke."""


def inter_broker_endpoint(broker: BrokerInfo, listener: str | None) -> Endpoint:
    """The endpoint of ``broker`` that brokers use to reach it: the listener named
    ``inter.broker.listener.name`` when set, else the one named PLAINTEXT (Kafka's default
    ``security.inter.broker.protocol``), else its first."""
    if listener is not None:
        for ep in broker.endpoints:
            if ep.listener == listener:
                return ep
    for ep in broker.endpoints:
        if ep.listener == "PLAINTEXT":
            return ep
    return broker.endpoints[0]


class InterBrokerConnection:
    """A blocking connection to one other broker."""

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str,
        timeout_s: float,
        max_response_bytes: int,
        security: InterBrokerSecurity | None = None,
    ) -> None:
        #: TLS and SASL of the inter-broker listener (None: plaintext)
        self.security = security
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._sock: socket.socket | None = None
        self._protocol = self._new_protocol()

    def _new_protocol(self) -> ClientConnection:
        return ClientConnection(
            INTER_BROKER_VERSIONS,
            client_id=self.client_id,
            max_response_bytes=self.max_response_bytes,
        )

    def __repr__(self) -> str:
        return f"InterBrokerConnection(broker {self.node_id} at {self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> None:
        if self._sock is not None:
            return
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as e:
            raise InterBrokerUnavailable(f"cannot connect to {self}: {e}") from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.security is not None:
            try:
                sock = self.security.wrap_socket(sock, self.host)
            except (ssl.SSLError, OSError) as e:
                sock.close()
                raise InterBrokerUnavailable(f"TLS handshake with {self} failed: {e}") from e
        self._sock = sock
        self._protocol = self._new_protocol()
        try:
            body = exchange_api_versions(self.request, "odradek-broker", "1")
            if body.error_code != ErrorCode.NONE:
                raise InterBrokerUnavailable(f"ApiVersions from {self}: error {body.error_code}")
            self._protocol.apply_api_versions(body)
            if self.security is not None:
                self.security.authenticate(lambda b, v: self.request(b, v))
        except InterBrokerAuthenticationError as e:
            self.close()
            raise InterBrokerUnavailable(f"{self} refused this broker's credentials: {e}") from e
        except BaseException:
            self.close()
            raise

    def version_for(self, api_key: ApiKey, highest: int | None = None) -> int:
        """The version to use: the highest both sides speak, capped at ``highest``."""
        try:
            version = self._protocol.version_for(api_key)
        except UnsupportedApi as e:
            raise InterBrokerUnavailable(f"{self}: {e}") from None
        return version if highest is None else min(version, highest)

    def request(
        self, body: Any, version: int | None = None, *, timeout_s: float | None = None
    ) -> Any:
        """Sends ``body`` and returns the decoded response body (connecting first if needed)."""
        if self._sock is None:
            self.connect()
        sock = self._sock
        assert sock is not None
        try:
            _, frame = self._protocol.send(body, version)
            sock.settimeout(self.timeout_s if timeout_s is None else timeout_s)
            sock.sendall(frame)
            while True:
                buffer = self._protocol.get_buffer()
                n = sock.recv_into(buffer)
                if n == 0:
                    raise InterBrokerUnavailable(f"{self} closed the connection")
                responses = self._protocol.buffer_updated(n)
                if responses:
                    return responses[0].body
        except (OSError, ProtocolError) as e:
            self.close()
            raise InterBrokerUnavailable(f"{self}: {type(e).__name__}: {e}") from e
        except InterBrokerUnavailable:
            self.close()
            raise

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


class AsyncInterBrokerLink:
    """An asyncio connection to one other broker, one request at a time, for the APIs in
    ``apis`` (key -> the version range this side speaks). It connects on first use (ApiVersions,
    then TLS and SASL through ``security`` when the inter-broker listener has them); any failure
    closes it and raises (OSError, TimeoutError, ProtocolError, UnsupportedApi when the other
    broker speaks no version of the API), and the next request reconnects."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        apis: Mapping[int, tuple[int, int]],
        security: InterBrokerSecurity | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.apis = {int(ApiKey.API_VERSIONS): (0, 3), **{int(k): v for k, v in apis.items()}}
        self.security = security
        self.timeout_s = timeout_s
        self._lock = asyncio.Lock()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._conn: ClientConnection | None = None

    def __repr__(self) -> str:
        return f"AsyncInterBrokerLink({self.host}:{self.port}, {self.client_id})"

    async def _exchange(self, body: Any, version: int | None) -> Any:
        assert self._reader is not None and self._writer is not None and self._conn is not None
        _, frame = self._conn.send(body, version)
        self._writer.write(frame)
        await self._writer.drain()
        while True:
            data = await self._reader.read(65536)
            if not data:
                raise ConnectionError("the broker closed the connection")
            responses = self._conn.receive_data(data)
            if responses:
                return responses[0].body

    async def _connect(self) -> None:
        self._conn = ClientConnection(self.apis, client_id=self.client_id)
        if self.security is not None:
            # TLS and SASL of the inter-broker listener; ApiVersions negotiated there
            self._reader, self._writer = await self.security.connect(
                self.host, self.port, self._conn
            )
            return
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        body, version = api_versions_request(self.client_id, "1")
        answer = await self._exchange(body, version)
        self._conn.apply_api_versions(answer)

    async def request(self, body: Any, version: int | None = None) -> Any:
        """Sends ``body`` (at ``version``, or the highest both sides speak) and returns the
        decoded response body."""
        async with self._lock:
            try:
                if self._conn is None or self._conn.broken:
                    await asyncio.wait_for(self._connect(), self.timeout_s)
                return await asyncio.wait_for(self._exchange(body, version), self.timeout_s)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
        self._conn = None


class AsyncInterBrokerLinks:
    """One :class:`AsyncInterBrokerLink` per other broker, found in the metadata view on the
    inter-broker listener and replaced when that broker's endpoint changes. One event loop."""

    def __init__(
        self,
        view: Callable[[], ClusterView],
        *,
        listener: str | None,
        client_id: str,
        apis: Mapping[int, tuple[int, int]],
        security: InterBrokerSecurity | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self._view = view
        self.listener = listener
        self.client_id = client_id
        self.apis = apis
        self.security = security
        self.timeout_s = timeout_s
        self._links: dict[int, AsyncInterBrokerLink] = {}

    def get(self, broker_id: int) -> AsyncInterBrokerLink | None:
        """The link to ``broker_id`` (None: not a live broker)."""
        info = self._view().brokers.get(broker_id)
        if info is None:
            return None
        ep = info.endpoint(self.listener)
        link = self._links.get(broker_id)
        if link is None or (link.host, link.port) != (ep.host, ep.port):
            if link is not None:
                link.close()
            link = AsyncInterBrokerLink(
                ep.host,
                ep.port,
                client_id=self.client_id,
                apis=self.apis,
                security=self.security,
                timeout_s=self.timeout_s,
            )
            self._links[broker_id] = link
        return link

    def close(self) -> None:
        for link in self._links.values():
            link.close()
        self._links.clear()
