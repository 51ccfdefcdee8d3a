"""Metadata: brokers, the controller, topics and their partitions' leaders.

v0: an empty topic list means all topics; v1+: null means all, empty means none. Topics may be
asked for by id from v12. Unknown topics are created when auto.create.topics.enable is set and the
request allows it (always, before v4).
"""

from __future__ import annotations

from typing import Any

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from coordination.metadata.view import ClusterView, TopicMetadata
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.primitives import ZERO_UUID

# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, CREATE_TOKENS 13, DESCRIBE_TOKENS 14.
# With no authorizer every operation is allowed.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12, 13, 14))


def brokers_for(view: ClusterView, listener: str) -> list[MetadataResponseBroker]:
    out = []
    for b in sorted(view.brokers.values(), key=lambda b: b.broker_id):
        ep = b.endpoint(listener)
        out.append(
            MetadataResponseBroker(node_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack)
        )
    return out


def topic_response(
    topic: TopicMetadata, include_ops: bool, live: set[int]
) -> MetadataResponseTopic:
    partitions = []
    for p in topic.partitions:
        leader = p.leader if p.leader in live else -1
        partitions.append(
            MetadataResponsePartition(
                error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=p.partition,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=[r for r in p.isr if r in live],
                offline_replicas=[r for r in p.replicas if r not in live],
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=partitions,
        topic_authorized_operations=TOPIC_OPERATIONS
        if include_ops
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


def error_topic(
    name: str | None, code: ErrorCode, topic_id: Any = ZERO_UUID
) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[])


@handler(ApiKey.METADATA, "0-13", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.services
    version = ctx.api_version
    view = broker.metadata.view
    include_ops = bool(request.include_topic_authorized_operations)
    requested = request.topics
    all_topics = requested is None or (version == 0 and not requested)
    topics = []
    if requested is None or all_topics:
        live = set(view.brokers)
        topics = [topic_response(t, include_ops, live) for _, t in sorted(view.topics.items())]
    else:
        auto_create = broker.config["auto.create.topics.enable"] and (
            version < 4 or request.allow_auto_topic_creation
        )
        for wanted in requested:
            name = wanted.name
            if name is None:
                topic = view.topics_by_id.get(wanted.topic_id)
                if topic is None:
                    # the name is nullable from v12; v10-11 could name topics by id but
                    # not answer with a null name
                    topics.append(
                        error_topic(
                            None if version >= 12 else "",
                            ErrorCode.UNKNOWN_TOPIC_ID,
                            wanted.topic_id,
                        )
                    )
                    continue
            else:
                topic = view.topics.get(name)
                if topic is None:
                    if not auto_create:
                        topics.append(error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                        continue
                    try:
                        topic = broker.admin.create_topic(name)
                    except KafkaApiError as e:
                        code = e.error_code
                        if code == ErrorCode.TOPIC_ALREADY_EXISTS:
                            # another broker created it a moment ago; it is not visible here yet
                            topic = broker.metadata.view.topics.get(name)
                            code = ErrorCode.LEADER_NOT_AVAILABLE
                        if topic is None:
                            if code in (
                                ErrorCode.INVALID_REPLICATION_FACTOR,
                                ErrorCode.REQUEST_TIMED_OUT,
                            ):
                                code = ErrorCode.LEADER_NOT_AVAILABLE
                            topics.append(error_topic(name, code))
                            continue
                    view = broker.metadata.view
            topics.append(topic_response(topic, include_ops, set(view.brokers)))
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers_for(view, ctx.listener),
        cluster_id=view.cluster_id,
        controller_id=view.controller_id,
        topics=topics,
        cluster_authorized_operations=CLUSTER_OPERATIONS
        if request.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


@error_response(ApiKey.METADATA)
def metadata_error(
    request: MetadataRequest, code: ErrorCode, message: str | None
) -> MetadataResponse:
    names = [t.name for t in (request.topics or [])]
    return MetadataResponse(topics=[error_topic(n, code) for n in names], error_code=code)
