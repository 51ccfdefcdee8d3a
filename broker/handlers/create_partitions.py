"""CreatePartitions: grow a topic to a new partition count, optionally with assignments."""

from __future__ import annotations

from collections import Counter

from broker.dispatch import Later, RequestContext
from broker.handlers._ready import answer_when_ready
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)


@handler(
    ApiKey.CREATE_PARTITIONS, "0-3", acl=(AclOperation.ALTER, ResourceType.TOPIC), blocking=True
)
def handle_create_partitions(
    ctx: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse | Later:
    view = ctx.services.metadata.view
    requested = 0
    for t in request.topics:
        topic = view.topics.get(t.name)
        requested += max(t.count - (len(topic.partitions) if topic else 0), 0)
    try:
        ctx.services.admin.check_request_size(requested)
    except KafkaApiError as e:
        return _every_topic_failed(request, e.error_code, str(e))
    counts = Counter(t.name for t in request.topics)
    results = []
    for t in request.topics:
        result = CreatePartitionsTopicResult(
            name=t.name, error_code=ErrorCode.NONE, error_message=None
        )
        results.append(result)
        if counts[t.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "Duplicate topic in request."
            continue
        if not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, t.name):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            result.error_message = "The topic authorization is failed."
            continue
        assignment = [list(a.broker_ids) for a in t.assignments] if t.assignments else None
        try:
            ctx.services.admin.create_partitions(
                t.name, t.count, assignment, validate_only=request.validate_only
            )
        except KafkaApiError as e:
            result.error_code = e.error_code
            result.error_message = str(e)
    response = CreatePartitionsResponse(throttle_time_ms=0, results=results)
    grown = {
        t.name: t.count for t, r in zip(request.topics, results, strict=True) if not r.error_code
    }
    return answer_when_ready(ctx, response, grown, request.timeout_ms, request.validate_only)


@error_response(ApiKey.CREATE_PARTITIONS)
def create_partitions_error(
    request: CreatePartitionsRequest, code: ErrorCode, message: str | None
) -> CreatePartitionsResponse:
    return _every_topic_failed(request, code, message)


def _every_topic_failed(
    request: CreatePartitionsRequest, code: ErrorCode, message: str | None
) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(
        results=[
            CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
            for t in request.topics
        ]
    )
