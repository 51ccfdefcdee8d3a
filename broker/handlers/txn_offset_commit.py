"""TxnOffsetCommit: a transactional producer commits a consumer group's offsets as part of its
transaction (KIP-98; v3+ carry the consumer's generation and member id, KIP-447, checked like
OffsetCommit's). The offsets are written to the group's ``__consumer_offsets`` partition as the
producer's transactional batch and count only once the transaction commits. A producer fenced
by a newer epoch gets INVALID_PRODUCER_EPOCH, as from Kafka's group coordinator.

Before the offsets are written, the group's ``__consumer_offsets`` partition is checked with the
transaction's coordinator (KIP-890, as Kafka's group coordinator does since 3.6), this broker's
or another's: up to v4 it must have been added with AddOffsetsToTxn (otherwise
INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4, and nothing is written: the offsets would
stay pending for ever, as no marker would reach them), while
``transaction.partition.verification.enable`` is on. v5 comes from a producer of transaction
version 2 (KIP-890 part 2), which sent no AddOffsetsToTxn: with the broker's
``transaction.version`` at 2 the partition is added to the transaction instead (Kafka's
``txnOffsetCommitRequestVersionToTransactionSupportedOperation``). A failure is every
partition's answer. v6 names topics by id, as OffsetCommit v10: an id no topic has (the zero id
too) answers UNKNOWN_TOPIC_ID for each of its partitions."""

from __future__ import annotations

from typing import Any

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.features import TRANSACTION_VERSION, finalized_level
from broker.handlers._groups import CommitTopics, TopicPartition, coordinator
from broker.handlers._txn import respond
from broker.registry import error_response, handler
from coordination.group.metadata import OffsetAndMetadata
from coordination.metadata.view import OFFSETS_TOPIC
from coordination.txn.metadata import TV_2
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)


def _response(request: Any, named: CommitTopics, by_id: bool) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            TxnOffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=named.error(t, p, by_id),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


@handler(ApiKey.TXN_OFFSET_COMMIT, "0-6", acl=(AclOperation.READ, ResourceType.GROUP))
def handle_txn_offset_commit(
    ctx: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse | Later:
    # Kafka's checks: WRITE on the transactional id, READ on the group, READ on each topic
    ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    version = ctx.api_version
    now = ctx.now_ms()
    by_id = version >= 6
    named = CommitTopics.check(ctx, request.topics, by_id)
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, p in named:
        offsets[tp] = OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if version >= 2 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp_ms=now,
            expire_timestamp_ms=-1,
        )
    if not offsets:
        return _response(request, named, by_id)
    answer: Answer[dict[TopicPartition, ErrorCode]] = Answer()

    def commit() -> None:
        coordinator(ctx).txn_commit_offsets(
            group_id=request.group_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            member_id=request.member_id if version >= 3 else "",
            group_instance_id=request.group_instance_id if version >= 3 else None,
            generation_id=request.generation_id if version >= 3 else -1,
            offsets=offsets,
            callback=answer,
        )

    def build(found: dict[TopicPartition, ErrorCode]) -> TxnOffsetCommitResponse:
        named.answered(
            {
                tp: ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code
                for tp, code in found.items()
            }
        )
        return _response(request, named, by_id)

    service = ctx.services.transactions
    config = ctx.services.config
    add = (
        version >= 5
        and finalized_level(config, ctx.services.metadata.view, TRANSACTION_VERSION) >= TV_2
    )
    if service is None or not (add or config["transaction.partition.verification.enable"]):
        commit()
        return respond(answer, build)
    checked: Answer[dict[TopicPartition, ErrorCode]] = Answer()
    service.add_or_verify(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, coordinator(ctx).partition_for(request.group_id))],
        checked,
        add=add,
    )

    def refused(failed: dict[TopicPartition, ErrorCode]) -> TxnOffsetCommitResponse:
        return build(dict.fromkeys(offsets, _not_in_transaction(failed, version)))

    if checked.ready:  # this broker's coordinator verified it at once
        if checked.value:
            return refused(checked.value)
        commit()
        return respond(answer, build)

    async def after_checking() -> TxnOffsetCommitResponse:
        failed = await checked.wait()
        if failed:
            return refused(failed)
        commit()
        return build(await answer.wait())

    return Later(after_checking())


def _not_in_transaction(failed: dict[TopicPartition, ErrorCode], version: int) -> ErrorCode:
    """What the producer is told when its offsets partition could not be verified or added:
    a partition not in the transaction is TRANSACTION_ABORTABLE from v4 (INVALID_TXN_STATE
    before), as Kafka's group coordinator answers; the coordinator's other answers as they
    are (PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH with the rest)."""
    code = next(iter(failed.values()))
    if code in (ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.INVALID_TXN_STATE):
        return ErrorCode.TRANSACTION_ABORTABLE if version >= 4 else ErrorCode.INVALID_TXN_STATE
    return code


@error_response(ApiKey.TXN_OFFSET_COMMIT)
def txn_offset_commit_error(
    request: TxnOffsetCommitRequest, code: ErrorCode, message: str | None
) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
