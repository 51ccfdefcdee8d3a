"""Small protocol probes used while Kafka or Odradek starts: a Metadata request over a raw
socket, with Odradek's own protocol package (no client library, so a broker that is half up
answers or refuses plainly)."""

from __future__ import annotations

from protocol.messages.metadata import MetadataRequest
from tests.support import raw_client


def metadata_brokers(bootstrap: str, timeout: float = 5.0) -> set[int]:
    """The node ids a Metadata v1 response lists (empty until the broker knows itself)."""
    sock = raw_client.connect(bootstrap, timeout=timeout)
    try:
        response = raw_client.call(sock, MetadataRequest(topics=[]), 1)
    finally:
        sock.close()
    return {b.node_id for b in response.brokers}
