"""CreateTopics: create topics with partition counts, replication factors or explicit
assignments, and configs; v5+ answers with the new topic's configs."""

from __future__ import annotations

from collections import Counter

from broker.config_describe import describe_topic
from broker.dispatch import Later, RequestContext
from broker.handlers._ready import answer_when_ready
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)


@handler(ApiKey.CREATE_TOPICS, "0-7", acl=(AclOperation.CREATE, ResourceType.TOPIC), blocking=True)
def handle_create_topics(
    ctx: RequestContext, request: CreateTopicsRequest
) -> CreateTopicsResponse | Later:
    broker = ctx.services
    default_partitions = broker.handler_config.num_partitions
    requested = sum(
        len(t.assignments) if t.assignments else max(t.num_partitions, 0) or default_partitions
        for t in request.topics
    )
    try:
        broker.admin.check_request_size(requested)
    except KafkaApiError as e:
        return _every_topic_failed(request, e.error_code, str(e))
    counts = Counter(t.name for t in request.topics)
    results = []
    # CREATE on the cluster allows every topic; otherwise CREATE on each topic (Kafka's rule)
    cluster_create = ctx.authorize(
        AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
    )
    for t in request.topics:
        result = CreatableTopicResult(
            name=t.name, error_code=ErrorCode.NONE, error_message=None, configs=[]
        )
        results.append(result)
        if counts[t.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "Found multiple entries for this topic in the request."
            continue
        if not cluster_create and not ctx.authorize(
            AclOperation.CREATE, ResourceType.TOPIC, t.name
        ):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            result.error_message = "Authorization failed."
            continue
        assignment = None
        if t.assignments:
            ordered = sorted(t.assignments, key=lambda a: a.partition_index)
            if [a.partition_index for a in ordered] != list(range(len(ordered))):
                result.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
                result.error_message = "Partitions should be a consecutive 0-based integer sequence"
                continue
            assignment = [list(a.broker_ids) for a in ordered]
        configs = {c.name: c.value for c in t.configs}
        try:
            topic = broker.admin.create_topic(
                t.name,
                t.num_partitions,
                t.replication_factor,
                configs,
                assignment=assignment,
                validate_only=request.validate_only,
            )
        except KafkaApiError as e:
            result.error_code = e.error_code
            result.error_message = str(e)
            continue
        if not request.validate_only:
            result.topic_id = topic.topic_id
        if not ctx.authorize(
            AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, t.name, log_denied=False
        ):
            # neither its configs nor its partition and replica counts (Kafka 4's
            # ReplicationControlManager; Kafka 3.9 leaves the topic id out too)
            result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        result.num_partitions = len(topic.partitions)
        result.replication_factor = len(topic.partitions[0].replicas) if topic.partitions else -1
        result.configs = [
            CreatableTopicConfigs(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=e.source,
                is_sensitive=e.sensitive,
            )
            for e in describe_topic(broker.config, topic.configs)
        ]
    response = CreateTopicsResponse(throttle_time_ms=0, topics=results)
    created = {r.name: r.num_partitions for r in results if r.error_code == ErrorCode.NONE}
    return answer_when_ready(ctx, response, created, request.timeout_ms, request.validate_only)


@error_response(ApiKey.CREATE_TOPICS)
def create_topics_error(
    request: CreateTopicsRequest, code: ErrorCode, message: str | None
) -> CreateTopicsResponse:
    return _every_topic_failed(request, code, message)


def _every_topic_failed(
    request: CreateTopicsRequest, code: ErrorCode, message: str | None
) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[
            CreatableTopicResult(name=t.name, error_code=code, error_message=message, configs=[])
            for t in request.topics
        ]
    )
