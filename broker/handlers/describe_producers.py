"""DescribeProducers (KIP-664): the active producers of each partition this broker leads, from
its producer state: id, epoch, last sequence and timestamp, coordinator epoch, and the first
offset of the producer's open transaction (-1 without one). NOT_LEADER_OR_FOLLOWER elsewhere,
UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist. Errors of the whole topic (an
illegal name, no READ, a topic that does not exist) carry their message, as Kafka's do."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import InvalidTopic
from coordination.metadata.view import validate_topic_name
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)


def _topic_error(ctx: RequestContext, topic: str) -> tuple[ErrorCode, str] | None:
    """What Kafka answers for the whole topic, with a message (its ``ApiError``): an illegal
    name, no READ on it, or a topic that does not exist."""
    try:
        validate_topic_name(topic)
    except InvalidTopic as e:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)
    if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED.message
    if topic not in ctx.services.metadata.view.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
    return None


def _partition(ctx: RequestContext, topic: str, index: int) -> PartitionResponse:
    """A partition's producers, or the replica manager's error for it (without a message)."""
    part = ctx.services.replica_manager.get_partition(topic, index)
    if part is None:
        code = (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
            if ctx.services.metadata.view.partition(topic, index) is not None
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        return PartitionResponse(partition_index=index, error_code=code, active_producers=[])
    code = part.leader_error()
    if code != ErrorCode.NONE:
        return PartitionResponse(partition_index=index, error_code=code, active_producers=[])
    return PartitionResponse(
        partition_index=index,
        error_code=ErrorCode.NONE,
        active_producers=[
            ProducerState(
                producer_id=e.producer_id,
                producer_epoch=e.producer_epoch,
                last_sequence=e.last_seq,
                last_timestamp=e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_start_offset=e.current_txn_first_offset,
            )
            for e in part.active_producers()
        ],
    )


@handler(ApiKey.DESCRIBE_PRODUCERS, "0", acl=(AclOperation.READ, ResourceType.TOPIC))
def handle_describe_producers(
    ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:
        failed = _topic_error(ctx, t.name)
        if failed is None:
            partitions = [_partition(ctx, t.name, p) for p in t.partition_indexes]
        else:
            code, message = failed
            partitions = [
                PartitionResponse(
                    partition_index=p, error_code=code, error_message=message, active_producers=[]
                )
                for p in t.partition_indexes
            ]
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


@error_response(ApiKey.DESCRIBE_PRODUCERS)
def describe_producers_error(
    request: DescribeProducersRequest, code: ErrorCode, message: str | None
) -> DescribeProducersResponse:
    return DescribeProducersResponse(
        topics=[
            TopicResponse(
                name=t.name,
                partitions=[
                    PartitionResponse(
                        partition_index=p,
                        error_code=code,
                        error_message=message,
                        active_producers=[],
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in request.topics
        ]
    )
