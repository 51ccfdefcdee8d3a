"""A sans-IO Kafka client connection: requests in, bytes out; bytes in, responses out.

:class:`ClientConnection` owns what every Kafka client connection needs, and nothing about how
bytes move (in the style of h11): correlation ids, pipelining (many requests in flight, their
responses matched in order, as Kafka answers them), version negotiation from an ApiVersions
response, request framing with the right header version, and response decoding (header v0 or v1
by flexibility; ApiVersions responses always have header v0). Whoever owns the socket — the
Spark connector's blocking client, the broker's replica fetchers and transaction-marker senders
on their event loops — calls :meth:`~ClientConnection.send` and writes the bytes it returns, and
feeds what it reads to :meth:`~ClientConnection.receive_data`, getting :class:`Response` events.

Errors say who is at fault: a response the peer should not have sent (a correlation id that is
not the oldest in flight, a malformed body, a frame over the limit) raises a
:class:`~protocol.errors.RemoteProtocolError` subclass and the connection is unusable after it;
asking for an API the peer does not support raises :class:`UnsupportedApi` (our mistake or an
old peer, not bad bytes).

No sockets, no clock, no logging, no threads: one instance per connection, used by one thread at
a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import MalformedMessage, ProtocolError, RemoteProtocolError
from protocol.frames import FrameDecoder
from protocol.headers import decode_response_header, encode_request
from protocol.messages import SCHEMAS
from protocol.messages.api_versions import ApiVersionsRequest

#: The largest response frame accepted by default (Kafka clients have no limit; a broker's
#: ``fetch.max.bytes`` is 55 MiB by default).
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class CorrelationMismatch(RemoteProtocolError):
    """A response whose correlation id is not the oldest request in flight."""


class UnexpectedResponse(RemoteProtocolError):
    """A response while no request awaits one."""


class UnsupportedApi(ProtocolError):
    """The peer supports no version of an API in the range this client speaks."""

    def __init__(self, api_key: int, ours: tuple[int, int], theirs: tuple[int, int] | None) -> None:
        name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
        super().__init__(
            f"the peer supports {name} versions {theirs}, this client {ours[0]}-{ours[1]}"
            if theirs is not None
            else f"the peer does not support {name}"
        )
        self.api_key = api_key


@dataclass(frozen=True, slots=True)
class Response:
    """A decoded response to the request sent with ``correlation_id``."""

    correlation_id: int
    api_key: int
    api_version: int
    body: Any


@dataclass(frozen=True, slots=True)
class _InFlight:
    correlation_id: int
    api_key: int
    api_version: int


def api_versions_request(
    client_software_name: str = "", client_software_version: str = ""
) -> tuple[Any, int]:
    """The ApiVersions request clients send first (v3, KIP-511), with its version."""
    return (
        ApiVersionsRequest(
            client_software_name=client_software_name,
            client_software_version=client_software_version,
        ),
        3,
    )


def exchange_api_versions(
    send: Callable[[Any, int], Any], client_software_name: str, client_software_version: str
) -> Any:
    """The ApiVersions exchange a client opens with: ``send(request, version)`` returns the
    peer's answer. After UNSUPPORTED_VERSION the request is sent again, with the same software
    name and version (Kafka refuses empty ones from v3, KIP-511), at the highest version the
    peer listed. Returns the last answer."""
    request, version = api_versions_request(client_software_name, client_software_version)
    body = send(request, version)
    retry = ClientConnection.api_versions_retry_version(body)
    if retry is not None:
        body = send(request, retry)
    return body


def negotiate(
    ours: Mapping[int, tuple[int, int]], theirs: Mapping[int, tuple[int, int]]
) -> dict[int, int]:
    """The highest version both sides support, per API key both know."""
    chosen = {}
    for key, (lo, hi) in ours.items():
        other = theirs.get(key)
        if other is None:
            continue
        top = min(hi, other[1])
        if top >= max(lo, other[0]):
            chosen[key] = top
    return chosen


class ClientConnection:
    """One client connection's protocol state. ``versions``: the client's own version range per
    API key (a subset of what :mod:`protocol.messages` has schemas for)."""

    def __init__(
        self,
        versions: Mapping[int, tuple[int, int]],
        *,
        client_id: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.client_versions = dict(versions)
        self.client_id = client_id
        self._decoder = FrameDecoder(max_response_bytes)
        self._in_flight: deque[_InFlight] = deque()
        self._correlation = 0
        #: the peer's ranges from ApiVersions (empty until :meth:`apply_api_versions`)
        self.peer_versions: dict[int, tuple[int, int]] = {}
        self._chosen: dict[int, int] = {}
        self.broken = False

    # -- versions ------------------------------------------------------------------------------

    def apply_api_versions(self, body: Any) -> None:
        """Takes the peer's ApiVersions answer. An UNSUPPORTED_VERSION answer (a v0 body listing
        ApiVersions' own range) is the caller's cue to ask again at that version, as Kafka's
        clients do: :meth:`api_versions_retry_version` tells which."""
        if body.error_code != ErrorCode.NONE:
            raise UnsupportedApi(
                ApiKey.API_VERSIONS, self.client_versions[ApiKey.API_VERSIONS], None
            )
        self.peer_versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        self._chosen = negotiate(self.client_versions, self.peer_versions)

    @staticmethod
    def api_versions_retry_version(body: Any) -> int | None:
        """After an UNSUPPORTED_VERSION ApiVersions answer: the highest ApiVersions version the
        peer listed (None when it listed none)."""
        if body.error_code != ErrorCode.UNSUPPORTED_VERSION:
            return None
        for k in body.api_keys:
            if k.api_key == ApiKey.API_VERSIONS:
                return int(min(k.max_version, 3))
        return 0

    def version_for(self, api_key: int) -> int:
        """The negotiated version of ``api_key``; UnsupportedApi when none."""
        version = self._chosen.get(api_key)
        if version is None:
            raise UnsupportedApi(
                api_key, self.client_versions.get(api_key, (0, -1)), self.peer_versions.get(api_key)
            )
        return version

    def supports(self, api_key: int) -> bool:
        return api_key in self._chosen

    # -- sending -------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def send(
        self, body: Any, version: int | None = None, *, expect_response: bool = True
    ) -> tuple[int, bytes]:
        """A request frame to write: (correlation id, bytes). ``version`` defaults to the
        negotiated one. ``expect_response=False`` for requests the peer never answers (Produce
        with acks=0)."""
        if self.broken:
            raise ProtocolError("the connection is broken: open a new one")
        if version is None:
            version = self.version_for(body.api_key)
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        cid = self._correlation
        frame = encode_request(body, version, cid, self.client_id)
        if expect_response:
            self._in_flight.append(_InFlight(cid, body.api_key, version))
        return cid, frame

    # -- receiving -----------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Response]:
        """Feeds received bytes (copied in); returns the responses they complete, in order."""
        try:
            self._decoder.feed(data)
            return list(self._responses())
        except RemoteProtocolError:
            self.broken = True
            raise

    def get_buffer(self) -> memoryview:
        """Memory to receive the next bytes into (``socket.recv_into``), so that large responses
        land in their own buffer with no further copy; then call :meth:`buffer_updated`."""
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> list[Response]:
        """``nbytes`` were written into the last :meth:`get_buffer`; returns the responses they
        complete, in order."""
        try:
            self._decoder.buffer_updated(nbytes)
            return list(self._responses())
        except RemoteProtocolError:
            self.broken = True
            raise

    def _responses(self) -> Iterator[Response]:
        for frame in self._decoder:
            if not self._in_flight:
                raise UnexpectedResponse(f"a response of {len(frame)} bytes with none in flight")
            pending = self._in_flight[0]
            schema = SCHEMAS[pending.api_key]
            cid, pos = decode_response_header(
                frame, schema.response_header_version(pending.api_version)
            )
            if cid != pending.correlation_id:
                raise CorrelationMismatch(
                    f"response for correlation id {cid}, expected {pending.correlation_id}"
                )
            try:
                body, _ = schema.response_decoder(pending.api_version)(frame, pos)
            except RemoteProtocolError:
                raise
            except (IndexError, ValueError) as e:
                raise MalformedMessage(
                    f"{schema.name} v{pending.api_version} response: {e}"
                ) from None
            self._in_flight.popleft()
            yield Response(cid, pending.api_key, pending.api_version, body)

    def fail_in_flight(self) -> list[int]:
        """The connection is gone: forgets (and returns) the correlation ids still in flight."""
        ids = [p.correlation_id for p in self._in_flight]
        self._in_flight.clear()
        return ids
