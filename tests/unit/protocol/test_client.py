"""The sans-IO client connection: framing, pipelining, correlation, negotiation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.api_keys import ApiKey
from protocol.client import (
    ClientConnection,
    CorrelationMismatch,
    UnexpectedResponse,
    UnsupportedApi,
    negotiate,
)
from protocol.errors import FrameTooLarge
from protocol.headers import decode_request, encode_response
from protocol.messages import SCHEMAS
from protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from protocol.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseBroker
from protocol.messages.produce import ProduceRequest

VERSIONS = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (1, 12), ApiKey.PRODUCE: (3, 9)}


def response_bytes(api_key: int, version: int, cid: int, body: object) -> bytes:
    return b"".join(bytes(p) for p in encode_response(SCHEMAS[api_key], version, cid, body))


def metadata_response(node: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=node, host="h", port=9092)], topics=[]
    )


def negotiated() -> ClientConnection:
    conn = ClientConnection(VERSIONS, client_id="test")
    conn.apply_api_versions(
        ApiVersionsResponse(
            error_code=0,
            api_keys=[
                ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=4),
                ApiVersion(api_key=ApiKey.METADATA, min_version=0, max_version=13),
                ApiVersion(api_key=ApiKey.FETCH, min_version=4, max_version=18),
            ],
        )
    )
    return conn


def test_negotiation_picks_the_highest_common_version() -> None:
    conn = negotiated()
    assert conn.version_for(ApiKey.METADATA) == 12
    assert conn.version_for(ApiKey.API_VERSIONS) == 3
    with pytest.raises(UnsupportedApi, match="PRODUCE"):
        conn.version_for(ApiKey.PRODUCE)  # the peer does not list it
    assert not conn.supports(ApiKey.FETCH)  # the client does not speak it
    assert negotiate({1: (4, 12)}, {1: (13, 18)}) == {}


def test_unsupported_api_versions_tells_which_version_to_retry() -> None:
    answer = ApiVersionsResponse(
        error_code=35,
        api_keys=[ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=2)],
    )
    assert ClientConnection.api_versions_retry_version(answer) == 2


def test_pipelined_requests_fed_one_byte_at_a_time() -> None:
    conn = negotiated()
    sent = []
    for _ in range(5):
        cid, frame = conn.send(MetadataRequest(topics=None))
        header, _ = decode_request(memoryview(frame)[4:])
        assert header.api_version == 12 and header.client_id == "test"
        sent.append(cid)
    assert conn.in_flight == 5
    stream = b"".join(
        response_bytes(ApiKey.METADATA, 12, cid, metadata_response(i)) for i, cid in enumerate(sent)
    )
    got = []
    for i in range(len(stream)):
        got.extend(conn.receive_data(stream[i : i + 1]))
    assert [r.correlation_id for r in got] == sent
    assert [r.body.brokers[0].node_id for r in got] == [0, 1, 2, 3, 4]
    assert conn.in_flight == 0


def test_a_response_out_of_order_breaks_the_connection() -> None:
    conn = negotiated()
    first, _ = conn.send(MetadataRequest(topics=None))
    second, _ = conn.send(MetadataRequest(topics=None))
    with pytest.raises(CorrelationMismatch):
        conn.receive_data(response_bytes(ApiKey.METADATA, 12, second, metadata_response(1)))
    assert conn.broken
    with pytest.raises(Exception, match="broken"):
        conn.send(MetadataRequest(topics=None))
    assert sorted(conn.fail_in_flight()) == [first, second]


def test_requests_without_answers_and_answers_without_requests() -> None:
    conn = negotiated()
    conn.send(ProduceRequest(acks=0, timeout_ms=1, topic_data=[]), 9, expect_response=False)
    assert conn.in_flight == 0
    with pytest.raises(UnexpectedResponse):
        conn.receive_data(response_bytes(ApiKey.METADATA, 12, 1, metadata_response(0)))


def test_a_frame_over_the_limit_is_refused() -> None:
    conn = ClientConnection(VERSIONS, max_response_bytes=100)
    conn.send(MetadataRequest(topics=None), 1)
    with pytest.raises(FrameTooLarge):
        conn.receive_data((1000).to_bytes(4, "big") + b"x")


def test_api_versions_responses_use_header_v0_even_when_flexible() -> None:
    conn = ClientConnection(VERSIONS)
    cid, _ = conn.send(*_api_versions())
    body = ApiVersionsResponse(
        error_code=0,
        api_keys=[ApiVersion(api_key=ApiKey.METADATA, min_version=0, max_version=13)],
    )
    (response,) = conn.receive_data(response_bytes(ApiKey.API_VERSIONS, 3, cid, body))
    conn.apply_api_versions(response.body)
    assert conn.version_for(ApiKey.METADATA) == 12


def _api_versions() -> tuple[object, int]:
    from protocol.client import api_versions_request

    return api_versions_request("tests", "1")


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=20), st.data())
def test_any_split_of_a_pipelined_stream_gives_the_same_responses(nodes, data) -> None:
    conn = negotiated()
    cids = [conn.send(MetadataRequest(topics=None))[0] for _ in nodes]
    stream = b"".join(
        response_bytes(ApiKey.METADATA, 12, cid, metadata_response(n))
        for cid, n in zip(cids, nodes, strict=True)
    )
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=10)))
    got = []
    start = 0
    for cut in [*cuts, len(stream)]:
        got.extend(conn.receive_data(stream[start:cut]))
        start = cut
    assert [r.body.brokers[0].node_id for r in got] == nodes


def test_receiving_in_place_gives_the_same_responses() -> None:
    conn = negotiated()
    cids = [conn.send(MetadataRequest(topics=None))[0] for _ in range(3)]
    stream = b"".join(
        response_bytes(ApiKey.METADATA, 12, cid, metadata_response(i)) for i, cid in enumerate(cids)
    )
    got = []
    pos = 0
    while pos < len(stream):
        buf = conn.get_buffer()
        n = min(len(buf), 7, len(stream) - pos)
        buf[:n] = stream[pos : pos + n]
        del buf
        pos += n
        got.extend(conn.buffer_updated(n))
    assert [r.body.brokers[0].node_id for r in got] == [0, 1, 2]
