"""DeleteTopics: by name (v0-5) or by name or id (v6+)."""

from __future__ import annotations

import uuid

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.primitives import ZERO_UUID


def _wanted(request: DeleteTopicsRequest, version: int) -> list[tuple[str | None, uuid.UUID]]:
    if version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, ZERO_UUID) for name in request.topic_names]


@handler(ApiKey.DELETE_TOPICS, "0-6", acl=(AclOperation.DELETE, ResourceType.TOPIC), blocking=True)
def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = ctx.services
    results = []
    for name, topic_id in _wanted(request, ctx.api_version):
        view = broker.metadata.view
        if name is None:
            topic = view.topics_by_id.get(topic_id)
            if topic is None:
                results.append(
                    DeletableTopicResult(
                        name=None, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                )
                continue
            if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                results.append(
                    DeletableTopicResult(
                        name=None,
                        topic_id=topic_id,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                )
                continue
            name = topic.name
        if not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
            results.append(
                DeletableTopicResult(
                    name=name,
                    topic_id=topic_id,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="Authorization failed.",
                )
            )
            continue
        result = DeletableTopicResult(
            name=name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None
        )
        try:
            topic = broker.admin.delete_topic(name)
            result.topic_id = topic.topic_id
        except KafkaApiError as e:
            result.error_code = e.error_code
            # Kafka names no reason for a topic that does not exist
            if e.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                result.error_message = str(e)
        results.append(result)
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


@error_response(ApiKey.DELETE_TOPICS)
def delete_topics_error(
    request: DeleteTopicsRequest, code: ErrorCode, message: str | None
) -> DeleteTopicsResponse:
    names = [t.name for t in request.topics] or list(request.topic_names)
    return DeleteTopicsResponse(
        responses=[
            DeletableTopicResult(name=n, error_code=code, error_message=message) for n in names
        ]
    )
