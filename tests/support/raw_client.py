"""Raw-socket helpers for tests that speak the protocol by hand (bad frames, pipelining,
abuse): connect, send encoded requests, read whole frames."""

from __future__ import annotations

import socket
import struct
from typing import Any

from protocol.headers import decode_response, encode_request
from protocol.messages.api_versions import ApiVersionsRequest


def api_versions() -> ApiVersionsRequest:
    """An ApiVersions request as clients send it: from v3 (KIP-511) a software name and version
    a broker accepts (Kafka answers INVALID_REQUEST to empty or malformed ones)."""
    return ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1")


def connect(bootstrap: str, timeout: float = 10.0) -> socket.socket:
    host, port = bootstrap.split(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_frame(sock: socket.socket) -> bytes:
    """One whole response frame (without its size prefix); ConnectionError if closed."""

    def exactly(n: int) -> bytes:
        out = bytearray(n)
        view = memoryview(out)
        got = 0
        while got < n:
            k = sock.recv_into(view[got:])
            if not k:
                raise ConnectionError("closed")
            got += k
        return bytes(out)

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def is_closed(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the peer closed the connection within ``timeout`` (nothing else arriving)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def call(
    sock: socket.socket,
    body: Any,
    version: int,
    correlation_id: int = 1,
    *,
    client_id: str | None = None,
) -> Any:
    """Sends one request and returns the decoded response body."""
    if client_id is None:
        sock.sendall(encode_request(body, version, correlation_id))
    else:
        sock.sendall(encode_request(body, version, correlation_id, client_id))
    got, response = decode_response(body.api_key, version, read_frame(sock))
    assert got == correlation_id, f"answer to {got}, expected {correlation_id}"
    return response


def answered_from(bootstrap: str, source: str) -> bool:
    """Connects from the local address ``source`` (a loopback address of its own, e.g.
    127.0.0.2) and sends ApiVersions: True if the broker answers, False if it closes the
    connection unanswered (a connection throttled by its address's connection rate quota)."""
    host, port = bootstrap.split(":")
    sock = socket.create_connection((host, int(port)), timeout=30, source_address=(source, 0))
    try:
        try:
            call(sock, api_versions(), 3)
        except ConnectionError:
            return False
        return True
    finally:
        sock.close()
