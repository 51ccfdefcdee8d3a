"""OffsetFetch: a group's committed offsets (v8+: several groups per request).

A partition without a commit answers offset -1 and empty metadata. A null topic list (v2+) asks
for every committed offset of the group. Group-level errors (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS...) go in the top-level error code (v2-7), in each group (v8+), or in
each partition (v0-1, which have no top-level code). With ``require_stable`` (v7+, KIP-447) a
partition whose offset a transactional producer committed in a still-open transaction answers
UNSTABLE_OFFSET_COMMIT (the consumer retries); without it the last committed offset is
returned. v9 (KIP-848) carries the member id and epoch of a consumer group member, checked as
Kafka does (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); an admin client sends neither.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from broker.registry import error_response, handler
from coordination.group.metadata import OffsetAndMetadata
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.primitives import ZERO_UUID

TopicPartition = tuple[str, int]


Found = OffsetAndMetadata | ErrorCode | None


def _fetch(
    ctx: RequestContext,
    group_id: str,
    partitions: Sequence[TopicPartition] | None,
    require_stable: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, Found]]]]]:
    """The group's offsets (DESCRIBE on the group: GROUP_AUTHORIZATION_FAILED otherwise); topics
    the principal may not DESCRIBE are left out of an all-offsets answer and answered
    TOPIC_AUTHORIZATION_FAILED when named (Kafka's KafkaApis)."""
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, [
            (t, [(p, None)]) for t, p in (partitions or [])
        ]
    allowed: dict[str, bool] = {}

    def may(topic: str, explicit: bool) -> bool:
        if topic not in allowed:
            allowed[topic] = ctx.authorize(
                AclOperation.DESCRIBE, ResourceType.TOPIC, topic, log_denied=explicit
            )
        return allowed[topic]

    wanted = partitions
    if partitions is not None:
        wanted = [tp for tp in partitions if may(tp[0], True)]
    code, found = coordinator(ctx).fetch_offsets(
        group_id=group_id,
        partitions=wanted,
        require_stable=require_stable,
        member_id=member_id,
        member_epoch=member_epoch,
    )
    order = list(partitions) if partitions is not None else sorted(found)
    topics: dict[str, list[tuple[int, Found]]] = {}
    for tp in order:
        if partitions is None and not may(tp[0], False):
            continue
        offset: Found = (
            found.get(tp)
            if may(tp[0], partitions is not None)
            else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        topics.setdefault(tp[0], []).append((tp[1], offset))
    return code, list(topics.items())


def _offset(o: Found) -> tuple[int, int, str, ErrorCode]:
    """(offset, leader epoch, metadata, partition error) of a fetched partition."""
    if isinstance(o, ErrorCode):
        return -1, -1, "", o
    if o is None:
        return -1, -1, "", ErrorCode.NONE
    return o.offset, o.leader_epoch, o.metadata, ErrorCode.NONE


def _by_id(ctx: RequestContext, topics: Sequence[Any] | None) -> list[Any] | None:
    """v10's topics, named by id, as the names of the topics that have those ids (the others
    are answered by :func:`_ids_again`)."""
    if topics is None:
        return None
    by_id = ctx.services.metadata.view.topics_by_id
    return [
        SimpleNamespace(name=by_id[t.topic_id].name, partition_indexes=t.partition_indexes)
        for t in topics
        if t.topic_id in by_id
    ]


def _ids_again(
    ctx: RequestContext,
    requested: Sequence[Any] | None,
    topics: list[tuple[str, list[tuple[int, Found]]]],
) -> list[tuple[uuid.UUID, list[tuple[int, Found]]]]:
    """v10's answer, by topic id: in the request's order, an id no topic has (the zero id
    too) answering UNKNOWN_TOPIC_ID for each partition; every committed topic that still
    exists when the request named none."""
    view = ctx.services.metadata.view
    if requested is None:
        return [
            (view.topics[name].topic_id, parts) for name, parts in topics if name in view.topics
        ]
    found = dict(topics)
    by_id = view.topics_by_id
    out: list[tuple[uuid.UUID, list[tuple[int, Found]]]] = []
    for t in requested:
        topic = by_id.get(t.topic_id)
        if topic is None:
            out.append((t.topic_id, [(p, ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes]))
        elif topic.name in found:
            out.append((t.topic_id, found.pop(topic.name)))
    return out


def _requested(topics: Sequence[Any] | None) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


@handler(ApiKey.OFFSET_FETCH, "0-10", acl=(AclOperation.DESCRIBE, ResourceType.GROUP))
def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.api_version
    if version >= 8:
        groups = []
        for g in request.groups:
            names = g.topics
            if version >= 10:
                names = _by_id(ctx, g.topics)
            code, by_name = _fetch(
                ctx,
                g.group_id,
                _requested(names),
                request.require_stable,
                g.member_id if version >= 9 else None,
                g.member_epoch if version >= 9 else -1,
            )
            answered: list[tuple[str | uuid.UUID, list[tuple[int, Found]]]] = (
                list(_ids_again(ctx, g.topics, by_name)) if version >= 10 else list(by_name)
            )
            groups.append(
                OffsetFetchResponseGroup(
                    group_id=g.group_id,
                    error_code=code,
                    topics=[
                        OffsetFetchResponseTopics(
                            name=name if isinstance(name, str) else "",
                            topic_id=name if isinstance(name, uuid.UUID) else ZERO_UUID,
                            partitions=[
                                OffsetFetchResponsePartitions(
                                    partition_index=p,
                                    committed_offset=offset,
                                    committed_leader_epoch=epoch,
                                    metadata=metadata,
                                    error_code=error,
                                )
                                for p, o in parts
                                for offset, epoch, metadata, error in (_offset(o),)
                            ],
                        )
                        for name, parts in answered
                    ]
                    if code == ErrorCode.NONE
                    else [],
                )
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)

    code, topics = _fetch(
        ctx, request.group_id, _requested(request.topics), version >= 7 and request.require_stable
    )
    if code != ErrorCode.NONE and version >= 2:
        return OffsetFetchResponse(throttle_time_ms=0, error_code=code, topics=[])
    # v0-1 have no top-level error: every partition carries it (with an error, _fetch lists the
    # requested partitions without offsets)
    partition_code = code if version < 2 else ErrorCode.NONE
    return OffsetFetchResponse(
        throttle_time_ms=0,
        error_code=code,
        topics=[
            OffsetFetchResponseTopic(
                name=name,
                partitions=[
                    OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=offset,
                        committed_leader_epoch=epoch,
                        metadata=metadata,
                        error_code=error if error != ErrorCode.NONE else partition_code,
                    )
                    for p, o in parts
                    for offset, epoch, metadata, error in (_offset(o),)
                ],
            )
            for name, parts in topics
        ],
    )


@error_response(ApiKey.OFFSET_FETCH)
def offset_fetch_error(
    request: OffsetFetchRequest, code: ErrorCode, message: str | None
) -> OffsetFetchResponse:
    return OffsetFetchResponse(
        error_code=code,
        topics=[],
        groups=[
            OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[])
            for g in (request.groups or [])
        ],
    )
