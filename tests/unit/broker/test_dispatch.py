"""The dispatcher and handlers without a broker: fake services, real codecs.

A handler now needs only the services it uses, so produce, fetch, list-offsets and the gate are
tested here against a fake replica manager and metadata view; the integration tests run the same
paths with real clients and a real broker process."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.dispatch import Dispatcher
from broker.handlers import load_handlers
from broker.handlers.join_group import join_group_error
from broker.metrics import FAILED_PRODUCE, PRODUCE_REQUESTS
from broker.net.connection import CloseConnection
from broker.replication.partition import FetchIsolation
from coordination.errors import KafkaApiError
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from tests.support.fake_services import (
    DenyCluster,
    FakeConnection,
    FakeReplicaManager,
    call,
    produce,
    services,
    session,
)
from tests.support.raw_client import api_versions
from tests.unit.storage.util import make_batch


@pytest.fixture(scope="module")
def registry() -> Any:
    return load_handlers()


def test_produce_maps_the_replica_managers_answers(registry: Any) -> None:
    rm = FakeReplicaManager()
    dispatcher = Dispatcher(services(rm), registry)
    conn = FakeConnection(session())
    response = call(dispatcher, conn, produce("t"), 9)
    p = response.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 41)
    response = call(dispatcher, conn, produce("missing"), 9)
    assert response.responses[0].partition_responses[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert [a[:2] for a in rm.appends] == [("t", 0), ("missing", 0)]
    assert conn.request_metrics.requests[ApiKey.PRODUCE << 8 | 9] == 2
    topics = conn.request_metrics.topics
    assert topics["t"][PRODUCE_REQUESTS] == 1 and topics["t"][FAILED_PRODUCE] == 0
    assert topics["missing"][PRODUCE_REQUESTS] == 1 and topics["missing"][FAILED_PRODUCE] == 1


def test_transactional_records_need_a_transactional_id(registry: Any) -> None:
    """Kafka's hasTransactionalRecords check: a produce whose batches are transactional needs a
    transactional id (else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED and
    nothing is appended); a transactional id alone changes nothing."""
    rm = FakeReplicaManager()
    dispatcher = Dispatcher(services(rm), registry)
    conn = FakeConnection(session())
    request = produce("t")
    txn = make_batch(2, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    request.topic_data[0].partition_data[0].records = bytes(txn)
    response = call(dispatcher, conn, request, 9)
    assert response.responses[0].partition_responses[0].error_code == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    assert rm.appends == []
    plain = produce("t")
    plain.transactional_id = "app"
    response = call(dispatcher, conn, plain, 9)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_acks_0_sends_nothing_and_a_failure_closes(registry: Any) -> None:
    dispatcher = Dispatcher(services(FakeReplicaManager()), registry)
    conn = FakeConnection(session())
    assert call(dispatcher, conn, produce("t", acks=0), 9) is None
    with pytest.raises(CloseConnection, match="acks=0 produce failed"):
        call(dispatcher, conn, produce("missing", acks=0), 9)


def test_internal_topics_refuse_client_writes(registry: Any) -> None:
    rm = FakeReplicaManager()
    response = call(Dispatcher(services(rm), registry), FakeConnection(session()),
                    produce("__consumer_offsets"), 9)  # fmt: skip
    assert response.responses[0].partition_responses[0].error_code == (
        ErrorCode.INVALID_TOPIC_EXCEPTION
    )
    assert rm.appends == []


def test_fetch_passes_its_parameters_and_answers_per_partition(registry: Any) -> None:
    rm = FakeReplicaManager()
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=10,
        max_bytes=1 << 30,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic="t",
                topic_id=uuid.UUID(int=0),
                partitions=[FetchPartition(partition=3, fetch_offset=17, partition_max_bytes=100)],
            )
        ],
    )
    response = call(Dispatcher(services(rm), registry), FakeConnection(session()), request, 12)
    params, reads = rm.fetches[0]
    assert params.isolation == FetchIsolation.TXN_COMMITTED
    assert params.max_bytes == int(BrokerConfig.from_dict({})["fetch.max.bytes"])
    assert (params.min_bytes, params.max_wait_ms) == (10, 500)
    assert reads == [("t", 3, 17)]
    p = response.responses[0].partitions[0]
    assert (p.partition_index, p.error_code) == (3, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_unknown_fetch_session_is_refused_without_reading(registry: Any) -> None:
    rm = FakeReplicaManager()
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=100,
                           session_id=99, session_epoch=1, topics=[])  # fmt: skip
    response = call(Dispatcher(services(rm), registry), FakeConnection(session()), request, 12)
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert rm.fetches == []


def test_the_gate_serves_only_the_sasl_exchange_before_authentication(registry: Any) -> None:
    dispatcher = Dispatcher(services(FakeReplicaManager()), registry)
    conn = FakeConnection(session("SASL_PLAINTEXT"))
    assert not conn.session.authenticated
    response = call(dispatcher, conn, api_versions(), 3)
    assert response.error_code == ErrorCode.NONE
    with pytest.raises(CloseConnection, match="PRODUCE before authentication"):
        call(dispatcher, conn, produce("t"), 9)


def test_api_versions_keeps_the_client_software_on_the_session(registry: Any) -> None:
    """KIP-511: what a client announces in ApiVersions v3+ stays with its connection, where
    client telemetry subscriptions match it (KIP-714's ``client_software_name``)."""
    dispatcher = Dispatcher(services(FakeReplicaManager()), registry)
    conn = FakeConnection(session())
    request = ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.6.1")
    assert call(dispatcher, conn, request, 3).error_code == ErrorCode.NONE
    assert (conn.session.client_software_name, conn.session.client_software_version) == (
        "librdkafka",
        "2.6.1",
    )
    # v0-2 carry none: what the connection announced before stays
    assert call(dispatcher, conn, api_versions(), 2).error_code == ErrorCode.NONE
    assert conn.session.client_software_name == "librdkafka"


@pytest.mark.parametrize(
    ("name", "version"),
    [("", "1.0"), ("librdkafka", ""), ("bad name", "1.0"), ("-lead", "1"), ("x", "2.6.1+local")],
)
def test_api_versions_refuses_a_malformed_client_software(
    registry: Any, name: str, version: str
) -> None:
    """Kafka's ApiVersionsRequest.isValid (KIP-511): v3+ software names and versions are
    letters, digits, '-' and '.', starting and ending with a letter or digit; otherwise
    INVALID_REQUEST, no API listed, and the session keeps what it had."""
    dispatcher = Dispatcher(services(FakeReplicaManager()), registry)
    conn = FakeConnection(session())
    for v in (3, 4):
        request = ApiVersionsRequest(client_software_name=name, client_software_version=version)
        response = call(dispatcher, conn, request, v)
        assert (response.error_code, response.api_keys) == (ErrorCode.INVALID_REQUEST, [])
        assert conn.session.client_software_name == ""
    # a valid one is still answered on the same connection
    assert call(dispatcher, conn, api_versions(), 3).error_code == ErrorCode.NONE


def test_cluster_requirements_are_checked_at_the_gate(registry: Any) -> None:
    dispatcher = Dispatcher(services(FakeReplicaManager(), DenyCluster()), registry)
    conn = FakeConnection(session())
    response = call(dispatcher, conn, DescribeClusterRequest(), 0)
    assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # without an authorizer (Kafka's default) everything is allowed
    response = call(Dispatcher(services(FakeReplicaManager()), registry), conn,
                    DescribeClusterRequest(), 0)  # fmt: skip
    assert response.error_code == ErrorCode.NONE


def test_every_handler_declares_what_kafka_authorizes(registry: Any) -> None:
    undeclared = [
        h.api_key.name
        for h in registry
        if h.acl is None and not h.before_authentication and not h.no_acl
    ]
    assert undeclared == []


def test_a_response_that_fails_to_encode_is_answered_with_the_apis_error() -> None:
    """Every request gets one answer, in order: a bug in a handler's response becomes
    UNKNOWN_SERVER_ERROR (logged), not a missing answer."""
    from broker.registry import HandlerRegistry
    from protocol.messages.metadata import MetadataResponse, MetadataResponseTopic

    registry = HandlerRegistry()

    def broken(ctx: Any, request: Any) -> Any:
        # name is not nullable before v12: this cannot be encoded at v1
        return MetadataResponse(topics=[MetadataResponseTopic(error_code=0, name=None)])

    registry.register(ApiKey.METADATA, "0-13", broken)
    registry.set_error_response(
        ApiKey.METADATA, lambda request, code, message: MetadataResponse(error_code=code)
    )
    from protocol.messages.metadata import MetadataRequest

    response = call(
        Dispatcher(services(FakeReplicaManager()), registry),
        FakeConnection(session()),
        MetadataRequest(topics=None),
        1,
    )
    assert response.topics == []


@pytest.mark.parametrize(("version", "protocol_name"), [(6, ""), (7, None), (9, None)])
def test_an_error_response_may_depend_on_the_version(version: int, protocol_name: Any) -> None:
    """JoinGroup failing whole answers Kafka's JoinGroupRequest.getErrorResponse: a null
    protocol name from v7 (the error response function takes the request's version)."""
    from broker.registry import HandlerRegistry
    from protocol.messages.join_group import JoinGroupRequest

    registry = HandlerRegistry()

    def failing(ctx: Any, request: Any) -> Any:
        raise KafkaApiError("not now", ErrorCode.COORDINATOR_NOT_AVAILABLE)

    registry.register(ApiKey.JOIN_GROUP, "0-9", failing)
    registry.set_error_response(ApiKey.JOIN_GROUP, join_group_error)
    response = call(
        Dispatcher(services(FakeReplicaManager()), registry),
        FakeConnection(session()),
        JoinGroupRequest(
            group_id="g", session_timeout_ms=10000, member_id="", protocol_type="consumer"
        ),
        version,
    )
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert response.protocol_name == protocol_name


def test_timed_coroutines_are_charged_their_running_time_not_their_waits():
    import time

    from broker.dispatch import _Timed

    cancelled_inside: list[bool] = []

    async def handler(wait: float) -> str:
        end = time.monotonic() + 0.02
        while time.monotonic() < end:  # 20 ms of work
            pass
        try:
            await asyncio.sleep(wait)  # waiting, as in the purgatory
        except asyncio.CancelledError:
            cancelled_inside.append(True)
            raise
        return "answer"

    async def wrapped(timed: _Timed) -> object:
        return await timed

    async def run() -> None:
        timed = _Timed(handler(0.3))
        assert await timed == "answer"
        assert 0.015e9 < timed.ns < 0.2e9  # the 20 ms of work, not the 300 ms wait
        # a cancellation thrown in reaches the coroutine; its running time is still counted
        waiting = _Timed(handler(10))
        task = asyncio.ensure_future(wrapped(waiting))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert task.cancelled() and cancelled_inside == [True]
        assert 0.015e9 < waiting.ns < 0.2e9

    asyncio.run(run())
