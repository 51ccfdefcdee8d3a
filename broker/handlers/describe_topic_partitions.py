"""DescribeTopicPartitions (KIP-966): topics' partitions, paginated, as the Java admin client of
3.8+ asks for them (``Admin.describeTopics``).

The rules of Kafka's ``DescribeTopicPartitionsRequestHandler`` and its metadata cache:

* Topics are answered in name order, from the ``cursor``'s topic on (its partitions from the
  cursor's partition); an empty topic list means every topic. A cursor naming a topic the list
  does not hold, or a negative partition, is an INVALID_REQUEST (every requested topic answers
  it).
* At most ``min(response_partition_limit, max.request.partition.size.limit)`` partitions (at
  least one) are answered; where the limit cuts, ``next_cursor`` names the first partition not
  answered (the next topic's partition 0 when a topic ended exactly at the limit).
* Topics the principal may not DESCRIBE are left out of an all-topics answer and answered
  TOPIC_AUTHORIZATION_FAILED (with no topic id) when named; named topics that do not exist answer
  UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name).
* Partitions carry the leader (-1 when it is not alive), leader epoch, replicas, ISR, offline
  replicas; eligible leader replicas are empty lists (this broker has no ELR: KIP-966's
  ``eligible.leader.replicas.enable`` is off).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import InvalidTopic, KafkaApiError
from coordination.metadata.view import INTERNAL_TOPICS, ClusterView, validate_topic_name
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from protocol.primitives import ZERO_UUID


class InvalidRequest(KafkaApiError):
    error_code = ErrorCode.INVALID_REQUEST


def _partitions(
    view: ClusterView, name: str, start: int, limit: int, live: set[int]
) -> tuple[list[DescribeTopicPartitionsResponsePartition], int]:
    """Up to ``limit`` partitions of ``name`` from ``start``, and the next index (-1: none)."""
    topic = view.topics[name]
    parts = topic.partitions
    upper = min(len(parts), start + limit)
    out = []
    for p in parts[start:upper]:
        out.append(
            DescribeTopicPartitionsResponsePartition(
                error_code=ErrorCode.NONE,
                partition_index=p.partition,
                leader_id=p.leader if p.leader in live else -1,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                eligible_leader_replicas=[],
                last_known_elr=[],
                offline_replicas=view.offline_replica_ids(name, p),
            )
        )
    return out, (upper if upper < len(parts) else -1)


def _missing(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except InvalidTopic:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@handler(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "0", acl=(AclOperation.DESCRIBE, ResourceType.TOPIC))
def handle_describe_topic_partitions(
    ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    view = ctx.services.metadata.view
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    all_topics = not request.topics
    if all_topics:
        names = {n for n in view.topics if n >= cursor_topic}
    else:
        names = {t.name for t in request.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            raise InvalidRequest(
                "DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                f"{cursor.topic_name}"
            )
    if cursor is not None and cursor.partition_index < 0:
        raise InvalidRequest(
            f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}"
        )
    denied = []
    allowed = []
    for name in sorted(names):
        if ctx.authorize(
            AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_denied=not all_topics
        ):
            allowed.append(name)
        elif not all_topics:
            denied.append(
                DescribeTopicPartitionsResponseTopic(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    name=name,
                    topic_id=ZERO_UUID,
                    is_internal=False,
                    partitions=[],
                )
            )
    cap = ctx.services.handler_config.max_request_partition_size_limit
    remaining = max(min(cap, request.response_partition_limit), 1)
    live = set(view.brokers)
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor = None
    for name in allowed:
        if remaining <= 0:
            # the limit ended exactly with the last topic: the next one starts the next page
            next_cursor = Cursor(topic_name=name, partition_index=0)
            break
        topic = view.topics.get(name)
        if topic is None:
            if not all_topics:
                topics.append(
                    DescribeTopicPartitionsResponseTopic(
                        error_code=_missing(name),
                        name=name,
                        topic_id=ZERO_UUID,
                        is_internal=name in INTERNAL_TOPICS,
                        partitions=[],
                        # as Kafka: what the principal may do with the (missing) topic
                        topic_authorized_operations=ctx.authorized_operations(
                            ResourceType.TOPIC, name
                        ),
                    )
                )
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        partitions, next_index = _partitions(view, name, start, remaining, live)
        topics.append(
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=topic.topic_id,
                is_internal=topic.internal,
                partitions=partitions,
                topic_authorized_operations=ctx.authorized_operations(ResourceType.TOPIC, name),
            )
        )
        if next_index != -1:
            next_cursor = Cursor(topic_name=name, partition_index=next_index)
            break
        remaining -= len(partitions)
    topics.extend(denied)
    return DescribeTopicPartitionsResponse(
        throttle_time_ms=0, topics=topics, next_cursor=next_cursor
    )


@error_response(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
def describe_topic_partitions_error(
    request: DescribeTopicPartitionsRequest, code: ErrorCode, message: str | None
) -> DescribeTopicPartitionsResponse:
    return DescribeTopicPartitionsResponse(
        topics=[
            DescribeTopicPartitionsResponseTopic(
                error_code=code, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=[]
            )
            for t in request.topics
        ]
    )
