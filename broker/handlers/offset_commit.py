"""OffsetCommit: store a group's committed offsets in ``__consumer_offsets``.

v0 commits without membership (like ``generation_id = -1``); v1 carries a commit timestamp per
partition; v2-4 a retention time (an explicit expire timestamp); v5+ use
``offsets.retention.minutes``; v6 the leader epoch; v7 the group instance id. v9 (KIP-848): for a
consumer group the generation is the member's epoch (STALE_MEMBER_EPOCH when it is not the
member's current one, UNKNOWN_MEMBER_ID for a member the group does not have; members of the
consumer protocol must use v9+), and a generation for a group that does not exist answers
GROUP_ID_NOT_FOUND. Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION. v10 (KIP-848)
names topics by id: an id no topic has (the zero id too) answers UNKNOWN_TOPIC_ID for each of
its partitions, and the answer names topics by id.
"""

from __future__ import annotations

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._groups import CommitTopics, coordinator
from broker.registry import error_response, handler
from coordination.group.metadata import OffsetAndMetadata
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.schema import Struct


@handler(ApiKey.OFFSET_COMMIT, "0-10", acl=(AclOperation.READ, ResourceType.GROUP))
def handle_offset_commit(
    ctx: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse | Later:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    version = ctx.api_version
    now = ctx.now_ms()
    retention = request.retention_time_ms if 2 <= version <= 4 else -1
    by_id = version >= 10
    named = CommitTopics.check(ctx, request.topics, by_id)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    for tp, p in named:
        commit_ts = p.commit_timestamp if version == 1 and p.commit_timestamp >= 0 else now
        offsets[tp] = OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp_ms=commit_ts,
            expire_timestamp_ms=now + retention if retention >= 0 else -1,
        )
    if not offsets:
        return _response(request, named, by_id)
    # answered once the commit is durable: usually before commit_offsets returns; otherwise
    # (a write waiting for the ISR) the coordinator calls back later, from any thread
    answer: Answer[dict[tuple[str, int], ErrorCode]] = Answer()
    coordinator(ctx).commit_offsets(
        group_id=request.group_id,
        member_id=request.member_id if version >= 1 else "",
        group_instance_id=request.group_instance_id if version >= 7 else None,
        generation_id=request.generation_id_or_member_epoch if version >= 1 else -1,
        offsets=offsets,
        callback=answer,
        api_version=version,
    )
    if answer.ready and answer.value is not None:
        named.answered(answer.value)
        return _response(request, named, by_id)

    async def later() -> Struct:
        named.answered(await answer.wait())
        return _response(request, named, by_id)

    return Later(later())


def _response(request: Struct, named: CommitTopics, by_id: bool) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=named.error(t, p, by_id),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


@error_response(ApiKey.OFFSET_COMMIT)
def offset_commit_error(
    request: OffsetCommitRequest, code: ErrorCode, message: str | None
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
