"""Metadata: brokers, the controller, topics and their partitions' leaders.

v0: an empty topic list means all topics; v1+: null means all, empty means none. Topics may be
asked for by id from v12. Unknown topics are created when auto.create.topics.enable is set and the
request allows it (always, before v4).

Brokers are advertised on the listener the client connected to (a broker without that listener
is left out, as Kafka does). Authorization (Kafka's KafkaApis): topics the principal may not
DESCRIBE are left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when
named (without revealing whether they exist); creating a missing topic needs CREATE on the
cluster or on the topic; ``topic_authorized_operations`` and ``cluster_authorized_operations``
are what the authorizer allows this principal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.dispatch import Later, RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from coordination.metadata.view import ClusterView, TopicMetadata
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
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


def brokers_for(view: ClusterView, listener: str) -> list[MetadataResponseBroker]:
    """The live brokers with an endpoint on ``listener`` (others cannot be reached by this
    client's security protocol)."""
    out = []
    for b in sorted(view.brokers.values(), key=lambda b: b.broker_id):
        if not any(ep.listener == listener for ep in b.endpoints):
            continue
        ep = b.endpoint(listener)
        out.append(
            MetadataResponseBroker(node_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack)
        )
    return out


def topic_response(
    topic: TopicMetadata,
    authorized_operations: int | None,
    live: set[int],
    offline: Mapping[int, frozenset[tuple[str, int]]] | None = None,
) -> MetadataResponseTopic:
    """``offline``: the replicas in each broker's offline log dirs (``ClusterView.
    offline_replicas``), answered among the partitions' offline replicas as Kafka does."""
    partitions = []
    for p in topic.partitions:
        leader = p.leader if p.leader in live else -1
        if offline:
            key = (topic.name, p.partition)
            offline_replicas = [
                r for r in p.replicas if r not in live or key in offline.get(r, frozenset())
            ]
        else:
            offline_replicas = [r for r in p.replicas if r not in live]
        partitions.append(
            MetadataResponsePartition(
                error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=p.partition,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=[r for r in p.isr if r in live],
                offline_replicas=offline_replicas,
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=partitions,
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED
        if authorized_operations is None
        else authorized_operations,
    )


def error_topic(
    name: str | None,
    code: ErrorCode,
    topic_id: Any = ZERO_UUID,
    authorized_operations: int | None = None,
) -> MetadataResponseTopic:
    """A topic answered with an error; one the principal may describe (unknown, or failed to
    be created) carries its authorized operations when asked, as Kafka's do."""
    topic = MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[])
    if authorized_operations is not None:
        topic.topic_authorized_operations = authorized_operations
    return topic


def _auto_create(ctx: RequestContext, request: MetadataRequest) -> bool:
    """Whether this request may create topics (auto.create.topics.enable, and v4+ asks)."""
    return ctx.services.handler_config.auto_create_topics_enable and (
        ctx.api_version < 4 or bool(request.allow_auto_topic_creation)
    )


@handler(ApiKey.METADATA, "0-13", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse | Later:
    """Answered at once, unless a named topic is to be created: the creation (a metadata-store
    write, in a cluster a ZooKeeper round trip and a wait for the topic to come back) runs off
    the processor loop and the answer follows it."""
    requested = request.topics
    if requested and _auto_create(ctx, request):
        topics = ctx.services.metadata.view.topics
        if any(t.name is not None and t.name not in topics for t in requested):
            return Later(ctx.run_blocking(_metadata, ctx, request))
    return _metadata(ctx, request)


def _metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.services
    version = ctx.api_version
    view = broker.metadata.view
    include_ops = bool(request.include_topic_authorized_operations)

    def ops(name: str) -> int | None:
        return ctx.authorized_operations(ResourceType.TOPIC, name) if include_ops else None

    def may_describe(name: str, explicit: bool) -> bool:
        return ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_denied=explicit)

    requested = request.topics
    all_topics = requested is None or (version == 0 and not requested)
    topics = []
    if requested is None or all_topics:
        live = set(view.brokers)
        topics = [
            topic_response(t, ops(name), live, view.offline_replicas)
            for name, t in sorted(view.topics.items())
            if may_describe(name, False)
        ]
    else:
        auto_create = _auto_create(ctx, request)
        for wanted in requested:
            name = wanted.name
            # a topic id other than zero names the topic, whatever the name says: Kafka's own
            # client (MetadataRequest.Builder.forTopicIds) leaves the name at its default, ""
            if name is None or wanted.topic_id not in (None, ZERO_UUID):
                topic = view.topics_by_id.get(wanted.topic_id)
                if topic is not None and not may_describe(topic.name, True):
                    # topic ids are not secret; the name is
                    topics.append(
                        error_topic(
                            None if version >= 12 else "",
                            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            wanted.topic_id,
                        )
                    )
                    continue
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
                if not may_describe(name, True):
                    topics.append(error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                topic = view.topics.get(name)
                if topic is None:
                    if auto_create and not (
                        ctx.authorize(
                            AclOperation.CREATE,
                            ResourceType.CLUSTER,
                            CLUSTER_NAME,
                            log_denied=False,
                        )
                        or ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name)
                    ):
                        topics.append(error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                        continue
                    if not auto_create:
                        topics.append(
                            error_topic(
                                name,
                                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                authorized_operations=ops(name),
                            )
                        )
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
                            topics.append(error_topic(name, code, authorized_operations=ops(name)))
                            continue
                    view = broker.metadata.view
            topics.append(
                topic_response(topic, ops(topic.name), set(view.brokers), view.offline_replicas)
            )
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers_for(view, ctx.listener),
        cluster_id=view.cluster_id,
        controller_id=view.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_operations(
            ctx, bool(request.include_cluster_authorized_operations)
        ),
    )


def cluster_operations(ctx: RequestContext, include: bool) -> int:
    """``cluster_authorized_operations``: omitted unless asked for and the principal may
    DESCRIBE the cluster (Kafka's rule)."""
    if not include or not ctx.authorize(
        AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
    ):
        return AUTHORIZED_OPERATIONS_OMITTED
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)


@error_response(ApiKey.METADATA)
def metadata_error(
    request: MetadataRequest, code: ErrorCode, message: str | None
) -> MetadataResponse:
    names = [t.name for t in (request.topics or [])]
    return MetadataResponse(topics=[error_topic(n, code) for n in names], error_code=code)
