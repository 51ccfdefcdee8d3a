"""Connections from this broker to another one (replica fetchers, transaction marker senders),
secured as the inter-broker listener says.

Kafka's rules: brokers talk to each other on ``inter.broker.listener.name`` (or the listener of
``security.inter.broker.protocol``); on a TLS listener this broker presents its own certificate
when it has one (mutual TLS) and checks the peer's against its truststore (host names too with
``ssl.endpoint.identification.algorithm=https``); on a SASL listener it authenticates with
``sasl.mechanism.inter.broker.protocol`` and the ``username``/``password`` options of that
listener's JAAS config for the mechanism (``listener.name.<l>.<mechanism>.sasl.jaas.config``).

Use::

    security = InterBrokerSecurity.from_config(config)        # at start-up; raises ConfigError
    endpoint = security.endpoint_of(view.brokers[leader_id])  # the leader's inter-broker address
    client = ClientConnection(versions, client_id="broker-1-fetcher")
    reader, writer = await security.connect(endpoint.host, endpoint.port, client)

``connect`` returns asyncio streams with ApiVersions negotiated (``client`` knows the peer's
versions) and, on a SASL listener, the SASL exchange done; raises
:class:`InterBrokerAuthenticationError` when the peer refuses this broker. Blocking callers
(:class:`broker.interbroker.InterBrokerConnection`, the replica fetchers) use
:meth:`InterBrokerSecurity.wrap_socket` after connecting and
:meth:`InterBrokerSecurity.authenticate` after ApiVersions.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.config import BrokerConfig, ConfigError
from broker.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasConfigError,
    module_options,
    parse_jaas_config,
)
from broker.security.scram import MECHANISMS as SCRAM_MECHANISMS
from broker.security.tls import client_context
from coordination.metadata.view import BrokerInfo, Endpoint
from protocol.api_keys import ApiKey
from protocol.client import ClientConnection, Response, api_versions_request
from protocol.error_codes import ErrorCode
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.scram import SaslClient, ScramError


class InterBrokerAuthenticationError(Exception):
    """The peer broker refused this broker's credentials or certificate."""


@dataclass(frozen=True)
class InterBrokerSecurity:
    listener: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None
    sasl_mechanism: str | None
    username: str | None
    password: str | None

    @classmethod
    def from_config(cls, config: BrokerConfig) -> InterBrokerSecurity:
        listener = config.inter_broker_listener_name
        protocol = config.security_protocol(listener)
        ctx = client_context(config, listener) if protocol in ("SSL", "SASL_SSL") else None
        mechanism = username = password = None
        if protocol.startswith("SASL_"):
            mechanism = str(config["sasl.mechanism.inter.broker.protocol"]).upper()
            if mechanism != "PLAIN" and mechanism not in SCRAM_MECHANISMS:
                raise ConfigError(
                    f"sasl.mechanism.inter.broker.protocol={mechanism} is not supported "
                    "(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
                )
            jaas = config.for_listener(listener, "sasl.jaas.config", mechanism=mechanism)
            module = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
            try:
                options = (
                    module_options(parse_jaas_config(str(jaas or "")), module) if jaas else None
                )
            except JaasConfigError as e:
                raise ConfigError(f"inter-broker {mechanism} sasl.jaas.config: {e}") from None
            if not options or "username" not in options or "password" not in options:
                raise ConfigError(
                    f"the inter-broker listener {listener} uses SASL/{mechanism}: its JAAS "
                    f"config (listener.name.{listener.lower()}.{mechanism.lower()}."
                    f"sasl.jaas.config) needs {module} with username and password"
                )
            username, password = options["username"], options["password"]
        return cls(listener, protocol, ctx, mechanism, username, password)

    def wrap_socket(self, sock: socket.socket, host: str) -> socket.socket:
        """TLS over a connected blocking socket (the handshake done); the socket itself on a
        plaintext listener. Raises ssl.SSLError / OSError."""
        if self.ssl_context is None:
            return sock
        return self.ssl_context.wrap_socket(sock, server_hostname=host)

    def authenticate(self, call: Callable[[Any, int], Any]) -> None:
        """The SASL exchange over a blocking connection: ``call(body, version)`` sends a request
        and returns the response body. Nothing on a listener without SASL."""
        if self.sasl_mechanism is None:
            return
        assert self.username is not None and self.password is not None
        answer = call(SaslHandshakeRequest(mechanism=self.sasl_mechanism), 1)
        self._check_handshake(answer)
        sasl = SaslClient(self.sasl_mechanism, self.username, self.password)
        token: bytes | None = sasl.first()
        while token is not None:
            reply = call(SaslAuthenticateRequest(auth_bytes=token), 1)
            token = self._step(sasl, reply)

    def _check_handshake(self, answer: Any) -> None:
        if answer.error_code != ErrorCode.NONE:
            raise InterBrokerAuthenticationError(
                f"the peer does not accept SASL/{self.sasl_mechanism} "
                f"({ErrorCode.of(answer.error_code).name}, it offers "
                f"{', '.join(answer.mechanisms)})"
            )

    @staticmethod
    def _step(sasl: SaslClient, reply: Any) -> bytes | None:
        if reply.error_code != ErrorCode.NONE:
            raise InterBrokerAuthenticationError(
                reply.error_message or ErrorCode.of(reply.error_code).name
            )
        try:
            return sasl.step(bytes(reply.auth_bytes))
        except ScramError as e:
            raise InterBrokerAuthenticationError(f"SCRAM: {e}") from None

    def endpoint_of(self, broker: BrokerInfo) -> Endpoint | None:
        """The broker's address on the inter-broker listener (None: it has no such listener)."""
        for ep in broker.endpoints:
            if ep.listener == self.listener:
                return ep
        return None

    async def connect(
        self,
        host: str,
        port: int,
        client: ClientConnection,
        *,
        timeout_s: float = 30.0,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """An authenticated connection to a broker's inter-broker listener (see the module
        docstring). The caller owns the streams (and closes the writer)."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host,
                port,
                ssl=self.ssl_context,
                server_hostname=host if self.ssl_context is not None else None,
            ),
            timeout_s,
        )
        try:
            await asyncio.wait_for(self._setup(reader, writer, client), timeout_s)
        except BaseException:
            writer.close()
            raise
        return reader, writer

    async def _setup(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: ClientConnection
    ) -> None:
        body, version = api_versions_request("odradek-broker", "1")
        answer = await _call(reader, writer, client, body, version)
        retry = client.api_versions_retry_version(answer.body)
        if retry is not None:
            answer = await _call(reader, writer, client, body, retry)
        client.apply_api_versions(answer.body)
        if self.sasl_mechanism is None:
            return
        assert self.username is not None and self.password is not None
        handshake = await _call(
            reader, writer, client, SaslHandshakeRequest(mechanism=self.sasl_mechanism), 1
        )
        self._check_handshake(handshake.body)
        sasl = SaslClient(self.sasl_mechanism, self.username, self.password)
        token: bytes | None = sasl.first()
        auth_version = min(client.peer_versions.get(ApiKey.SASL_AUTHENTICATE, (0, 0))[1], 2)
        while token is not None:
            reply = await _call(
                reader, writer, client, SaslAuthenticateRequest(auth_bytes=token), auth_version
            )
            token = self._step(sasl, reply.body)


async def _call(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    client: ClientConnection,
    body: Any,
    version: int,
) -> Response:
    _, frame = client.send(body, version)
    writer.write(frame)
    await writer.drain()
    while True:
        data = await reader.read(65536)
        if not data:
            raise InterBrokerAuthenticationError(
                "the peer closed the connection during the handshake"
            )
        responses = client.receive_data(data)
        if responses:
            return responses[0]
