"""What a denied request is answered, field by field, as Kafka answers it (found by the
authorization corpus, tests/reference/corpus_acl.py): the error alone is not all a client
reads. Handlers behind real codecs, with an authorizer that denies one topic and one group."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker.dispatch import Dispatcher
from broker.handlers import load_handlers
from broker.net.session import KafkaPrincipal
from broker.security.authorizer import SUPPORTED_OPERATIONS
from coordination.metadata.view import PartitionState, TopicMetadata
from protocol.acl import AclOperation, ResourceType
from protocol.error_codes import ErrorCode
from protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.support.fake_services import FakeConnection, FakeReplicaManager, call, services, session

E = ErrorCode
DENIED_TOPIC, DENIED_GROUP = "secret", "secret-group"
TOPICS = {
    DENIED_TOPIC: TopicMetadata(DENIED_TOPIC, uuid.uuid4(), (PartitionState(0, 1, 0, (1,), (1,)),))
}


class DenySecrets:
    """Allows everything but the topic and the group called secret, and cluster actions (what
    only brokers may do)."""

    def _allowed(self, resource_type: ResourceType, name: str) -> bool:
        return (resource_type, name) not in (
            (ResourceType.TOPIC, DENIED_TOPIC),
            (ResourceType.GROUP, DENIED_GROUP),
        )

    def authorize(
        self, principal: KafkaPrincipal, host: str, operation: AclOperation,
        resource_type: ResourceType, name: str,
    ) -> bool:  # fmt: skip
        return operation != AclOperation.CLUSTER_ACTION and self._allowed(resource_type, name)

    def authorized_operations(
        self, principal: KafkaPrincipal, host: str, resource_type: ResourceType, name: str
    ) -> Any:
        return SUPPORTED_OPERATIONS[resource_type] if self._allowed(resource_type, name) else ()


@pytest.fixture(scope="module")
def dispatcher() -> Dispatcher:
    return Dispatcher(services(FakeReplicaManager(), DenySecrets(), topics=TOPICS), load_handlers())


def ask(dispatcher: Dispatcher, body: Any, version: int) -> Any:
    return call(dispatcher, FakeConnection(session()), body, version)


def fetch_of(topics: list[str], replica_id: int = -1) -> FetchRequest:
    return FetchRequest(
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)],
            )
            for topic in topics
        ],
    )


def test_a_denied_fetch_has_an_empty_aborted_list(dispatcher: Dispatcher) -> None:
    (p,) = ask(dispatcher, fetch_of([DENIED_TOPIC]), 12).responses[0].partitions
    assert (p.error_code, p.aborted_transactions) == (E.TOPIC_AUTHORIZATION_FAILED, [])


def test_a_follower_fetch_without_cluster_action_is_denied_partition_by_partition(
    dispatcher: Dispatcher,
) -> None:
    """Kafka's KafkaApis.handleFetchRequest: a follower without CLUSTER_ACTION gets
    TOPIC_AUTHORIZATION_FAILED for every partition it asked for, known or not."""
    response = ask(dispatcher, fetch_of([DENIED_TOPIC, "no-such-topic"], replica_id=2), 12)
    assert response.error_code == E.NONE
    assert [p.error_code for t in response.responses for p in t.partitions] == [
        E.TOPIC_AUTHORIZATION_FAILED,
        E.TOPIC_AUTHORIZATION_FAILED,
    ]


def test_describe_producers_names_a_topics_error(dispatcher: Dispatcher) -> None:
    request = DescribeProducersRequest(
        topics=[
            TopicRequest(name=name, partition_indexes=[0])
            for name in (DENIED_TOPIC, "unknown", "bad/name")
        ]
    )
    answered = [
        (t.partitions[0].error_code, t.partitions[0].error_message)
        for t in ask(dispatcher, request, 0).topics
    ]
    assert answered[0] == (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert answered[1] == (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.UNKNOWN_TOPIC_OR_PARTITION.message,
    )
    assert answered[2][0] == E.INVALID_TOPIC_EXCEPTION and answered[2][1]


def test_a_denied_config_change_has_no_message(dispatcher: Dispatcher) -> None:
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=2,
                resource_name=DENIED_TOPIC,
                configs=[AlterableConfig(name="retention.ms", config_operation=0, value="1")],
            )
        ],
        validate_only=False,
    )
    (r,) = ask(dispatcher, request, 1).responses
    assert (r.error_code, r.error_message) == (E.TOPIC_AUTHORIZATION_FAILED, None)


@pytest.mark.parametrize(("version", "protocol_name"), [(6, ""), (7, None), (9, None)])
def test_a_denied_join_has_no_protocol_name_from_v7(
    dispatcher: Dispatcher, version: int, protocol_name: str | None
) -> None:
    request = JoinGroupRequest(
        group_id=DENIED_GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        reason=None,
    )
    answer = ask(dispatcher, request, version)
    assert (answer.error_code, answer.protocol_name, answer.member_id) == (
        E.GROUP_AUTHORIZATION_FAILED,
        protocol_name,
        "",
    )


def test_an_unknown_topic_has_its_authorized_operations(dispatcher: Dispatcher) -> None:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="unknown"), MetadataRequestTopic(name=DENIED_TOPIC)],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=True,
    )
    unknown, denied = ask(dispatcher, request, 12).topics
    assert unknown.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert unknown.topic_authorized_operations == 3576  # every topic operation
    assert denied.error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert denied.topic_authorized_operations == -(2**31)  # not told
